"""The graph's state after each superstep, as a ``state.transition``.

LangGraph applies a superstep's writes when all its tasks are done, in its own order (by task path, not
by which finished first); the recorder writes the state right after, from the thread that runs the graph:

    {"graph": <every state channel; messages as LangChain message dicts without their ids>,
     "superstep": N, "ran": [the nodes that ran in it, sorted]}

in the step ``NN:<node>`` (``NN:<a>+<b>`` after a superstep of several nodes), caused by one of the
superstep's own observations chosen by key (step, kind, tool call id or request hash), never the one
that happened to be written last. Only the outermost graph's state is written: a sub-graph's shows in
its parent's state after the superstep that ran it.

Message ids (uuid4 from ``add_messages``), LangChain's ids of content blocks (``lc_<uuid4>``: an MCP tool's
text blocks have them) and LangGraph's checkpoint ids and times never reach a model request; they are kept
out of the recorded state. A channel value with no JSON form is written as
``"<TypeName>"``, so its changes are not seen.
"""

from __future__ import annotations

import dataclasses
import weakref
from collections.abc import Mapping
from typing import Any

import orjson
from langchain_core.messages import LC_AUTO_PREFIX, LC_ID_PREFIX, BaseMessage, messages_to_dict
from langgraph.pregel._io import read_channels
from pydantic import BaseModel

from .recorder import GraphRecorder, recorder_for

__all__ = ["state_view", "superstep_started", "superstep_done"]

#: the loops of graph runs in flight -> their recorder and the prefix of their steps
_loops: weakref.WeakKeyDictionary[Any, tuple[GraphRecorder, str]] = weakref.WeakKeyDictionary()


def superstep_started(loop: Any) -> None:
    """Before a superstep's tasks run: the loop's recorder (attached to the graph run when its config has
    none, so that its nodes name their steps), raising the run's refusal if there is one."""
    found = _loops.get(loop)
    if found is not None:
        found[0].recording.check()
        return
    recorder = recorder_for(loop.config)
    if recorder is None:
        return
    manager = getattr(loop, "manager", None)
    run_id = getattr(manager, "run_id", None)
    if manager is not None and recorder not in manager.inheritable_handlers:
        # the nodes' callbacks come from the graph run's manager (a run manager: no add_handler)
        manager.handlers.append(recorder)
        manager.inheritable_handlers.append(recorder)
    root = not loop.checkpoint_ns
    prefix = recorder.graph_started(run_id) if root else ""
    _loops[loop] = (recorder, prefix)


def superstep_done(loop: Any, superstep: int, tasks: list[Any]) -> None:
    """After a superstep's writes are applied: the outermost graph's state, as the recorder writes it."""
    found = _loops.get(loop)
    if found is None or loop.checkpoint_ns:
        return
    recorder, prefix = found
    if not recorder.record_state:
        return
    steps = {recorder.node_step(task.config.get("metadata") or {}, None, prefix) for task in tasks}
    names = sorted({task.name for task in tasks})
    step = f"{prefix}{superstep:02d}:{'+'.join(names)}" if len(steps) > 1 else next(iter(steps), None)
    values = read_channels(loop.channels, loop.stream_keys)
    state = {"graph": state_view(values), "superstep": superstep, "ran": names}
    cause = recorder.recording.cause_of(
        lambda step: step in steps or any(step.startswith(f"{name}/") for name in steps)
    )
    previous = recorder.h.name_flow_step(step)
    try:
        recorder.h.record_state(state, cause=cause)
    finally:
        recorder.h.name_flow_step(previous)


def state_view(values: Any) -> Any:
    """The graph state as the journal holds it: messages as LangChain dicts without their ids, other values as
    JSON (pydantic models and dataclasses dumped, anything else named by its type)."""
    if isinstance(values, Mapping):
        return {str(key): _value_view(value) for key, value in values.items()}
    return _value_view(values)


def _value_view(value: Any) -> Any:
    if isinstance(value, BaseMessage):
        return _messages_view([value])[0]
    if isinstance(value, list) and value and all(isinstance(item, BaseMessage) for item in value):
        return _messages_view(value)
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _value_view(dataclasses.asdict(value))
    if isinstance(value, Mapping):
        return {str(key): _value_view(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_value_view(item) for item in value]
    try:
        orjson.dumps(value)
    except TypeError:
        return f"<{type(value).__name__}>"
    return value


def _messages_view(messages: list[BaseMessage]) -> list[dict[str, Any]]:
    dumped = messages_to_dict(messages)
    for message in dumped:
        data = message["data"]
        data.pop("id", None)  # uuid4 from add_messages: not part of the behaviour
        for block in data.get("content") if isinstance(data.get("content"), list) else ():
            # LangChain's own ids of content blocks (uuid4, an MCP tool's text blocks have them): never sent
            if isinstance(block, dict) and str(block.get("id", "")).startswith((LC_AUTO_PREFIX, LC_ID_PREFIX)):
                del block["id"]
    return dumped

"""The recorder of a run's graphs: which harness they record through, the step each node runs in, and
what stops the recording when something would go out unrecorded.

``GraphRecorder`` is a LangChain callback handler. Put it in the config of a graph run (``recorded(h,
config)``), or let it attach itself: a graph that runs inside a recorded run gets the run's recorder at
its first superstep, so a compiled graph (``create_react_agent``, ``create_agent``, your own) is
recorded as it is. From LangChain's callbacks it names the step of each node's flow, ``NN:<node>``
(LangGraph's superstep and the node; ``[i]`` after a node a ``Send`` started, the i-th of its superstep;
``outer/NN:inner`` inside a sub-graph; ``graph-K/`` in front in the K-th graph run of the recording).

A node names the step of its own flow only (its thread or task, see ``harness/lanes.py``), never of the
flows around it, as ``h.step_id = ...`` would: LangGraph runs a superstep's first task in the thread that
runs the graph (or the enclosing node) and the others in its pool, and a step named in one of them must
not reach the events of another, nor outlive the node (when it ends its flow gets back the step it had).
Nothing is named inside a recorded tool's live run (nothing in it is recorded).
"""

from __future__ import annotations

import threading
import weakref
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, cast
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler, BaseCallbackManager

from ....journal.model import MODEL_RESPONSE, TOOL_RESULT
from ...harness import CURRENT_HARNESS, HarnessError, current_harness

if TYPE_CHECKING:
    from collections.abc import Mapping

    from ....journal import Event
    from ...harness import Harness
    from ...plugins import HookPoint

__all__ = [
    "IN_TOOLNODE",
    "LIVE_TOOL",
    "GraphRecorder",
    "Recording",
    "recorded",
    "recorder_for",
    "recording_in",
    "recording_of",
]

#: The tool whose live function runs in this flow (recording): what it does is part of its recorded result.
LIVE_TOOL: ContextVar[str | None] = ContextVar("replay_tui_langgraph_live_tool", default=None)
#: True while ToolNode executes a tool the recorder let through (recorded, or left to its own recorder).
IN_TOOLNODE: ContextVar[bool] = ContextVar("replay_tui_langgraph_in_toolnode", default=False)
_PUSH = "__pregel_push"


@dataclass
class Recording:
    """What every recorder of one run shares: the first refusal (raised again at every later hook, so a
    graph that catches it cannot go on to ``run ok``), and the observations of the supersteps in flight
    (a superstep's state transition hangs from one of its own, chosen by key, not by timing)."""

    h: Harness
    refused: HarnessError | None = None
    graph_runs: int = 0
    observations: list[Event] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def on_event(self, event: Event) -> None:  # a HookPoint: every event, under the bus lock
        if event.kind in (MODEL_RESPONSE, TOOL_RESULT) and event.step_id is not None:
            with self.lock:
                self.observations.append(event)
                if len(self.observations) > _KEPT_OBSERVATIONS:
                    del self.observations[: _KEPT_OBSERVATIONS // 2]

    def refuse(self, message: str) -> HarnessError:
        """The error that ends the recording (the first one stays: later hooks raise it again)."""
        with self.lock:
            if self.refused is None:
                self.refused = HarnessError(message)
            return self.refused

    def check(self) -> None:
        if self.refused is not None:
            raise self.refused

    def take_observations(self, belongs: Callable[[str], bool]) -> list[Event]:
        """The observations written in the steps ``belongs`` picks, taken out of the list."""
        with self.lock:
            taken = [event for event in self.observations if belongs(event.step_id or "")]
            self.observations = [event for event in self.observations if not belongs(event.step_id or "")]
        return taken

    def cause_of(self, belongs: Callable[[str], bool]) -> Event | None:
        """The event a state written after a superstep hangs from: one of the observations of its steps, the
        same whichever of its threads finished last (the greatest by step, kind, and call id or request
        hash), or None when it had none (the state then hangs from the event written before it)."""
        observations = self.take_observations(belongs)
        if not observations:
            return None

        def key(event: Event) -> tuple[str, str, str, int]:
            payload = event.payload
            which = payload.get("call_id") if event.kind == TOOL_RESULT else payload.get("request_hash")
            return (event.step_id or "", event.kind, str(which), event.seq)

        return max(observations, key=key)


_KEPT_OBSERVATIONS = 10_000
_recordings: weakref.WeakKeyDictionary[Harness, Recording] = weakref.WeakKeyDictionary()
_recordings_lock = threading.Lock()


def recording_in(h: Harness) -> Recording | None:
    """The run's recording, if the run has set the recorder up (``chat_openai``, ``chat_anthropic``,
    ``recorded``, a ``GraphRecorder``): None in a run that does not use it."""
    with _recordings_lock:
        return _recordings.get(h)


def recording_of(h: Harness) -> Recording:
    """The run's recording, set up on first use."""
    with _recordings_lock:
        recording = _recordings.get(h)
        if recording is None:
            recording = _recordings[h] = Recording(h)
            h.hooks.append(cast("HookPoint", recording))  # (it sees events only: no plugin lifecycle)
        return recording


@dataclass
class _Run:
    """A chain run in flight: the step of the node run it is (or is inside of); for a node run, its task's
    namespace, whether it named its flow's step, and the step that flow had before."""

    step: str | None
    namespace: str | None = None
    named: bool = False
    previous: str | None = None


class GraphRecorder(BaseCallbackHandler):
    """Records the graphs run with it in their config through ``h`` (default: the harness of the calling run).

    ``record_state``: write the graph's state after each superstep (``GraphAgent`` writes its own)."""

    run_inline = True  # called in the node's own flow, where its step is named
    raise_error = True  # a refusal raised here stops the graph, as LangChain re-raises it

    def __init__(self, h: Harness | None = None, *, record_state: bool = True) -> None:
        from .patches import instrument

        instrument()
        self.h = h if h is not None else current_harness()
        self.recording = recording_of(self.h)
        self.record_state = record_state
        self._lock = threading.Lock()
        self._runs: dict[UUID, _Run] = {}
        self._tasks: set[str] = set()  # namespaces of the node runs in flight
        self._graphs: dict[UUID, str] = {}  # root graph runs in flight: run id -> the prefix of their steps

    # -- graph runs --------------------------------------------------------------------

    def graph_started(self, run_id: UUID | None) -> str:
        """A root graph run's first superstep (in the flow that runs it): the prefix of its steps (``graph-K/``
        from the recording's second graph run on)."""
        with self._lock:
            if run_id is not None and run_id in self._graphs:
                return self._graphs[run_id]
            with self.recording.lock:
                self.recording.graph_runs += 1
                number = self.recording.graph_runs
            prefix = "" if number == 1 else f"graph-{number}/"
            if run_id is not None:
                self._graphs[run_id] = prefix
            return prefix

    def node_step(self, metadata: Mapping[str, Any], enclosing: str | None, prefix: str) -> str:
        """The step of a node run (override to name them otherwise)."""
        step = metadata.get("langgraph_step")
        path: Any = metadata.get("langgraph_path") or ()
        index = f"[{path[1]}]" if len(path) > 1 and path[0] == _PUSH and isinstance(path[1], int) else ""
        own = f"{step:02d}:{metadata.get('langgraph_node')}{index}" if isinstance(step, int) else str(step)
        return f"{enclosing}/{own}" if enclosing else f"{prefix}{own}"

    # -- LangChain's callbacks ---------------------------------------------------------

    def on_chain_start(
        self,
        serialized: Any,
        inputs: Any,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        metadata: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        self.recording.check()
        metadata = metadata or {}
        node = metadata.get("langgraph_node")
        namespace = metadata.get("langgraph_checkpoint_ns") or metadata.get("checkpoint_ns")
        with self._lock:
            parent = self._runs.get(parent_run_id) if parent_run_id is not None else None
            enclosing = parent.step if parent is not None else None
            is_node = bool(node) and kwargs.get("name") == node and bool(namespace) and namespace not in self._tasks
            if not is_node:
                self._runs[run_id] = _Run(enclosing)
                return
            self._tasks.add(namespace)  # type: ignore[arg-type]
            prefix = self._graphs.get(parent_run_id, "") if parent_run_id is not None else ""
        step = self.node_step(metadata, enclosing, prefix)
        named = LIVE_TOOL.get() is None
        run = _Run(step, namespace, named, self.h.name_flow_step(step) if named else None)
        with self._lock:
            self._runs[run_id] = run

    def on_tool_start(
        self, serialized: Any, input_str: str, *, metadata: Mapping[str, Any] | None = None, **kwargs: Any
    ) -> None:
        self.recording.check()
        if IN_TOOLNODE.get():
            return
        name = (serialized or {}).get("name") if isinstance(serialized, dict) else None
        node = (metadata or {}).get("langgraph_node")
        where = f" in node {node!r}" if isinstance(node, str) else ""
        raise self.recording.refuse(
            f"tool {name or kwargs.get('name')!r} ran outside ToolNode{where}: the recorder records the tool "
            "calls ToolNode makes, and this one would be run again (live) by a replay; call it through ToolNode "
            "(create_react_agent, create_agent and tools_condition graphs do)"
        )

    def on_chain_end(self, outputs: Any, *, run_id: UUID, **kwargs: Any) -> None:
        self._ended(run_id)
        self.recording.check()

    def on_chain_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        self._ended(run_id)

    def _ended(self, run_id: UUID) -> None:
        with self._lock:
            run = self._runs.pop(run_id, None)
            self._graphs.pop(run_id, None)
            if run is not None and run.namespace is not None:
                self._tasks.discard(run.namespace)
        if run is not None and run.named:
            self.h.name_flow_step(run.previous)


def recorder_in(config: Mapping[str, Any] | None) -> GraphRecorder | None:
    """The ``GraphRecorder`` among a config's callbacks (a list, or the manager LangGraph hands a node)."""
    callbacks = (config or {}).get("callbacks")
    if isinstance(callbacks, BaseCallbackManager):
        handlers = [*callbacks.handlers, *callbacks.inheritable_handlers]
    elif isinstance(callbacks, (list, tuple)):
        handlers = list(callbacks)
    else:
        return None
    return next((handler for handler in handlers if isinstance(handler, GraphRecorder)), None)


_implicit: weakref.WeakKeyDictionary[Harness, GraphRecorder] = weakref.WeakKeyDictionary()


def recorder_for(config: Mapping[str, Any] | None) -> GraphRecorder | None:
    """The recorder of a graph, node or ToolNode run with ``config``: the one in its callbacks, else the calling
    run's own (a compiled graph run without one); None outside a recorded run, and in a run that never set the
    recorder up (the hooks are the process's: a graph another recorder keeps, or none, runs as it is, as it
    will in its replay, which may not load this package at all). Raises the run's refusal."""
    recorder = recorder_in(config)
    if recorder is None:
        h = CURRENT_HARNESS.get()
        if h is None or recording_in(h) is None:
            return None
        with _recordings_lock:
            recorder = _implicit.get(h)
        if recorder is None:
            made = GraphRecorder(h)
            with _recordings_lock:
                recorder = _implicit.setdefault(h, made)
    recorder.recording.check()
    return recorder


def recorded(h: Harness, config: Mapping[str, Any] | None = None, **options: Any) -> dict[str, Any]:
    """``config`` (a graph run's config, or None) with a ``GraphRecorder`` for ``h`` among its callbacks."""
    made = dict(config or {})
    callbacks = made.get("callbacks")
    recorder = GraphRecorder(h, **options)
    if callbacks is None:
        made["callbacks"] = [recorder]
    elif isinstance(callbacks, BaseCallbackManager):
        manager = callbacks.copy()
        manager.add_handler(recorder, inherit=True)
        made["callbacks"] = manager
    else:
        made["callbacks"] = [*callbacks, recorder]
    return made


def not_recorded(what: str) -> HarnessError:
    """The error for a call the recorder cannot see, refused for the calling run when there is one."""
    h = CURRENT_HARNESS.get()
    return recording_of(h).refuse(what) if h is not None else HarnessError(what)

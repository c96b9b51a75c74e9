"""Record and strictly replay a LangGraph graph (``langgraph``, ``langgraph-checkpoint-sqlite``,
``langchain-openai``), and resume it from a recorded snapshot.

    class CRMGraph(GraphAgent):
        def build(self, h, task):          # the graph, as you build it today
            model = chat_openai(h, task["base_url"], "gpt-4.1").bind_tools(TOOLS)
            ...
            builder.add_node("tools", ToolNode(TOOLS, wrap_tool_call=tool_call_recorder(h)))
            return builder

        def graph_input(self, task):
            return {"messages": [HumanMessage(task["question"])]}

    agent = CRMGraph                       # record_run(config, "mymod:agent", [task], ...)

A ``GraphAgent`` is a harness step-loop agent: each harness step runs one LangGraph superstep
(``interrupt_after`` every node), so in a graph whose nodes run one at a time each node
execution is one step, named ``step-NN:<node>`` (from LangGraph's own callback metadata).

* model calls: ``chat_openai`` gives a ``ChatOpenAI`` whose ``openai`` client sends through the
  harness's httpx transport (or use ``common.openai_client`` inside a node);
* tools: ``tool_call_recorder`` is ToolNode's ``wrap_tool_call`` hook; each call goes through
  ``Harness.record_tool_call`` with the model's tool call id, and a replay builds the
  ToolMessage from the recorded content without running the tool. Inside a node, call
  ``h.record_tool_call(name, args, live)`` directly;
* state: after each superstep the graph state (every channel; messages as LangChain message
  dicts) and the next nodes are written as ``state.transition`` (before and after hashes and
  the patch), then a ``state.snapshot`` for the checkpoint the SQLite saver just wrote (its
  ``checkpoint_id`` under ``diagnostics``). The saver writes into a temporary directory
  (inside the sandbox's scratch space in a replay);
* resume: ``replay --from-seq N`` restores the nearest ``state.snapshot``: the step seeds a
  fresh saver with the recorded state (``update_state(..., as_node=<last node>)``) and the graph
  continues from there.

Clock, random and ids: LangGraph's checkpoint ids are UUID6 (time + random) and its
checkpoints carry a timestamp; ``add_messages`` gives uuid4 ids to messages that have none.
None of these reach a model request. They are kept out of the matched keys: checkpoint ids
and times only under ``diagnostics``, message ``id`` fields dropped from the recorded state.
Parallel work runs as it does unrecorded: ToolNode's tool calls and a superstep's nodes in
LangGraph's threads, each event written when it happens, and a strict replay hands results back
in the order they arrived. Limits: async graphs (``ainvoke``), ``Send`` fan-out and tools
returning ``Command`` are not recorded.
"""

from __future__ import annotations

import sqlite3
import tempfile
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage, messages_from_dict, messages_to_dict
from langchain_openai import ChatOpenAI
from langgraph.checkpoint.sqlite import SqliteSaver
from pydantic import SecretStr

from ...journal.errors import SchemaError
from ...journal.model import INPUT_RECEIVED, TOOL_RESULT
from ..agents import Done, StepAgent
from ..harness import HarnessError
from .common import api_key, in_journal_order
from .versions import check_versions

if TYPE_CHECKING:
    from ...journal import Event
    from ..harness import Harness

DISTRIBUTIONS = ("langgraph", "langgraph-checkpoint-sqlite", "langchain-openai")
THREAD = "replay-tui"


def chat_openai(h: Harness, base_url: str, model: str, **options: Any) -> ChatOpenAI:
    """A ``ChatOpenAI`` recording through ``h`` (no retries: each attempt would be an exchange)."""
    from ..httpx_transport import http_client

    return ChatOpenAI(
        model=model,
        base_url=base_url,
        api_key=SecretStr(api_key()),
        http_client=http_client(h),
        max_retries=0,
        **options,
    )


def tool_call_recorder(h: Harness) -> Any:
    """ToolNode's ``wrap_tool_call``: every tool call recorded as tool.call/tool.result."""

    def record(request: Any, execute: Any) -> Any:
        call = request.tool_call

        def live(copy: Any) -> dict[str, Any]:
            message = execute(request.override(tool_call={**call, "args": copy}))
            if not isinstance(message, ToolMessage):
                kind = type(message).__name__
                raise TypeError(f"tool {call['name']!r} returned {kind}; only a ToolMessage is recorded")
            return {"content": in_journal_order(message.content), "status": message.status}

        recorded = h.record_tool_call(call["name"], call.get("args") or {}, live, call_id=call.get("id"))
        content, status = _tool_message_parts(h, recorded, call.get("id"))
        return ToolMessage(content=content, status=status, tool_call_id=call.get("id"), name=call["name"])

    return record


_TOOL_RESULT = 'an object {"content": text or a list of texts and objects, "status": "success" or "error"}'


def _tool_message_parts(h: Harness, recorded: Any, call_id: str | None) -> tuple[Any, str]:
    """The content and status of a ToolMessage as ``record`` writes them. In a replay they come from the
    journal, which is hostile: another shape ends the replay on a journal error naming the tool.result's seq
    (``Harness.unusable_record``), not on an error from deep inside LangChain."""
    if isinstance(recorded, Mapping):
        content, status = recorded.get("content"), recorded.get("status", "success")
        parts_ok = isinstance(content, list) and all(isinstance(part, (str, Mapping)) for part in content)
        if (isinstance(content, str) or parts_ok) and status in ("success", "error"):
            return content, status
    event = h.last_event
    if event is None or event.kind != TOOL_RESULT or event.payload.get("call_id") != call_id:
        event = None  # not this call's result: no seq to name
    error = SchemaError("payload.result", _TOOL_RESULT, recorded, seq=event.seq if event is not None else None)
    raise h.unusable_record(error)


class _NodeSteps(BaseCallbackHandler):
    """Names the current harness step after the LangGraph node that runs in it."""

    run_inline = True

    def __init__(self, h: Harness) -> None:
        self.h = h
        self.node: str | None = None

    def on_chain_start(
        self, serialized: Any, inputs: Any, *, metadata: Mapping[str, Any] | None = None, **kwargs: Any
    ) -> None:
        node = (metadata or {}).get("langgraph_node")
        if node and kwargs.get("name") == node and node != self.node:
            self.node = node
            self.h.step_id = f"step-{self.h.steps_done + 1:02d}:{node}"


@dataclass
class _GraphRun:
    graph: Any
    config: dict[str, Any]
    steps: _NodeSteps
    scratch: tempfile.TemporaryDirectory[str]
    connection: sqlite3.Connection
    pending: Any = None
    started: bool = False
    nodes: list[str] = field(default_factory=list)

    def close(self) -> None:
        self.connection.close()
        self.scratch.cleanup()


class GraphAgent(StepAgent):
    """A LangGraph graph run as a harness step-loop agent (override ``build`` and ``graph_input``)."""

    reducer_version = "langgraph-1"
    max_steps = 200

    def build(self, h: Harness, task: Any) -> Any:
        """The ``StateGraph`` builder (not compiled: the recorder compiles it with its saver)."""
        raise NotImplementedError

    def graph_input(self, task: Any) -> Any:
        """The graph's input for the recorded task."""
        raise NotImplementedError

    def output(self, values: Mapping[str, Any]) -> Any:
        """The run's output from the final graph state (default: the last AI message's text)."""
        messages = values.get("messages") or []
        last = next((message for message in reversed(messages) if isinstance(message, AIMessage)), None)
        return last.text if last is not None else None

    def initial_state(self) -> Any:
        return {"task": None, "graph": None, "next": [], "node": None}

    def reduce(self, state: Any, event: Event) -> Any:
        if event.kind == INPUT_RECEIVED and state["task"] is None:
            return {**state, "task": event.payload["content"]}
        return state

    def step(self, h: Harness, state: Any) -> Done | None:
        run = _runs.get(h) or self._start(h, state)
        for _ in run.graph.stream(
            run.pending if not run.started else None, run.config, stream_mode="values", interrupt_after=run.nodes
        ):
            pass
        run.started = True
        snapshot = run.graph.get_state(run.config)
        langgraph_step = (snapshot.metadata or {}).get("step")
        # LangGraph's step counter restarts in a saver seeded by a resume: diagnostics only
        h.record_state(
            {**state, "graph": _state_view(snapshot.values), "next": list(snapshot.next), "node": run.steps.node}
        )
        checkpoint_id = (snapshot.config.get("configurable") or {}).get("checkpoint_id")
        h.write_snapshot(
            diagnostics={"checkpoint_id": checkpoint_id, "langgraph_step": langgraph_step}, at_step_end=True
        )
        if snapshot.next:
            return None
        output = self.output(snapshot.values)
        _runs.pop(h, None)
        run.close()
        return Done(output=output)

    def _start(self, h: Harness, state: Any) -> _GraphRun:
        check_versions(*DISTRIBUTIONS)
        scratch = tempfile.TemporaryDirectory(prefix="replay-tui-langgraph-")
        connection = sqlite3.connect(str(Path(scratch.name) / "checkpoints.sqlite"), check_same_thread=False)
        builder = self.build(h, state["task"])
        graph = builder.compile(checkpointer=SqliteSaver(connection))
        steps = _NodeSteps(h)
        # ToolNode's parallel tool calls and a superstep's parallel nodes run in LangGraph's threads, as they
        # do unrecorded: their events are written in the order they happen, and a replay repeats that order.
        config: dict[str, Any] = {"configurable": {"thread_id": THREAD}, "callbacks": [steps]}
        run = _GraphRun(graph, config, steps, scratch, connection, nodes=list(builder.nodes))
        if isinstance(state, Mapping) and state.get("graph") is None:
            run.pending = self.graph_input(state["task"])
        else:  # resumed from a recorded snapshot: seed the saver with the recorded state
            values, node = _resumed_graph(h, state)
            if node not in run.nodes:
                raise HarnessError(
                    f"the snapshot at seq {h.last_seq} was taken after the node {node!r}, which this graph does "
                    f"not have (its nodes: {', '.join(map(repr, run.nodes))})"
                )
            steps.node = node
            graph.update_state(config, values, as_node=node)
            run.started = True
        _runs[h] = run
        return run


_runs: weakref.WeakKeyDictionary[Harness, _GraphRun] = weakref.WeakKeyDictionary()


def _state_view(values: Mapping[str, Any]) -> dict[str, Any]:
    """The graph state as the journal holds it: messages as LangChain dicts without their ids. Members are
    put in the journal's order by ``record_state``, which serializes the state once for all its uses."""
    view: dict[str, Any] = {}
    for key, value in values.items():
        if isinstance(value, list) and value and all(isinstance(item, BaseMessage) for item in value):
            dumped = messages_to_dict(value)
            for message in dumped:
                message["data"].pop("id", None)  # uuid4 from add_messages: not part of the behaviour
            view[key] = dumped
        else:
            view[key] = value
    return view


def _resumed_graph(h: Harness, state: Any) -> tuple[dict[str, Any], str]:
    """The graph's channel values and the node a resumed run continues after, from the state of the snapshot
    it resumed from (``h.last_seq``: nothing is written before the graph runs). The journal is hostile: a
    shape ``_state_view`` does not write is a journal error at that seq, not an error inside LangGraph."""

    def unusable(field: str, expected: str, found: Any) -> BaseException:
        return h.unusable_record(SchemaError(f"payload.state{field}", expected, found, seq=h.last_seq))

    if not isinstance(state, Mapping):
        raise unusable("", "the recorder's state, an object {task, graph, next, node}", state)
    view = state.get("graph")
    if not isinstance(view, Mapping):
        raise unusable(".graph", "the graph's channels, an object", view)
    node = state.get("node")
    if not isinstance(node, str):
        raise unusable(".node", "the name of the node the snapshot was taken after", node)
    values: dict[str, Any] = {}
    for key, value in view.items():
        is_messages = (
            isinstance(value, list)
            and value
            and all(isinstance(item, Mapping) and {"type", "data"} <= set(item) for item in value)
        )
        if not is_messages:
            values[key] = value
            continue
        try:
            values[key] = messages_from_dict(value)
        except (TypeError, ValueError):  # (pydantic's ValidationError is a ValueError)
            raise unusable(f".graph.{key}", "LangChain messages as messages_to_dict writes them", value) from None
    return values, node

"""``GraphAgent``: a LangGraph graph run as a harness step-loop agent, resumable from a recorded snapshot.

    class CRMGraph(GraphAgent):
        def build(self, h, task):          # your StateGraph (or a compiled graph, as create_react_agent gives)
            model = chat_openai(h, task["base_url"], "gpt-4.1").bind_tools(TOOLS)
            ...
            return builder

        def graph_input(self, task):
            return {"messages": [HumanMessage(task["question"])]}

    agent = CRMGraph                       # record_run(config, "mymod:agent", [task], ...)

Each harness step runs one LangGraph superstep (``interrupt_after`` every node) with a SQLite saver the
recorder owns (a compiled graph is lent it through its config), so in a graph whose nodes run one at a
time each node execution is one step, named ``step-NN:<node>``. After each superstep the graph state
(every channel; messages as LangChain message dicts without their ids) and the next nodes are written as
``state.transition``, then a ``state.snapshot`` for the checkpoint the saver just wrote (its
``checkpoint_id`` under ``diagnostics``). ``replay --from-seq N`` restores the nearest snapshot: the step
seeds a fresh saver with the recorded state (``update_state(..., as_node=<last node>)``) and the graph
continues from there. Model calls, ToolNode's tool calls and the checks are the recorder's
(``langgraph.md``); a ``GraphAgent`` drives its graph with ``stream``, so its nodes and tools are sync.
"""

from __future__ import annotations

import sqlite3
import tempfile
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from langchain_core.messages import AIMessage, messages_from_dict
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.constants import CONFIG_KEY_CHECKPOINTER

from ....journal.errors import SchemaError
from ....journal.model import INPUT_RECEIVED
from ...agents import Done, StepAgent
from ...harness import HarnessError
from .recorder import GraphRecorder
from .state import state_view

if TYPE_CHECKING:
    from ....journal import Event
    from ...harness import Harness

__all__ = ["GraphAgent", "tool_call_recorder"]

THREAD = "replay-tui"


def tool_call_recorder(h: Harness) -> Any:
    """ToolNode's ``wrap_tool_call`` of earlier releases. ToolNode's tool calls are now recorded wherever the
    graph runs (``tools.py``); this wrapper only hands each call on, so graphs written for it keep working."""

    def hand_on(request: Any, execute: Any) -> Any:
        return execute(request)

    return hand_on


class _StepRecorder(GraphRecorder):
    """A ``GraphAgent``'s recorder: its nodes are ``step-NN:<node>`` (the harness step), and it writes no state
    of its own (the agent writes its state and snapshot after each step)."""

    def __init__(self, h: Harness) -> None:
        super().__init__(h, record_state=False)
        self.nodes: set[str] = set()  # the outermost level's nodes started in the current harness step
        self.node: str | None = None  # the node a resumed run continues after

    def node_step(self, metadata: Mapping[str, Any], enclosing: str | None, prefix: str) -> str:
        node = str(metadata.get("langgraph_node"))
        if enclosing:
            return super().node_step(metadata, enclosing, prefix)
        with self._lock:
            self.nodes.add(node)
        return f"step-{self.h.steps_done + 1:02d}:{node}"

    def step_done(self) -> str | None:
        """The nodes of the step that ended, as the state's step names them (``a+b`` after parallel nodes, the
        same whichever started last); the last of them, by name, is the node a resume continues after."""
        with self._lock:
            names, self.nodes = sorted(self.nodes), set()
        if names:
            self.node = names[-1]
        return "+".join(names) or None


@dataclass
class _GraphRun:
    graph: Any
    config: dict[str, Any]
    steps: _StepRecorder
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
        """The graph: a ``StateGraph`` builder (the recorder compiles it with its saver) or a compiled graph
        (lent the saver through its config)."""
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
        ran = run.steps.step_done()
        node = run.steps.node
        this_step = f"step-{h.steps_done + 1:02d}:"
        cause = run.steps.recording.cause_of(lambda step: step.startswith(this_step))
        # the state and snapshot are the step's nodes' (the flow's step is the harness step's again)
        previous = h.name_flow_step(f"{this_step}{ran}" if ran else h.step_id)
        try:
            # LangGraph's step counter restarts in a saver seeded by a resume: diagnostics only
            view = {**state, "graph": state_view(snapshot.values), "next": list(snapshot.next), "node": node}
            h.record_state(view, cause=cause)
            checkpoint_id = (snapshot.config.get("configurable") or {}).get("checkpoint_id")
            h.write_snapshot(
                diagnostics={"checkpoint_id": checkpoint_id, "langgraph_step": langgraph_step}, at_step_end=True
            )
        finally:
            h.name_flow_step(previous)
        if snapshot.next:
            return None
        output = self.output(snapshot.values)
        _runs.pop(h, None)
        run.close()
        return Done(output=output)

    def _start(self, h: Harness, state: Any) -> _GraphRun:
        scratch = tempfile.TemporaryDirectory(prefix="replay-tui-langgraph-")
        connection = sqlite3.connect(str(Path(scratch.name) / "checkpoints.sqlite"), check_same_thread=False)
        saver = SqliteSaver(connection)
        steps = _StepRecorder(h)
        built = self.build(h, state["task"])
        configurable: dict[str, Any] = {"thread_id": THREAD}
        if hasattr(built, "compile"):  # a StateGraph builder
            graph, nodes = built.compile(checkpointer=saver), list(built.nodes)
        else:  # compiled (create_react_agent, create_agent): lent the saver, as LangGraph lends a subgraph its own
            graph, nodes = built, [name for name in built.nodes if not name.startswith("__")]
            configurable[CONFIG_KEY_CHECKPOINTER] = saver
        # ToolNode's parallel tool calls and a superstep's parallel nodes run in LangGraph's threads, as they
        # do unrecorded: their events are written in the order they happen, and a replay repeats that order.
        config: dict[str, Any] = {"configurable": configurable, "callbacks": [steps]}
        run = _GraphRun(graph, config, steps, scratch, connection, nodes=nodes)
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

"""ToolNode's tool calls, recorded where ToolNode executes one (after any ``wrap_tool_call`` of yours or of
a middleware: each execution it asks for is one ``tool.call``/``tool.result``, a retry is another).

While recording, the tool runs as ToolNode runs it (its injected state, store and runtime, its error
handling), in ToolNode's threads or tasks, concurrently as unrecorded; what it gave back is recorded as
``tool_outputs`` keeps it, and the graph gets the message rebuilt from that record. In a replay the tool
is not run: the graph gets the message rebuilt from the journal. The arguments are the model's
(``tool_call["args"]``, as your wrapper passed them on), copied when the call is made.

What a tool does while it runs is part of its result: a model call inside it through a client that
records, or a tool that interrupts the graph, is refused (the replay, which does not run the tool,
could not reproduce either). Tools that record themselves (``tools_recorded_elsewhere``) run as they are.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Awaitable, Callable, Iterator
from typing import TYPE_CHECKING, Any

from langgraph.errors import GraphBubbleUp

from ....journal.model import TOOL_RESULT
from .patches import record_mcp_sessions
from .recorder import IN_TOOLNODE, LIVE_TOOL, GraphRecorder, recorder_for
from .tool_outputs import UnrecordableOutput, _Unusable, output_from_record, output_record

if TYPE_CHECKING:
    from ...harness import Harness

__all__ = ["execute_recorded", "aexecute_recorded", "tools_recorded_elsewhere"]

#: Tests of tools whose calls something else records (an MCP recorder's): ToolNode runs them as they are.
_RECORDED_ELSEWHERE: list[Callable[[Any], bool]] = []


def tools_recorded_elsewhere(test: Callable[[Any], bool]) -> Callable[[], None]:
    """Leave the tools ``test(tool)`` picks to their own recorder (the seam for tools whose calls another
    recorder keeps, e.g. MCP tools recorded at the MCP session): ToolNode runs them, record and replay.
    Returns the function that removes ``test``."""
    _RECORDED_ELSEWHERE.append(test)
    return lambda: _RECORDED_ELSEWHERE.remove(test)


def _recording(node: Any, request: Any, config: Any) -> GraphRecorder | None:
    """The recorder of this execution, or None when it runs as it is."""
    if LIVE_TOOL.get() is not None or request.tool is None:  # inside a recorded tool; an unknown tool's error
        return None
    if "langchain_mcp_adapters" in sys.modules:  # (imported after the recorder was set up: its tools go through)
        record_mcp_sessions()
    if any(test(request.tool) for test in _RECORDED_ELSEWHERE):
        return None
    return recorder_for(config)


def execute_recorded(node: Any, request: Any, input_type: Any, config: Any, execute: Callable[..., Any]) -> Any:
    """``ToolNode._execute_tool_sync`` recorded; ``execute`` is LangGraph's own."""
    token = IN_TOOLNODE.set(True)
    try:
        return _execute(node, request, input_type, config, execute)
    finally:
        IN_TOOLNODE.reset(token)


async def aexecute_recorded(
    node: Any, request: Any, input_type: Any, config: Any, execute: Callable[..., Awaitable[Any]]
) -> Any:
    """``ToolNode._execute_tool_async`` recorded (concurrent calls run concurrently, each result written when
    it arrives; a strict replay hands them back in the recorded order)."""
    token = IN_TOOLNODE.set(True)
    try:
        return await _aexecute(node, request, input_type, config, execute)
    finally:
        IN_TOOLNODE.reset(token)


def _execute(node: Any, request: Any, input_type: Any, config: Any, execute: Callable[..., Any]) -> Any:
    recorder = _recording(node, request, config)
    if recorder is None:
        return execute(node, request, input_type, config)
    run = _ToolRun(recorder, request)

    def live(arguments: Any) -> dict[str, Any]:
        with run.live():
            output = execute(node, run.with_arguments(arguments), input_type, config)
        return run.record(output)

    with run.refusals():
        recorded = recorder.h.record_tool_call(run.name, run.arguments, live, call_id=run.call_id)
    return _rebuilt(recorder.h, run.call, recorded)


async def _aexecute(
    node: Any, request: Any, input_type: Any, config: Any, execute: Callable[..., Awaitable[Any]]
) -> Any:
    recorder = _recording(node, request, config)
    if recorder is None:
        return await execute(node, request, input_type, config)
    run = _ToolRun(recorder, request)

    async def live(arguments: Any) -> dict[str, Any]:
        with run.live():
            output = await execute(node, run.with_arguments(arguments), input_type, config)
        return run.record(output)

    with run.refusals():
        recorded = await recorder.h.arecord_tool_call(run.name, run.arguments, live, call_id=run.call_id)
    return _rebuilt(recorder.h, run.call, recorded)


class _ToolRun:
    """One tool execution being recorded. What the recorder cannot keep of it is refused: the harness records
    the call as failed with it, and the run stops with it (never handed to the graph as the tool's error,
    which a graph may carry on past)."""

    def __init__(self, recorder: GraphRecorder, request: Any) -> None:
        self.recording = recorder.recording
        self.request = request
        self.call = request.tool_call
        self.name: str = self.call["name"]
        self.arguments = self.call.get("args") or {}
        self.call_id = self.call.get("id")

    def with_arguments(self, arguments: Any) -> Any:
        """The request with the tool's own copy of the arguments (it cannot change what was recorded)."""
        return self.request.override(tool_call={**self.call, "args": arguments})

    @contextlib.contextmanager
    def live(self) -> Iterator[None]:
        """Around the tool's live run: what it does is part of its result; an interrupt is refused."""
        token = LIVE_TOOL.set(self.name)
        try:
            yield
        except GraphBubbleUp:
            raise self.recording.refuse(
                f"tool {self.name!r} interrupted the graph (interrupt() or a Command to a parent graph raised "
                "inside the tool): a replay serves the tool's result without running it, so the recorder does "
                "not record a tool that interrupts; interrupt in a node instead"
            ) from None
        finally:
            LIVE_TOOL.reset(token)

    def record(self, output: Any) -> dict[str, Any]:
        try:
            return output_record(self.call, output)
        except UnrecordableOutput as error:
            raise self.recording.refuse(str(error)) from None

    @contextlib.contextmanager
    def refusals(self) -> Iterator[None]:
        """Around the recorded call: refused while it ran (its output, or a call inside it), the run's error."""
        try:
            yield
        except Exception:
            self.recording.check()
            raise


def _rebuilt(h: Harness, call: Any, recorded: Any) -> Any:
    """What ToolNode hands the graph, from the record. In a replay the record is the journal's, which is
    hostile: a shape ``output_record`` does not write ends the replay on a journal error naming the seq."""
    try:
        return output_from_record(call, recorded)
    except _Unusable as unusable:
        event = h.last_event
        if event is not None and event.kind == TOOL_RESULT and event.payload.get("call_id") == call.get("id"):
            seq: int | None = event.seq
        else:  # another flow wrote since: this flow's own last observation is the result it was served
            seq = h.flow_observation_seq()
        raise h.unusable_record(unusable.schema_error(seq)) from None

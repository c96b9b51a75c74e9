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

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from langgraph.errors import GraphBubbleUp

from ....journal.model import TOOL_RESULT
from .recorder import IN_TOOLNODE, LIVE_TOOL, GraphRecorder, recorder_for
from .tool_outputs import UnrecordableOutput, _Unusable, output_from_record, output_record

if TYPE_CHECKING:
    from ...harness import Harness

__all__ = ["execute_recorded", "aexecute_recorded", "tools_recorded_elsewhere"]

#: Tests of tools whose calls something else records (an MCP recorder's): ToolNode runs them as they are.
_RECORDED_ELSEWHERE: list[Callable[[Any], bool]] = []


def tools_recorded_elsewhere(test: Callable[[Any], bool]) -> None:
    """Leave the tools ``test(tool)`` picks to their own recorder (the seam for tools whose calls another
    recorder keeps, e.g. MCP tools recorded at the MCP session): ToolNode runs them, record and replay."""
    _RECORDED_ELSEWHERE.append(test)


def _recording(node: Any, request: Any, config: Any) -> GraphRecorder | None:
    """The recorder of this execution, or None when it runs as it is."""
    if LIVE_TOOL.get() is not None or request.tool is None:  # inside a recorded tool; an unknown tool's error
        return None
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
    h, call, refusal = recorder.h, request.tool_call, _Refusal(recorder)

    def live(arguments: Any) -> dict[str, Any]:
        token = LIVE_TOOL.set(call["name"])
        try:
            output = execute(node, request.override(tool_call={**call, "args": arguments}), input_type, config)
        except GraphBubbleUp:
            raise refusal.interrupted(call) from None
        finally:
            LIVE_TOOL.reset(token)
        return refusal.record(call, output)

    try:
        recorded = h.record_tool_call(call["name"], call.get("args") or {}, live, call_id=call.get("id"))
    except Exception:
        recorder.recording.check()  # refused while it ran (its output, or a call inside it): the run's error
        raise
    return _rebuilt(h, call, recorded)


async def _aexecute(
    node: Any, request: Any, input_type: Any, config: Any, execute: Callable[..., Awaitable[Any]]
) -> Any:
    recorder = _recording(node, request, config)
    if recorder is None:
        return await execute(node, request, input_type, config)
    h, call, refusal = recorder.h, request.tool_call, _Refusal(recorder)

    async def live(arguments: Any) -> dict[str, Any]:
        token = LIVE_TOOL.set(call["name"])
        try:
            output = await execute(node, request.override(tool_call={**call, "args": arguments}), input_type, config)
        except GraphBubbleUp:
            raise refusal.interrupted(call) from None
        finally:
            LIVE_TOOL.reset(token)
        return refusal.record(call, output)

    try:
        recorded = await h.arecord_tool_call(call["name"], call.get("args") or {}, live, call_id=call.get("id"))
    except Exception:
        recorder.recording.check()  # refused while it ran (its output, or a call inside it): the run's error
        raise
    return _rebuilt(h, call, recorded)


class _Refusal:
    """What the recorder cannot keep of a tool's run: the harness records the call as failed with it, and the
    run stops with it (never handed to the graph as the tool's error, which a graph may carry on past)."""

    def __init__(self, recorder: GraphRecorder) -> None:
        self.recording = recorder.recording

    def record(self, call: Any, output: Any) -> dict[str, Any]:
        try:
            return output_record(call, output)
        except UnrecordableOutput as error:
            raise self.recording.refuse(str(error)) from None

    def interrupted(self, call: Any) -> Exception:
        return self.recording.refuse(
            f"tool {call['name']!r} interrupted the graph (interrupt() or a Command to a parent graph raised "
            "inside the tool): a replay serves the tool's result without running it, so the recorder does not "
            "record a tool that interrupts; interrupt in a node instead"
        )


def _rebuilt(h: Harness, call: Any, recorded: Any) -> Any:
    """What ToolNode hands the graph, from the record. In a replay the record is the journal's, which is
    hostile: a shape ``output_record`` does not write ends the replay on a journal error naming the seq."""
    try:
        return output_from_record(call, recorded)
    except _Unusable as unusable:
        event = h.last_event
        seq = (
            event.seq
            if event is not None and event.kind == TOOL_RESULT and event.payload.get("call_id") == call.get("id")
            else None  # another flow's event: no seq to name
        )
        raise h.unusable_record(unusable.schema_error(seq)) from None

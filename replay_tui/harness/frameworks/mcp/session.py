"""One MCP session recorded at the seam between ``ClientSession`` and its transport (see ../mcp.md).

The client is handed a pair of streams of ours. What it writes becomes tool calls, written when it is sent
(in the client's own task and lane, so it hangs from what that flow received):

* a request (``initialize``, ``tools/list``, ``tools/call``...): ``tool.call mcp:<server> <method>`` with its
  params; its ``tool.result`` is the server's answer, the JSON text of the JSON-RPC result (member order kept)
  or the JSON-RPC error, written when it arrives;
* an answer to what the server asked (sampling, elicitation, roots, ping): ``tool.call mcp:<server> reply
  <method>`` with ``{request, result | error}``, the server's request and what the client's callback answered;
* a notification: ``tool.call mcp:<server> notify <method>``.

What the server sends that answers nothing (its requests to the client, progress, log messages, list changes)
is kept, with the seq of the last event written when it arrived, in the result of the session's own call,
``mcp:<server> connect``, written when the session closes. A strict replay takes that result when the session
opens (``Harness.aopen_tool_call(take_result=True)``) and hands each message to the client when the replay has
written that seq: the client's callbacks run again at their place, and what they answer is a tool.call the
replay compares. Answers come from the journal at their recorded turns; nothing is spawned or connected.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any

import anyio

from ....journal.errors import SchemaError
from ....journal.model import TOOL_RESULT
from ...seam import StopRun, error_from_payload, error_to_payload
from . import wire

if TYPE_CHECKING:
    from mcp.shared.message import SessionMessage

    from ....journal import Event
    from ...harness import Harness, OpenToolCall


class MCPServerError(Exception):
    """The server answered a request with a JSON-RPC error; the message is the error object as JSON text
    (``code``, ``message``, ``data``), so the journal keeps all of it and a replay hands back the same."""

    def __init__(self, error: dict[str, Any]) -> None:
        code = error.get("code")
        self.code = code if type(code) is int else None
        super().__init__(wire.dumps(error))


class ServerGone(ConnectionError):
    """The server's stream ended, or could not be written, before it answered."""


def tool_name(server: str, method: str, params: Any) -> str:
    """``mcp:<server> <method>``, with the tool or prompt a call names: what a person reads on the timeline."""
    named = params.get("name") if isinstance(params, dict) and method in ("tools/call", "prompts/get") else None
    return f"mcp:{server} {method}" + (f" {named}" if isinstance(named, str) else "")


class _ReplayOrder:
    """A replay hands the client the server's kept messages and the recorded answers in the order the recording's
    client got them: a message once the run has written the seq it came after (every seq up to it) and no answer
    written by then is still on its way; an answer once every message that came before its tool.result has been
    handed over. A harness hook: it sees every event written, from any thread."""

    def __init__(self, loop: asyncio.AbstractEventLoop, start: int, after: list[int]) -> None:
        self.loop = loop
        self.thread = threading.get_ident()
        self.upto = start
        self.after = after  # the seq each kept message came after, in order
        self.next = 0  # the kept message to hand over next
        self.calls: set[str] = set()  # this session's requests (their tool.results are answers)
        self.written: dict[str, int] = {}  # call id -> seq of its tool.result, until the client has the answer
        self._ahead: set[int] = set()
        self._lock = threading.Lock()
        self._changed: asyncio.Future[None] = loop.create_future()

    def on_event(self, event: Event) -> None:
        with self._lock:
            if event.seq > self.upto:
                self._ahead.add(event.seq)
                while self.upto + 1 in self._ahead:
                    self.upto += 1
                    self._ahead.discard(self.upto)
            call_id = event.payload.get("call_id") if event.kind == TOOL_RESULT else None
            if call_id in self.calls:
                self.written[call_id] = event.seq
        if threading.get_ident() == self.thread:
            self._notify()
        else:
            self.loop.call_soon_threadsafe(self._notify)

    def _notify(self) -> None:
        changed, self._changed = self._changed, self.loop.create_future()
        changed.set_result(None)

    async def _until(self, ready: Callable[[], bool]) -> None:
        while True:
            with self._lock:
                if ready():
                    return
                changed = self._changed
            await changed

    async def message_turn(self, after_seq: int) -> None:
        await self._until(lambda: self.upto >= after_seq and all(seq > after_seq for seq in self.written.values()))

    def handed(self) -> None:
        with self._lock:
            self.next += 1
        self._notify()

    async def answer_turn(self, call_id: str) -> None:
        with self._lock:
            seq = self.written.get(call_id)
        if seq is not None:
            await self._until(lambda: self.next >= len(self.after) or self.after[self.next] >= seq)

    def delivered(self, call_id: str) -> None:
        with self._lock:
            self.written.pop(call_id, None)
        self._notify()


class _Answer:
    """A request the client sent, waiting for the server's answer (recording) or the recorded one (replay)."""

    def __init__(self, request_id: Any, call: OpenToolCall) -> None:
        self.id = request_id
        self.call = call
        self.arrived: asyncio.Future[wire.Message] = asyncio.get_running_loop().create_future()
        self.delivered = asyncio.Event()  # the client has been handed the answer (the pump waits for it)
        self.unsent: BaseException | None = None  # recording: the request could not reach the server
        self.task: asyncio.Task[None] | None = None


class _ClientWrites:
    """The stream the client writes to: each message goes through the session, in the client's own task."""

    def __init__(self, session: RecordedSession) -> None:
        self._session = session
        self._closed = False

    async def send(self, item: SessionMessage) -> None:
        if self._closed:
            raise anyio.ClosedResourceError
        await self._session.from_client(item)

    def close(self) -> None:
        self._closed = True

    async def aclose(self) -> None:
        self._closed = True

    def clone(self) -> _ClientWrites:
        return self

    async def __aenter__(self) -> _ClientWrites:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._closed = True


class RecordedSession:
    """The two streams handed to the client and everything between them and the server or the journal."""

    def __init__(self, h: Harness, server: str, connect: OpenToolCall, live_write: Any) -> None:
        self.h = h
        self.server = server
        self.connect = connect
        self.live_write = live_write  # recording: the transport's write stream; None in a replay
        self.to_client, self.client_reads = anyio.create_memory_object_stream[Any](0)
        self.client_writes = _ClientWrites(self)
        self.answers: dict[Any, _Answer] = {}
        self.asked: dict[Any, wire.Message] = {}  # server request id -> the request the client was handed
        self.token_calls: dict[Any, str] = {}  # progress token -> the call id it was asked for (recording)
        self.call_tokens: dict[str, Any] = {}  # call id -> the progress token the client chose this run
        self.sent: list[dict[str, Any]] = []  # recording: what the server sent that answers nothing
        self.tasks: set[asyncio.Task[None]] = set()
        self.stopped: BaseException | None = None
        self.order: _ReplayOrder | None = None  # a replay's order of handing things to the client

    # -- what the client sends ------------------------------------------------------------------

    async def from_client(self, item: SessionMessage) -> None:
        if self.stopped is not None:
            raise self.stopped
        message = wire.read(item)
        if message.kind == "request":  # (sent from the agent's own flow: a replay's stop ends it there)
            try:
                await self._request(message, item)
            except StopRun as stop:
                self._stop(stop)
                raise
            return
        try:
            if message.kind in ("response", "error"):
                await self._reply(message, item)
            elif message.method == "notifications/cancelled":
                await self._cancelled(message, item)
            else:
                await self._one_way(tool_name(self.server, f"notify {message.method}", None), message.params, item)
        except StopRun as stop:
            # sent from the client's receive loop: raised there it would end the client's task group (an exception
            # group the run cannot tell from a crash). The client is told its server is gone instead, and the
            # stop is raised when the transport closes; the agent's next harness call raises it sooner.
            self._stop(stop)

    async def _request(self, message: wire.Message, item: SessionMessage) -> None:
        assert message.method is not None
        name = tool_name(self.server, message.method, message.params)
        call = await self.h.aopen_tool_call(name, wire.call_arguments(message.params))
        call_id = call.event.payload["call_id"]
        if self.order is not None:
            self.order.calls.add(call_id)
        token = wire.progress_token(message.params)
        if token is not None:
            self.token_calls[token] = call_id
            self.call_tokens[call_id] = token
        answer = _Answer(message.id, call)
        self.answers[message.id] = answer
        if self.live_write is not None:
            try:
                await self.live_write.send(item)  # the request as the client made it
            except (anyio.ClosedResourceError, anyio.BrokenResourceError) as error:
                answer.unsent = ServerGone(f"the MCP server {self.server!r} cannot be written to: {error!r}")
        # a task of the client's flow: the result it writes is what that flow received
        answer.task = asyncio.get_running_loop().create_task(self._answer(answer))
        self.tasks.add(answer.task)
        answer.task.add_done_callback(self.tasks.discard)

    async def _answer(self, answer: _Answer) -> None:
        async def live() -> str:
            if answer.unsent is not None:
                raise answer.unsent
            arrived = await answer.arrived
            if arrived.kind == "error":
                raise MCPServerError(arrived.error if isinstance(arrived.error, dict) else {"message": arrived.error})
            return wire.dumps(arrived.result)

        try:
            try:
                text = await self.h.aclose_tool_call(answer.call, live)
                reply = wire.response(answer.id, self._recorded_json(text, answer.call))
            except StopRun as stop:
                self._stop(stop)
                return
            except Exception as error:  # the recorded error, as the harness raises it
                reply = wire.error_response(answer.id, _error_object(error))
            if self.order is not None:
                await self.order.answer_turn(answer.call.event.payload["call_id"])
            with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
                await self.to_client.send(reply)
        finally:
            answer.delivered.set()
            self.answers.pop(answer.id, None)
            if self.order is not None:
                self.order.delivered(answer.call.event.payload["call_id"])

    async def _reply(self, message: wire.Message, item: SessionMessage) -> None:
        asked = self.asked.pop(message.id, None)
        method = asked.method if asked is not None else "(unknown request)"
        arguments: dict[str, Any] = {"request": wire.call_arguments(asked.params) if asked is not None else None}
        if message.kind == "error":
            arguments["error"] = message.error
        else:
            arguments["result"] = message.result
        await self._one_way(tool_name(self.server, f"reply {method}", None), arguments, item)

    async def _one_way(self, name: str, arguments: Any, item: SessionMessage) -> None:
        """A message the server does not answer: its tool.call, then its result (that it was sent) at once."""
        call = await self.h.aopen_tool_call(name, wire.call_arguments(arguments))

        async def live() -> None:
            try:
                await self.live_write.send(item)
            except (anyio.ClosedResourceError, anyio.BrokenResourceError) as error:
                raise ServerGone(f"the MCP server {self.server!r} cannot be written to: {error!r}") from None

        await self.h.aclose_tool_call(call, live)

    async def _cancelled(self, message: wire.Message, item: SessionMessage) -> None:
        """The client gave a request up: the request's result records that (cancelled), and the server is told."""
        params = message.params if isinstance(message.params, dict) else {}
        answer = self.answers.get(params.get("requestId"))
        if self.live_write is not None:
            with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
                await self.live_write.send(item)
        if answer is not None and answer.task is not None:
            answer.task.cancel()

    # -- what the server sends (recording) --------------------------------------------------------

    async def pump(self, live_read: Any) -> None:
        """Read the server's stream in order: an answer goes to the call waiting for it (and the next message
        waits until the client has it, as without the recorder); anything else is kept and handed over."""
        async for item in live_read:
            if isinstance(item, Exception):
                await self._kept({"exception": error_to_payload(item)})
                continue
            message = wire.read(item)
            if message.kind in ("response", "error"):
                answer = self.answers.get(message.id)
                if answer is not None and not answer.arrived.done():
                    answer.arrived.set_result(message)
                    await answer.delivered.wait()
                continue  # (no one waits: a request the client gave up)
            entry: dict[str, Any] = {"message": wire.message_text(message)}
            if message.method == "notifications/progress" and isinstance(message.params, dict):
                call_id = self.token_calls.get(message.params.get("progressToken"))
                if call_id is not None:
                    entry["progress_of"] = call_id
            await self._kept(entry)
        await self._kept({"closed": True})

    async def _kept(self, entry: dict[str, Any]) -> None:
        entry = {"after_seq": self.h.last_seq, **self.h.redactor.redact_value(entry)}
        self.sent.append(entry)
        await self.hand_over(entry, None)

    # -- handing the server's messages to the client (both) ---------------------------------------

    async def hand_over(self, entry: dict[str, Any], seq: int | None) -> None:
        """Give the client one kept message: as the journal holds it, recording and replay alike."""
        if entry.get("closed") is True:
            self.to_client.close()
            return
        if "exception" in entry:
            error = entry["exception"]
            if not isinstance(error, dict):
                raise self._unusable(seq, "exception", "a recorded error, an object", error)
            item: Any = error_from_payload(error)
        else:
            try:
                body = wire.loads_text(entry.get("message"))
                message = wire.read(wire.session_message(body))
            except ValueError:
                raise self._unusable(seq, "message", "a JSON-RPC message as JSON text", entry.get("message"))
            call_id = entry.get("progress_of")
            if isinstance(call_id, str) and call_id in self.call_tokens and isinstance(body.get("params"), dict):
                body["params"]["progressToken"] = self.call_tokens[call_id]  # the token this run's client chose
            if message.kind == "request":
                self.asked[message.id] = message
            item = wire.session_message(body)
        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
            await self.to_client.send(item)

    async def serve_recorded(self, entries: list[dict[str, Any]], order: _ReplayOrder) -> None:
        """A replay: each message the server sent, at its place (``_ReplayOrder``)."""
        seq = self.connect.taken.seq if self.connect.taken is not None else None
        try:
            for entry in entries:
                await order.message_turn(entry["after_seq"])
                await self.hand_over(entry, seq)
                order.handed()
        except StopRun as stop:
            self._stop(stop)
            raise

    # -- helpers ------------------------------------------------------------------------------------

    def _recorded_json(self, text: Any, call: OpenToolCall) -> Any:
        try:
            return wire.loads_text(text)
        except ValueError:
            what = f"the answer to {call.event.payload['tool']} ({call.event.payload['call_id']}), as JSON text"
            raise self.h.unusable_record(SchemaError("payload.result", what, text)) from None

    def _unusable(self, seq: int | None, field: str, expected: str, found: Any) -> BaseException:
        path = "payload.result.messages" + (f"[].{field}" if field else "[]")
        return self.h.unusable_record(SchemaError(path, expected, found, seq=seq))

    def _stop(self, stop: BaseException) -> None:
        """A replay stopped (a divergence): the client is told its server is gone, so nothing waits on it."""
        if self.stopped is None:
            self.stopped = stop
        self.to_client.close()

    async def close_calls(self) -> None:
        """Stop waiting for answers that never came (recorded as cancelled calls) and for the client to read."""
        tasks = list(self.tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self.to_client.close()


def _error_object(error: Exception) -> dict[str, Any]:
    """The JSON-RPC error the client gets for a recorded error: the server's own (``MCPServerError``'s JSON
    text), else an internal error with the recorded message (a transport that failed)."""
    message = getattr(error, "message", None) or str(error)
    try:
        parsed = wire.loads_text(message)
    except ValueError:
        parsed = None
    if isinstance(parsed, dict) and type(parsed.get("code")) is int and isinstance(parsed.get("message"), str):
        return parsed
    return {"code": wire.INTERNAL_ERROR, "message": message}


def _noop_session_id() -> None:
    return None


@contextlib.asynccontextmanager
async def recorded_transport(
    h: Harness,
    server: str,
    kind: str,
    open_live: Callable[[], AbstractAsyncContextManager[Any]],
    arity: int = 2,
) -> AsyncIterator[tuple[Any, ...]]:
    """The transport an MCP client of the run uses: the live one, tapped, while recording (``open_live()`` is
    entered then); the journal in a replay (``open_live`` never called: no process, no socket)."""
    connect = await h.aopen_tool_call(f"mcp:{server} connect", {"transport": kind}, take_result=True)
    if connect.taken is not None:
        async with _replayed(h, server, connect) as streams:
            yield (*streams, *(_noop_session_id,) * (arity - 2))
        return
    async with _recorded(h, server, connect, open_live) as (streams, extras):
        yield (*streams, *extras)


@contextlib.asynccontextmanager
async def _recorded(
    h: Harness, server: str, connect: OpenToolCall, open_live: Callable[[], AbstractAsyncContextManager[Any]]
) -> AsyncIterator[tuple[tuple[Any, Any], tuple[Any, ...]]]:
    live_cm = open_live()
    try:
        opened = await live_cm.__aenter__()
    except Exception as failed:
        await h.aclose_tool_call(connect, functools.partial(_raise, failed))  # raises the error as recorded
        raise  # (never reached: the recorded error is raised)
    live_read, live_write, *extras = opened
    session = RecordedSession(h, server, connect, live_write)
    pump = asyncio.get_running_loop().create_task(session.pump(live_read))
    raised: BaseException | None = None
    try:
        yield (session.client_reads, session.client_writes), tuple(extras)
    except BaseException as error:
        raised = error
        raise
    finally:
        await session.close_calls()
        pump.cancel()
        await asyncio.gather(pump, return_exceptions=True)
        await live_cm.__aexit__(type(raised) if raised else None, raised, raised.__traceback__ if raised else None)

        async def kept() -> dict[str, Any]:
            return {"messages": session.sent}

        await h.aclose_tool_call(connect, kept)


@contextlib.asynccontextmanager
async def _replayed(h: Harness, server: str, connect: OpenToolCall) -> AsyncIterator[tuple[Any, Any]]:
    payload = connect.recorded or {}
    session = RecordedSession(h, server, connect, None)
    result = payload.get("result")
    if payload.get("error") or not isinstance(result, dict) or not isinstance(result.get("messages"), list):
        if payload.get("error"):
            await h.aclose_tool_call(connect, _no_live)  # the connection failed when recorded: it fails again
        raise session._unusable(connect.taken.seq if connect.taken else None, "", "the kept server messages", result)
    entries = result["messages"]
    for entry in entries:
        if not isinstance(entry, dict) or type(entry.get("after_seq")) is not int:
            expected = "a kept server message {after_seq, message | exception | closed}"
            raise session._unusable(connect.taken.seq if connect.taken else None, "", expected, entry)
    watch = session.order = _ReplayOrder(
        asyncio.get_running_loop(), connect.event.seq, [e["after_seq"] for e in entries]
    )
    h.hooks = [*h.hooks, watch]  # type: ignore[list-item]  # (a new list: a writer in another thread iterates the old one)
    serving = asyncio.get_running_loop().create_task(session.serve_recorded(entries, watch))
    raised: BaseException | None = None
    try:
        yield session.client_reads, session.client_writes
    except BaseException as error:
        raised = error
        raise
    finally:
        await session.close_calls()
        serving.cancel()
        outcome = (await asyncio.gather(serving, return_exceptions=True))[0]
        h.hooks = [hook for hook in h.hooks if hook is not watch]  # type: ignore[comparison-overlap]
        stopped = session.stopped or (outcome if isinstance(outcome, StopRun) else None)
        if stopped is None and not isinstance(raised, StopRun):
            await h.aclose_tool_call(connect, _no_live)  # (written when recorded, whatever the client raised)
        elif stopped is not None and not isinstance(raised, StopRun):
            raise stopped  # (what the client made of its server going away is not the run's end: the stop is)


async def _raise(error: BaseException) -> None:
    raise error


async def _no_live() -> Any:
    raise AssertionError("a replayed MCP session has no live server")

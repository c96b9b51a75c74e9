"""A loopback server of scripted server-sent-event streams, for the streaming transport tests and the bench.

Every POST is answered with ``200 text/event-stream`` in chunked encoding, played from a script: send bytes,
sleep, wait for a gate (recording whether it waited in vain), close the connection mid-stream, or stall
until released. Builders write the three APIs' events (chat completions, Anthropic messages, the Responses
API) from a list of text deltas and tool-call argument fragments. Plain sockets, so a test controls every
byte and the moment the connection ends.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable


@dataclass
class Send:
    data: bytes


@dataclass
class Sleep:
    seconds: float


@dataclass
class Wait:
    """Wait for ``gate`` (at most ``timeout`` s; a wait that runs out is counted in ``timed_out``)."""

    gate: threading.Event
    timeout: float = 10.0


@dataclass
class Close:
    """End the connection here, without the chunked body's end: the client reads a cut stream."""


@dataclass
class Stall:
    """Send nothing more until ``gate`` is set (or ``timeout`` s), then close: the client's read times out."""

    gate: threading.Event
    timeout: float = 30.0


Step = Send | Sleep | Wait | Close | Stall
Script = Callable[[dict[str, Any]], list[Step]]


@dataclass
class StreamServer:
    """Serves ``script(request body)`` on 127.0.0.1; ``received`` keeps the bodies, ``timed_out`` the vain waits."""

    script: Script
    received: list[dict[str, Any]] = field(default_factory=list)
    timed_out: int = 0

    def __post_init__(self) -> None:
        self._socket = socket.create_server(("127.0.0.1", 0))
        self.port = self._socket.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._closed = threading.Event()
        self._connections: set[socket.socket] = set()
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def close(self) -> None:
        """Stop accepting and end every open connection (closing a socket does not wake a thread blocked in
        accept(): a closed server went on answering its port with its old script)."""
        self._closed.set()
        for sock in (self._socket, *list(self._connections)):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self._socket.close()
        self._thread.join(timeout=5)

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                connection, _ = self._socket.accept()
            except OSError:
                return
            if self._closed.is_set():
                connection.close()
                return
            self._connections.add(connection)
            threading.Thread(target=self._serve, args=(connection,), daemon=True).start()

    def _serve(self, connection: socket.socket) -> None:
        try:
            self._serve_requests(connection)
        except OSError:
            pass  # the client went away, or the server was closed
        finally:
            self._connections.discard(connection)
            connection.close()

    def _serve_requests(self, connection: socket.socket) -> None:
        connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        buffer = b""
        while True:
            while b"\r\n\r\n" not in buffer:
                data = connection.recv(65536)
                if not data:
                    return
                buffer += data
            head, _, buffer = buffer.partition(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            while len(buffer) < length:
                data = connection.recv(65536)
                if not data:
                    return
                buffer += data
            body, buffer = buffer[:length], buffer[length:]
            request = json.loads(body or b"{}")
            self.received.append(request)
            if not self._answer(connection, self.script(request)):
                return

    def _answer(self, connection: socket.socket, steps: list[Step]) -> bool:
        """Play ``steps``; False when the connection was ended on purpose."""
        connection.sendall(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n"
            b"x-request-id: req-stream\r\nset-cookie: session=abcdef0123456789\r\n\r\n"
        )
        for step in steps:
            if isinstance(step, Send):
                connection.sendall(b"%x\r\n%s\r\n" % (len(step.data), step.data))
            elif isinstance(step, Sleep):
                time.sleep(step.seconds)
            elif isinstance(step, Wait):
                if not step.gate.wait(step.timeout):
                    self.timed_out += 1
            elif isinstance(step, Close):
                connection.shutdown(socket.SHUT_RDWR)
                return False
            elif isinstance(step, Stall):
                step.gate.wait(step.timeout)
                return False
        connection.sendall(b"0\r\n\r\n")
        return True


def _event(data: Any, name: str | None = None) -> bytes:
    head = f"event: {name}\n" if name else ""
    return f"{head}data: {json.dumps(data)}\n\n".encode()


def chat_events(texts: list[str], arguments: list[str] = (), *, model: str = "gpt-4.1-mini") -> list[bytes]:  # type: ignore[assignment]
    """A chat-completions stream: a role chunk, each text delta, one tool call's argument fragments, the end."""
    base = {"id": "chatcmpl-s1", "object": "chat.completion.chunk", "created": 1764460800, "model": model}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        return _event({**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})

    events = [chunk({"role": "assistant", "content": ""})]
    events += [chunk({"content": text}) for text in texts]
    for position, part in enumerate(arguments):
        call: dict[str, Any] = {"index": 0, "function": {"arguments": part}}
        if position == 0:
            call.update({"id": "call_s1", "type": "function"})
            call["function"]["name"] = "lookup"
        events.append(chunk({"tool_calls": [call]}))
    events.append(chunk({}, "tool_calls" if arguments else "stop"))
    usage = {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}
    events.append(_event({**base, "choices": [], "usage": usage}))
    events.append(b"data: [DONE]\n\n")
    return events


def anthropic_events(texts: list[str], arguments: list[str] = ()) -> list[bytes]:  # type: ignore[assignment]
    """An Anthropic messages stream: a text block of the deltas, then a tool_use block of the fragments."""
    message = {
        "id": "msg_s1",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 11, "output_tokens": 1},
    }
    events = [_event({"type": "message_start", "message": message}, "message_start")]
    start = {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}
    events.append(_event(start, "content_block_start"))
    for text in texts:
        delta = {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}}
        events.append(_event(delta, "content_block_delta"))
    events.append(_event({"type": "content_block_stop", "index": 0}, "content_block_stop"))
    if arguments:
        block = {"type": "tool_use", "id": "toolu_s1", "name": "lookup", "input": {}}
        events.append(
            _event({"type": "content_block_start", "index": 1, "content_block": block}, "content_block_start")
        )
        for part in arguments:
            delta = {
                "type": "content_block_delta",
                "index": 1,
                "delta": {"type": "input_json_delta", "partial_json": part},
            }
            events.append(_event(delta, "content_block_delta"))
        events.append(_event({"type": "content_block_stop", "index": 1}, "content_block_stop"))
    stop = "tool_use" if arguments else "end_turn"
    events.append(
        _event(
            {"type": "message_delta", "delta": {"stop_reason": stop}, "usage": {"output_tokens": 7}}, "message_delta"
        )
    )
    events.append(_event({"type": "message_stop"}, "message_stop"))
    return events


def responses_events(texts: list[str], arguments: list[str] = ()) -> list[bytes]:  # type: ignore[assignment]
    """A Responses API stream: a message item of the text deltas, then a function call of the fragments;
    the ``.done`` events and ``response.completed`` repeat the whole text, as the API does."""
    sequence = iter(range(1, 1000))
    text, joined = "".join(texts), "".join(arguments)
    response = {"id": "resp_s1", "object": "response", "created_at": 1764460800, "model": "gpt-4.1-mini"}
    response.update({"status": "in_progress", "output": [], "usage": None})

    def event(kind: str, **fields: Any) -> bytes:
        return _event({"type": kind, "sequence_number": next(sequence), **fields}, kind)

    message = {"id": "msg_r1", "type": "message", "status": "in_progress", "role": "assistant", "content": []}
    part = {"type": "output_text", "text": "", "annotations": []}
    events = [event("response.created", response=response), event("response.in_progress", response=response)]
    events.append(event("response.output_item.added", output_index=0, item=message))
    events.append(event("response.content_part.added", item_id="msg_r1", output_index=0, content_index=0, part=part))
    for delta in texts:
        fields = {"item_id": "msg_r1", "output_index": 0, "content_index": 0, "delta": delta, "logprobs": []}
        events.append(event("response.output_text.delta", **fields))
    done_part = {**part, "text": text}
    events.append(
        event("response.output_text.done", item_id="msg_r1", output_index=0, content_index=0, text=text, logprobs=[])
    )
    events.append(
        event("response.content_part.done", item_id="msg_r1", output_index=0, content_index=0, part=done_part)
    )
    done_message = {**message, "status": "completed", "content": [done_part]}
    events.append(event("response.output_item.done", output_index=0, item=done_message))
    output = [done_message]
    if arguments:
        call = {"id": "fc_r1", "type": "function_call", "status": "in_progress", "call_id": "call_r1"}
        call.update({"name": "lookup", "arguments": ""})
        events.append(event("response.output_item.added", output_index=1, item=call))
        for delta in arguments:
            events.append(event("response.function_call_arguments.delta", item_id="fc_r1", output_index=1, delta=delta))
        events.append(event("response.function_call_arguments.done", item_id="fc_r1", output_index=1, arguments=joined))
        done_call = {**call, "status": "completed", "arguments": joined}
        events.append(event("response.output_item.done", output_index=1, item=done_call))
        output.append(done_call)
    usage = {"input_tokens": 11, "output_tokens": 7, "total_tokens": 18}
    completed = {**response, "status": "completed", "output": output, "usage": usage}
    events.append(event("response.completed", response=completed))
    return events


def played(events: list[bytes], *, gap: float = 0.0) -> list[Step]:
    """Each event in a chunk of its own, ``gap`` seconds apart."""
    steps: list[Step] = []
    for index, data in enumerate(events):
        if index and gap:
            steps.append(Sleep(gap))
        steps.append(Send(data))
    return steps


def gated(events: list[bytes], *, first: int = 2, timeout: float = 5.0) -> tuple[list[Step], threading.Event]:
    """The first ``first`` events, then nothing until the gate is set (at most ``timeout`` s), then the rest:
    a client that gets the first text only once the whole stream is in makes the server wait in vain."""
    gate = threading.Event()
    return [*played(events[:first]), Wait(gate, timeout=timeout), *played(events[first:])], gate

"""Small LLM API servers on 127.0.0.1 for the transport, plugin and framework tests.

One threaded ``http.server`` answers ``POST .../chat/completions`` in the OpenAI
wire format, ``POST .../messages`` in the Anthropic one and ``POST .../responses`` in
the OpenAI Responses API's, streamed (SSE) or not. What it answers is decided by a
policy: a function of the harness-style request (``messages`` with ``tool_calls`` as
``{id, name, arguments}``, plus the ``instructions`` and the names of the ``tools``
offered) returning ``{content, tool_calls}``; by default the weather policy of the SDK
fixture agents. Every request it receives is kept (path, headers, body, and its bytes
as they came) so tests can see what reached the wire; ``delay_s`` holds each answer
back and ``intervals`` keeps when each request came and was answered (concurrency);
``event_gap_s`` sends a stream's events that far apart (streams passing through).
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Mapping

Policy = Callable[[Mapping[str, Any]], Mapping[str, Any]]


def weather_policy(request: Mapping[str, Any]) -> dict[str, Any]:
    """Ask for the weather of the city in the question, then answer with it."""
    last = request["messages"][-1]
    if last["role"] == "tool":
        return {"content": f"The weather: {last['content']}."}
    city = str(last["content"]).rsplit(" ", 1)[-1].strip("?.")
    return {
        "content": "Let me check.",
        "tool_calls": [{"id": "call_w1", "name": "weather", "arguments": {"city": city}}],
    }


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    raw: bytes = b""  # the body's bytes as they came (byte-for-byte comparisons)


@dataclass
class FakeLLM:
    policy: Policy = weather_policy
    received: list[Received] = field(default_factory=list)
    usage_details: bool = True  # OpenAI's usage carries *_tokens_details objects
    delay_s: float = 0.0  # how long each answer is held back
    event_gap_s: float = 0.0  # between a stream's events
    intervals: list[tuple[float, float]] = field(default_factory=list)  # (came, answered), perf_counter seconds
    lock: threading.Lock = field(default_factory=threading.Lock)


def _text_of(content: Any) -> str:
    """The text of a message's content: a string, or a list of text parts (any API's part shapes)."""
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content or () if isinstance(part, Mapping))


def _tool_names(body: Mapping[str, Any]) -> list[str]:
    names = []
    for tool in body.get("tools") or ():
        function = tool.get("function") if isinstance(tool.get("function"), Mapping) else tool
        if isinstance(function.get("name"), str):
            names.append(function["name"])
    return names


def _instructions(body: Mapping[str, Any]) -> str:
    if "instructions" in body:  # the Responses API
        return str(body.get("instructions") or "")
    if "system" in body:  # Anthropic
        return _text_of(body.get("system"))
    system = [m for m in body.get("messages") or () if m.get("role") in ("system", "developer")]
    return "\n".join(_text_of(m.get("content")) for m in system)


def policy_request(body: Mapping[str, Any], messages: list[dict[str, Any]]) -> dict[str, Any]:
    """What a policy is asked: the model, the harness-style messages, the instructions, the tools offered."""
    return {
        "model": body.get("model"),
        "messages": messages,
        "instructions": _instructions(body),
        "tools": _tool_names(body),
    }


def harness_messages_from_openai(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    messages = []
    for message in body.get("messages") or ():
        converted = {"role": message["role"], "content": message.get("content")}
        if message.get("tool_calls"):
            converted["tool_calls"] = [
                {
                    "id": call["id"],
                    "name": call["function"]["name"],
                    "arguments": json.loads(call["function"]["arguments"] or "{}"),
                }
                for call in message["tool_calls"]
            ]
        if message.get("tool_call_id"):
            converted["tool_call_id"] = message["tool_call_id"]
        messages.append(converted)
    return messages


def harness_messages_from_anthropic(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    messages = []
    for message in body.get("messages") or ():
        content = message.get("content")
        if isinstance(content, str):
            messages.append({"role": message["role"], "content": content})
            continue
        for block in content or ():
            if block.get("type") == "tool_use":  # the calls an assistant turn made
                call = {"id": block["id"], "name": block["name"], "arguments": block.get("input") or {}}
                if messages and messages[-1]["role"] == message["role"] and "tool_calls" in messages[-1]:
                    messages[-1]["tool_calls"].append(call)
                else:
                    messages.append({"role": message["role"], "content": None, "tool_calls": [call]})
            elif block.get("type") == "tool_result":
                text = (
                    block["content"]
                    if isinstance(block["content"], str)
                    else "".join(part.get("text", "") for part in block["content"])
                )
                messages.append({"role": "tool", "content": text, "tool_call_id": block["tool_use_id"]})
            elif block.get("type") == "text":
                messages.append({"role": message["role"], "content": block["text"]})
    return messages


def harness_messages_from_responses(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The Responses API's ``input`` items as harness-style messages (function calls and their outputs)."""
    raw = body.get("input")
    items = [{"role": "user", "content": raw}] if isinstance(raw, str) else list(raw or ())
    messages: list[dict[str, Any]] = []
    for item in items:
        kind = item.get("type", "message")
        if kind == "function_call":
            call = {"id": item["call_id"], "name": item["name"], "arguments": json.loads(item.get("arguments") or "{}")}
            if messages and messages[-1]["role"] == "assistant" and "tool_calls" in messages[-1]:
                messages[-1]["tool_calls"].append(call)
            else:
                messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        elif kind == "function_call_output":
            output = item.get("output")
            messages.append({"role": "tool", "content": _text_of(output), "tool_call_id": item["call_id"]})
        elif kind == "message":
            messages.append({"role": item.get("role", "user"), "content": _text_of(item.get("content"))})
    return messages


def _words(text: str) -> list[str]:
    words = text.split(" ")
    return [word if index == 0 else " " + word for index, word in enumerate(words)]


class _Handler(BaseHTTPRequestHandler):
    server: "_Server"

    def log_message(self, *args: Any) -> None:  # quiet
        pass

    def do_POST(self) -> None:  # noqa: N802 (http.server naming)
        came = time.perf_counter()
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length)
        body = json.loads(raw or b"{}")
        state = self.server.state
        with state.lock:
            state.received.append(Received(self.path, {k.lower(): v for k, v in self.headers.items()}, body, raw))
        if state.delay_s:
            time.sleep(state.delay_s)
        if self.path in ("/v1/chat/completions", "/chat/completions"):
            answer = dict(state.policy(policy_request(body, harness_messages_from_openai(body))))
            self._openai(body, answer)
        elif self.path in ("/v1/messages", "/messages"):
            answer = dict(state.policy(policy_request(body, harness_messages_from_anthropic(body))))
            self._anthropic(body, answer)
        elif self.path in ("/v1/responses", "/responses"):
            answer = dict(state.policy(policy_request(body, harness_messages_from_responses(body))))
            self._responses(body, answer)
        else:
            self._send(404, "application/json", json.dumps({"error": {"message": f"no route {self.path}"}}).encode())
        with state.lock:
            state.intervals.append((came, time.perf_counter()))

    def _send(self, status: int, content_type: str, data: bytes, extra: Mapping[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(data)))
        self.send_header("x-request-id", f"req-{len(self.server.state.received)}")
        self.send_header("set-cookie", "session=abcdef0123456789; HttpOnly")
        for name, value in (extra or {}).items():
            self.send_header(name, value)
        self.end_headers()
        gap = self.server.state.event_gap_s
        if not gap or content_type != "text/event-stream":
            self.wfile.write(data)
            return
        for index, event in enumerate(data.split(b"\n\n")[:-1]):  # each event on its own, gap apart
            if index:
                time.sleep(gap)
            self.wfile.write(event + b"\n\n")
            self.wfile.flush()

    # -- OpenAI -------------------------------------------------------------------------

    def _openai(self, body: Mapping[str, Any], answer: Mapping[str, Any]) -> None:
        calls = answer.get("tool_calls") or []
        finish = "tool_calls" if calls else "stop"
        usage: dict[str, Any] = {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}
        if self.server.state.usage_details:
            usage["prompt_tokens_details"] = {"cached_tokens": 0}
            usage["completion_tokens_details"] = {"reasoning_tokens": 0}
        wire_calls = [
            {
                "id": c["id"],
                "type": "function",
                "function": {"name": c["name"], "arguments": json.dumps(c["arguments"])},
            }
            for c in calls
        ]
        if not body.get("stream"):
            message: dict[str, Any] = {"role": "assistant", "content": answer.get("content")}
            if wire_calls:
                message["tool_calls"] = wire_calls
            completion = {
                "id": "chatcmpl-1",
                "object": "chat.completion",
                "created": 1764460800,
                "model": body.get("model"),
                "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
                "usage": usage,
            }
            self._send(200, "application/json", json.dumps(completion).encode())
            return
        events = []
        base = {
            "id": "chatcmpl-1",
            "object": "chat.completion.chunk",
            "created": 1764460800,
            "model": body.get("model"),
        }
        events.append(
            {**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}]}
        )
        for word in _words(answer.get("content") or ""):
            events.append({**base, "choices": [{"index": 0, "delta": {"content": word}, "finish_reason": None}]})
        for index, call in enumerate(wire_calls):
            arguments = call["function"]["arguments"]
            head = {
                "index": index,
                "id": call["id"],
                "type": "function",
                "function": {"name": call["function"]["name"], "arguments": arguments[:5]},
            }
            events.append({**base, "choices": [{"index": 0, "delta": {"tool_calls": [head]}, "finish_reason": None}]})
            tail = {"index": index, "function": {"arguments": arguments[5:]}}
            events.append({**base, "choices": [{"index": 0, "delta": {"tool_calls": [tail]}, "finish_reason": None}]})
        events.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
        events.append({**base, "choices": [], "usage": usage})
        data = "".join(f"data: {json.dumps(event)}\n\n" for event in events) + "data: [DONE]\n\n"
        self._send(200, "text/event-stream", data.encode())

    # -- Anthropic ----------------------------------------------------------------------

    def _anthropic(self, body: Mapping[str, Any], answer: Mapping[str, Any]) -> None:
        calls = answer.get("tool_calls") or []
        stop = "tool_use" if calls else "end_turn"
        blocks: list[dict[str, Any]] = []
        if answer.get("content"):
            blocks.append({"type": "text", "text": answer["content"]})
        blocks += [
            {"type": "tool_use", "id": call["id"], "name": call["name"], "input": call["arguments"]} for call in calls
        ]
        message = {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": body.get("model"),
            "content": blocks,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": {"input_tokens": 11, "output_tokens": 7},
        }
        if not body.get("stream"):
            self._send(200, "application/json", json.dumps(message).encode())
            return
        events: list[tuple[str, dict[str, Any]]] = [
            (
                "message_start",
                {
                    "type": "message_start",
                    "message": {
                        **message,
                        "content": [],
                        "stop_reason": None,
                        "usage": {"input_tokens": 11, "output_tokens": 1},
                    },
                },
            ),
        ]
        for index, block in enumerate(blocks):
            if block["type"] == "text":
                events.append(
                    (
                        "content_block_start",
                        {"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}},
                    )
                )
                for word in _words(block["text"]):
                    events.append(
                        (
                            "content_block_delta",
                            {
                                "type": "content_block_delta",
                                "index": index,
                                "delta": {"type": "text_delta", "text": word},
                            },
                        )
                    )
            else:
                start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
                events.append(
                    ("content_block_start", {"type": "content_block_start", "index": index, "content_block": start})
                )
                text = json.dumps(block["input"])
                for part in (text[:4], text[4:]):
                    events.append(
                        (
                            "content_block_delta",
                            {
                                "type": "content_block_delta",
                                "index": index,
                                "delta": {"type": "input_json_delta", "partial_json": part},
                            },
                        )
                    )
            events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
        events.append(
            (
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": stop, "stop_sequence": None},
                    "usage": {"output_tokens": 7},
                },
            )
        )
        events.append(("message_stop", {"type": "message_stop"}))
        data = "".join(f"event: {name}\ndata: {json.dumps(event)}\n\n" for name, event in events)
        self._send(200, "text/event-stream", data.encode())

    # -- the OpenAI Responses API -------------------------------------------------------

    def _responses(self, body: Mapping[str, Any], answer: Mapping[str, Any]) -> None:
        calls = answer.get("tool_calls") or []
        usage = {
            "input_tokens": 11,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 7,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 18,
        }
        text = answer.get("content") or ""
        output: list[dict[str, Any]] = []
        if text:
            part = {"type": "output_text", "text": text, "annotations": []}
            output.append(
                {"id": "msg_1", "type": "message", "status": "completed", "role": "assistant", "content": [part]}
            )
        for index, call in enumerate(calls):
            output.append(
                {
                    "id": f"fc_{index + 1}",
                    "type": "function_call",
                    "status": "completed",
                    "call_id": call["id"],
                    "name": call["name"],
                    "arguments": json.dumps(call["arguments"]),
                }
            )
        response = {
            "id": "resp_1",
            "object": "response",
            "created_at": 1764460800,
            "status": "completed",
            "model": body.get("model"),
            "output": output,
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
            "usage": usage,
        }
        if not body.get("stream"):
            self._send(200, "application/json", json.dumps(response).encode())
            return
        sequence = iter(range(1, 10_000))
        events: list[tuple[str, dict[str, Any]]] = []

        def event(kind: str, **fields: Any) -> None:
            events.append((kind, {"type": kind, "sequence_number": next(sequence), **fields}))

        started = {**response, "status": "in_progress", "output": [], "usage": None}
        event("response.created", response=started)
        event("response.in_progress", response=started)
        for index, item in enumerate(output):
            if item["type"] == "message":
                event(
                    "response.output_item.added",
                    output_index=index,
                    item={**item, "status": "in_progress", "content": []},
                )
                empty = {"type": "output_text", "text": "", "annotations": []}
                event(
                    "response.content_part.added", item_id=item["id"], output_index=index, content_index=0, part=empty
                )
                for word in _words(text):
                    fields = {"item_id": item["id"], "output_index": index, "content_index": 0, "logprobs": []}
                    event("response.output_text.delta", delta=word, **fields)
                fields = {"item_id": item["id"], "output_index": index, "content_index": 0}
                event("response.output_text.done", text=text, logprobs=[], **fields)
                event("response.content_part.done", part=item["content"][0], **fields)
            else:
                event(
                    "response.output_item.added",
                    output_index=index,
                    item={**item, "status": "in_progress", "arguments": ""},
                )
                arguments = item["arguments"]
                for part in (arguments[:5], arguments[5:]):
                    event("response.function_call_arguments.delta", item_id=item["id"], output_index=index, delta=part)
                event(
                    "response.function_call_arguments.done", item_id=item["id"], output_index=index, arguments=arguments
                )
            event("response.output_item.done", output_index=index, item=item)
        event("response.completed", response=response)
        data = "".join(f"event: {name}\ndata: {json.dumps(fields)}\n\n" for name, fields in events)
        self._send(200, "text/event-stream", data.encode())


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    # socketserver's backlog of 5 overflowed under 20 concurrent sessions (a connection per request): the
    # kernel dropped the SYN and the client retried it a second later, a 1 s tail on any side of a bench
    request_queue_size = 128
    state: FakeLLM


class Served:
    """A ``ThreadingHTTPServer`` on 127.0.0.1 answering in a thread of its own until ``close``."""

    def __init__(self, httpd: ThreadingHTTPServer) -> None:
        self.httpd = httpd
        self.port = httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=2)


class LLMServer(Served):
    """Start on 127.0.0.1 (a free port); ``.url`` is the base URL, ``.state.received`` the requests."""

    def __init__(self, policy: Policy = weather_policy) -> None:
        httpd = _Server(("127.0.0.1", 0), _Handler)
        httpd.state = FakeLLM(policy)
        self.state = httpd.state
        super().__init__(httpd)

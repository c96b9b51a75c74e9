"""Small LLM API servers on 127.0.0.1 for the transport and plugin tests.

One threaded ``http.server`` answers ``POST .../chat/completions`` in the OpenAI
wire format and ``POST .../messages`` in the Anthropic one, streamed (SSE) or not.
What it answers is decided by a policy: a function of the harness-style request
(``messages`` with ``tool_calls`` as ``{id, name, arguments}``) returning
``{content, tool_calls}``; by default the weather policy of the SDK fixture agents.
Every request it receives is kept (path, headers, body) so tests can see what
reached the wire.
"""

from __future__ import annotations

import json
import threading
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


@dataclass
class FakeLLM:
    policy: Policy = weather_policy
    received: list[Received] = field(default_factory=list)
    usage_details: bool = True  # OpenAI's usage carries *_tokens_details objects


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
            if block.get("type") == "tool_result":
                text = (
                    block["content"]
                    if isinstance(block["content"], str)
                    else "".join(part.get("text", "") for part in block["content"])
                )
                messages.append({"role": "tool", "content": text, "tool_call_id": block["tool_use_id"]})
            elif block.get("type") == "text":
                messages.append({"role": message["role"], "content": block["text"]})
    return messages


def _words(text: str) -> list[str]:
    words = text.split(" ")
    return [word if index == 0 else " " + word for index, word in enumerate(words)]


class _Handler(BaseHTTPRequestHandler):
    server: "_Server"

    def log_message(self, *args: Any) -> None:  # quiet
        pass

    def do_POST(self) -> None:  # noqa: N802 (http.server naming)
        length = int(self.headers.get("content-length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        state = self.server.state
        state.received.append(Received(self.path, {k.lower(): v for k, v in self.headers.items()}, body))
        if self.path in ("/v1/chat/completions", "/chat/completions"):
            answer = dict(state.policy({"model": body.get("model"), "messages": harness_messages_from_openai(body)}))
            self._openai(body, answer)
        elif self.path in ("/v1/messages", "/messages"):
            answer = dict(state.policy({"model": body.get("model"), "messages": harness_messages_from_anthropic(body)}))
            self._anthropic(body, answer)
        else:
            self._send(404, "application/json", json.dumps({"error": {"message": f"no route {self.path}"}}).encode())

    def _send(self, status: int, content_type: str, data: bytes, extra: Mapping[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(data)))
        self.send_header("x-request-id", f"req-{len(self.server.state.received)}")
        self.send_header("set-cookie", "session=abcdef0123456789; HttpOnly")
        for name, value in (extra or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

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


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    state: FakeLLM


class LLMServer:
    """Start on 127.0.0.1 (a free port); ``.url`` is the base URL, ``.state.received`` the requests."""

    def __init__(self, policy: Policy = weather_policy) -> None:
        self.httpd = _Server(("127.0.0.1", 0), _Handler)
        self.httpd.state = FakeLLM(policy)
        self.state = self.httpd.state
        self.port = self.httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=2)

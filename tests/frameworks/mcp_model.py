"""A scripted OpenAI-compatible chat-completions server on 127.0.0.1 for the MCP agents, keeping the raw bytes of
every request (the recorded run must send the model what an unrecorded run sends, byte for byte).

The first user message says what to call: ``"call: lookup count_down"`` asks for one tool a turn in that order,
``"parallel: slow_echo slow_echo"`` for all of them in one answer. Tool names may carry a framework's prefix (they
are matched by their end). A request offering no tools is the MCP server sampling the client's model: it is
answered ``42``. When every tool asked for has answered, the answer is ``done:`` and the tool outputs.
"""

from __future__ import annotations

import json
import threading
from http.server import ThreadingHTTPServer
from typing import Any

from fixtures.agents import loopback_llm

ARGUMENTS: dict[str, list[dict[str, Any]]] = {
    "lookup": [{"query": "Acme", "limit": 1}],
    "slow_echo": [{"text": "a", "delay": 0.4}, {"text": "b", "delay": 0.4}, {"text": "c", "delay": 0.4}],
    "count_down": [{"steps": 3}],
    "ask_model": [{"question": "What is 6 x 7?"}],
    "confirm": [{"action": "refund"}],
    "where_am_i": [{}],
    "broken": [{}],
    "server_pid": [{}],
}


def _text(content: Any) -> str:
    if isinstance(content, list):
        return " ".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return str(content or "")


def answer(body: dict[str, Any]) -> dict[str, Any]:
    """The assistant message for one request."""
    messages = body.get("messages") or []
    offered = [tool["function"]["name"] for tool in body.get("tools") or ()]
    if not offered:
        return {"content": "42"}
    first = next(_text(m.get("content")) for m in messages if m.get("role") == "user")
    mode, _, names = first.partition(":")
    plan = names.split()
    asked = [call for m in messages for call in m.get("tool_calls") or ()]
    if len(asked) < len(plan):
        todo = plan[len(asked) :] if mode.strip() == "parallel" else plan[len(asked) : len(asked) + 1]
        calls = []
        for index, wanted in enumerate(todo, start=len(asked)):
            name = next(name for name in offered if name.endswith(wanted))
            uses = plan[:index].count(wanted)
            calls.append(
                {
                    "id": f"call_{index + 1}",
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps(ARGUMENTS[wanted][uses])},
                }
            )
        return {"content": None, "tool_calls": calls}
    outputs = [_text(m.get("content")) for m in messages if m.get("role") == "tool"]
    return {"content": "done: " + " | ".join(outputs)}


class _Handler(loopback_llm._Handler):
    server: _Server  # type: ignore[assignment]

    def do_POST(self) -> None:  # noqa: N802 (http.server naming)
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        body = json.loads(raw or b"{}")
        with self.server.lock:
            self.server.raw.append(raw)
        message = {"role": "assistant", **answer(body)}
        document = {
            "id": f"chatcmpl-{len(body.get('messages') or [])}",
            "object": "chat.completion",
            "created": 1764460800,
            "model": body.get("model"),
            "choices": [
                {"index": 0, "message": message, "finish_reason": "tool_calls" if message.get("tool_calls") else "stop"}
            ],
            "usage": {"prompt_tokens": 30, "completion_tokens": 8, "total_tokens": 38},
        }
        self._send(200, document)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    lock: threading.Lock
    raw: list[bytes]


class ScriptedModel:
    """Start on a free port; ``url`` is the base URL (``.../v1``), ``raw`` the request bodies as they came."""

    def __init__(self) -> None:
        self.httpd = _Server(("127.0.0.1", 0), _Handler)
        self.httpd.lock = threading.Lock()
        self.httpd.raw = []
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    @property
    def raw(self) -> list[bytes]:
        return self.httpd.raw

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=2)

"""An OpenAI-compatible chat-completions model (plugin type ``openai-compatible``).

Any server that speaks ``POST {base_url}/chat/completions`` works: vLLM, llama.cpp's
server, Ollama, LiteLLM, OpenAI itself. Use it to record an agent against a local
model, or as the live model of a ``model-live`` experiment::

    [[plugins]]
    id = "model"
    type = "openai-compatible"
    options = { base_url = "http://127.0.0.1:8000/v1", model = "qwen2.5-7b-instruct", stream = true }

Options: ``base_url`` (required), ``model`` (default: the request's ``model``),
``api_key_env`` (name of the environment variable holding the key; the key itself
never goes in a config or a journal), ``stream`` (SSE: each chunk's text reaches
``on_chunk`` as it arrives, and the answer is recorded with its chunk boundaries; a
stream the server ends before ``[DONE]`` or cuts is a ``ConnectionError``, a read
that waits longer than ``timeout_s`` a ``TimeoutError``), ``timeout_s`` (default 120),
``params`` (sent with every request, e.g. ``{temperature = 0}``), ``headers`` (extra
request headers). ``amodel`` reads it without blocking the event loop (``acomplete``:
the blocking reads run in a worker thread, one chunk at a time).

The harness request (``model``, ``system``, ``messages`` with tool calls as
``{id, name, arguments}``, ``tools`` as ``{name, description, parameters}``,
``tool_choice``, ``params``) is turned into the OpenAI wire format, and the answer
back into ``{content, tool_calls, finish_reason, usage}``. The wire-format helpers
are shared with the httpx transport. Plain ``urllib``: no HTTP dependency.
"""

from __future__ import annotations

import asyncio
import http.client
import os
import socket
import urllib.error
import urllib.request
from typing import Any, AsyncIterator, Iterable, Iterator, Mapping

import orjson

from ..journal.model_response import response_summary
from ..journal.sse import StreamReportedError, chat_completion_chunks, sse_events
from .plugins import PluginBase, PluginContext

DEFAULT_TIMEOUT_S = 120.0


class ModelHTTPError(RuntimeError):
    """The server answered with an error status; ``code`` is the HTTP status."""

    def __init__(self, message: str, code: int | None = None) -> None:
        super().__init__(message)
        self.code = code


# -- wire format -------------------------------------------------------------------------


def _wire_message(message: Mapping[str, Any]) -> dict[str, Any]:
    wire = {key: value for key, value in message.items() if key != "tool_calls"}
    calls = message.get("tool_calls")
    if calls:
        wire["tool_calls"] = [
            call
            if "function" in call
            else {
                "id": call.get("id"),
                "type": "function",
                "function": {"name": call.get("name"), "arguments": _json_text(call.get("arguments", {}))},
            }
            for call in calls
        ]
    if wire.get("role") == "tool" and not isinstance(wire.get("content"), str):
        wire["content"] = _json_text(wire.get("content"))
    return wire


def _wire_tool(tool: Mapping[str, Any]) -> dict[str, Any]:
    if tool.get("type") == "function" and "function" in tool:
        return dict(tool)
    function = {"name": tool["name"], "parameters": tool.get("parameters") or {"type": "object", "properties": {}}}
    if tool.get("description"):
        function["description"] = tool["description"]
    return {"type": "function", "function": function}


def _json_text(value: Any) -> str:
    return value if isinstance(value, str) else orjson.dumps(value).decode()


def chat_completions_body(
    request: Mapping[str, Any],
    *,
    model: str | None = None,
    stream: bool = False,
    params: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The ``/chat/completions`` body for a harness model request."""
    messages = [_wire_message(message) for message in request.get("messages") or ()]
    if request.get("system"):
        messages.insert(0, {"role": "system", "content": request["system"]})
    body: dict[str, Any] = {"model": model or request.get("model"), "messages": messages}
    if request.get("tools"):
        body["tools"] = [_wire_tool(tool) for tool in request["tools"]]
    if request.get("tool_choice") is not None:
        body["tool_choice"] = request["tool_choice"]
    body.update(params or {})
    body.update(request.get("params") or {})
    if stream:
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
    return body


def response_from_chat_completion(body: Mapping[str, Any]) -> dict[str, Any]:
    """``{content, tool_calls, finish_reason, usage}`` of a non-streamed answer; tool arguments
    that are not JSON raise ValueError (the agent would act on them)."""
    return response_summary(body, strict_arguments=True)


# -- the plugin --------------------------------------------------------------------------


class OpenAICompatModel(PluginBase):
    """ModelClient over an OpenAI-compatible ``/chat/completions`` endpoint."""

    extension = "model"
    version = "1"

    def init(self, context: PluginContext) -> None:
        super().init(context)
        options = context.options
        base_url = options.get("base_url")
        if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
            raise ValueError(
                f"plugin {context.plugin_id!r}: options.base_url must be an http(s) URL, e.g. http://127.0.0.1:8000/v1"
            )
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model = options.get("model")
        self.stream = bool(options.get("stream", False))
        self.timeout_s = float(options.get("timeout_s", DEFAULT_TIMEOUT_S))
        self.params = dict(options.get("params") or {})
        self.headers = {
            "content-type": "application/json",
            "accept": "text/event-stream" if self.stream else "application/json",
            **{str(k): str(v) for k, v in (options.get("headers") or {}).items()},
        }
        key_env = options.get("api_key_env")
        if key_env is not None:
            key = os.environ.get(str(key_env))
            if not key:
                raise ValueError(
                    f"plugin {context.plugin_id!r}: environment variable {key_env} (options.api_key_env) is not set"
                )
            self.headers["authorization"] = f"Bearer {key}"

    def complete(self, request: Mapping[str, Any]) -> Any:
        response = self._open(request)
        if not self.stream:
            return self._whole(response)
        return self._stream(response)

    async def acomplete(self, request: Mapping[str, Any]) -> Any:
        response = await asyncio.to_thread(self._open, request)
        if not self.stream:
            return await asyncio.to_thread(self._whole, response)
        return self._astream(response)

    def _open(self, request: Mapping[str, Any]) -> Any:
        body = chat_completions_body(request, model=self.model, stream=self.stream, params=self.params)
        http_request = urllib.request.Request(self.url, data=orjson.dumps(body), headers=self.headers, method="POST")
        try:
            return urllib.request.urlopen(http_request, timeout=self.timeout_s)
        except urllib.error.HTTPError as error:
            detail = error.read(500).decode("utf-8", "replace")
            raise ModelHTTPError(f"{self.url}: HTTP {error.code}: {detail}", error.code) from None
        except urllib.error.URLError as error:
            raise ConnectionError(f"{self.url}: {error.reason}") from None

    @staticmethod
    def _whole(response: Any) -> dict[str, Any]:
        with response:
            return response_from_chat_completion(orjson.loads(response.read()))

    def _stream(self, response: Any) -> Iterator[dict[str, Any]]:
        with response:
            try:
                yield from chat_completion_chunks(self._until_done(sse_events(response)))
            except StreamReportedError as error:
                raise ModelHTTPError(str(error)) from None
            except (http.client.HTTPException, ConnectionError) as error:  # IncompleteRead: a cut chunked body
                raise ConnectionError(f"{self.url}: the stream was cut: {error}") from None

    def _until_done(self, events: Iterable[tuple[str | None, str]]) -> Iterator[tuple[str | None, str]]:
        for event in events:
            yield event
            if event[1].strip() == "[DONE]":
                return
        raise ConnectionError(f"{self.url}: the server ended the stream before [DONE]")

    async def _astream(self, response: Any) -> AsyncIterator[dict[str, Any]]:
        chunks = self._stream(response)
        try:
            while (chunk := await asyncio.to_thread(next, chunks, _END)) is not _END:
                yield chunk
        finally:
            _wake(response)  # a read still blocked in the worker thread (the caller stopped, or was cancelled)


_END: Any = object()


def _wake(response: Any) -> None:
    """Shut the socket of ``response``: a thread blocked reading it returns at once instead of at the timeout."""
    sock = getattr(getattr(getattr(response, "fp", None), "raw", None), "_sock", None)
    if isinstance(sock, socket.socket):
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

"""JSON-RPC messages as the MCP transports pass them (``SessionMessage``), as the recorder reads and makes them.

Both generations of the ``mcp`` package carry ``SessionMessage(message=JSONRPCMessage)`` on the streams between
a transport and ``ClientSession``; in the first the message is a root model around the request, notification,
response or error, in the second it is that object itself. Everything here reads the fields the JSON-RPC
specification names (``id``, ``method``, ``params``, ``result``, ``error``), so one recorder serves both.

A message's JSON is kept as text (``message_text``): a free-form object in it (a tool's input schema, a tool's
structured result) keeps the member order the server gave it, which reaches the model in the tool definitions
the framework sends; the journal's canonical form would sort it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from typing import Any

from mcp.shared.message import SessionMessage
from mcp.types import JSONRPCMessage
from pydantic import TypeAdapter

#: ``_meta`` members the client makes per request (the progress token is its request id) or per process
#: (trace context): never part of what a call is.
VOLATILE_META = frozenset({"progressToken", "traceparent", "tracestate", "baggage"})
#: JSON-RPC's error code for an internal error (what a recorded transport failure is answered with).
INTERNAL_ERROR = -32603


@dataclass(frozen=True)
class Message:
    """One JSON-RPC message, by its fields: ``kind`` is request, notification, response or error."""

    kind: str
    id: Any = None
    method: str | None = None
    params: Any = None
    result: Any = None
    error: Any = None


def read(session_message: SessionMessage) -> Message:
    """The fields of ``session_message`` (free-form objects as the transport parsed them, member order kept)."""
    root: Any = getattr(session_message.message, "root", session_message.message)
    if getattr(root, "method", None) is not None:
        params = getattr(root, "params", None)
        if hasattr(root, "id"):
            return Message("request", id=root.id, method=root.method, params=params)
        return Message("notification", method=root.method, params=params)
    error = getattr(root, "error", None)
    if error is not None:
        dumped = (
            error.model_dump(by_alias=True, mode="json", exclude_none=True) if hasattr(error, "model_dump") else error
        )
        return Message("error", id=root.id, error=dumped)
    return Message("response", id=root.id, result=root.result)


def message_text(message: Message) -> str:
    """The message as JSON text, member order kept."""
    body: dict[str, Any] = {"jsonrpc": "2.0"}
    if message.kind in ("request", "response", "error"):
        body["id"] = message.id
    if message.method is not None:
        body["method"] = message.method
        if message.params is not None:
            body["params"] = message.params
    if message.kind == "response":
        body["result"] = message.result
    if message.kind == "error":
        body["error"] = message.error
    return dumps(body)


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def loads_text(text: Any) -> Any:
    """A value ``dumps`` wrote (ValueError when it is not text of JSON)."""
    if not isinstance(text, str):
        raise ValueError("not text")
    return json.loads(text)


@cache
def _adapter() -> TypeAdapter[Any]:
    return TypeAdapter(JSONRPCMessage)


def session_message(body: dict[str, Any]) -> SessionMessage:
    """A ``SessionMessage`` for a JSON-RPC object (raises pydantic's ValidationError, a ValueError, when it is
    not one)."""
    return SessionMessage(message=_adapter().validate_python(body))


def response(request_id: Any, result: Any) -> SessionMessage:
    return session_message({"jsonrpc": "2.0", "id": request_id, "result": result})


def error_response(request_id: Any, error: dict[str, Any]) -> SessionMessage:
    return session_message({"jsonrpc": "2.0", "id": request_id, "error": error})


def call_arguments(params: Any) -> dict[str, Any]:
    """What identifies a call: its params without the ``_meta`` members the client makes per request."""
    if not isinstance(params, dict):
        return {} if params is None else {"params": params}
    meta = params.get("_meta")
    if not isinstance(meta, dict) or not VOLATILE_META & set(meta):
        return params
    kept = {key: value for key, value in meta.items() if key not in VOLATILE_META}
    return {key: value for key, value in params.items() if key != "_meta"} | ({"_meta": kept} if kept else {})


def progress_token(params: Any) -> Any:
    """The progress token a request's ``_meta`` names (None when it asks for no progress)."""
    meta = params.get("_meta") if isinstance(params, dict) else None
    return meta.get("progressToken") if isinstance(meta, dict) else None

"""How an HTTP exchange with a model API is recorded: one shape for the harness's httpx
transport (which records it live) and the vcrpy importer (which reads it from a cassette),
so a cassette imports to the same request hash the transport records."""

from __future__ import annotations

from typing import Any

#: Request body fields kept at the top of the recorded request (the harness's own request
#: shape); every other body field goes under ``params.body``.
TOP_LEVEL_FIELDS = ("model", "system", "messages", "tools", "tool_choice", "stream", "metadata")

#: The status codes a recorded response may hold: three digits, as the vcr importer reads them from a cassette
#: (0 where it names none) and as the transport hands one back to an SDK in a replay.
HTTP_STATUSES = range(0, 1000)

#: Request headers that describe the attempt or the machine, not the request.
IGNORED_REQUEST_HEADERS = frozenset(
    {
        "host",
        "content-length",
        "connection",
        "accept-encoding",
        "user-agent",
        "idempotency-key",
        "transfer-encoding",
        "keep-alive",
        "te",
        "upgrade",
    }
)
#: SDK telemetry headers (retry counts, OS and runtime versions): they vary from run to run.
IGNORED_HEADER_PREFIXES = ("x-stainless-",)

#: Response headers that belong to the bytes on the wire (the body is kept decoded).
IGNORED_RESPONSE_HEADERS = frozenset(
    {"content-length", "content-encoding", "transfer-encoding", "connection", "keep-alive"}
)

#: Headers that carry credentials: never recorded (redaction drops them by default, import drops them always).
CREDENTIAL_HEADERS = (
    "authorization",
    "proxy-authorization",
    "cookie",
    "set-cookie",
    "x-api-key",
    "api-key",
    "x-auth-token",
    "x-goog-api-key",
    "anthropic-api-key",
    "openai-api-key",
)


def shape_json_body(parsed: Any, params: dict[str, Any]) -> dict[str, Any]:
    """The recorded request's top-level fields from a request body read as JSON (None when it is not JSON):
    an object's ``TOP_LEVEL_FIELDS`` stay on top and its other fields go under ``params["body"]``; any
    other JSON value is ``params["body_json"]``. A body that is not JSON is the caller's to keep."""
    request: dict[str, Any] = {}
    if isinstance(parsed, dict):
        for name, value in parsed.items():
            if name in TOP_LEVEL_FIELDS:
                request[name] = value
            else:
                params.setdefault("body", {})[name] = value
    elif parsed is not None:
        params["body_json"] = parsed
    return request

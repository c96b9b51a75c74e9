"""vcrpy cassettes (YAML, version 1) -> records.

Interactions with OpenAI or Anthropic endpoints (``/chat/completions``, ``/responses``,
``/messages``) are model calls, in the form the harness's httpx transport records:
``model``, ``messages``, ``tools``... at the top of the request, every other body field and
the method and URL under ``params``, the request headers that describe the request (not
the attempt or the machine); the response summary (``content``, ``tool_calls``,
``finish_reason``, ``usage``) with the HTTP status, headers and body under
``response.http``. ``text/event-stream`` bodies are split into stream chunks. Other
hosts are tool-like HTTP calls. ``authorization``, ``x-api-key``, cookies and the other
credential headers are dropped on import: they never reach the journal.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import orjson

from ..journal.http_shape import (
    CREDENTIAL_HEADERS,
    HTTP_STATUSES,
    IGNORED_HEADER_PREFIXES,
    IGNORED_REQUEST_HEADERS,
    IGNORED_RESPONSE_HEADERS,
    shape_json_body,
)
from ..journal.model_response import response_summary
from ..journal.sse import StreamReportedError, assemble_stream, sse_events, stream_chunks
from .errors import TraceImportError
from .format import Format, Head, ImportedJournal, Input
from .messages import parse_arguments
from .plain import MAX_YAML_VALUES, TextBudget, plain_json, plain_record, shown
from .records import EndRecord, ModelRecord, Record, ToolRecord
from .runs import Run, write_runs

NAME = "vcr"

MODEL_PATHS = ("/chat/completions", "/responses", "/messages")
#: Credentials: dropped on import (the organisation and project ids too: they name the account).
SECRET_HEADERS = frozenset(CREDENTIAL_HEADERS) | {"openai-organization", "openai-project"}
#: PyYAML holds a whole cassette (and many times its size in objects): bigger files are refused.
MAX_CASSETTE_BYTES = 64 * 2**20
#: A compressed body is inflated up to this size, no further (a gzip bomb stops here).
MAX_BODY_BYTES = 4 * 2**20


def load_cassette(path: Path) -> list[Any]:
    try:
        import yaml  # type: ignore[import-untyped, unused-ignore]
    except ImportError:
        raise TraceImportError(
            str(path), None, "PyYAML to read a vcrpy cassette: pip install 'replay-tui[vcr]'"
        ) from None
    size = path.stat().st_size
    if size > MAX_CASSETTE_BYTES:
        raise TraceImportError(
            str(path), None, f"a cassette of at most {MAX_CASSETTE_BYTES // 2**20} MiB (it has {size / 2**20:.0f} MiB)"
        )
    try:
        with open(path, "rb") as handle:  # the safe loader only: a tag never constructs an object
            document = yaml.load(handle, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark is not None else None
        problem = shown(getattr(error, "problem", None) or error, 120)
        raise TraceImportError(str(path), where, f"a YAML vcrpy cassette ({problem})") from None
    except RecursionError:
        raise TraceImportError(str(path), None, "a YAML vcrpy cassette nested less deeply") from None
    except (ValueError, OverflowError) as error:  # a scalar the safe constructor cannot build (2026-13-45)
        raise TraceImportError(str(path), None, f"a YAML vcrpy cassette ({shown(error, 120)})") from None
    # aliases expanded under a bound, YAML-only types (sets, tags) refused; bytes stay (vcrpy's !!binary bodies)
    document = plain_json(
        document, path, None, keep_bytes=True, max_values=MAX_YAML_VALUES, max_chars=2**62, budget=TextBudget()
    )
    if isinstance(document, list):
        raise TraceImportError(
            str(path), None, "a vcrpy cassette: a mapping with interactions and version 1 (found a bare list)"
        )
    if not isinstance(document, dict) or not isinstance(document.get("interactions"), list):
        raise TraceImportError(str(path), None, "a vcrpy cassette: a mapping with an interactions list")
    if document.get("version") != 1:
        raise TraceImportError(str(path), "version", f"cassette version 1 (found {document.get('version')!r})")
    interactions: list[Any] = document["interactions"]
    return interactions


def cassette_records(path: Path) -> Iterator[Record]:
    """Each interaction's record, then the run's end: its output is the last model answer."""
    answer: Any = None
    for index, interaction in enumerate(load_cassette(path)):
        where = f"interactions[{index}]"
        if (
            not isinstance(interaction, dict)
            or not isinstance(interaction.get("request"), dict)
            or not isinstance(interaction.get("response"), dict)
        ):
            raise TraceImportError(str(path), where, "an interaction with a request and a response mapping")
        try:
            record = _interaction(path, where, index, interaction["request"], interaction["response"])
        except _Shape as shape:
            raise TraceImportError(str(path), f"{where}: {shape.where}", shape.expected) from None
        record = plain_record(record, path, where)
        if isinstance(record, ModelRecord) and record.response is not None:
            answer = record.response.get("content")
        yield record
    yield EndRecord("ok", answer)


class _Shape(Exception):
    """A part of an interaction of the wrong type: ``where`` in it, what was ``expected`` there."""

    def __init__(self, where: str, expected: str) -> None:
        super().__init__(f"{where}: {expected}")
        self.where = where
        self.expected = expected


def _mapping(value: Any, where: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _Shape(where, "a mapping")
    return value


def _text(value: Any, where: str, default: str = "") -> str:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise _Shape(where, "a string")
    return str(value)


def _headers(raw: Any, ignored: frozenset[str], where: str) -> dict[str, str]:
    kept: dict[str, str] = {}
    for name, values in _mapping(raw, where).items():
        if isinstance(values, list):
            values = [_text(value, f"{where}.{shown(name)}") for value in values]
        else:
            values = _text(values, f"{where}.{shown(name)}")
        lower = str(name).lower()
        if lower in SECRET_HEADERS or lower in ignored or lower.startswith(IGNORED_HEADER_PREFIXES):
            continue
        kept[lower] = ", ".join(str(value) for value in values) if isinstance(values, list) else str(values)
    return dict(sorted(kept.items()))


def _body_bytes(body: Any, headers: Mapping[str, Any], where: str) -> bytes:
    if isinstance(body, dict):
        body = body.get("string")
        where += ".string"
    if body is None:
        return b""
    if not isinstance(body, (str, bytes)):
        raise _Shape(where, "a body: a string or !!binary bytes")
    data = body if isinstance(body, bytes) else body.encode("utf-8")
    encoding = _first(headers, "content-encoding").lower()
    if encoding == "gzip" or data[:2] == b"\x1f\x8b":
        return _inflated(data, zlib.MAX_WBITS | 16, where)
    if encoding == "deflate":
        return _inflated(data, zlib.MAX_WBITS, where)
    return data


def _inflated(data: bytes, wbits: int, where: str) -> bytes:
    """A compressed body inflated, up to ``MAX_BODY_BYTES``; one that does not inflate is kept as it is."""
    try:
        inflater = zlib.decompressobj(wbits)
        inflated = inflater.decompress(data, MAX_BODY_BYTES + 1)
    except zlib.error:
        return data
    if len(inflated) > MAX_BODY_BYTES:
        raise _Shape(where, f"a compressed body of at most {MAX_BODY_BYTES // 2**20} MiB inflated (a gzip bomb?)")
    return inflated


def _first(headers: Mapping[str, Any], name: str) -> str:
    for key, values in headers.items():
        if str(key).lower() == name:
            return str(values[0] if isinstance(values, list) and values else values)
    return ""


def _json_or_none(data: bytes) -> Any:
    try:
        return orjson.loads(data) if data.strip() else None
    except orjson.JSONDecodeError:
        return None


def _status(status: Any) -> tuple[int, str]:
    """The HTTP status code and message of a response."""
    if isinstance(status, dict):
        code, message = status.get("code", 0), _text(status.get("message"), "response.status.message")
    else:
        code, message = status, ""
    if code is None:
        code = 0
    if isinstance(code, str) and code.strip().isdigit():
        code = int(code)
    if type(code) is not int or code not in HTTP_STATUSES:
        raise _Shape("response.status.code", f"an HTTP status code from 0 to 999 (found {shown(code)})")
    return code, message


def _interaction(path: Path, where: str, index: int, request: dict[str, Any], response: dict[str, Any]) -> Record:
    method = _text(request.get("method"), "request.method", "GET").upper()
    url = _text(request.get("uri"), "request.uri")
    request_headers = _mapping(request.get("headers"), "request.headers")
    request_bytes = _body_bytes(request.get("body"), request_headers, "request.body")
    raw_headers = _mapping(response.get("headers"), "response.headers")
    response_bytes = _body_bytes(response.get("body"), raw_headers, "response.body")
    code, status_message = _status(response.get("status"))
    http: dict[str, Any] = {
        "status": code,
        "headers": _headers(raw_headers, IGNORED_RESPONSE_HEADERS, "response.headers"),
    }
    parsed_response = _json_or_none(response_bytes)
    if parsed_response is not None:
        http["body_json"] = parsed_response
    else:
        http["body_text"] = response_bytes.decode("utf-8", errors="replace")
    source = {"interaction": index, "method": method, "url": url}
    route = urlsplit(url).path
    if route.endswith(MODEL_PATHS):
        shaped = _model_request(method, url, request_headers, request_bytes)
        summary, stream = _summary(
            route, code, _first(raw_headers, "content-type"), parsed_response, response_bytes, path, where
        )
        error = None
        if not 200 <= code < 300:
            error = {"type": f"HTTP {code}", "message": status_message, "code": code, "timeout": False}
        return ModelRecord(shaped, {**summary, "http": http}, source, error=error, stream=stream)
    arguments: dict[str, Any] = {"method": method, "url": url}
    if request_bytes:
        parsed = _json_or_none(request_bytes)
        arguments["body"] = parsed if parsed is not None else request_bytes.decode("utf-8", errors="replace")
    error = None if code < 400 else {"type": f"HTTP {code}", "message": status_message, "code": code, "timeout": False}
    return ToolRecord(f"http-{index + 1}", f"http {urlsplit(url).netloc}", arguments, source, result=http, error=error)


def _model_request(method: str, url: str, headers: Mapping[str, Any], body: bytes) -> dict[str, Any]:
    params: dict[str, Any] = {"http": {"method": method, "url": url}}
    parsed = _json_or_none(body)
    shaped = shape_json_body(parsed, params)
    if parsed is None and body:
        params["body_text"] = body.decode("utf-8", errors="replace")
    shaped["params"] = params
    shaped["headers"] = _headers(headers, IGNORED_REQUEST_HEADERS, "request.headers")
    return shaped


def _summary(
    route: str, code: int, content_type: str, body: Any, raw: bytes, path: Path, where: str
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    empty: dict[str, Any] = {"content": None, "tool_calls": [], "finish_reason": None, "usage": {}}
    if not 200 <= code < 300:
        return empty, None
    if "text/event-stream" in content_type.lower():
        return _stream(raw.decode("utf-8", errors="replace"), path, where)
    return response_summary(body), None


def _stream(text: str, path: Path, where: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """Split a chat-completions or Anthropic SSE body into harness stream chunks and assemble them."""
    try:
        return assemble_stream(stream_chunks(sse_events(text.splitlines())), parse_arguments=parse_arguments)
    except StreamReportedError as error:
        raise TraceImportError(str(path), where, f"a model stream that completes ({error})") from None
    except ValueError as error:  # orjson's decode error is one
        raise TraceImportError(
            str(path), where, f"server-sent events whose data lines are JSON objects ({error})"
        ) from None


def sniff(head: Head) -> bool:
    """A YAML cassette (an ``interactions:`` key at the start of a line), or vcrpy's JSON serializer's
    (``interactions`` and ``version`` in the first record, or a pretty-printed document that starts with them)."""
    if head.record is not None:
        return isinstance(head.record.get("interactions"), list) and "version" in head.record
    if head.is_json:
        return head.document_key == b"interactions"
    return not head.is_zip and (head.text.startswith(b"interactions:") or b"\ninteractions:" in head.data)


def import_vcr(source: Input, out: Path) -> list[ImportedJournal]:
    """One journal: the cassette's interactions in order."""
    digest = source.digest()
    records = list(cassette_records(source.path))
    detail = {"interactions": len(records) - 1}
    return write_runs(source.path, out, NAME, digest, [Run("cassette", f"vcr-{digest[:12]}", records, detail)])


FORMAT = Format(NAME, sniff, import_vcr)

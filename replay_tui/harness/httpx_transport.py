"""httpx transports that record and replay HTTP exchanges through the harness.

An agent built on the official ``openai`` or ``anthropic`` SDK is recorded by
handing the SDK one client::

    from replay_tui.harness.httpx_transport import http_client

    def agent(h, question):
        client = OpenAI(api_key=os.environ["OPENAI_API_KEY"], http_client=http_client(h))
        answer = client.chat.completions.create(model="gpt-4.1", messages=[...])

Each exchange is one model call: a ``model.request`` (the JSON body as the harness
normalizes requests: ``model``, ``system``, ``messages``, ``tools``, ``tool_choice``,
``stream``, ``metadata`` at the top, every other body field and the method and URL
under ``params``, and the request headers) and a ``model.response`` (``content``,
``tool_calls``, ``finish_reason`` and ``usage`` read from the OpenAI chat-completions,
Responses API or Anthropic messages answer, streamed or not, plus the HTTP status,
headers and body under ``response.http``). The harness redacts the request before it
is hashed or written: ``Authorization``, ``x-api-key`` and the other default secret
headers never reach the journal, so the request hash does not depend on the key.
Per-attempt headers the SDKs add (``x-stainless-*``, ``idempotency-key``,
``user-agent``...) are left out, so a replay on another machine hashes the same.

The ``model.request`` is written before the request goes out. A streamed answer
(``text/event-stream``) passes through as it arrives: each event reaches the SDK when it
completes, redacted as it passes, and the ``model.response`` is written when the stream
ends, or when it is cut (the server closes, a read times out, the caller closes it or its
task is cancelled: what arrived plus the error). The reference is STREAMING.md beside this
file. Concurrent requests on one client run concurrently: each request is written when it
is sent and each answer when it arrives (a stream's when it ends), so the journal holds the
order a server answered in, and a strict replay hands the answers back in that order.

In replay the same client serves the recorded response from the journal; nothing
is sent. A recorded transport error (connect, timeout) is raised again as the same
httpx exception, so the SDK's own retry logic sees what it saw; a recorded stream is
handed over event by event from memory, then its cut. A recorded answer that redaction
left alone reaches the SDK as it came (the same status, headers and JSON a replay rebuilds
from the journal, plus the wire-level headers a journal never keeps: content-length,
connection...); one that redaction changed is rebuilt from the record, so the agent
never reads a secret the journal does not hold.

Both ``httpx`` and ``httpx2`` (the fork the current SDKs use) work: pass the module
as ``httpx_module``, or let ``http_client`` pick httpx2 when it is installed.
"""

from __future__ import annotations

import asyncio
import base64
import functools
import importlib
import weakref
from dataclasses import dataclass
from datetime import timedelta
from types import ModuleType
from typing import TYPE_CHECKING, Any, AsyncIterator, Iterable, Iterator, Mapping

import orjson

from ..journal.errors import SchemaError, missing
from ..journal.http_shape import (
    CREDENTIAL_HEADERS,
    HTTP_STATUSES,
    IGNORED_HEADER_PREFIXES,
    IGNORED_REQUEST_HEADERS,
    IGNORED_RESPONSE_HEADERS,
    shape_json_body,
)
from ..journal.model import MODEL_RESPONSE
from ..journal.model_response import response_summary
from ..journal.sse import assemble_stream, sse_events, stream_chunks
from .seam import error_from_payload, error_to_payload
from .sse_relay import SseRelay, StreamAbandoned, recorded_events
from .stream_redaction import policy_for

if TYPE_CHECKING:
    from .harness import Harness


_NOT_RECORDED_REQUEST_HEADERS = IGNORED_REQUEST_HEADERS | frozenset(CREDENTIAL_HEADERS)


ZERO_ELAPSED = timedelta(0)


@dataclass(frozen=True)
class Exchange:
    """A response as the harness recorded (or replayed) it."""

    status: int
    headers: list[tuple[str, str]]
    body: bytes


@functools.cache
def _shared_ssl_context(module: ModuleType) -> Any:
    """One default SSL context per httpx module for the live inner transports: building one reads
    the CA bundle (~0.15 s), which a recorder that makes a client per run would pay every run."""
    return module.create_ssl_context()


def plain_async_client(client_class: Any = None, **options: Any) -> Any:
    """An unrecorded ``AsyncClient`` (of ``client_class``: an SDK's default client, else httpx2's or httpx's) on
    the one shared SSL context: a helper that makes a client per run (``run_recorded``) would otherwise read
    the CA bundle every run, about 18 ms of CPU, which the user's own long-lived client pays once."""
    if client_class is None:
        client_class = default_httpx_module().AsyncClient
    tops = [base.__module__.split(".")[0] for base in client_class.__mro__]
    module = importlib.import_module(next(top for top in tops if top in ("httpx2", "httpx")))
    return client_class(verify=_shared_ssl_context(module), **options)


def default_httpx_module() -> ModuleType:
    """httpx2 when installed (the module the openai and anthropic SDKs take), else httpx."""
    for name in ("httpx2", "httpx"):
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    raise ImportError("the httpx transport needs httpx or httpx2: pip install httpx")


# -- recording form ---------------------------------------------------------------------


def recorded_request(method: str, url: str, headers: Iterable[tuple[str, str]], body: bytes) -> dict[str, Any]:
    """The model request the harness records for one HTTP request."""
    # credentials are never recorded (as the vcr importer never imports them): left to redaction, one
    # header made it walk every request
    kept = _header_dict(headers, _NOT_RECORDED_REQUEST_HEADERS, IGNORED_HEADER_PREFIXES)
    params: dict[str, Any] = {"http": {"method": method.upper(), "url": url}}
    parsed = _json_or_none(body)
    request = shape_json_body(parsed, params)
    if parsed is None and body:
        if _is_text(body):
            params["body_text"] = body.decode("utf-8")
        else:
            params["body_base64"] = base64.b64encode(body).decode()
    request["params"] = params
    request["headers"] = kept
    return request


def recorded_response(status: int, headers: Iterable[tuple[str, str]], body: bytes) -> dict[str, Any]:
    """``{content, tool_calls, finish_reason, usage, http}`` of one HTTP response, plus the
    harness stream record when the body is a server-sent-events stream."""
    kept = _header_dict(headers, IGNORED_RESPONSE_HEADERS)
    content_type = kept.get("content-type", "")
    http: dict[str, Any] = {"status": status, "headers": kept}
    summary: dict[str, Any] = {"content": None, "tool_calls": [], "finish_reason": None, "usage": {}}
    stream: dict[str, Any] | None = None
    parsed = _json_or_none(body)
    if parsed is not None:
        http["body_json"] = parsed
        if isinstance(parsed, dict) and 200 <= status < 300:
            summary = response_summary(parsed)
    elif _is_text(body):
        text = body.decode("utf-8")
        http["body_text"] = text
        if "text/event-stream" in content_type and 200 <= status < 300:
            try:
                summary, stream = assemble_stream(stream_chunks(sse_events(text.splitlines())))
            except ValueError:  # orjson's decode error and a stream's own error event are ones
                pass  # not a stream we can read: the body is still kept whole
    else:
        http["body_base64"] = base64.b64encode(body).decode()
    response = {**summary, "http": http}
    return {"response": response, **({"stream": stream} if stream is not None else {})}


def exchange_from_payload(payload: Mapping[str, Any], *, seq: int | None = None) -> Exchange:
    """The HTTP response a recorded model.response (at ``seq``) describes. The journal is hostile: a field
    of the wrong shape is a ``SchemaError`` naming it, not whatever the SDK makes of it."""
    response = payload.get("response")
    http = response.get("http") if isinstance(response, Mapping) else None
    if not isinstance(http, Mapping):
        found = http if isinstance(response, Mapping) and "http" in response else missing()
        raise SchemaError(
            "payload.response.http", "the HTTP response the httpx transport records (an object)", found, seq=seq
        )
    status = http.get("status", missing())
    if type(status) is not int or status not in HTTP_STATUSES:
        raise SchemaError(
            "payload.response.http.status", "an HTTP status code, an integer from 0 to 999", status, seq=seq
        )
    headers = http.get("headers")
    if headers is None:
        headers = {}
    if not isinstance(headers, Mapping) or not all(type(value) is str for value in headers.values()):
        raise SchemaError("payload.response.http.headers", "an object of header names to text", headers, seq=seq)
    return Exchange(status, list(headers.items()), _recorded_body(http, seq))


def _recorded_body(http: Mapping[str, Any], seq: int | None) -> bytes:
    if "sse" in http:
        return b"".join(recorded_events(http, seq=seq))
    if "body_json" in http:
        return orjson.dumps(http["body_json"])
    if "body_text" in http:
        text = http["body_text"]
        if type(text) is not str:
            raise SchemaError("payload.response.http.body_text", "text", text, seq=seq)
        return text.encode("utf-8")
    if "body_base64" in http:
        encoded = http["body_base64"]
        try:
            return base64.b64decode(encoded, validate=True)
        except (TypeError, ValueError):  # binascii.Error is a ValueError
            raise SchemaError("payload.response.http.body_base64", "base64 text", encoded, seq=seq) from None
    return b""


def _header_dict(
    headers: Iterable[tuple[str, str]], ignored: frozenset[str], prefixes: tuple[str, ...] = ()
) -> dict[str, str]:
    """Lower-cased names; repeated headers joined with ", " (a dict, so redaction's
    header rules see it)."""
    kept: dict[str, str] = {}
    for name, value in headers:
        lowered = name.lower()
        if lowered in ignored or lowered.startswith(prefixes):
            continue
        kept[lowered] = f"{kept[lowered]}, {value}" if lowered in kept else value
    return kept


class _WireHeaders:
    """``headers.multi_items()`` of an httpx ``Headers``, less the names ``_header_dict`` drops, told by their
    bytes before anything is decoded: the SDKs send ~15 headers, most of them dropped, and decoding them all
    (with the encoding httpx picks by decoding them all once more) was ~4 µs a call. A client sends the same
    names every time, so each raw name's verdict is kept (bounded). A kept header is decoded as httpx would:
    ASCII alike in every encoding it picks, any other with the one it picks. A name that only lower-cases
    into a dropped one as text is kept here and dropped by ``_header_dict``, as before."""

    def __init__(self, dropped: frozenset[str], prefixes: tuple[str, ...] = ()) -> None:
        self._dropped_names = frozenset(name.encode("ascii") for name in dropped)
        self._prefixes = tuple(prefix.encode("ascii") for prefix in prefixes)
        self._dropped: set[bytes] = set()  # raw names seen and dropped
        self._kept: set[bytes] = set()  # raw names seen and kept

    def __call__(self, headers: Any) -> list[tuple[str, str]]:
        dropped, known = self._dropped, self._kept
        kept = []
        for name, value in headers.raw:
            if name in dropped:
                continue
            if name not in known:
                lowered = name.lower()
                verdict = dropped if lowered in self._dropped_names or lowered.startswith(self._prefixes) else known
                if len(verdict) < 4096:
                    verdict.add(name)
                if verdict is dropped:
                    continue
            encoding = "ascii" if name.isascii() and value.isascii() else headers.encoding
            kept.append((name.decode(encoding), value.decode(encoding)))
        return kept


_request_headers = _WireHeaders(_NOT_RECORDED_REQUEST_HEADERS, IGNORED_HEADER_PREFIXES)
_response_headers_of = _WireHeaders(IGNORED_RESPONSE_HEADERS | frozenset(CREDENTIAL_HEADERS))
_CREDENTIAL_NAMES = frozenset(name.encode("ascii") for name in CREDENTIAL_HEADERS)


def _json_or_none(body: bytes) -> Any:
    if not body or body[:1] not in b"{[":
        return None
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError:
        return None


def _is_text(body: bytes) -> bool:
    try:
        body.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


# -- the harness side ---------------------------------------------------------------------
# The transport writes through the harness's public recording API (open_model_exchange /
# close_model_exchange), so it gets the same redaction, hashing, causal parents and source
# lookup as ``Harness.model``; it cannot call ``model`` itself because its answer keeps the
# whole HTTP response, which a ModelClient answer cannot.


def _live_payload(request_hash: str, status: int, headers: Iterable[tuple[str, str]], body: bytes) -> dict[str, Any]:
    return {"request_hash": request_hash, **recorded_response(status, headers, body)}


def _error_payload(request_hash: str, error: BaseException) -> dict[str, Any]:
    return {"request_hash": request_hash, "response": None, "error": error_to_payload(error)}


def _raise_recorded_error(payload: Mapping[str, Any], module: ModuleType, request: Any) -> None:
    raise _recorded_error(payload, module, request)


def _recorded_error(payload: Mapping[str, Any], module: ModuleType, request: Any) -> BaseException:
    """A recorded error as the exception it was: an httpx transport or decoding error as the httpx class (the
    SDKs catch those), a cancelled task's ``CancelledError``, a stream the caller closed as ``StreamAbandoned``.
    Only these are rebuilt: the journal names the class, and any other name of the module (``httpx.Client``,
    ``httpx.HTTPTransport``) would have the journal choose a constructor to run."""
    error = payload.get("error") or {}
    type_name = str(error.get("type") or "")
    message = str(error.get("message") or "")
    cls = getattr(module, type_name.rsplit(".", 1)[-1], None)
    if type_name.split(".", 1)[0] in ("httpx", "httpx2") and isinstance(cls, type):
        if issubclass(cls, (module.TransportError, module.DecodingError)):
            return cls(message, request=request)  # type: ignore[no-any-return]
    if type_name == "asyncio.exceptions.CancelledError":
        return asyncio.CancelledError(message)
    if type_name == f"{StreamAbandoned.__module__}.{StreamAbandoned.__qualname__}":
        return StreamAbandoned(message)
    return error_from_payload(payload)


def _request_parts(request: Any) -> tuple[str, str, list[tuple[str, str]], bytes]:
    return request.method, str(request.url), _request_headers(request.headers), request.content


def _response_headers(response: Any) -> list[tuple[str, str]]:
    """The live response's headers as the journal keeps them. A credential (``set-cookie``: real APIs send
    load balancer cookies) is never recorded, as in a request, and is taken out of the live response too: the
    caller reads what a replay will hand it (redaction used to drop it, which walked every answer that had
    one and rebuilt the response from the record)."""
    headers = response.headers
    if any(name.lower() in _CREDENTIAL_NAMES for name, _ in headers.raw):
        for name in CREDENTIAL_HEADERS:
            if name in headers:
                del headers[name]
    return _response_headers_of(headers)


def _response(module: ModuleType, exchange: Exchange, request: Any) -> Any:
    return module.Response(exchange.status, headers=exchange.headers, content=exchange.body, request=request)


def _handed_over(h: Harness, module: ModuleType, event: Any, payload: Any, live: Any, request: Any) -> Any:
    """What the SDK reads for a written model.response: the recorded error raised again; the live response
    itself when it was recorded as it came (redaction left the payload alone, so its status, headers and JSON
    are the ones a replay hands over; rebuilding it cost ~20 µs a call); else the response the record holds."""
    recorded = event.payload
    if recorded.get("error"):
        _raise_recorded_error(recorded, module, request)
    if live is not None and recorded is payload:
        response = live
    else:
        try:
            exchange = exchange_from_payload(recorded, seq=event.seq)
        except SchemaError as error:
            raise h.unusable_record(error) from None
        response = _response(module, exchange, request)
    # httpx sets .elapsed only when the client closes a stream it still has to read; a response read here
    # never gets one, and reading it raised. Zero in record and replay alike: the journal holds the times,
    # and a live duration the agent could branch on would be an unrecorded input.
    response.elapsed = ZERO_ELAPSED
    return response


def _streamed_record(payload: Mapping[str, Any]) -> bool:
    """Whether a recorded model.response is a stream the transport relayed (``response.http.sse``): a replay
    hands it over first and writes it when the caller is done reading, as the recording did."""
    response = payload.get("response")
    http = response.get("http") if isinstance(response, Mapping) else None
    return isinstance(http, Mapping) and "sse" in http


def _replayed_stream(h: Harness, module: ModuleType, request_event: Any, payload: Any, request: Any) -> Any:
    """A recorded stream handed over event by event from memory, then its cut; its model.response is written
    when the caller has read it to its end or closed it (at its recorded turn)."""
    seq = h.served_seq(request_event)
    try:
        exchange = exchange_from_payload(payload, seq=seq)
        chunks = recorded_events(payload["response"]["http"], seq=seq)
    except SchemaError as error:
        raise h.unusable_record(error) from None
    cut = _recorded_error(payload, module, request) if payload.get("error") else None
    stream = _replayed_stream_class(module)(chunks, cut, _Closer(h, request_event, payload))
    response = module.Response(exchange.status, headers=exchange.headers, stream=stream, request=request)
    return _no_elapsed(response, stream)


class _Closer:
    """Writes a replayed stream's recorded model.response once, sync or async, whichever comes first."""

    def __init__(self, h: Harness, request_event: Any, payload: Any) -> None:
        self.h, self.request_event, self.payload = h, request_event, payload
        self.done = False

    def close(self) -> None:
        if not self.done and not self.h.ended:
            self.done = True
            self.h.close_model_exchange(self.request_event, self.payload, recorded=True)

    async def aclose(self) -> None:
        if not self.done and not self.h.ended:
            self.done = True
            await self.h.aclose_model_exchange(self.request_event, self.payload, recorded=True)


def _streams(live: Any) -> bool:
    """Whether a live answer is a server-sent-event stream the SDK is to read as it arrives."""
    return 200 <= live.status_code < 300 and "text/event-stream" in live.headers.get("content-type", "")


class _StreamedExchange:
    """One streamed answer while it is recorded: its events pass through ``relay``; its model.response is
    written once, when the stream ends, is cut or is left."""

    def __init__(self, h: Harness, request_event: Any, live: Any) -> None:
        self.harness = h
        self.request_event = request_event
        self.status = live.status_code
        # what the SDK reads now is what a replay hands it: the headers as the journal will hold them
        headers = _header_dict(_response_headers(live), IGNORED_RESPONSE_HEADERS)
        self.handed_headers = h.redactor.redact_value({"headers": headers})["headers"]
        self.relay = SseRelay(policy_for(h.redactor))
        self.written = False

    def payload(self, error: BaseException | None) -> dict[str, Any]:
        summary, stream = self.relay.summary()
        http = {"status": self.status, "headers": self.handed_headers, **self.relay.record()}
        payload: dict[str, Any] = {
            "request_hash": self.request_event.payload["request_hash"],
            "response": {**summary, "http": http},
            "stream": stream,
        }
        if error is not None:
            payload["error"] = error_to_payload(error)
        written = self.harness.redactor.redact(MODEL_RESPONSE, payload).get("response")
        if not isinstance(written, Mapping) or written.get("http") != http:  # (the stream redactor's fixed point)
            payload["diagnostics"] = {"stream": "redaction of the whole answer changed what the caller read"}
        return payload

    def broke(self, error: BaseException, module: ModuleType) -> bytes:
        """The stream broke with ``error``: the tails to hand over before it is raised. The wire failed (the
        server closed, a read timed out): what arrived goes; the caller stopped (cancelled): nothing more."""
        return self.relay.flush() if isinstance(error, (module.TransportError, module.DecodingError)) else b""

    def abandoned(self) -> StreamAbandoned | None:
        """The error of a stream closed now: None once it said it ended."""
        if self.relay.final:
            return None
        return StreamAbandoned(f"the caller closed the stream after {len(self.relay.events)} event(s), before it ended")

    def end(self, error: BaseException | None) -> None:
        if not self._ends():
            self.harness.close_model_exchange(self.request_event, self.payload(error), recorded=False)

    async def aend(self, error: BaseException | None) -> None:
        if not self._ends():
            self.harness.close_model_exchange(self.request_event, self.payload(error), recorded=False)

    def _ends(self) -> bool:
        """Whether the response was written already, or can no longer be (a stream left open and closed by
        the garbage collector after the run ended: nothing follows run.ended)."""
        done, self.written = self.written or self.harness.ended, True
        return done


def _relayed(module: ModuleType, exchange: _StreamedExchange, stream: Any, request: Any) -> Any:
    response = module.Response(
        exchange.status, headers=list(exchange.handed_headers.items()), stream=stream, request=request
    )
    return _no_elapsed(response, stream)


def _no_elapsed(response: Any, stream: Any) -> Any:
    """``response.elapsed`` zero, and zero again when its stream closes (httpx 0.28 sets the live duration
    then, just before it closes the stream: an input the journal does not hold)."""
    response.elapsed = ZERO_ELAPSED
    stream.response = weakref.ref(response)  # (no cycle: a dropped response is freed at once)
    return response


def _zero_elapsed(stream: Any) -> None:
    response = stream.response() if stream.response is not None else None
    if response is not None:
        response.elapsed = ZERO_ELAPSED


@functools.cache
def _live_stream_class(module: ModuleType) -> type:
    """The sync byte stream that relays a live answer (made once per module)."""

    class LiveStream(module.SyncByteStream):  # type: ignore[name-defined, misc]
        def __init__(self, exchange: _StreamedExchange, live: Any) -> None:
            self.exchange = exchange
            self.live = live
            self.response: Any = None
            self.iterated = False

        def __iter__(self) -> Iterator[bytes]:
            if self.iterated:  # read a second time: as httpx, not a cut of the answer
                raise module.StreamConsumed()
            self.iterated = True
            exchange, relay = self.exchange, self.exchange.relay
            try:
                for chunk in self.live.iter_bytes():
                    out = relay.feed(chunk)
                    if out:
                        yield out
                tail = relay.finish()
            except GeneratorExit:
                raise  # the caller stopped reading: its close() records the cut
            except BaseException as error:
                tail = exchange.broke(error, module)
                exchange.end(error)
                if tail:
                    yield tail
                raise
            exchange.end(None)
            if tail:
                yield tail

        def close(self) -> None:
            _zero_elapsed(self)
            try:
                self.exchange.end(self.exchange.abandoned())
            finally:
                self.live.close()

    return LiveStream


@functools.cache
def _live_async_stream_class(module: ModuleType) -> type:
    """The async byte stream that relays a live answer."""

    class LiveAsyncStream(module.AsyncByteStream):  # type: ignore[name-defined, misc]
        def __init__(self, exchange: _StreamedExchange, live: Any) -> None:
            self.exchange = exchange
            self.live = live
            self.response: Any = None
            self.iterated = False

        async def __aiter__(self) -> AsyncIterator[bytes]:
            if self.iterated:  # read a second time (the openai SDK drains a stream after [DONE]): as httpx
                raise module.StreamConsumed()
            self.iterated = True
            exchange, relay = self.exchange, self.exchange.relay
            try:
                async for chunk in self.live.aiter_bytes():
                    out = relay.feed(chunk)
                    if out:
                        yield out
                tail = relay.finish()
            except GeneratorExit:
                raise  # the caller stopped reading: its aclose() records the cut
            except BaseException as error:  # CancelledError among them: the caller's task was cancelled
                tail = exchange.broke(error, module)
                await exchange.aend(error)
                if tail:
                    yield tail
                raise
            await exchange.aend(None)
            if tail:
                yield tail

        async def aclose(self) -> None:
            _zero_elapsed(self)
            try:
                await self.exchange.aend(self.exchange.abandoned())
            finally:
                await self.live.aclose()

    return LiveAsyncStream


@functools.cache
def _replayed_stream_class(module: ModuleType) -> type:
    """A recorded stream, handed over event by event from memory, sync or async, then its cut."""

    class ReplayedStream(module.SyncByteStream, module.AsyncByteStream):  # type: ignore[name-defined, misc]
        def __init__(self, chunks: list[bytes], cut: BaseException | None, closer: _Closer) -> None:
            self.chunks = chunks
            self.cut = cut
            self.closer = closer
            self.response: Any = None
            self.iterated = False

        def __iter__(self) -> Iterator[bytes]:
            if self.iterated:  # read a second time, as the live stream is (see LiveStream)
                raise module.StreamConsumed()
            self.iterated = True
            yield from self.chunks
            self.closer.close()
            if self.cut is not None:
                raise self.cut

        async def __aiter__(self) -> AsyncIterator[bytes]:
            if self.iterated:
                raise module.StreamConsumed()
            self.iterated = True
            for chunk in self.chunks:
                yield chunk
            await self.closer.aclose()
            if self.cut is not None:
                raise self.cut

        def close(self) -> None:
            _zero_elapsed(self)
            self.closer.close()

        async def aclose(self) -> None:
            _zero_elapsed(self)
            await self.closer.aclose()

    return ReplayedStream


@functools.cache
def _transport_class(module: ModuleType) -> type:
    """The sync transport class for ``module`` (made once: a class per client cost ~0.1 ms a run)."""
    # httpx's sync and async transports cannot share a body: each exchange below has an async twin

    class HarnessTransport(module.BaseTransport):  # type: ignore[name-defined, misc]
        """Records each exchange as model.request/model.response; replays from the journal."""

        def __init__(self, h: Harness, inner: Any) -> None:
            self.harness = h
            self.inner = inner

        def handle_request(self, request: Any) -> Any:
            h = self.harness
            request.read()
            method, url, headers, body = _request_parts(request)
            request_event, payload = h.open_model_exchange(
                recorded_request(method, url, headers, body), parsed=True, defer=_streamed_record
            )
            request_hash = request_event.payload["request_hash"]
            from_source = payload is not None
            live = None
            if payload is not None and _streamed_record(payload):
                return _replayed_stream(h, module, request_event, payload, request)
            if payload is None:
                if self.inner is None:
                    self.inner = module.HTTPTransport(verify=_shared_ssl_context(module))
                try:
                    live = self.inner.handle_request(request)
                    if _streams(live):  # its model.response is written when the stream ends
                        exchange = _StreamedExchange(h, request_event, live)
                        return _relayed(module, exchange, _live_stream_class(module)(exchange, live), request)
                    try:
                        live.read()
                    finally:
                        live.close()
                    payload = _live_payload(request_hash, live.status_code, _response_headers(live), live.content)
                except module.TransportError as error:
                    payload = _error_payload(request_hash, error)
            event = h.close_model_exchange(request_event, payload, recorded=from_source)
            return _handed_over(h, module, event, payload, live, request)

        def close(self) -> None:
            if self.inner is not None:
                self.inner.close()

    return HarnessTransport


@functools.cache
def _async_transport_class(module: ModuleType) -> type:
    """The async transport class for ``module``."""

    class AsyncHarnessTransport(module.AsyncBaseTransport):  # type: ignore[name-defined, misc]
        def __init__(self, h: Harness, inner: Any) -> None:
            self.harness = h
            self.inner = inner

        async def handle_async_request(self, request: Any) -> Any:
            # Concurrent requests run concurrently: each event is written when it happens (a request sent,
            # an answer arrived), and a strict replay answers them in the order they were answered.
            return await self._exchange(request)

        async def _exchange(self, request: Any) -> Any:
            h = self.harness
            await request.aread()
            method, url, headers, body = _request_parts(request)
            request_event, payload = await h.aopen_model_exchange(
                recorded_request(method, url, headers, body), parsed=True, defer=_streamed_record
            )
            request_hash = request_event.payload["request_hash"]
            from_source = payload is not None
            live = None
            if payload is not None and _streamed_record(payload):
                return _replayed_stream(h, module, request_event, payload, request)
            if payload is None:
                if self.inner is None:
                    self.inner = module.AsyncHTTPTransport(verify=_shared_ssl_context(module))
                try:
                    live = await self.inner.handle_async_request(request)
                    if _streams(live):  # its model.response is written when the stream ends
                        exchange = _StreamedExchange(h, request_event, live)
                        return _relayed(module, exchange, _live_async_stream_class(module)(exchange, live), request)
                    try:
                        await live.aread()
                    finally:
                        await live.aclose()
                    payload = _live_payload(request_hash, live.status_code, _response_headers(live), live.content)
                except module.TransportError as error:
                    payload = _error_payload(request_hash, error)
            event = h.close_model_exchange(request_event, payload, recorded=from_source)
            return _handed_over(h, module, event, payload, live, request)

        async def aclose(self) -> None:
            if self.inner is not None:
                await self.inner.aclose()

    return AsyncHarnessTransport


def make_transport(h: "Harness", *, httpx_module: ModuleType | None = None, inner: Any = None) -> Any:
    """A sync transport (``module.BaseTransport``) recording through ``h``; ``inner``
    sends live requests (default ``module.HTTPTransport()``)."""
    return _transport_class(httpx_module or default_httpx_module())(h, inner)


def make_async_transport(h: "Harness", *, httpx_module: ModuleType | None = None, inner: Any = None) -> Any:
    """The async twin of ``make_transport`` (``module.AsyncBaseTransport``)."""
    return _async_transport_class(httpx_module or default_httpx_module())(h, inner)


def http_client(
    h: "Harness", *, httpx_module: ModuleType | None = None, inner: Any = None, **client_options: Any
) -> Any:
    """``module.Client`` whose every request goes through ``h`` (pass it as ``http_client=``)."""
    module = httpx_module or default_httpx_module()
    return module.Client(transport=make_transport(h, httpx_module=module, inner=inner), **client_options)


def async_http_client(
    h: "Harness", *, httpx_module: ModuleType | None = None, inner: Any = None, **client_options: Any
) -> Any:
    """``module.AsyncClient`` twin of ``http_client`` (for ``AsyncOpenAI`` / ``AsyncAnthropic``)."""
    module = httpx_module or default_httpx_module()
    return module.AsyncClient(transport=make_async_transport(h, httpx_module=module, inner=inner), **client_options)

"""A model's server-sent-event stream relayed as it arrives (record) and rebuilt from its record (replay).

Recording, ``SseRelay.feed(bytes)`` returns the bytes to hand the caller now: each event as it completes,
its text fields redacted as they pass (``stream_redaction``), its other fields as the harness redacts a
payload. What it hands over is what it records, event by event: the event with its text fields emptied
(``sse``), and each channel's text (``texts``) with the length of each event's share (``slices``); a
replay fills the fields back in and writes the same bytes (``render_event`` does both). Holding back a
channel's last bytes moves them to its next event; when an event ends a channel whose tail is still held,
the tail goes first, in an event of its own written like the channel's last delta (STREAMING.md).
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Mapping
from typing import Any

import orjson

from ..journal.errors import SchemaError
from ..journal.model_response import tool_arguments
from ..journal.sse import (
    EventShape,
    TextField,
    assemble_stream,
    delta_event,
    event_shape,
    get_at,
    set_at,
    stream_chunks,
)
from .stream_redaction import ChannelRedactor, StreamPolicy, redact_whole

_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_FIXED_POINT_ROUNDS = 4


class StreamAbandoned(Exception):
    """The caller closed a streamed answer before it ended: the record ends there. A replay that reads on
    past that point gets this error (the recording has nothing more)."""


class _Decoder:
    """Bytes of an event stream -> ``(event, data, extra)`` per event, as the SSE spec reads them (comments
    dropped; ``extra`` holds ``id`` and ``retry`` when the event set them)."""

    def __init__(self) -> None:
        self._text = codecs.getincrementaldecoder("utf-8")("replace")
        self._buffer = ""
        self._event: str | None = None
        self._data: list[str] = []
        self._extra: dict[str, Any] = {}

    def feed(self, chunk: bytes) -> list[tuple[str | None, str, dict[str, Any]]]:
        text = self._buffer + self._text.decode(chunk)
        lines = _LINE_BREAK.split(text)
        self._buffer = lines.pop()
        if self._buffer == "" and text.endswith("\r"):
            lines, self._buffer = lines[:-1], "\r"  # its "\n" may follow
        return [event for line in lines if (event := self._line(line)) is not None]

    def finish(self) -> list[tuple[str | None, str, dict[str, Any]]]:
        """At the end: the line and the event the stream stopped in (as the SDKs read them: dispatched)."""
        events = [] if self._buffer in ("", "\r") else [event for event in [self._line(self._buffer)] if event]
        self._buffer = ""
        if self._data or self._event is not None:
            events.append(self._dispatch())
        return events

    def _line(self, line: str) -> tuple[str | None, str, dict[str, Any]] | None:
        if not line:
            return self._dispatch() if self._data or self._event is not None else None
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "event":
            self._event = value
        elif name == "data":
            self._data.append(value)
        elif name == "id" and "\x00" not in value:
            self._extra["id"] = value
        elif name == "retry" and value.isdigit():
            self._extra["retry"] = int(value)
        return None

    def _dispatch(self) -> tuple[str | None, str, dict[str, Any]]:
        event = (self._event, "\n".join(self._data), self._extra)
        self._event, self._data, self._extra = None, [], {}
        return event


class SseRelay:
    """One streamed answer while it is recorded (see the module docstring)."""

    def __init__(self, policy: StreamPolicy) -> None:
        self._policy = policy
        self._decoder = _Decoder()
        self._channels: dict[str, ChannelRedactor] = {}
        self._ended: set[str] = set()
        self._like: dict[str, tuple[str | None, dict[str, Any]]] = {}  # a channel's api and last delta event
        self.events: list[dict[str, Any]] = []  # the record, event by event
        self._texts: dict[str, list[str]] = {}
        self._handed: list[tuple[str | None, str]] = []  # (event, data) as handed over, for the summary
        self.final = False  # the stream said it ended ([DONE], message_stop, response.completed, an error)

    def feed(self, chunk: bytes) -> bytes:
        return b"".join(self._event(*event) for event in self._decoder.feed(chunk))

    def finish(self) -> bytes:
        """The stream ended (the server closed it): the event it stopped in, then every held tail."""
        return b"".join(self._event(*event) for event in self._decoder.finish()) + self.flush()

    def flush(self) -> bytes:
        """The tails every open channel still holds, each in an event of its own."""
        return b"".join(self._end(channel) for channel in list(self._channels) if channel not in self._ended)

    @property
    def texts(self) -> dict[str, str]:
        return {channel: "".join(parts) for channel, parts in self._texts.items()}

    def record(self) -> dict[str, Any]:
        """What the journal keeps of the stream under ``response.http``: its events and their texts."""
        return {"sse": self.events, "texts": self.texts}

    def summary(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """``({content, tool_calls, finish_reason, usage}, {chunks, boundaries})`` of what was handed over (up
        to an error event or a cut)."""
        chunks: list[dict[str, Any]] = []
        try:
            for chunk in stream_chunks(self._handed):
                chunks.append(chunk)
        except ValueError:
            pass  # the stream's own error event, or an event that is not JSON: what came before it stands
        return assemble_stream(chunks, parse_arguments=tool_arguments)

    # -- one event ----------------------------------------------------------------------------
    def _event(self, name: str | None, text: str, extra: dict[str, Any]) -> bytes:
        data: Any = text
        if text[:1] in ("{", "["):
            try:
                data = orjson.loads(text)
                if _FRACTION_OR_LONG.search(text):  # (most events hold no float and no long integer)
                    data = _journal_form(data)
            except ValueError:  # (orjson's decode error is one) not JSON, or a number the journal cannot hold
                data = text
        shape = event_shape(name, data)
        self.final = self.final or shape.final
        extra = _fixed(self._policy, extra) if extra else extra  # (an id is written as the harness redacts it)
        carried = {field.channel for field in shape.fields if not field.whole}
        ending = [c for c in self._channels if c not in self._ended and c not in carried and shape.ends_channel(c)]
        return b"".join(self._end(channel) for channel in ending) + self._emit(name, data, shape, extra)

    def _end(self, channel: str) -> bytes:
        """Finish ``channel``; its tail, if any, in an event of its own."""
        self._ended.add(channel)
        tail = self._channels[channel].finish()
        api, like = self._like.get(channel, (None, {}))
        written = delta_event(api, channel, tail, like) if tail else None
        if written is None:
            return b""  # (no tail; or a shape no delta can be written in, which carries no channel)
        name, data = written
        return self._emit(name, data, event_shape(name, data), {}, tail=tail)

    def _emit(
        self, name: str | None, data: Any, shape: EventShape, extra: dict[str, Any], *, tail: str | None = None
    ) -> bytes:
        if not isinstance(data, dict):  # [DONE], text, a list: no text field of a model API
            plain = {"event": name, "data": _fixed(self._policy, data), **extra}
            self.events.append(plain)
            written, body = _render(plain, [], [])
            self._handed.append((name, body))
            return written
        deltas: list[tuple[TextField, str]] = []
        changed = False
        for field in shape.fields:
            value = get_at(data, field.path)
            if not isinstance(value, str):
                continue
            if field.whole:
                set_at(data, field.path, redact_whole(self._policy, value))
                continue
            released = tail if tail is not None else self._pass(field.channel, value, shape, data)
            changed = changed or released != value
            deltas.append((field, released))
            set_at(data, field.path, "")
        if changed:
            _drop_logprobs(data)  # the tokens of text held back or redacted would give it away
        recorded = _fixed(self._policy, data)
        if any(get_at(recorded, field.path) != "" for field, _ in deltas):  # (redaction moved a field: kept inline)
            for field, released in deltas:
                set_at(data, field.path, released)
            recorded, deltas = _fixed(self._policy, data), []
        item: dict[str, Any] = {"event": name, "data": recorded, **extra}
        if deltas:
            item["slices"] = [len(released) for _, released in deltas]
            for field, released in deltas:
                self._texts.setdefault(field.channel, []).append(released)
        self.events.append(item)
        written, body = _render(item, [field for field, _ in deltas], [released for _, released in deltas])
        self._handed.append((name, body))
        return written

    def _pass(self, channel: str, value: str, shape: EventShape, data: dict[str, Any]) -> str:
        """A delta of ``channel`` through its redactor (the channel ends here if the event ends it)."""
        redactor = self._channels.get(channel)
        if redactor is None or channel in self._ended:
            redactor = self._channels[channel] = ChannelRedactor(self._policy)
            self._ended.discard(channel)
        self._like[channel] = (shape.api, data)
        released = redactor.feed(value)
        if shape.ends_channel(channel):
            self._ended.add(channel)
            released += redactor.finish()
        return released


def render_event(item: Mapping[str, Any], texts: list[str]) -> bytes:
    """The bytes of a recorded event, its emptied text fields filled with ``texts`` (in field order)."""
    data = item.get("data")
    fields = [field for field in event_shape(item.get("event"), data).fields if not field.whole] if texts else []
    return _render(item, fields, texts)[0]


def _render(item: Mapping[str, Any], fields: list[TextField], texts: list[str]) -> tuple[bytes, str]:
    """``render_event`` with the text fields known; and the event's data as written."""
    name, data = item.get("event"), item.get("data")
    lines = [f"event: {name}"] if name is not None else []
    if "id" in item:
        lines.append(f"id: {item['id']}")
    if "retry" in item:
        lines.append(f"retry: {item['retry']}")
    if isinstance(data, (dict, list)):
        for field, text in zip(fields, texts):
            set_at(data, field.path, text)
        try:
            body = orjson.dumps(data, option=orjson.OPT_SORT_KEYS).decode()  # as a replay reads it back (JCS)
        finally:
            for field in fields[: len(texts)]:
                set_at(data, field.path, "")
    else:
        body = str(data)
    lines.extend(f"data: {line}" for line in body.split("\n"))
    return ("\n".join(lines) + "\n\n").encode("utf-8"), body


def recorded_events(http: Mapping[str, Any], *, seq: int | None = None) -> list[bytes]:
    """The bytes of each event of a recorded stream (``response.http`` with ``sse`` and ``texts``), as the
    recording handed them over. The journal is hostile: a field of another shape is a ``SchemaError``."""
    events, texts = http.get("sse"), http.get("texts", {})
    if not isinstance(events, list):
        raise SchemaError("payload.response.http.sse", "the recorded stream's events (a list)", events, seq=seq)
    if not isinstance(texts, Mapping) or not all(type(text) is str for text in texts.values()):
        raise SchemaError("payload.response.http.texts", "an object of channel names to text", texts, seq=seq)
    offsets = dict.fromkeys(texts, 0)
    written = []
    for index, item in enumerate(events):
        where = f"payload.response.http.sse[{index}]"
        if not isinstance(item, Mapping) or not isinstance(item.get("event"), (str, type(None))):
            raise SchemaError(where, "an event: {event: text or null, data, slices?}", item, seq=seq)
        data, slices = item.get("data"), item.get("slices", [])
        if not isinstance(data, (dict, list, str)):
            raise SchemaError(f"{where}.data", "the event's data (an object, a list or text)", data, seq=seq)
        if "id" in item and type(item["id"]) is not str or "retry" in item and type(item["retry"]) is not int:
            raise SchemaError(where, "an event whose id is text and retry a whole number", item, seq=seq)
        fields = [field for field in event_shape(item.get("event"), data).fields if not field.whole] if slices else []
        if not isinstance(slices, list) or len(slices) != len(fields):
            raise SchemaError(f"{where}.slices", f"the lengths of its {len(fields)} text field(s)", slices, seq=seq)
        pieces = []
        for field, size in zip(fields, slices):
            start = offsets.get(field.channel)
            if type(size) is not int or size < 0 or start is None or start + size > len(texts[field.channel]):
                raise SchemaError(f"{where}.slices", f"lengths within the text of {field.channel!r}", slices, seq=seq)
            pieces.append(texts[field.channel][start : start + size])
            offsets[field.channel] = start + size
        if any(get_at(data, field.path) != "" for field in fields):
            raise SchemaError(
                f"{where}.data", "an event whose text fields are empty (filled from texts)", data, seq=seq
            )
        written.append(render_event(item, pieces))
    return written


def _fixed(policy: StreamPolicy, value: Any) -> Any:
    """``value`` as the harness redacts it, redacted again until left alone (its marker may give a token the
    start a detector wants), so the harness writes it as it is."""
    for _ in range(_FIXED_POINT_ROUNDS):
        redacted = policy.redactor.redact_value(value)
        if redacted == value:
            return redacted
        value = redacted
    return value


def _drop_logprobs(data: dict[str, Any]) -> None:
    for choice in data.get("choices") or ():
        if isinstance(choice, dict) and choice.get("logprobs") is not None:
            choice["logprobs"] = None
    if data.get("logprobs"):
        data["logprobs"] = []


_EXACT_INTEGERS = 2**53
#: a number with a fraction or an exponent, or of 16 digits or more (in a string too: then it only costs a walk)
_FRACTION_OR_LONG = re.compile(r"\d[.eE]|\d{16}")


def _journal_form(value: Any) -> Any:
    """``value`` as the journal gives it back: a whole float is an integer (JCS writes ``1.0`` as ``1``).
    ValueError for an integer it cannot hold exactly (past 2**53): such an event is kept as its text."""
    kind = type(value)
    if kind is dict:
        return {key: _journal_form(item) for key, item in value.items()}
    if kind is list:
        return [_journal_form(item) for item in value]
    if kind is float and value.is_integer():
        value = int(value)
        kind = int
    if kind is int and not -_EXACT_INTEGERS <= value <= _EXACT_INTEGERS:
        raise ValueError(f"{value} is outside the exact integer range of JSON numbers")
    return value

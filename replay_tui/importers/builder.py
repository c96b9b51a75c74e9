"""Records -> a schema-v1 journal, written by the journal's own ``JournalWriter``.

The chain starts at the import: ``run.started`` says where the events came from
(format, file name, sha256, importer version) and how faithful they are; each event
keeps its pointer back to the foreign record under ``payload.diagnostics.source``
(never part of a logical comparison). Step ids and parents follow the harness's own
rules, so an agent rewritten on the harness produces the same events:

* every model call opens a step (``step-01``, ``step-02``...), tool calls join it;
* a model request hangs from the last observation (input or tool result) of its agent,
  a tool call from the model response that asked for it, a result from its call.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Generator, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import orjson

from .. import __version__
from ..journal import json_patch
from ..journal.canonical import canonical_json_of_parsed, canonical_string
from ..journal.hashing import sha256_hex, state_hash
from ..journal.model import (
    INPUT_RECEIVED,
    KINDS,
    MODEL_REQUEST,
    MODEL_RESPONSE,
    NOTE,
    RUN_ENDED,
    RUN_STARTED,
    STATE_TRANSITION,
    TOOL_CALL,
    TOOL_RESULT,
)
from ..journal.writer import JournalWriter, SplicedEvent, rfc3339_second, utc_now
from .records import EndRecord, Fidelity, InputRecord, ModelRecord, NoteRecord, Record, StateRecord, ToolRecord

IMPORTER_VERSION = "1"
#: Imported runs take no snapshots: a replay of them must not expect any.
NO_SNAPSHOTS = 1_000_000_000


@dataclass(frozen=True)
class SourceInfo:
    """Where an imported journal came from; recorded in run.started ``imported``."""

    format: str
    file_name: str
    sha256: str
    size: int
    detail: dict[str, Any] = field(default_factory=dict)  # trace id, sample id and epoch...

    def to_json(self, fidelity: dict[str, Any]) -> dict[str, Any]:
        return {
            "format": self.format,
            "file_name": self.file_name,
            "sha256": self.sha256,
            "size": self.size,
            "importer_version": IMPORTER_VERSION,
            "fidelity": fidelity,
            **({"detail": self.detail} if self.detail else {}),
        }


@dataclass(slots=True)
class Prepared:
    """A record's events with their payloads already canonical JSON: all of a record that does not
    depend on the run's order, so an importer can make it while reading and write it later."""

    kind: str  # "input", "model", "tool" or "note"
    payloads: tuple[bytes, ...]
    at: str | None
    links: tuple[str, ...] = ()  # model: the tool call ids it asked for; tool: its own call id
    scope: str | None = None
    at_json: bytes | None = None  # ``at`` as canonical JSON, when the importer kept it so


def prepare(
    record: InputRecord | ModelRecord | ToolRecord | NoteRecord,
    *,
    parsed_json: bool = False,
    diagnostics_json: bytes | None = None,
) -> Prepared:
    """The events of a record, each payload as canonical bytes (``parsed_json``: no JSON round trip needed;
    ``diagnostics_json``: the canonical ``{"source": record.source}``, when the importer spells it faster)."""

    def canonical(value: Any) -> bytes:
        return canonical_json_of_parsed(value if parsed_json else as_parsed_json(value))

    diagnostics = {"source": record.source}
    if isinstance(record, InputRecord):
        payload: dict[str, Any] = {"role": record.role, "content": record.content, "diagnostics": diagnostics}
        if record.context is not None:
            payload["context"] = record.context
        return Prepared("input", (canonical(payload),), record.at, scope=record.scope)
    if isinstance(record, ModelRecord):
        # each part is canonicalized once and spliced into the payloads (JCS composes; keys in order):
        # the request is hashed and written as it is, the diagnostics go into both events
        request_json = canonical(record.request)
        request_hash = b'"' + sha256_hex(request_json).encode("ascii") + b'"'
        diagnostics_json = diagnostics_json or canonical(diagnostics)
        request_payload = b"".join(
            (
                b'{"diagnostics":',
                diagnostics_json,
                b',"request":',
                request_json,
                b',"request_hash":',
                request_hash,
                b"}",
            )
        )
        response_payload = b"".join(
            (
                b'{"diagnostics":',
                diagnostics_json,
                b"" if record.error is None else b',"error":' + canonical(record.error),
                b',"request_hash":',
                request_hash,
                b',"response":',
                canonical(record.response),
                b"" if record.stream is None else b',"stream":' + canonical(record.stream),
                b"}",
            )
        )
        calls = (record.response or {}).get("tool_calls") or ()
        call_ids = tuple(call["id"] for call in calls if isinstance(call, dict) and isinstance(call.get("id"), str))
        return Prepared("model", (request_payload, response_payload), record.at, call_ids, record.scope)
    if isinstance(record, ToolRecord):
        # call_key as hashing.call_key_of: JCS of {"args", "name"}, spliced from the canonical arguments
        arguments_json = canonical(record.arguments)
        name_json = canonical(record.name)
        key = sha256_hex(b'{"args":' + arguments_json + b',"name":' + name_json + b"}")
        head = b"".join((b',"call_id":', canonical(record.call_id), b',"call_key":"', key.encode("ascii"), b'"'))
        diagnostics_json = diagnostics_json or canonical(diagnostics)
        call = b"".join(
            (b'{"arguments":', arguments_json, head, b',"diagnostics":', diagnostics_json, b',"tool":', name_json, b"}")
        )
        result = b"".join(
            (
                b"{",
                head[1:],
                b',"diagnostics":',
                diagnostics_json,
                b"" if record.duration_ms is None else b',"duration_ms":' + canonical(record.duration_ms),
                b',"error":' + canonical(record.error)
                if record.error is not None
                else b',"result":' + canonical(record.result),
                b',"tool":',
                name_json,
                b"}",
            )
        )
        return Prepared("tool", (call, result), record.at, (record.call_id,), record.scope)
    note: dict[str, Any] = {"text": record.text, "diagnostics": diagnostics}
    if record.data is not None:
        note["data"] = record.data
    return Prepared("note", (canonical(note),), record.at, scope=record.scope)


class SplicedWriter(Protocol):
    """What ``JournalBuilder`` writes through: a ``JournalWriter``, or ``writer_process.PipedWriter`` (the
    same writer in another process)."""

    @property
    def last_seq(self) -> int: ...

    def append_spliced(
        self, kind_json: bytes, payload_json: bytes, *, parent_json: bytes, step_json: bytes, recorded_at_json: bytes
    ) -> bytes: ...

    def append_spliced_all(self, events: Generator[SplicedEvent, bytes, None]) -> None: ...

    def close(self) -> None: ...


#: Opens the writer of a journal (its path, its run id).
OpenWriter = Callable[[Path, str], SplicedWriter]


def local_writer(out: Path, run_id: str) -> JournalWriter:
    """An import's writer (in this process, or in ``writer_process``'s): every payload is plain parsed JSON (see
    ``_emit``), so the writer takes its fast canonical path; nobody tails the journal while it is written, so
    lines are not flushed."""
    return JournalWriter(out, run_id=run_id, fsync="close", payloads_are_parsed_json=True, flush_lines=False)


@dataclass
class _Cursor:
    """What the next events of one agent hang from (as the harness's causal cursor), as event ids' JSON."""

    observation: bytes = b"null"
    response: bytes = b"null"
    call_ids: frozenset[str] = frozenset()


def as_parsed_json(value: Any) -> Any:
    """A JSON round trip: what YAML or a computation produced becomes plain parsed JSON."""
    return orjson.loads(orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS))


def rfc3339_of_nanos(nanos: int) -> str:
    """RFC 3339 UTC with microseconds, rounded as ``datetime.fromtimestamp(nanos / 1e9)`` rounds
    (half to even on the float); the date and time of day are formatted once per second."""
    fraction, whole = math.modf(nanos / 1e9)
    micros = round(fraction * 1e6)
    if micros >= 1_000_000:
        micros -= 1_000_000
        whole += 1
    elif micros < 0:
        micros += 1_000_000
        whole -= 1
    return f"{rfc3339_second(int(whole))}.{micros:06d}Z"


#: Each kind's canonical JSON, spliced into its events' envelopes.
_KIND_JSON = {kind: canonical_string(kind) for kind in KINDS}


class JournalBuilder:
    """Writes one imported run: ``start``, ``add`` each record in run order, ``finish``.

    Envelope parts (event ids, steps, times) are kept as their canonical JSON, as
    ``JournalWriter.append_spliced`` takes them: an import writes events by the hundred thousand."""

    def __init__(
        self,
        out: str | os.PathLike[str],
        *,
        run_id: str,
        parsed_json: bool = False,
        open_writer: OpenWriter = local_writer,
    ) -> None:
        self.out = Path(out)
        self.parsed_json = parsed_json
        self.writer = open_writer(self.out, run_id)
        self.steps = 0
        self.step_json = b"null"
        self.cursors: dict[str | None, _Cursor] = {None: _Cursor()}
        self.state: Any = None
        self.state_hash = state_hash(None)
        self.ended = False
        self.last_event_json = b"null"

    def start(
        self, source: SourceInfo, fidelity: dict[str, Any], *, initial_state: Any = None, at: str | None = None
    ) -> None:
        self.state = initial_state
        self.state_hash = state_hash(initial_state)
        payload = {
            "agent": "",
            "environment": {},
            "harness": {"version": __version__, "plugins": [], "config_hash": None, "options": {}, "redaction": {}},
            "reducer_version": "imported" if initial_state is not None else "none",
            "snapshot_every": NO_SNAPSHOTS,
            "initial_state": initial_state,
            "imported": source.to_json(fidelity),
        }
        self._emit(RUN_STARTED, payload, step=b"null", parent=b"null", at=at)

    def add(self, record: Record | Prepared) -> None:
        if isinstance(record, Prepared):
            self.add_prepared(record)
        elif isinstance(record, StateRecord):
            self._state(record)
        elif isinstance(record, EndRecord):
            self.finish(record)
        else:
            self.add_prepared(prepare(record, parsed_json=self.parsed_json))

    def add_prepared(self, item: Prepared) -> None:
        """Write a prepared record's events, linked into the run (steps, parents) as they come."""
        self.writer.append_spliced_all(self._linked(iter((item,))))

    def add_all(self, records: Iterable[Record | Prepared]) -> None:
        """``add`` each record; a run of prepared ones is written in one loop (``append_spliced_all``)."""
        records = iter(records)
        other: list[Record] = []

        def prepared() -> Iterator[Prepared]:
            for record in records:
                if not isinstance(record, Prepared):
                    other.append(record)
                    return
                yield record

        while True:
            self.writer.append_spliced_all(self._linked(prepared()))
            if not other:
                return
            self.add(other.pop())

    def _linked(self, items: Iterator[Prepared]) -> Generator[SplicedEvent, bytes, None]:
        """The events of prepared records, linked into the run (steps, parents) as they come: each is
        yielded as its envelope parts, and the writer sends back its event id (a later parent)."""
        cursors, model_request, model_response = self.cursors, _KIND_JSON[MODEL_REQUEST], _KIND_JSON[MODEL_RESPONSE]
        tool_call, tool_result = _KIND_JSON[TOOL_CALL], _KIND_JSON[TOOL_RESULT]
        for item in items:
            cursor = cursors.get(item.scope) or self._cursor(item.scope)
            at = item.at_json or self._at_json(item.at)
            kind = item.kind
            if kind == "model":
                self.steps += 1
                step = self.step_json = b'"step-%02d"' % self.steps
                request = yield model_request, item.payloads[0], cursor.observation, step, at
                last = cursor.response = yield model_response, item.payloads[1], request, step, at
                cursor.call_ids = frozenset(item.links)
            elif kind == "tool":
                step = self.step_json
                parent = cursor.response if item.links[0] in cursor.call_ids else cursor.observation
                call = yield tool_call, item.payloads[0], parent, step, at
                last = cursor.observation = yield tool_result, item.payloads[1], call, step, at
            elif kind == "input":
                last = cursor.observation = yield _KIND_JSON[INPUT_RECEIVED], item.payloads[0], b"null", b"null", at
                if item.scope is not None and cursors[None].observation == b"null":
                    cursors[None].observation = last
            else:
                last = yield _KIND_JSON[NOTE], item.payloads[0], b"null", self.step_json, at
            self.last_event_json = last

    def finish(self, end: EndRecord | None = None) -> int:
        """run.ended (once) and close; returns the number of events written."""
        if not self.ended:
            end = end or EndRecord()
            payload: dict[str, Any] = {"status": end.status, "output": end.output}
            if end.error is not None:
                payload["error"] = end.error
            self._emit(RUN_ENDED, payload, step=b"null", parent=b"null", at=end.at)
            self.ended = True
        self.writer.close()
        return self.writer.last_seq

    def abort(self) -> None:
        """Close and delete a half-written journal (bad input was found mid-way)."""
        try:
            self.writer.close()
        finally:
            self.out.unlink(missing_ok=True)

    # -- records -------------------------------------------------------------------------

    def _cursor(self, scope: str | None) -> _Cursor:
        cursor = self.cursors.get(scope)
        if cursor is None:
            cursor = self.cursors[scope] = _Cursor(observation=self.cursors[None].observation)
        return cursor

    def _at_json(self, at: str | None) -> bytes:
        """A record's time as JSON (now when the source gives none, as the writer does)."""
        return canonical_string(at or utc_now())

    def _state(self, record: StateRecord) -> None:
        try:
            after = json_patch.apply_patch(self.state, record.patch).state
        except json_patch.PatchError as error:
            raise ValueError(f"its JSON Patch does not apply to the state so far: {error}") from None
        after_hash = state_hash(after)
        payload = {
            "cause_seq": self.writer.last_seq,
            "before_hash": self.state_hash,
            "after_hash": after_hash,
            "reducer_version": "imported",
            "patch": record.patch,
            "diagnostics": {"source": record.source},
        }
        self._emit(STATE_TRANSITION, payload, step=self.step_json, parent=self.last_event_json, at=record.at)
        self.state, self.state_hash = after, after_hash

    def _emit(self, kind: str, payload: dict[str, Any], *, step: bytes, parent: bytes, at: str | None) -> None:
        payload_json = canonical_json_of_parsed(payload if self.parsed_json else as_parsed_json(payload))
        self.last_event_json = self.writer.append_spliced(
            _KIND_JSON[kind], payload_json, parent_json=parent, step_json=step, recorded_at_json=self._at_json(at)
        )


def write_run(
    out: str | os.PathLike[str],
    records: Iterable[Record | Prepared],
    *,
    run_id: str,
    source: SourceInfo,
    fidelity: Fidelity,
    initial_state: Any = None,
    started_at: str | None = None,
    parsed_json: bool = False,
    open_writer: OpenWriter = local_writer,
) -> int:
    """Write a whole run; a half-written journal is removed when the records fail. ``parsed_json``:
    every value in the records came straight out of a JSON parser (no round trip needed)."""
    builder = JournalBuilder(out, run_id=run_id, parsed_json=parsed_json, open_writer=open_writer)
    try:
        builder.start(source, fidelity.label(), initial_state=initial_state, at=started_at)
        builder.add_all(records)
        return builder.finish()
    except BaseException:
        builder.abort()
        raise

"""An OTLP/JSON file read in two passes. Pass one (``OtlpTrace()``) maps each span as it is read and spools
its events' payloads, as canonical JSON, to a temporary file, so memory holds an index entry per span, not
the trace (a big file is read by several processes at once: ``parallel``); spans whose content is in log
records (or may be: logs further down add to a model call) are mapped once every log is known, their lines
read again. Pass two (``items``, ``write``) writes the entries in start-time order and links them (steps,
parents); all traces of a file go into one journal, in start-time order.
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys
import tempfile
from array import array
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, BinaryIO, cast

import orjson

from ...journal.canonical import canonical_string
from ..builder import Prepared, SourceInfo, prepare, rfc3339_of_nanos, write_run
from ..errors import TraceImportError
from ..messages import from_otel_messages, json_or_text, response_from_messages
from ..records import EndRecord, Fidelity, InputRecord, ModelRecord, Record, leading_input
from . import parallel
from .decode import MODEL_OPERATIONS, Shape, any_value, attributes, log_records, reduce_span, spans_of
from .lines import Request, iter_requests
from .mapping import (
    DETAILS_EVENT,
    EXACT_PAYLOAD,
    LEGACY_MESSAGE_EVENTS,
    diagnostics_json,
    error_of,
    missing_content,
    record_of,
)
from .writer_process import PipedWriter, WriterProcessFailed

#: A span mapped after every log record is read: its content may be in them (``late``).
LATE = 1
#: A model span mapped while reading, and again if log records add to its content.
MAYBE_LATE = 2
#: Index columns of pass one, one entry per span (joined from the workers in file order).
_INDEX_ARRAYS = ("starts", "ends", "ranks", "late", "offsets", "entry_lengths", "at_lengths", "first_lengths", "kinds")
#: The kinds of ``Prepared`` records, by their code in the index.
PREPARED_KINDS = ("input", "model", "tool", "note")


SPOOL_BUFFER = 1 << 20  # spooled in 1 MiB writes


def _new_spool() -> BinaryIO:
    spool = tempfile.TemporaryFile(prefix="replay-tui-otlp-", buffering=SPOOL_BUFFER)  # noqa: SIM115 (until close())
    return cast(BinaryIO, spool)


def _later(kept: Any, seen: Any) -> Any:
    """The one of two (order key, ...) tuples that comes later in the run (``seen`` on a tie)."""
    return seen if kept is None or seen[0] >= kept[0] else kept


class _AgentOf(dict[str, "str | None"]):
    """span id -> the agent it belongs to: itself if it is one, else the nearest above (``OtlpTrace._scope``);
    worked out on first look-up and remembered (siblings share their parent's: pass two looks up each parent)."""

    def __init__(self, trace: OtlpTrace) -> None:
        super().__init__()
        self.trace = trace

    def __missing__(self, span_id: str) -> str | None:
        trace = self.trace
        found = self[span_id] = span_id if span_id in trace.agents else trace._scope(span_id, 255)
        return found


class OtlpTrace:
    """Pass one over the file: map and spool spans, keep the GenAI log content; then the spans whose
    content is in log records are mapped (their lines read again); ``items()`` is pass two.

    A big file of one request per line is read by ``workers`` processes at once, each a run of whole
    lines into its own spool; what they found is joined in file order, so the journal is the same bytes
    as from one reader (``workers=1``). None: one per CPU (at most ``MAX_WORKERS``) from ``PARALLEL_BYTES`` on.
    """

    def __init__(self, path: Path, *, workers: int | None = None) -> None:
        self._begin(path, _new_spool())
        try:
            count = parallel.worker_count(path) if workers is None else workers
            shared = False
            if count > 1 and sys.executable:
                try:
                    shared = parallel.read_in_parallel(self, count)
                except (OSError, parallel.WorkersFailed):  # no processes to be had, or one died: read it alone
                    self.close()
                    self._begin(path, _new_spool())
            if not shared:
                self._read()
            if not self.spans:
                raise TraceImportError(str(self.path), None, "at least one span (an OTLP/JSON file with resourceSpans)")
            self._settle_fidelity()
            self._map_late()
        except BaseException:
            self.close()
            raise

    def _begin(self, path: Path, spool: BinaryIO) -> None:
        self.path = path
        self.spool = spool
        self.spools: list[BinaryIO] = [spool]  # the workers' spools after this one
        self._writer: subprocess.Popen[bytes] | None = None  # a worker kept to write pass two (writer_process)
        self.spool_of = array("h")  # which spool holds each span's entry
        self.starts = array("Q")
        # a span's entry in its spool: its time's JSON, then its events' payloads (no header to parse again)
        self.offsets = array("q")  # where each span's entry starts in its spool
        self.entry_lengths = array("q")
        self.at_lengths = array("h")  # the time's JSON (empty: the span has none)
        self.first_lengths = array("q")  # the first payload (the second, if any, is the rest)
        self.kinds = array("b")  # the index in PREPARED_KINDS
        self.span_ids: list[str] = []
        self.links: dict[int, tuple[str, ...]] = {}  # span index -> tool call ids (asked for, or its own)
        self.ends = array("Q")
        self.ranks = array("b")  # 0 for agent spans: they go before children that start at the same time
        self.late = array("b")  # LATE, MAYBE_LATE or 0: whether the span is mapped after every log is read
        self._spooled = 0
        # the run's answer, kept while reading: (order key, content) of the last model answer, and
        # (order key, answer, error) of the last root agent
        self._answer: tuple[tuple[int, int, int], Any] | None = None
        self._root: tuple[tuple[int, int, int], Any, dict[str, Any] | None] | None = None
        self.agents: set[str] = set()  # the invoke_agent spans (a span id seen again: its last operation decides)
        self.parent: dict[str, str] = {}  # span id -> parent span id
        self.content: dict[tuple[str, str], dict[str, Any]] = {}  # (trace, span) -> content from logs
        self.spans = 0
        self.trace_ids: set[str] = set()
        self.fidelity = Fidelity()
        self._unsure: list[tuple[tuple[str, str], bool, bool]] = []  # model spans whose content may be in logs

    def close(self) -> None:
        if self._writer is not None:
            parallel.stop_worker(self._writer)
            self._writer = None
        for spool in self.spools:
            spool.close()

    def write(self, out: Path, *, run_id: str, source: SourceInfo, fidelity: Fidelity, started_at: str | None) -> int:
        """Pass two (``items``), written to ``out``: by pass one's worker process when it kept one and a CPU is
        free for it, so the chain is hashed and written while the next events are made (in this process if that
        worker fails). Returns the number of events."""
        run = functools.partial(
            write_run, out, run_id=run_id, source=source, fidelity=fidelity, started_at=started_at, parsed_json=True
        )
        writer, self._writer = self._writer, None
        if writer is not None and not parallel.cpu_free():
            parallel.stop_worker(writer)
            writer = None
        if writer is not None:
            try:
                return run(self.items(), open_writer=functools.partial(PipedWriter, writer))
            except WriterProcessFailed:
                pass  # what it wrote is removed (write_run): written again, here
            finally:
                parallel.stop_worker(writer)
        return run(self.items())

    def _read(self) -> None:
        for number, request in iter_requests(self.path, reduced=True):
            self._take(number, request)

    def _take(self, number: int, request: Request) -> None:
        try:
            if type(request) is list:  # the line's spans, reduced already (fast_spans)
                for reduced in request:
                    self._spool_reduced(reduced)
                return
            assert isinstance(request, dict)
            for position, (span, _scope) in enumerate(spans_of(request), start=1):
                if not span.get("spanId"):
                    raise TraceImportError(str(self.path), f"line {number}, span {position}", "a spanId on every span")
                self._spool(span, number)
            for record in log_records(request):
                self._keep_log(record)
        except Shape as shape:
            raise TraceImportError(str(self.path), f"line {number}", str(shape)) from None

    # -- pass one in worker processes ---------------------------------------------------

    def _chunk_state(self) -> dict[str, Any]:
        """What a worker found, for ``_join``."""
        names = (*_INDEX_ARRAYS, "span_ids", "agents")
        return {name: getattr(self, name) for name in names} | {
            "parent": self.parent,
            "links": self.links,
            "content": self.content,
            "spans": self.spans,
            "trace_ids": self.trace_ids,
            "fidelity": self.fidelity,
            "unsure": self._unsure,
            "answer": self._answer,
            "root": self._root,
        }

    def _join(self, state: dict[str, Any], spool: int) -> None:
        """Add a worker's spans after the ones so far, as if one reader had gone on reading."""
        base = self.spans
        for name in (*_INDEX_ARRAYS, "span_ids"):
            getattr(self, name).extend(state[name])
        self.links.update((index + base, links) for index, links in state["links"].items())
        self.spool_of.extend(array("h", [spool]) * state["spans"])
        if self.agents:
            self.agents.difference_update(state["span_ids"])  # a span id seen again: its last operation decides
        self.agents |= state["agents"]
        self.parent.update(state["parent"])
        for key, logged in state["content"].items():
            kept = self.content.setdefault(key, {})
            for field, value in logged.items():
                if field == "events":
                    kept.setdefault("events", []).extend(value)
                else:
                    kept[field] = value
        self.trace_ids |= state["trace_ids"]
        fidelity: Fidelity = state["fidelity"]
        self.fidelity.model_calls += fidelity.model_calls
        self.fidelity.tool_calls += fidelity.tool_calls
        self.fidelity.tools_incomplete |= fidelity.tools_incomplete
        self._unsure.extend(state["unsure"])
        if state["answer"] is not None:
            (start, rank, index), answer = state["answer"]
            self._answer = _later(self._answer, ((start, rank, index + base), answer))
        if state["root"] is not None:
            (start, rank, index), answer, error = state["root"]
            self._root = _later(self._root, ((start, rank, index + base), answer, error))
        self.spans += state["spans"]

    def _spool(self, span: Mapping[str, Any], line: int) -> None:
        self._spool_reduced(reduce_span(span, line))

    def _spool_reduced(self, reduced: dict[str, Any]) -> None:
        span_id, operation, attrs, start = reduced["span"], reduced["op"], reduced["attrs"], reduced["start"]
        self.trace_ids.add(reduced["trace"])
        rank = 0 if operation == "invoke_agent" else 1
        index = self.spans
        self.starts.append(start)
        self.ends.append(reduced["end"])
        self.ranks.append(rank)
        self.spool_of.append(0)
        self.span_ids.append(span_id)
        if self._count(operation, attrs, reduced):
            self.late.append(LATE)  # its content may be in logs not read yet: mapped by _map_late
            for column in (self.offsets, self.entry_lengths, self.at_lengths, self.first_lengths, self.kinds):
                column.append(0)
        else:
            record = self._record(reduced, scoped=False)
            prepared = prepare(record, parsed_json=True, diagnostics_json=diagnostics_json(reduced))  # type: ignore[arg-type]  # spans make no state or end records
            self._see_answer(record, reduced, (start, rank, index))
            # a model span's content may yet grow from log records (mapped again if so)
            self.late.append(MAYBE_LATE if prepared.kind == "model" and EXACT_PAYLOAD not in attrs else 0)
            offset, entry, at, first, kind = self._spool_entry(prepared, index)
            self.offsets.append(offset)
            self.entry_lengths.append(entry)
            self.at_lengths.append(at)
            self.first_lengths.append(first)
            self.kinds.append(kind)
        if operation == "invoke_agent":
            self.agents.add(span_id)
        else:
            self.agents.discard(span_id)
        if reduced["parent"]:
            self.parent[span_id] = str(reduced["parent"])
        self.spans = index + 1

    def _spool_entry(self, prepared: Prepared, index: int) -> tuple[int, int, int, int, int]:
        """Spool a span's time and payloads: (offset, entry length, time's length, first payload's length, kind)."""
        at_json = canonical_string(prepared.at) if prepared.at else b""
        offset = self._spooled
        self.spool.write(at_json)
        self.spool.writelines(prepared.payloads)
        entry = len(at_json) + sum(map(len, prepared.payloads))
        self._spooled = offset + entry
        if prepared.links:
            self.links[index] = prepared.links
        return offset, entry, len(at_json), len(prepared.payloads[0]), PREPARED_KINDS.index(prepared.kind)

    def _write_entry(self, index: int, prepared: Prepared) -> None:
        """Spool a span's prepared events and point its index entry at them (in this process's spool)."""
        self.spool_of[index] = 0
        (
            self.offsets[index],
            self.entry_lengths[index],
            self.at_lengths[index],
            self.first_lengths[index],
            self.kinds[index],
        ) = self._spool_entry(prepared, index)

    def _map_late(self) -> None:
        """Map the spans whose content is (or may be) in log records, now that every log is known:
        their lines are read again, so nothing of a span is kept in memory in between."""
        if LATE not in self.late and not (self.content and MAYBE_LATE in self.late):
            return
        index = 0
        for number, request in iter_requests(self.path):
            assert isinstance(request, dict)  # never reduced: reduced=False
            for span, _scope in spans_of(request):
                if index >= self.spans:  # the file changed under us; what was read first stands
                    return
                late = self.late[index]
                if late == LATE or (
                    late == MAYBE_LATE
                    and (str(span.get("traceId") or ""), str(span.get("spanId") or "")) in self.content
                ):
                    reduced = reduce_span(span, number)
                    record = self._record(reduced)
                    self._see_answer(record, reduced, (reduced["start"], self.ranks[index], index))
                    prepared = prepare(record, parsed_json=True, diagnostics_json=diagnostics_json(reduced))  # type: ignore[arg-type]
                    self._write_entry(index, prepared)
                index += 1

    def _see_answer(self, record: Record, span: Mapping[str, Any], key: tuple[int, int, int]) -> None:
        """Keep the run's answer: the last (in run order) model answer, and the last root agent's."""
        if isinstance(record, ModelRecord) and record.response is not None:
            if self._answer is None or key >= self._answer[0]:
                self._answer = (key, record.response.get("content"))
        elif isinstance(record, InputRecord) and not span["parent"]:
            if self._root is None or key >= self._root[0]:
                outputs = from_otel_messages(json_or_text(span["attrs"].get("gen_ai.output.messages")))
                answer = response_from_messages(outputs, None, {})["content"] if outputs else None
                self._root = (key, answer, error_of(span, span["attrs"]))

    def _count(self, operation: str, attrs: Mapping[str, Any], span: Mapping[str, Any]) -> bool:
        """Fidelity, counted while spooling (run.started states it, so it is known before pass two).
        True for a model span whose content may be in log records."""
        if operation == "execute_tool":
            complete = EXACT_PAYLOAD in attrs or (
                ("gen_ai.tool.call.arguments" in attrs or "input.value" in attrs)
                and ("gen_ai.tool.call.result" in attrs or "output.value" in attrs or error_of(span, attrs) is not None)
            )
            self.fidelity.see_tool(complete)
        elif operation in MODEL_OPERATIONS:
            if EXACT_PAYLOAD in attrs:
                self.fidelity.see_model("")
                return False
            names = [event.get("name") for event in span["events"]]
            has_in = (
                "gen_ai.input.messages" in attrs
                or any(name in LEGACY_MESSAGE_EVENTS for name in names)
                or "llm.input_messages.0.message.role" in attrs
                or "llm.input_messages.0.message.content" in attrs
            )
            has_out = (
                "gen_ai.output.messages" in attrs
                or "gen_ai.choice" in names
                or "llm.output_messages.0.message.role" in attrs
                or "llm.output_messages.0.message.content" in attrs
                or error_of(span, attrs) is not None
            )
            if has_in and has_out:
                self.fidelity.see_model("")
            else:
                self._unsure.append(((span["trace"], span["span"]), has_in, has_out))
                return True
        return False

    def _settle_fidelity(self) -> None:
        for key, has_in, has_out in self._unsure:
            logged = self.content.get(key, {})
            events = [event.get("name") for event in logged.get("events", ())]
            has_in = (
                has_in or "gen_ai.input.messages" in logged or any(name in LEGACY_MESSAGE_EVENTS for name in events)
            )
            has_out = has_out or "gen_ai.output.messages" in logged or "gen_ai.choice" in events
            self.fidelity.see_model(missing_content(has_in, has_out))
        self._unsure = []

    def _keep_log(self, record: Mapping[str, Any]) -> None:
        attrs = attributes(record.get("attributes"))
        name = record.get("eventName") or attrs.get("event.name")
        if not isinstance(name, str) or not name.startswith("gen_ai."):
            return
        key = (str(record.get("traceId") or ""), str(record.get("spanId") or ""))
        kept = self.content.setdefault(key, {})
        if name == DETAILS_EVENT:
            for field in ("gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions"):
                if field in attrs:
                    kept[field] = attrs[field]
        else:
            kept.setdefault("events", []).append(
                {"name": name, "attrs": {**attrs, "body": any_value(record.get("body"))}}
            )

    def items(self) -> Iterator[Record | Prepared]:
        """Pass two: every span's events in start-time order (an input first when the trace has none),
        then the run's end: the root agent's answer (or the last model answer) and its status."""
        keys = [
            start * 2 + rank for start, rank in zip(self.starts, self.ranks)
        ]  # one int compares faster than a tuple
        order = sorted(range(self.spans), key=keys.__getitem__)
        del keys
        self.spool.flush()
        spooled = [spool.fileno() for spool in self.spools]  # pread, not mmap: mapped pages would count as memory
        pread, spool_of, offsets, entry_lengths = os.pread, self.spool_of, self.offsets, self.entry_lengths
        at_lengths, first_lengths, kinds, span_ids = self.at_lengths, self.first_lengths, self.kinds, self.span_ids
        links, no_links, parent_of, agent_of = self.links.get, (), self.parent.get, _AgentOf(self)
        leading = True
        for index in order:
            entry = pread(spooled[spool_of[index]], entry_lengths[index], offsets[index])
            at = at_lengths[index]
            first = at + first_lengths[index]
            kind = PREPARED_KINDS[kinds[index]]
            payloads = (entry[at:first], entry[first:]) if kind == "model" or kind == "tool" else (entry[at:],)
            at_json = entry[:at] if at else None
            if kind == "input":
                scope: str | None = span_ids[index]
            else:  # the agent of the span's parent (one look-up per span: agent_of is a dict)
                parent = parent_of(span_ids[index])
                scope = None if parent is None else agent_of[parent]
            item = Prepared(kind, payloads, None, links(index, no_links), scope, at_json)
            if leading and kind != "note":  # the run's input is settled by its first input or call
                leading = False
                if kind != "input":
                    request = orjson.loads(payloads[0])  # the model request (or tool call) payload
                    at_text = orjson.loads(at_json) if at_json else None
                    yield leading_input(request.get("request"), request["diagnostics"]["source"], at_text)
            yield item
        end_at = rfc3339_of_nanos(max(self.ends)) if self.ends else None
        answer = self._answer[1] if self._answer is not None else None
        root_answer, failed = (self._root[1], self._root[2]) if self._root is not None else (None, None)
        yield EndRecord(
            "error" if failed else "ok", root_answer if root_answer is not None else answer, failed, at=end_at
        )

    def _scope(self, span_id: str | None, depth: int = 256) -> str | None:
        """The nearest invoke_agent span above this one (its agent) at most ``depth`` levels up, or None."""
        seen = 0
        while span_id and seen < depth:
            span_id = self.parent.get(span_id)
            if span_id and span_id in self.agents:
                return span_id
            seen += 1
        return None

    def _record(self, span: dict[str, Any], *, scoped: bool = True) -> Record:
        """The span's record (``mapping``); ``scoped=False`` while reading (the agents above it may come later)."""
        return record_of(span, self.path, self.content, self._scope(span["span"]) if scoped else None)

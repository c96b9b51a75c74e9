"""OTLP/JSON traces (and the logs that carry GenAI content) -> records.

Follows the OpenTelemetry GenAI semantic conventions: ``chat`` / ``text_completion``
spans are model calls (``gen_ai.request.*``, ``gen_ai.input.messages``,
``gen_ai.output.messages``, ``gen_ai.response.finish_reasons``, ``gen_ai.usage.*``);
content missing from the span is taken from the log event
``gen_ai.client.inference.operation.details`` or the older ``gen_ai.*.message`` /
``gen_ai.choice`` events (span events or log records), joined by trace and span id;
``execute_tool`` spans are tool calls; ``invoke_agent`` spans are the agents the other
spans hang from. OpenInference attributes (``llm.input_messages.N.message.*``,
``tool.name``, ``input.value``, ``output.value``) are the fallback.

The input is streamed: a file of OTLP/JSON requests one per line (the OTLP file
exporter's form) is read line by line; each span is mapped as it is read and its events'
payloads spooled, as canonical JSON, to a temporary file, so memory holds an index entry
per span, not the trace. A big file is read by worker processes at once, each a run of
whole lines (``otlp_worker``). Spans whose content is in log records (or may be: logs
further down add to a model call) are mapped once every log is known, their lines read
again. Pass two writes the entries in start-time order and links them (steps, parents).
All traces of a file go into one journal, in start-time order.
"""

from __future__ import annotations

import base64
import functools
import os
import pickle
import shutil
import subprocess
import sys
import tempfile
from array import array
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, BinaryIO, cast

import orjson

from ..journal.canonical import MAX_EXACT_INT, canonical_string
from . import otlp_spans
from .builder import Prepared, SourceInfo, prepare, rfc3339_of_nanos, write_run
from .errors import TraceImportError
from .messages import (
    from_openai_chat,
    from_otel_messages,
    json_or_text,
    message,
    parse_arguments,
    response_from_messages,
)
from .records import EndRecord, Fidelity, InputRecord, ModelRecord, NoteRecord, Record, ToolRecord, leading_input
from .writer_process import PipedWriter, WriterProcessFailed, receive_frame

MODEL_OPERATIONS = frozenset({"chat", "text_completion", "generate_content"})
DETAILS_EVENT = "gen_ai.client.inference.operation.details"
LEGACY_MESSAGE_EVENTS = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
}
STATUS_ERROR = 2
_PARAMS_OR_USAGE = ("gen_ai.request.", "gen_ai.usage.")
_LAST_NANOS = 2**64  # OTLP's fixed64 (2554-07-21T23:34:33Z); the index holds times as unsigned 64-bit
#: A span mapped after every log record is read: its content may be in them (``late``).
LATE = 1
#: A model span mapped while reading, and again if log records add to its content.
MAYBE_LATE = 2
#: Index columns of pass one, one entry per span (joined from the workers in file order).
_INDEX_ARRAYS = ("starts", "ends", "ranks", "late", "offsets", "entry_lengths", "at_lengths", "first_lengths", "kinds")
#: The kinds of ``Prepared`` records, by their code in the index.
PREPARED_KINDS = ("input", "model", "tool", "note")
#: What ``replay-tui export --format otlp`` adds to each model and tool span: the recorded content, exactly.
EXACT_PAYLOAD = "replay_tui.payload"


# -- OTLP/JSON values -------------------------------------------------------------------


class _Shape(Exception):
    """Part of a request is not of the OTLP/JSON shape; the message says what was expected there.
    ``OtlpTrace._take`` names the line."""


def any_value(value: Any) -> Any:
    """An OTLP ``AnyValue`` as a plain JSON value (an int64 beyond JSON's exact range stays a string)."""
    if not isinstance(value, Mapping):
        return value
    try:
        if "stringValue" in value:
            return value["stringValue"]
        if "intValue" in value:
            return int_value(value["intValue"])
        if "doubleValue" in value:
            return value["doubleValue"]
        if "boolValue" in value:
            return value["boolValue"]
        if "arrayValue" in value:
            return [any_value(item) for item in (value["arrayValue"] or {}).get("values") or ()]
        if "kvlistValue" in value:
            return attributes((value["kvlistValue"] or {}).get("values") or ())
        if "bytesValue" in value:
            return base64.b64decode(value["bytesValue"], validate=True).hex()
    except (AttributeError, TypeError, ValueError):  # binascii.Error is a ValueError
        kinds = ", ".join(sorted("".join(c if " " <= c <= "~" else "?" for c in str(key)[:40]) for key in value)[:4])
        raise _Shape(f"an OTLP AnyValue whose value parses (found one with {kinds})") from None
    return None


def int_value(value: Any) -> int | str:
    """An ``intValue`` as an int (beyond JSON's exact range, as text); raises what ``int()`` raises."""
    number = int(value)
    return number if -MAX_EXACT_INT <= number <= MAX_EXACT_INT else str(number)


def attributes(items: Any) -> dict[str, Any]:
    """OTLP ``KeyValue`` items as a dict; an item without a string key is skipped."""
    if type(items) is list:
        try:  # the well-formed case in one comprehension; anything odd takes the checked loop
            return {
                item["key"]: text if type(text := item["value"].get("stringValue")) is str else any_value(item["value"])
                for item in items
                if type(item["key"]) is str
            }
        except (TypeError, KeyError, AttributeError):
            pass
    converted: dict[str, Any] = {}
    for item in items if isinstance(items, list) else ():
        if not isinstance(item, dict) or not isinstance(item.get("key"), str):
            continue
        value = item.get("value")
        text = value.get("stringValue") if isinstance(value, dict) else None  # most attributes are strings
        converted[item["key"]] = text if text is not None else any_value(value)
    return converted


def _gen_ai_events(events: Any) -> list[dict[str, Any]]:
    """A span's ``gen_ai.*`` events (name and attributes as a dict)."""
    return [
        {"name": event.get("name"), "attrs": attributes(event.get("attributes"))}
        for event in _objects(events, "events")
        if str(event.get("name", "")).startswith("gen_ai.")
    ]


def _nanos(value: Any, field: str) -> int:
    """Nanoseconds since 1970 (0 when missing or not a number)."""
    try:
        nanos = int(value or 0)
    except (TypeError, ValueError):
        return 0
    if not 0 <= nanos < _LAST_NANOS:
        raise _Shape(f"{field}: nanoseconds since 1970, an unsigned 64-bit number (found {nanos})")
    return nanos


# -- reading ----------------------------------------------------------------------------
#: A request line: parsed JSON, or (from ``otlp_spans``) its spans reduced already.
Request = dict[str, Any] | list[dict[str, Any]]


def iter_requests(path: Path, *, reduced: bool = False) -> Iterator[tuple[int, Request]]:
    """(line number, request) for each OTLP/JSON request in the file: one per line, or one
    document spread over many lines. ``reduced``: a line of plain spans may come as its reduced spans."""
    with open(path, "rb") as handle:
        first = handle.readline()
        if not first.strip():
            raise TraceImportError(
                str(path), "line 1", "an OTLP/JSON request (resourceSpans or resourceLogs); the line is empty"
            )
        try:
            yield 1, _request(orjson.loads(first), path, 1)
            one_per_line = True
        except orjson.JSONDecodeError:
            one_per_line = False
        if not one_per_line:
            rest = first + handle.read()
            try:
                yield 1, _request(orjson.loads(rest), path, 1)
            except orjson.JSONDecodeError as error:
                # Twin of _line_requests' error (a whole document is named by character, a line by number)
                raise TraceImportError(
                    str(path),
                    f"character {error.pos}",
                    f"complete OTLP/JSON (the file is cut short or not JSON: {error.msg})",
                ) from None
            return
        yield from _line_requests(handle, path, 2, reduced=reduced)


def _line_requests(
    lines: Iterable[bytes], path: Path, first: int, *, reduced: bool = False
) -> Iterator[tuple[int, Request]]:
    """(line number, request) of one request per line, numbered from ``first``; blank lines are skipped.
    ``reduced``: a line of plain spans comes as its reduced spans (``otlp_spans``), any other the checked way."""
    fast = _FAST_SPANS if reduced else None
    for number, line in enumerate(lines, start=first):
        if not line or line.isspace():  # not strip(): that copies each line (a megabyte) to test it
            continue
        if fast is not None and (spans := fast(line, number)) is not None:
            yield number, spans
            continue
        try:
            yield number, _request(orjson.loads(line), path, number)
        except orjson.JSONDecodeError as error:
            # Twin of iter_requests' error for a whole document (a line is named by its number)
            raise TraceImportError(
                str(path),
                f"line {number}",
                f"a complete OTLP/JSON request (the line is cut short or not JSON: {error.msg})",
            ) from None


class _Counted(Iterator[bytes]):
    """The lines of an iterator, counted as they are taken."""

    def __init__(self, lines: Iterator[bytes]) -> None:
        self.lines, self.count = lines, 0

    def __next__(self) -> bytes:
        line = next(self.lines)
        self.count += 1
        return line


def _lines_between(handle: BinaryIO, start: int, end: int) -> Iterator[bytes]:
    """The lines from byte ``start`` (a line start) up to byte ``end`` (a line start or the end)."""
    handle.seek(start)
    at = start
    while at < end:
        line = handle.readline()
        if not line:
            return
        at += len(line)
        yield line


def _request(value: Any, path: Path, line: int) -> dict[str, Any]:
    if not isinstance(value, dict) or (value and not ("resourceSpans" in value or "resourceLogs" in value)):
        raise TraceImportError(str(path), f"line {line}", "an OTLP/JSON request with resourceSpans or resourceLogs")
    return value


def _spans(request: Mapping[str, Any]) -> Iterator[tuple[dict[str, Any], Mapping[str, Any]]]:
    for resource_spans in _objects(request.get("resourceSpans"), "resourceSpans"):
        scopes = resource_spans.get("scopeSpans") or resource_spans.get("instrumentationLibrarySpans")
        for scope_spans in _objects(scopes, "scopeSpans"):
            scope = scope_spans.get("scope") or {}
            for span in _objects(scope_spans.get("spans"), "spans"):
                yield span, scope


def _log_records(request: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    for resource_logs in _objects(request.get("resourceLogs"), "resourceLogs"):
        for scope_logs in _objects(resource_logs.get("scopeLogs"), "scopeLogs"):
            yield from _objects(scope_logs.get("logRecords"), "logRecords")


def _objects(items: Any, field: str) -> list[dict[str, Any]]:
    """A list of JSON objects (a missing or empty one as an empty list)."""
    if not items:
        return []
    if type(items) is not list or not all(type(item) is dict for item in items):
        raise _Shape(f"{field}: a list of objects")
    return items


# -- the import -------------------------------------------------------------------------
#: From this size on, pass one is shared between worker processes (below it, starting them costs more).
PARALLEL_BYTES = 16 * 1024 * 1024
#: The size of the runs of lines the readers of pass one claim one at a time: small enough that the last
#: one to finish keeps the others waiting briefly, big enough that a run's own cost is nothing beside it.
CHUNK_BYTES = 4 * 1024 * 1024
MAX_WORKERS = 4
_PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])


def _worker_environment() -> dict[str, str]:
    """This environment, with the directory holding replay_tui first on the path (as this process found it)."""
    paths = [_PACKAGE_ROOT, *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}


SPOOL_BUFFER = 1 << 20  # spooled in 1 MiB writes


def _new_spool() -> BinaryIO:
    spool = tempfile.TemporaryFile(prefix="replay-tui-otlp-", buffering=SPOOL_BUFFER)  # noqa: SIM115 (until close())
    return cast(BinaryIO, spool)


def _worker_count(path: Path) -> int:
    if path.stat().st_size < PARALLEL_BYTES:
        return 1
    return max(1, min(MAX_WORKERS, usable_cpus()))


def cpu_free() -> bool:
    """Whether a CPU is likely idle (the 1-minute load average under the CPUs less a half): only then does
    pass two in two processes pay (it takes as long as its slower half, ~0.4 CPU-s for 100k spans, not ~0.65);
    on a busy machine it costs its handoffs (~10 % more CPU, and each half waits for the other's turn on a CPU)."""
    try:
        return os.getloadavg()[0] < usable_cpus() - 0.5
    except OSError:  # no load average here
        return True


def usable_cpus() -> int:
    """The CPUs this process may run on (all of them where the OS cannot say)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def _one_request_per_line(path: Path) -> bool:
    """Whether the file is the OTLP file exporter's form (the first line a whole request): only that
    form can be cut into runs of lines."""
    with open(path, "rb") as handle:
        first = handle.readline()
    try:
        return isinstance(orjson.loads(first), dict)
    except orjson.JSONDecodeError:
        return False


def _chunks(path: Path, count: int, *, finer_tail: int = 0, numbered: bool = True) -> list[tuple[int, int, int]]:
    """``count`` runs of whole lines of about the same size: (first byte, end byte, first line number).
    ``finer_tail``: the last so many are cut in four each, so the readers end their last runs about together.
    ``numbered=False``: line numbers 0 (``read_chunks`` counts them: not the whole file first, here, alone)."""
    size = path.stat().st_size
    cuts = {size * part // count for part in range(1, count)}
    cuts.update(size * quarter // (4 * count) for quarter in range(4 * (count - finer_tail), 4 * count) if quarter % 4)
    starts = [0]
    with open(path, "rb") as handle:
        for cut in sorted(cuts):
            handle.seek(max(cut, starts[-1]))
            handle.readline()  # on to the start of the next line
            starts.append(min(handle.tell(), size))
        starts.append(size)
        numbers = [1] if numbered else [0] * len(starts)
        for begin, end in zip(starts, starts[1:-1]) if numbered else ():  # the newlines before each start
            numbers.append(numbers[-1] + _newlines(handle, begin, end))
    return [(begin, end, number) for begin, end, number in zip(starts, starts[1:], numbers) if end > begin]


def _newlines(handle: BinaryIO, start: int, end: int) -> int:
    handle.seek(start)
    count, left = 0, end - start
    while left > 0:
        block = handle.read(min(left, 1 << 20))
        if not block:
            break
        count += block.count(b"\n")
        left -= len(block)
    return count


#: What a reader found in one run of lines (``OtlpTrace._chunk_state``), or its bad input as the error's
#: (path, record, expected): the error itself does not unpickle.
ChunkState = dict[str, Any] | tuple[str, str | None, str]


def read_chunks(
    path: str, chunks: list[tuple[int, int, int]], claims: str, spool: BinaryIO, *, pickled: bool = False
) -> tuple[list[tuple[int, ChunkState | bytes]], int]:
    """Pass one over the runs of lines (first byte, end byte, first line number) this reader claims: whoever
    is free takes the next unclaimed run (a file made in ``claims``), so a reader the machine slows down reads
    less. Each run gets its own state; all spool to ``spool``. Returns (run index, state) and the spool's size.
    ``pickled``: each state pickled as soon as it is made (a worker's: not all at the end, while the import waits).
    A first line number 0 is counted here: the newlines of the runs this reader skipped (it counts its own as it
    reads them), so the readers share the count and start at once."""
    found: list[tuple[int, ChunkState | bytes]] = []
    spooled = 0
    counted_to, line_there = 0, 1  # a byte offset (a line start) and its line number
    with open(path, "rb") as handle:
        for index, (start, end, first_line) in enumerate(chunks):
            try:
                os.close(os.open(os.path.join(claims, str(index)), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            except FileExistsError:
                continue  # another reader has it
            if not first_line:
                first_line = line_there + _newlines(handle, counted_to, start)
            trace = OtlpTrace.__new__(OtlpTrace)
            trace._begin(Path(path), spool)
            trace._spooled = spooled
            lines = _Counted(_lines_between(handle, start, end))
            try:
                for number, request in _line_requests(lines, trace.path, first_line, reduced=True):
                    trace._take(number, request)
                state: ChunkState = trace._chunk_state()
                counted_to, line_there = end, first_line + lines.count  # every line of the run was read
            except TraceImportError as error:
                state = (str(error.path), error.record, error.expected)
                counted_to, line_there = start, first_line
            found.append((index, pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL) if pickled else state))
            spooled = trace._spooled
    return found, spooled


def _stop(worker: subprocess.Popen[bytes], *, at_once: bool = False) -> None:
    """End a worker: told to (the end of its input: it has nothing more to do) or, ``at_once``, killed."""
    if worker.poll() is None and not at_once:
        try:
            assert worker.stdin is not None
            worker.stdin.close()
            worker.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            pass
    if worker.poll() is None:
        worker.kill()
        worker.wait()


class _WorkersFailed(Exception):
    """A worker process ended without its answer (killed, out of memory...)."""


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
            count = _worker_count(path) if workers is None else workers
            shared = False
            if count > 1 and sys.executable:
                try:
                    shared = self._read_in_parallel(count)
                except (OSError, _WorkersFailed):  # no processes to be had, or one died: read it alone
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
            _stop(self._writer)
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
        if writer is not None and not cpu_free():
            _stop(writer)
            writer = None
        if writer is not None:
            try:
                return run(self.items(), open_writer=functools.partial(PipedWriter, writer))
            except WriterProcessFailed:
                pass  # what it wrote is removed (write_run): written again, here
            finally:
                _stop(writer)
        return run(self.items())

    def _read(self) -> None:
        for number, request in iter_requests(self.path, reduced=True):
            self._take(number, request)

    def _take(self, number: int, request: Request) -> None:
        try:
            if type(request) is list:  # the line's spans, reduced already (otlp_spans)
                for reduced in request:
                    self._spool_reduced(reduced)
                return
            assert isinstance(request, dict)
            for position, (span, _scope) in enumerate(_spans(request), start=1):
                if not span.get("spanId"):
                    raise TraceImportError(str(self.path), f"line {number}, span {position}", "a spanId on every span")
                self._spool(span, number)
            for record in _log_records(request):
                self._keep_log(record)
        except _Shape as shape:
            raise TraceImportError(str(self.path), f"line {number}", str(shape)) from None

    # -- pass one in worker processes ---------------------------------------------------

    def _read_in_parallel(self, workers: int) -> bool:
        """This process and ``workers - 1`` worker processes share the runs of lines, then their states are
        joined in file order. False (nothing read) when the file is not one request per line."""
        folder = tempfile.mkdtemp(prefix="replay-tui-otlp-")
        claims = os.path.join(folder, "claims")
        os.mkdir(claims)
        started: list[subprocess.Popen[bytes]] = []
        try:
            for index in range(1, workers):
                spool_path = os.path.join(folder, f"{index}.spool")
                started.append(
                    subprocess.Popen(
                        [sys.executable, "-m", "replay_tui.importers.otlp_worker", str(self.path), claims, spool_path],
                        stdin=subprocess.PIPE,  # the runs of lines, sent once the workers are on their way
                        stdout=subprocess.PIPE,
                        stderr=subprocess.DEVNULL,  # never onto the app's terminal; a failure is read alone
                        env=_worker_environment(),
                    )
                )
            if not _one_request_per_line(self.path):  # asked while the workers start (their runs are sent below)
                return False
            count = max(workers, -(-self.path.stat().st_size // CHUNK_BYTES))
            chunks = _chunks(self.path, count, finer_tail=workers, numbered=False)
            runs = orjson.dumps(chunks) + b"\n"  # one line; then the frames of pass two, if it is written there
            for worker in started:
                assert worker.stdin is not None
                worker.stdin.write(runs)
                worker.stdin.flush()
            own, self._spooled = read_chunks(str(self.path), chunks, claims, self.spool)
            states: dict[int, tuple[ChunkState | bytes, int]] = {index: (state, 0) for index, state in own}
            for index, worker in enumerate(started, start=1):
                assert worker.stdout is not None
                answer = receive_frame(worker.stdout)
                if answer is None or answer[0] != b"A":
                    raise _WorkersFailed(worker.wait())
                found, _size = pickle.loads(answer[1])  # noqa: S301 (our own child's answer)
                self.spools.append(open(os.path.join(folder, f"{index}.spool"), "rb"))  # noqa: SIM115
                states.update((run, (state, index)) for run, state in found)
            if len(states) != len(chunks):
                raise _WorkersFailed(None)  # a run nobody read: cannot happen while every reader answers
            for run in range(len(chunks)):
                state, spool = states[run]
                if isinstance(state, bytes):
                    state = pickle.loads(state)  # noqa: S301 (our own child's answer)
                if isinstance(state, tuple):  # the first bad line in file order, where one reader would stop
                    raise TraceImportError(str(self.path), state[1], state[2])
                self._join(state, spool)
            self._writer, started = started[0], started[1:]  # pass two's writer; the others end
            return True
        finally:
            for worker in started:
                _stop(worker, at_once=True)
            shutil.rmtree(folder, ignore_errors=True)  # the spools stay readable through their open files

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

    def _reduce(self, span: Mapping[str, Any], line: int) -> dict[str, Any]:
        """What the mapping reads of a span, attributes as a dict."""
        # Twin of otlp_spans.reduce_span (the fast path: the same keys and values, read from msgspec structs)
        get = span.get
        attrs = attributes(get("attributes"))
        events = _objects(get("events"), "events")  # checked before the status, as always
        status = get("status") or {}
        if type(status) is not dict:
            raise _Shape("status: an object")
        name = get("name")
        return {
            "trace": str(get("traceId") or ""),
            "span": str(get("spanId") or ""),  # never empty: _take checks
            "parent": get("parentSpanId") or None,
            "name": name,
            "start": _nanos(get("startTimeUnixNano"), "startTimeUnixNano"),
            "end": _nanos(get("endTimeUnixNano"), "endTimeUnixNano"),
            "line": line,
            "op": _operation(str(name or ""), attrs),
            "attrs": attrs,
            "status": status,
            "events": _gen_ai_events(events),
        }

    def _spool(self, span: Mapping[str, Any], line: int) -> None:
        self._spool_reduced(self._reduce(span, line))

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
            prepared = prepare(record, parsed_json=True, diagnostics_json=_diagnostics_json(reduced))  # type: ignore[arg-type]  # spans make no state or end records
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
            for span, _scope in _spans(request):
                if index >= self.spans:  # the file changed under us; what was read first stands
                    return
                late = self.late[index]
                if late == LATE or (
                    late == MAYBE_LATE
                    and (str(span.get("traceId") or ""), str(span.get("spanId") or "")) in self.content
                ):
                    reduced = self._reduce(span, number)
                    record = self._record(reduced)
                    self._see_answer(record, reduced, (reduced["start"], self.ranks[index], index))
                    prepared = prepare(record, parsed_json=True, diagnostics_json=_diagnostics_json(reduced))  # type: ignore[arg-type]
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
                self._root = (key, answer, _error(span, span["attrs"]))

    def _count(self, operation: str, attrs: Mapping[str, Any], span: Mapping[str, Any]) -> bool:
        """Fidelity, counted while spooling (run.started states it, so it is known before pass two).
        True for a model span whose content may be in log records."""
        if operation == "execute_tool":
            complete = EXACT_PAYLOAD in attrs or (
                ("gen_ai.tool.call.arguments" in attrs or "input.value" in attrs)
                and ("gen_ai.tool.call.result" in attrs or "output.value" in attrs or _error(span, attrs) is not None)
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
                or _error(span, attrs) is not None
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
            self.fidelity.see_model(_missing(has_in, has_out))
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
        """The span's record; ``scoped=False`` while reading (the agents above it may come later)."""
        source = {"trace_id": span["trace"], "span_id": span["span"], "line": span["line"]}
        at = rfc3339_of_nanos(span["start"]) if span["start"] else None
        attrs = span["attrs"]
        operation = span["op"]
        scope = self._scope(span["span"]) if scoped else None
        exact = attrs.get(EXACT_PAYLOAD)
        if isinstance(exact, str) and operation in MODEL_OPERATIONS | {"execute_tool"}:
            return _exact(span, operation, exact, source, at, scope, self.path)
        if operation in MODEL_OPERATIONS:
            return self._model(span, attrs, source, at, scope)
        if operation == "execute_tool":
            return _tool(span, attrs, source, at, scope)
        if operation == "invoke_agent":
            name = attrs.get("gen_ai.agent.name") or span.get("name")
            inputs = from_otel_messages(json_or_text(attrs.get("gen_ai.input.messages")))
            users = [item["content"] for item in inputs if item["role"] == "user"]
            context = {"agent": name, **({"agent_id": attrs["gen_ai.agent.id"]} if "gen_ai.agent.id" in attrs else {})}
            return InputRecord(users[-1] if users else name, source, context=context, scope=span["span"], at=at)
        return NoteRecord(
            str(span.get("name") or "span"), source, data={"attributes": attrs} if attrs else None, scope=scope, at=at
        )

    def _model(
        self, span: dict[str, Any], attrs: dict[str, Any], source: dict[str, Any], at: str | None, scope: str | None
    ) -> ModelRecord:
        logged = self.content.get((span["trace"], span["span"]), {})
        inputs = json_or_text(attrs.get("gen_ai.input.messages", logged.get("gen_ai.input.messages")))
        outputs = json_or_text(attrs.get("gen_ai.output.messages", logged.get("gen_ai.output.messages")))
        system = json_or_text(attrs.get("gen_ai.system_instructions", logged.get("gen_ai.system_instructions")))
        messages: list[dict[str, Any]] | None = None
        output: list[dict[str, Any]] | None = None
        if isinstance(inputs, list):
            messages = from_otel_messages(inputs)
        if isinstance(outputs, list):
            output = from_otel_messages(outputs)
        if messages is None or output is None:
            legacy_in, legacy_out = _legacy_events(span["events"] + logged.get("events", []))
            messages = messages if messages is not None else legacy_in
            output = output if output is not None else legacy_out
        if messages is None or output is None:
            openinference_in, openinference_out = _openinference(attrs)
            messages = messages if messages is not None else openinference_in
            output = output if output is not None else openinference_out
        if isinstance(system, list) and messages is not None:
            texts = [part.get("content") for part in system if isinstance(part, Mapping) and part.get("type") == "text"]
            messages = [message("system", "".join(str(text) for text in texts))] + messages
        request: dict[str, Any] = {
            "model": attrs.get("gen_ai.request.model") or attrs.get("llm.model_name"),
            "messages": messages or [],
        }
        params: dict[str, Any] = {}
        usage: dict[str, Any] = {}
        for name, value in attrs.items():  # one walk over the attributes for both
            if name.startswith(_PARAMS_OR_USAGE):
                if name[7] == "r":  # gen_ai.request.
                    if name != "gen_ai.request.model":
                        params[name[15:]] = value
                else:  # gen_ai.usage.
                    usage[name[13:]] = value
        if params:
            request["params"] = params
        finish = attrs.get("gen_ai.response.finish_reasons")
        finish_reason = finish[0] if isinstance(finish, list) and finish else finish
        if not usage:
            usage = {
                name[len("llm.token_count.") :] + "_tokens": value
                for name, value in attrs.items()
                if name in ("llm.token_count.prompt", "llm.token_count.completion")
            }
        response = response_from_messages(output or [], finish_reason, usage)
        error = _error(span, attrs)
        missing = _missing(messages is not None, output is not None or error is not None)
        return ModelRecord(
            request,
            None if error is not None and output is None else response,
            source,
            error=error,
            scope=scope,
            at=at,
            content_complete=not missing,
            missing=missing,
        )


def _exact(
    span: dict[str, Any],
    operation: str,
    text: str,
    source: dict[str, Any],
    at: str | None,
    scope: str | None,
    path: Path,
) -> Record:
    """A span exported by replay-tui: its ``replay_tui.payload`` holds the journal's content as it was."""
    try:
        exact = orjson.loads(text)
    except orjson.JSONDecodeError:
        raise TraceImportError(
            str(path), f"line {span['line']}, span {span['span']}", f"JSON text in {EXACT_PAYLOAD}"
        ) from None
    if not isinstance(exact, dict):
        raise TraceImportError(
            str(path), f"line {span['line']}, span {span['span']}", f"a JSON object in {EXACT_PAYLOAD}"
        )
    if operation == "execute_tool":
        return ToolRecord(
            str(exact.get("call_id")),
            str(exact.get("tool")),
            parse_arguments(exact.get("arguments")),
            source,
            result=exact.get("result"),
            error=exact.get("error"),
            duration_ms=exact.get("duration_ms"),
            scope=scope,
            at=at,
        )
    raw_request = exact.get("request")
    request: dict[str, Any] = raw_request if isinstance(raw_request, dict) else {}
    return ModelRecord(
        request, exact.get("response"), source, error=exact.get("error"), stream=exact.get("stream"), scope=scope, at=at
    )


def _diagnostics_json(span: Mapping[str, Any]) -> bytes:
    """The canonical ``{"source": ...}`` of a span's events (``_record``'s source), spelled out: one per span."""
    return b'{"source":{"line":%d,"span_id":%s,"trace_id":%s}}' % (
        span["line"],
        canonical_string(span["span"]),
        canonical_string(span["trace"]),
    )


def _missing(has_input: bool, has_output: bool) -> str:
    if not has_input and not has_output:
        return "no message content captured"
    if not has_input:
        return "no input messages captured"
    return "" if has_output else "no output messages captured"


def _operation(name: str, attrs: Mapping[str, Any]) -> str:
    operation = attrs.get("gen_ai.operation.name")
    if isinstance(operation, str):
        return operation
    kind = attrs.get("openinference.span.kind")
    if isinstance(kind, str):
        return {"LLM": "chat", "TOOL": "execute_tool", "AGENT": "invoke_agent"}.get(kind.upper(), kind.lower())
    head = name.split(" ", 1)[0]
    return head if head in MODEL_OPERATIONS or head in ("execute_tool", "invoke_agent") else ""


def _error(span: Mapping[str, Any], attrs: Mapping[str, Any]) -> dict[str, Any] | None:
    status = span.get("status") or {}
    code = status.get("code")
    failed = code in (STATUS_ERROR, "STATUS_CODE_ERROR") or "error.type" in attrs
    if not failed:
        return None
    return {
        "type": str(attrs.get("error.type") or "error"),
        "message": str(status.get("message") or ""),
        "code": None,
        "timeout": False,
    }


def _tool(
    span: dict[str, Any], attrs: dict[str, Any], source: dict[str, Any], at: str | None, scope: str | None
) -> ToolRecord:
    name = (
        attrs.get("gen_ai.tool.name")
        or attrs.get("tool.name")
        or str(span.get("name") or "tool").removeprefix("execute_tool ")
    )
    raw_arguments = attrs.get("gen_ai.tool.call.arguments", attrs.get("input.value"))
    raw_result = attrs.get("gen_ai.tool.call.result", attrs.get("output.value"))
    error = _error(span, attrs)
    duration = round((span["end"] - span["start"]) / 1e6, 3) if span["end"] >= span["start"] > 0 else None
    call_id = attrs.get("gen_ai.tool.call.id") or f"span-{span['span']}"
    complete = raw_arguments is not None and (raw_result is not None or error is not None)
    return ToolRecord(
        str(call_id),
        str(name),
        parse_arguments(raw_arguments),
        source,
        result=json_or_text(raw_result),
        error=error,
        duration_ms=duration,
        scope=scope,
        at=at,
        content_complete=complete,
    )


def _legacy_events(events: list[dict[str, Any]]) -> tuple[list[dict[str, Any]] | None, list[dict[str, Any]] | None]:
    """Messages of the older ``gen_ai.*.message`` / ``gen_ai.choice`` events."""
    inputs: list[dict[str, Any]] = []
    outputs: list[dict[str, Any]] = []
    for event in events:
        attrs = event.get("attrs") or {}
        body = attrs.get("body")
        body = body if isinstance(body, dict) else {}
        role = LEGACY_MESSAGE_EVENTS.get(str(event.get("name")))
        if role is not None:
            content = body.get("content", attrs.get("content"))
            calls = [
                {
                    "id": call.get("id"),
                    "name": (call.get("function") or {}).get("name"),
                    "arguments": parse_arguments((call.get("function") or {}).get("arguments")),
                }
                for call in body.get("tool_calls") or ()
            ]
            inputs.append(message(role, content, calls, body.get("id") if role == "tool" else None))
        elif event.get("name") == "gen_ai.choice":
            reply: dict[str, Any] = body["message"] if isinstance(body.get("message"), dict) else body
            converted = from_openai_chat([{"role": "assistant", **reply}])
            outputs.extend(converted)
    return (inputs or None), (outputs or None)


def _openinference(attrs: Mapping[str, Any]) -> tuple[list[dict[str, Any]] | None, list[dict[str, Any]] | None]:
    """``llm.input_messages.N.message.*`` / ``llm.output_messages.N.message.*``."""

    def collect(prefix: str) -> list[dict[str, Any]] | None:
        found: dict[int, dict[str, Any]] = {}
        for name, value in attrs.items():
            if not name.startswith(prefix):
                continue
            index_text, _, rest = name[len(prefix) :].partition(".message.")
            if not index_text.isdigit():
                continue
            entry = found.setdefault(int(index_text), {"role": "user", "content": None, "tool_calls": {}})
            if rest in ("role", "content"):
                entry[rest] = value
            elif rest == "tool_call_id":
                entry["tool_call_id"] = value
            elif rest.startswith("tool_calls."):
                call_index, _, field = rest[len("tool_calls.") :].partition(".tool_call.")
                call = entry["tool_calls"].setdefault(call_index, {"id": None, "name": None, "arguments": {}})
                if field == "id":
                    call["id"] = value
                elif field == "function.name":
                    call["name"] = value
                elif field == "function.arguments":
                    call["arguments"] = parse_arguments(value)
        if not found:
            return None
        return [
            message(
                str(entry["role"]),
                entry["content"],
                [entry["tool_calls"][key] for key in sorted(entry["tool_calls"])],
                entry.get("tool_call_id"),
            )
            for _, entry in sorted(found.items())
        ]

    return collect("llm.input_messages."), collect("llm.output_messages.")


#: Pass one's fast path over a line of plain spans (None without msgspec: every line the checked way).
_FAST_SPANS = otlp_spans.reader(any_value, int_value, _nanos, _operation, _gen_ai_events)

"""Foreign traces -> schema-v1 journals: OTLP (OTel GenAI), OpenAI Agents SDK, Inspect AI, vcrpy.

``import_trace(src, out)`` detects the format by content (or takes it), converts, and
writes one journal (``out``) or, for a log with several samples and epochs, a directory
``out`` of journals. Importers never import Textual or the harness; they sit above
``journal`` and write through its ``JournalWriter``.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..journal.collector import collector_paused
from ..journal.files import check_readable_path
from ..journal.hashing import file_sha256
from ..journal.private import make_private_dirs
from .builder import IMPORTER_VERSION, SourceInfo, rfc3339_of_nanos, write_run
from .detect import FORMATS, INSPECT, JOURNAL, OPENAI_AGENTS, OTLP, VCR, detect_format
from .errors import TraceImportError
from .join import Joined, refuse_unjoinable
from .plain import TextBudget, plain_json, rfc3339_or_none, run_file_names, safe_id, shown
from .records import Fidelity, Record, with_leading_input

__all__ = [
    "FORMATS",
    "IMPORTER_VERSION",
    "ImportedJournal",
    "TraceImportError",
    "detect_format",
    "file_sha256",
    "import_trace",
]


#: The sources of a joined input, as the run's ``imported.detail.joined`` lists them (``Joined.describe``).
Joins = Sequence[dict[str, Any]]


# Twin of harness/config.py:HarnessConfig in shape only (frozen dataclass field lists; nothing to share)
@dataclass(frozen=True)
class ImportedJournal:
    path: Path
    events: int
    fidelity: dict[str, Any]
    detail: dict[str, Any]


class _HashedMeanwhile:
    """``file_sha256`` in a thread from now on: an import reads the file meanwhile (the digest names the run
    only when it is written). ``result()`` waits for it; ``stop()`` ends it early (the import failed)."""

    def __init__(self, path: Path, known: str | None) -> None:
        self._stop = threading.Event()
        self._found: list[str | BaseException] = [] if known is None else [known]
        self._thread = threading.Thread(target=self._hash, args=(path,), name="replay-tui-sha256", daemon=True)
        if known is None:
            self._thread.start()

    def _hash(self, path: Path) -> None:
        try:
            self._found.append(file_sha256(path, self._stop))
        except BaseException as error:  # noqa: BLE001 (raised by result(), in the importer's thread)
            self._found.append(error)

    def result(self) -> str:
        if self._thread.is_alive():
            self._thread.join()
        found = self._found[0]
        if isinstance(found, BaseException):
            raise found
        return found

    def stop(self) -> None:
        self._stop.set()


Source = str | os.PathLike[str]


def import_trace(
    src: Source | Sequence[Source], out: Source, *, format: str = "auto", sha256: str | None = None
) -> list[ImportedJournal]:
    """Convert ``src`` into ``out``; raises TraceImportError on bad input (nothing is left behind). Several
    sources (OTLP spans and the logs that carry their content, as two exporters write them) are joined
    into one journal (importers/join.py)."""
    sources = [Path(item) for item in ([src] if isinstance(src, (str, os.PathLike)) else src)]
    for path in sources:
        check_readable_path(path, "trace")  # a FIFO or a device: a JournalOpenError naming what it is
        if not path.is_file():
            raise TraceImportError(
                str(path), None, f"a trace file ({'a directory' if path.is_dir() else 'no such file'})"
            )
    if len(sources) > 1:
        return _import_joined(sources, Path(out), format)
    path = sources[0]
    chosen = detect_format(path) if format == "auto" else format
    if chosen == JOURNAL:
        raise TraceImportError(
            str(path), None, "a foreign trace; this is a replay-tui journal already (open it directly)"
        )
    if chosen not in IMPORTERS:
        raise TraceImportError(
            str(path), None, f"one of the formats {', '.join(FORMATS)} (detected none; pass --format)"
        )
    hashed = _HashedMeanwhile(path, sha256)
    try:
        with collector_paused():  # the parse makes containers by the million (a third of it was collection)
            return IMPORTERS[chosen](path, Path(out), hashed.result, ())
    finally:
        hashed.stop()


def _import_joined(sources: list[Path], out: Path, format: str) -> list[ImportedJournal]:
    """Several sources of one trace as one input (``Joined``), imported as one file is."""
    formats = [detect_format(path) if format == "auto" else format for path in sources]
    refuse_unjoinable(sources, formats)
    folder = Path(tempfile.mkdtemp(prefix=".replay-tui-joining-", dir=out.parent))
    try:
        joined = Joined(sources, folder)
        try:
            with collector_paused():
                return IMPORTERS[str(formats[0])](joined.path, out, lambda: joined.digest, joined.describe())
        except TraceImportError as error:
            raise joined.located(error) from None
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _source(path: Path, fmt: str, digest: str, detail: dict[str, Any] | None = None, joined: Joins = ()) -> SourceInfo:
    """The run's ``imported`` block; ``joined``: the sources a joined input came from (which lines each)."""
    detail = {**(detail or {}), **({"joined": list(joined)} if joined else {})}
    detail = plain_json(detail, path, "the run's detail")  # ids and names the trace chose
    return SourceInfo(fmt, path.name, "sha256:" + digest, path.stat().st_size, detail)


def _import_otlp(path: Path, out: Path, digest_of: Callable[[], str], joined: Joins = ()) -> list[ImportedJournal]:
    from .otlp import OtlpTrace

    trace = OtlpTrace(path)  # pass one, while the file is hashed
    try:
        digest = digest_of()
        detail = {"spans": trace.spans, "traces": len(trace.trace_ids)}
        counted = trace.fidelity  # counted while spooling: run.started states it before pass two
        started = rfc3339_of_nanos(min(trace.starts)) if any(trace.starts) else None
        events = trace.write(
            out,
            run_id=f"otlp-{digest[:12]}",
            source=_source(path, OTLP, digest, detail, joined),
            fidelity=counted,
            started_at=started,
        )
    finally:
        trace.close()
    return [ImportedJournal(out, events, counted.label(), detail)]


@dataclass
class _Run:
    """One run of a multi-run source, with its records in memory (these formats are small)."""

    name: str
    run_id: str
    records: list[Record]
    detail: dict[str, Any]
    initial_state: Any = None
    started_at: str | None = None


def _write_runs(
    path: Path, out: Path, fmt: str, digest: str, runs: list[_Run], joined: Joins = ()
) -> list[ImportedJournal]:
    """One run: ``out`` is the journal; several: ``out`` is a directory holding one journal each."""
    if len(runs) > 1:
        make_private_dirs(out, exist_ok=False)  # 0700, like the journals the writer puts in it
    written: list[ImportedJournal] = []
    names = run_file_names([run.name for run in runs])  # the trace chose them: no "../", no clashes
    last: list[Record] = []  # the record being written, to name it if the builder refuses it
    try:
        for run, name in zip(runs, names):
            fidelity = Fidelity()
            records = list(with_leading_input(iter(run.records), fidelity))
            target = out if len(runs) == 1 else out / name
            events = write_run(
                target,
                _located(path, records, last),
                run_id=safe_id(run.run_id),
                source=_source(path, fmt, digest, run.detail, joined),
                fidelity=fidelity,
                initial_state=run.initial_state,
                started_at=rfc3339_or_none(run.started_at),
            )
            written.append(ImportedJournal(target, events, fidelity.label(), run.detail))
    except (ValueError, TypeError, RecursionError) as error:
        if len(runs) > 1:
            shutil.rmtree(out, ignore_errors=True)
        if isinstance(error, TraceImportError):
            raise
        where = ", ".join(f"{key} {shown(value)}" for key, value in getattr(last[-1], "source", {}).items()) or None
        raise TraceImportError(str(path), where, f"a record the journal can hold ({shown(error, 120)})") from None
    except BaseException:
        if len(runs) > 1:
            shutil.rmtree(out, ignore_errors=True)
        raise
    return written


def _located(path: Path, records: list[Record], last: list[Record]) -> Iterator[Record]:
    """``records``, each kept in ``last`` while the builder writes it (a JSON Patch that does not apply
    is found only there)."""
    for record in records:
        last[:] = [record]
        yield record


def _import_agents(path: Path, out: Path, digest_of: Callable[[], str], joined: Joins = ()) -> list[ImportedJournal]:
    from .agents_sdk import TraceRecords, traces

    digest = digest_of()
    runs: list[_Run] = []
    budget = TextBudget()  # shared by every trace of the file
    for trace_id, entry in traces(path).items():
        if not entry["spans"]:
            continue
        trace = entry["trace"] or {}
        detail = {"trace_id": trace_id, "workflow_name": trace.get("workflow_name"), "group_id": trace.get("group_id")}
        spans = TraceRecords(path, entry["spans"], budget)
        started = spans.spans[0][1].get("started_at")
        runs.append(
            _Run(
                f"trace-{trace_id}",
                f"agents-{digest[:12]}-{len(runs) + 1}",
                list(spans.records()),
                detail,
                started_at=str(started).replace("+00:00", "Z") if started else None,
            )
        )
    return _write_runs(path, out, OPENAI_AGENTS, digest, runs, joined)


def _import_inspect(path: Path, out: Path, digest_of: Callable[[], str], joined: Joins = ()) -> list[ImportedJournal]:
    from .inspect_log import sample_records, samples

    digest = digest_of()
    runs: list[_Run] = []
    budget = TextBudget()  # shared by every sample: attachments can repeat one text in each
    for where, sample, log in samples(path):
        records, initial_state = sample_records(path, where, sample, budget)
        spec = log.get("eval") or {}
        sample_id, epoch = sample.get("id"), sample.get("epoch")
        detail = {
            "member": where,
            "sample_id": sample_id,
            "epoch": epoch,
            "task": spec.get("task"),
            "eval_id": spec.get("eval_id"),
            "model": spec.get("model"),
        }
        started = str(sample.get("started_at") or "").replace("+00:00", "Z") or None
        runs.append(
            _Run(
                f"sample-{sample_id}-epoch-{epoch}",
                f"inspect-{digest[:12]}-{sample_id}-{epoch}",
                records,
                detail,
                initial_state=initial_state,
                started_at=started,
            )
        )
    if not runs:
        raise TraceImportError(str(path), None, "at least one sample in the Inspect AI log")
    return _write_runs(path, out, INSPECT, digest, runs)


def _import_vcr(path: Path, out: Path, digest_of: Callable[[], str], joined: Joins = ()) -> list[ImportedJournal]:
    from .vcr import cassette_records

    digest = digest_of()
    records = list(cassette_records(path))
    detail = {"interactions": len(records) - 1}
    return _write_runs(path, out, VCR, digest, [_Run("cassette", f"vcr-{digest[:12]}", records, detail)])


#: Each importer, given the source, the output, the source's sha256 (``result()``: it may be hashed still) and,
#: for a joined input, which sources it came from (only the line-oriented formats are ever joined).
IMPORTERS: dict[str, Callable[[Path, Path, Callable[[], str], Joins], list[ImportedJournal]]] = {
    OTLP: _import_otlp,
    OPENAI_AGENTS: _import_agents,
    INSPECT: _import_inspect,
    VCR: _import_vcr,
}

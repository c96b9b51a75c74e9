"""A source's runs written as journals: one run is the journal ``out``, several are a directory ``out`` holding
one journal each (Inspect AI's samples and epochs, the Agents SDK's traces); ``source_info`` is the
``imported`` block every run states (OTLP's too)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..journal.private import make_private_dirs
from .builder import SourceInfo, write_run
from .errors import TraceImportError
from .format import ImportedJournal, Joins
from .plain import plain_json, rfc3339_or_none, run_file_names, safe_id, shown
from .records import Fidelity, Record, with_leading_input


def source_info(
    path: Path, fmt: str, digest: str, detail: dict[str, Any] | None = None, joined: Joins = ()
) -> SourceInfo:
    """The run's ``imported`` block; ``joined``: the sources a joined input came from (which lines each)."""
    detail = {**(detail or {}), **({"joined": list(joined)} if joined else {})}
    detail = plain_json(detail, path, "the run's detail")  # ids and names the trace chose
    return SourceInfo(fmt, path.name, "sha256:" + digest, path.stat().st_size, detail)


@dataclass
class Run:
    """One run of a multi-run source, with its records in memory (these formats are small)."""

    name: str
    run_id: str
    records: list[Record]
    detail: dict[str, Any]
    initial_state: Any = None
    started_at: str | None = None


def write_runs(
    path: Path, out: Path, fmt: str, digest: str, runs: list[Run], joined: Joins = ()
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
                _located(records, last),
                run_id=safe_id(run.run_id),
                source=source_info(path, fmt, digest, run.detail, joined),
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


def _located(records: list[Record], last: list[Record]) -> Iterator[Record]:
    """``records``, each kept in ``last`` while the builder writes it (a JSON Patch that does not apply
    is found only there)."""
    for record in records:
        last[:] = [record]
        yield record

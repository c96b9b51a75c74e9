"""Replay a corpus of journals in parallel and group the divergences by signature.

"One incident, one regression test": CI keeps a directory of incident journals and
replays every one of them on each change. Each journal runs in its own child
process through the ordinary ``ReplayRunner`` (same isolation, same report); a
thread per job only waits on its child. Divergences are grouped by signature
``(kind, tool, field path)`` so a hundred journals broken by one change read as one
row, not a hundred reports::

    result = replay_corpus(find_journals("incidents/"), jobs=2)
    print(result.to_text()); sys.exit(result.exit_code)
"""

from __future__ import annotations

import fnmatch
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Sequence

from ...journal.safe_text import safe_line
from ...journal.writer import SHARD_NAME
from ..parent.outcome import ReplayOutcome
from ..parent.runner import DIVERGED, MATCH
from ..protocol import ReplaySpec
from ..report import DERIVED_KEYS, DivergenceReport

if TYPE_CHECKING:
    from .executors import CorpusExecutor

DEFAULT_GLOB = "*.jsonl"
DEFAULT_TIMEOUT_S = 600.0
_PATH_PART = re.compile(r"\['((?:[^'\\]|\\.)*)'\]|\[(\d+)\]")


class CorpusError(ValueError):
    """The corpus directory cannot be used (missing, empty, unreadable)."""


@dataclass(frozen=True)
class Signature:
    """What a failure looks like, independent of the journal it happened in."""

    kind: str  # the recorded event kind at the divergence, or the outcome status
    tool: str  # the tool (or model) involved, "-" when none
    field: str  # the first divergent payload path, or the envelope field that differs

    def to_json(self) -> dict[str, str]:
        return {"kind": self.kind, "tool": self.tool, "field": self.field}


@dataclass
class CorpusEntry:
    """One journal of the corpus and its replay outcome."""

    journal: str
    outcome: ReplayOutcome
    signature: Signature | None  # None when it matched

    @property
    def ok(self) -> bool:
        return self.outcome.status == MATCH


@dataclass
class CorpusResult:
    root: str
    jobs: int
    entries: list[CorpusEntry]
    elapsed_s: float
    groups: dict[Signature, list[CorpusEntry]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.groups:
            for entry in self.entries:
                if entry.signature is not None:
                    self.groups.setdefault(entry.signature, []).append(entry)

    @property
    def failed(self) -> list[CorpusEntry]:
        return [entry for entry in self.entries if not entry.ok]

    @property
    def exit_code(self) -> int:
        """0 every journal matched; 1 any journal diverged or failed."""
        return 1 if self.failed else 0

    def sorted_groups(self) -> list[tuple[Signature, list[CorpusEntry]]]:
        return sorted(self.groups.items(), key=lambda item: (-len(item[1]), item[0].kind, item[0].tool, item[0].field))

    def to_text(self) -> str:
        total, failed = len(self.entries), len(self.failed)
        diverged = sum(1 for entry in self.failed if entry.outcome.status == DIVERGED)
        lines = [
            f"Corpus {self.root}: {total} journal(s), {total - failed} matched, {diverged} diverged, "
            f"{failed - diverged} failed otherwise ({self.elapsed_s:.1f} s, {self.jobs} job(s))."
        ]
        if not self.groups:
            return "\n".join(lines)
        rows = [("count", "kind", "tool", "field", "journals")]
        for signature, entries in self.sorted_groups():
            names = [Path(entry.journal).name for entry in entries]
            shown = ", ".join(names[:3]) + (f", … {len(names) - 3} more" if len(names) > 3 else "")
            kind, tool, path = (safe_line(str(cell), 60) for cell in (signature.kind, signature.tool, signature.field))
            rows.append((str(len(entries)), kind, tool, path, safe_line(shown)))  # journal text: escaped lines
        widths = [max(len(row[column]) for row in rows) for column in range(4)]
        lines.append("")
        for row in rows:
            lines.append("  ".join(cell.ljust(width) for cell, width in zip(row[:4], widths)) + "  " + row[4])
        lines.append("")
        lines.append("first failure of each group:")
        for signature, entries in self.sorted_groups():
            entry = entries[0]
            where = f"seq={entry.outcome.divergence.seq}" if entry.outcome.divergence else entry.outcome.status
            lines.append(f"  {Path(entry.journal).name} ({where}): {entry.outcome.headline()}")
            if entry.outcome.divergence:
                lines.append(f"    why: {safe_line(entry.outcome.divergence.reason, 400)}")
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        return {
            "root": self.root,
            "jobs": self.jobs,
            "journals": len(self.entries),
            "matched": len(self.entries) - len(self.failed),
            "failed": len(self.failed),
            "elapsed_s": round(self.elapsed_s, 3),
            "groups": [
                {**signature.to_json(), "count": len(entries), "journals": [entry.journal for entry in entries]}
                for signature, entries in self.sorted_groups()
            ],
            "results": [
                {
                    "journal": entry.journal,
                    "status": entry.outcome.status,
                    "signature": entry.signature.to_json() if entry.signature else None,
                    "divergence_seq": entry.outcome.divergence.seq if entry.outcome.divergence else None,
                    "headline": entry.outcome.headline(),
                }
                for entry in self.entries
            ],
        }


def is_shard_directory(path: Path) -> bool:
    """A directory the journal writer rotated into (``NAME.000001.jsonl[.gz]``): one journal, not a corpus."""
    names = [child.name for child in path.iterdir() if child.is_file() and child.name.endswith((".jsonl", ".jsonl.gz"))]
    return bool(names) and all(SHARD_NAME.search(name) for name in names)


def find_journals(root: str | Path, pattern: str = DEFAULT_GLOB) -> list[Path]:
    """Every journal under ``root`` whose file name matches ``pattern``, sorted; a shard
    directory below ``root`` is one journal (taken when its name or a shard's matches)."""
    root = Path(root)
    if not root.is_dir():
        raise CorpusError(f"{root}: not a directory")
    found: list[Path] = []
    for directory, subdirectories, files in os.walk(root):
        here = Path(directory)
        if here != root and is_shard_directory(here):
            if fnmatch.fnmatch(here.name, pattern) or any(fnmatch.fnmatch(name, pattern) for name in files):
                found.append(here)
            subdirectories.clear()
            continue
        subdirectories[:] = sorted(name for name in subdirectories if not name.startswith("."))
        found.extend(here / name for name in sorted(files) if fnmatch.fnmatch(name, pattern))
    return sorted(found)


def signature_of(outcome: ReplayOutcome) -> Signature | None:
    """(kind, tool, field path) of a failed replay; None when it matched."""
    if outcome.status == MATCH:
        return None
    report = outcome.divergence
    if report is None:
        detail = "-"
        if outcome.unused:
            detail = "unused " + ",".join(sorted(outcome.unused.get("kinds") or {}))
        elif outcome.error:
            detail = str(outcome.error.get("kind") or "-")
        return Signature(outcome.status, "-", detail)
    return _report_signature(report)


def _report_signature(report: DivergenceReport) -> Signature:
    ref = report.expected or report.actual
    kind = ref.kind if ref else "?"
    return Signature(kind, _tool_of(report), _divergent_field(report))


def _tool_of(report: DivergenceReport) -> str:
    for payload in (report.expected_payload, report.actual_payload):
        if isinstance(payload, dict):
            tool = payload.get("tool")
            if isinstance(tool, str):
                return tool
            request = payload.get("request")
            if isinstance(request, dict) and isinstance(request.get("model"), str):
                return f"model:{request['model']}"
    return "-"


def _divergent_field(report: DivergenceReport) -> str:
    if report.expected is None:
        return "(the journal has no event here)"
    if report.actual is None:
        return "(the agent produced no event here)"
    if report.expected.kind != report.actual.kind:  # the payloads of two kinds differ everywhere
        return f"kind (the agent produced {report.actual.kind})"
    paths = sorted(_diff_paths(report.payload_diff))
    meaningful = [path for path in paths if path.split(".")[0].split("[")[0] not in DERIVED_KEYS]
    if meaningful or paths:
        return (meaningful or paths)[0]
    mismatched = [name for name in report.mismatched if name != "key"] or report.mismatched
    return mismatched[0] if mismatched else "-"


def _diff_paths(diff: Any) -> Iterable[str]:
    """Dotted payload paths (``arguments.include_history``, ``request.messages[0].content``)
    of a deepdiff tree in JSON form."""
    if not isinstance(diff, dict):
        return
    for changes in diff.values():
        items = changes.keys() if isinstance(changes, dict) else changes if isinstance(changes, list) else ()
        for path in items:
            if isinstance(path, str) and path.startswith("root"):
                yield _dotted(path)


def _dotted(path: str) -> str:
    parts: list[str] = []
    for key, index in _PATH_PART.findall(path[len("root") :]):
        if index:
            parts.append(f"[{index}]")
        else:
            parts.append(("." if parts else "") + key)
    return "".join(parts) or "(payload)"


def replay_corpus(
    journals: Sequence[str | Path],
    *,
    jobs: int = 1,
    root: str | Path = ".",
    spec_for: Callable[[str], ReplaySpec] | None = None,
    timeout_s: float | None = DEFAULT_TIMEOUT_S,
    on_done: Callable[[CorpusEntry, int, int], None] | None = None,
    executor: "CorpusExecutor | None" = None,
) -> CorpusResult:
    """Replay every journal on ``executor`` (default: local children, ``jobs`` at a time).

    ``spec_for(journal)`` builds each spec (default: strict replay of the recorded
    entry point); ``on_done(entry, done, total)`` is called as each one finishes.
    """
    from .executors import ExecutorError, LocalExecutor

    try:
        runner = executor if executor is not None else LocalExecutor(jobs)
    except ExecutorError as error:
        raise CorpusError(str(error)) from None
    make_spec = spec_for or (lambda journal: ReplaySpec(journal=journal))
    paths = [os.path.abspath(journal) for journal in journals]
    specs = [make_spec(path) for path in paths]
    entries: list[CorpusEntry | None] = [None] * len(paths)
    done = 0
    started = time.perf_counter()

    def finished(position: int, outcome: ReplayOutcome) -> None:
        nonlocal done
        entry = CorpusEntry(paths[position], outcome, signature_of(outcome))
        entries[position] = entry
        done += 1
        if on_done is not None:
            on_done(entry, done, len(paths))

    runner.run_all(specs, timeout_s, finished)
    return CorpusResult(
        str(root), runner.workers, [entry for entry in entries if entry is not None], time.perf_counter() - started
    )

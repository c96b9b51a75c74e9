"""Reading a saved replay result (``replay-tui replay JOURNAL --json``) for the incident report,
through replay's own type: ``ReplayOutcome.from_json``, so the report words every outcome
(match, divergence, unused events, timeout, cancelled, crashed, failed) as ``replay`` does."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson

from ...analysis.export import ExportError, ReplaySection
from ...journal.describe import error_text
from ..modes import STRICT
from .outcome import ReplayOutcome
from .runner import DIVERGED

EXPECTED = "expected the output of 'replay-tui replay JOURNAL --json'"
DIFF_LINES = 200


def read_outcome(path: str | os.PathLike[str]) -> ReplayOutcome:
    """The outcome saved in ``path``; ExportError naming the file and what is wrong."""
    source = Path(path)
    try:
        data = orjson.loads(source.read_bytes())
    except FileNotFoundError:
        raise ExportError(f"{source}: no such file ({EXPECTED})") from None
    except OSError as error:
        raise ExportError(f"{source}: cannot be read ({error.strerror})") from None
    except orjson.JSONDecodeError as error:
        raise ExportError(f"{source}: is not valid JSON ({error}); {EXPECTED}") from None
    if not isinstance(data, dict):
        raise ExportError(f"{source}: expected a JSON object (a replay result), found {type(data).__name__}")
    if "status" not in data and "expected" in data and "seq" in data:
        data = {"status": DIVERGED, "mode": STRICT, "divergence": data}  # a bare divergence report
    if "status" not in data:
        raise ExportError(f"{source}: has neither status nor divergence; {EXPECTED}")
    try:
        return ReplayOutcome.from_json(data)
    except (ValueError, TypeError) as error:
        raise ExportError(f"{source}: {error}") from None


def load_replay_result(path: str | os.PathLike[str], journal_path: str | os.PathLike[str]) -> ReplaySection:
    """The report's replay section for the result saved in ``path``."""
    outcome = read_outcome(path)
    # the report shows the divergence as it was saved (its payloads are masked there)
    divergence: dict[str, Any] | None = outcome.divergence.to_json() if outcome.divergence else None
    section = ReplaySection(
        source=str(path),
        status=outcome.status,
        headline=outcome.headline(),
        ok=outcome.ok,
        isolation=outcome.isolation.summary if outcome.isolation else None,
        divergence=divergence,
        diff_lines=[str(line) for line in (divergence or {}).get("diff_lines") or []][:DIFF_LINES],
    )
    if outcome.journal and Path(outcome.journal).name != Path(journal_path).name:
        section.journal_note = f"this result was recorded for {outcome.journal}, not {Path(journal_path).name}"
    if outcome.error:
        section.error = error_text({"type": outcome.error.get("kind"), "message": outcome.error.get("message")})
    return section

"""``record_run``: record one agent run from a config into a journal."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from .agents import RunOutcome, load_agent, run_agent
from .builder import build_harness
from .config import HarnessConfig


def record_run(
    config: HarnessConfig | str | Path,
    entry_point: str,
    inputs: Sequence[Any],
    *,
    journal: str | Path,
    run_id: str | None = None,
) -> RunOutcome:
    """Start the config's plugins, run ``entry_point`` on ``inputs``, write ``journal``.

    The entry point is resolved first, so a typo leaves no empty journal behind."""
    load_agent(entry_point)
    with build_harness(config, journal=journal, run_id=run_id, agent=entry_point) as recording:
        recording.started(entry_point)
        return run_agent(entry_point, recording.harness, inputs)

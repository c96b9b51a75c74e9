"""``replay JOURNAL --shuffle-completions [--seed N] [--runs K]``: K shuffle runs, one seed each, each in
its own sandboxed child, judged by the parent from the journal the child wrote (shuffle_verdict.py).

For every seed it says whether the trajectory changed, and names the first seed that changed it as a
command that reproduces it. A journal with no calls in flight together has no order to permute: one
run says so.
"""

from __future__ import annotations

import os
import shlex
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from ...journal import Journal
from ...journal.safe_text import safe_line
from ..concurrency import concurrency_groups
from ..modes import SHUFFLE
from ..protocol import ReplaySpec
from .outcome import ReplayOutcome
from .runner import DIVERGED, MATCH, ReplayRunner

#: The seeds a shuffle tries when none is given: 20, as many as catch an agent that keeps the first of three.
DEFAULT_RUNS = 20


@dataclass
class ShuffleResult:
    journal: str
    groups: int
    outcomes: list[tuple[int, ReplayOutcome]] = field(default_factory=list)
    extra_args: list[str] = field(default_factory=list)  # what reproduces a seed besides --seed (e.g. --agent)

    @property
    def first_changed(self) -> int | None:
        return next((seed for seed, outcome in self.outcomes if outcome.status == DIVERGED), None)

    @property
    def exit_code(self) -> int:
        if any(outcome.status not in (MATCH, DIVERGED) for _, outcome in self.outcomes):
            return max(outcome.exit_code for _, outcome in self.outcomes)
        return 1 if self.first_changed is not None else 0

    def reproduce(self, seed: int) -> str:
        words = ["replay-tui", "replay", self.journal, "--shuffle-completions", "--seed", str(seed), "--runs", "1"]
        return shlex.join(words + self.extra_args)

    def to_text(self) -> str:
        if not self.groups:
            return (
                f"{safe_line(self.journal)}: no calls were in flight together: there is no completion order to permute"
            )
        lines = [
            f"Shuffled the completion order of {self.groups} group(s) of concurrent calls, {len(self.outcomes)} seed(s):"
        ]
        for seed, outcome in self.outcomes:
            lines.append(f"  seed {seed}: {_line(outcome)}")
        changed = self.first_changed
        if changed is None:
            failed = [seed for seed, outcome in self.outcomes if outcome.status not in (MATCH, DIVERGED)]
            lines.append(
                "no seed changed the trajectory" if not failed else f"{len(failed)} seed(s) could not be judged"
            )
        else:
            count = sum(1 for _, outcome in self.outcomes if outcome.status == DIVERGED)
            lines.append(f"{count} of {len(self.outcomes)} seed(s) changed the trajectory; the first, to reproduce it:")
            lines.append(f"  {self.reproduce(changed)}")
            outcome = dict(self.outcomes)[changed]
            if outcome.divergence is not None:
                lines += ["", outcome.divergence.to_text()]
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        changed = self.first_changed
        return {
            "journal": self.journal,
            "groups": self.groups,
            "runs": [
                {
                    "seed": seed,
                    "status": outcome.status,
                    "changed": outcome.status == DIVERGED,
                    "summary": (outcome.experiment or {}).get("summary"),
                    "error": outcome.error,
                    "divergence": outcome.divergence.to_json() if outcome.divergence else None,
                }
                for seed, outcome in self.outcomes
            ],
            "first_changed_seed": changed,
            "reproduce": self.reproduce(changed) if changed is not None else None,
        }


def _line(outcome: ReplayOutcome) -> str:
    if outcome.status in (MATCH, DIVERGED):
        return safe_line(str((outcome.experiment or {}).get("summary") or outcome.status), 300)
    return safe_line(outcome.headline(), 300)


def shuffle_runs(
    spec: ReplaySpec,
    *,
    seed: int,
    runs: int,
    timeout_s: float | None,
    extra_args: list[str] | None = None,
    on_run: Callable[[int, ReplayOutcome], None] | None = None,
) -> ShuffleResult:
    """Replay ``spec.journal`` once per seed ``seed .. seed+runs-1``, each with its own permuted order."""
    with Journal(spec.journal) as journal:
        journal.index()
        groups = len(concurrency_groups(journal.event(position) for position in range(len(journal))))
    result = ShuffleResult(spec.journal, groups, extra_args=list(extra_args or []))
    if not groups:
        return result
    with tempfile.TemporaryDirectory(prefix="replay-tui-shuffle-") as scratch:
        for number in range(runs):
            this_seed = seed + number
            out = os.path.join(scratch, f"seed-{this_seed}.jsonl")
            run_spec = replace(spec, mode=SHUFFLE, shuffle_seed=this_seed, out=out)
            outcome = ReplayRunner(run_spec, timeout_s=timeout_s).run()
            result.outcomes.append((this_seed, outcome))
            if on_run is not None:
                on_run(this_seed, outcome)
    return result

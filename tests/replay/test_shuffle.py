"""Shuffle mode: the completion order of calls in flight together permuted, everything else from the journal;
an agent with an order-dependent bug is caught within 20 seeds, an order-independent one passes them all."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from .conftest import REPO
from .test_concurrency import record


def shuffle(journal: Path, *args: str) -> tuple[int, dict]:
    done = subprocess.run(
        [sys.executable, "-m", "replay_tui", "replay", str(journal), "--shuffle-completions", "--json", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=600,
    )
    assert done.returncode in (0, 1), done.stdout + done.stderr
    return done.returncode, json.loads(done.stdout)


def test_an_agent_that_keeps_the_first_result_is_caught_and_the_seed_reproduces_it(tmp_path: Path) -> None:
    journal = record(tmp_path, "keeps_first")
    code, result = shuffle(journal, "--runs", "20")
    assert (code, result["groups"]) == (1, 1), result
    seed = result["first_changed_seed"]
    assert seed is not None and result["reproduce"].endswith(f"--shuffle-completions --seed {seed} --runs 1")
    changed = [run for run in result["runs"] if run["changed"]]
    assert all("trajectory changed" in run["summary"] for run in changed), changed
    unchanged = [run for run in result["runs"] if not run["changed"]]
    assert all(run["status"] == "match" for run in unchanged), unchanged
    # the seed it names changes the trajectory again, the same way
    again_code, again = shuffle(journal, "--seed", str(seed), "--runs", "1")
    assert (
        again_code == 1
        and again["runs"][0]["summary"] == next(r for r in result["runs"] if r["seed"] == seed)["summary"]
    )


def test_an_order_independent_agent_passes_every_seed(tmp_path: Path) -> None:
    journal = record(tmp_path, "gather_all")
    code, result = shuffle(journal, "--runs", "20")
    assert code == 0, result
    assert [run["status"] for run in result["runs"]] == ["match"] * 20
    assert result["first_changed_seed"] is None


def test_a_journal_without_concurrent_calls_has_nothing_to_permute(tmp_path: Path) -> None:
    journal = REPO / "fixtures" / "journals" / "crm.jsonl"
    code, result = shuffle(journal, "--agent-path", str(REPO))
    assert (code, result["groups"], result["runs"]) == (0, 0, [])

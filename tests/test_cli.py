"""The dispatcher: a closed pipe ends quietly, unknown input never gives a traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_a_reader_that_goes_away_is_not_an_error() -> None:
    journal = REPO / "fixtures" / "journals" / "crm-incident.jsonl"
    child = subprocess.Popen(
        [sys.executable, "-m", "replay_tui", "export", str(journal), "--format", "md", "-o", "-"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert child.stdout is not None and child.stderr is not None
    child.stdout.close()  # like `| head` exiting before the report is written
    error = child.stderr.read().decode()
    assert child.wait(timeout=60) == 141
    assert "internal error" not in error and "Traceback" not in error


def test_version_and_help() -> None:
    done = subprocess.run([sys.executable, "-m", "replay_tui", "--version"], capture_output=True, text=True, check=True)
    assert done.stdout.startswith("replay-tui ")
    done = subprocess.run([sys.executable, "-m", "replay_tui", "--help"], capture_output=True, text=True, check=True)
    assert "verify" in done.stdout and "replay" in done.stdout

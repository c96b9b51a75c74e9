"""The dispatcher: a closed pipe ends quietly, unknown input never gives a traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

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


@pytest.mark.parametrize("argv", [[], ["session.jsonl"], ["dir/with space.jsonl"], ["verify.jsonl"]])
def test_the_plain_open_is_what_the_app_parser_gives(argv: list[str]) -> None:
    """``replay-tui [JOURNAL]`` skips argparse on the way to the first frame: its hand-made namespace must stay
    the one the parser gives (an option added to the parser is added there too)."""
    from replay_tui.cli import _app_parser, _plain_open

    plain = _plain_open(argv)
    assert plain is not None and vars(plain) == vars(_app_parser().parse_args(argv))
    assert (
        _plain_open(["--follow", "x.jsonl"]) is None and _plain_open(["a", "b"]) is None and _plain_open(["-"]) is None
    )

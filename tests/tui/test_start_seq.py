"""--seq past the end of the journal exits 2 before the UI, naming the last seq."""

from __future__ import annotations

from pathlib import Path

from test_launch import run_cli


def test_a_seq_past_the_end_exits_2(incident_path: Path) -> None:
    done = run_cli(str(incident_path), "--seq", "999")
    assert done.returncode == 2
    assert "--seq 999" in done.stderr and "ends at seq" in done.stderr and incident_path.name in done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""

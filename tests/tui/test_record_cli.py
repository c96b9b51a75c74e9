"""`replay-tui record`: a run recorded from the command line, and the app following it while it is written."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from pty_run import PtyProcess
from test_launch import REPO

from replay_tui.journal import verify_journal

ENTRY = "from replay_tui.cli import entry_point; entry_point()"
QUESTION = '"How many active customers did we have in the east region last month?"'
CONFIG = str(REPO / "fixtures" / "configs" / "crm.toml")


def record(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", ENTRY, "record", *args],
        check=False,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


def test_record_writes_a_verified_journal(tmp_path: Path) -> None:
    out = tmp_path / "run.jsonl"
    (tmp_path / "question.json").write_text(QUESTION)
    done = record(
        CONFIG, "--agent", "fixtures.agents.crm:agent", "--input", f"@{tmp_path / 'question.json'}", "-o", str(out)
    )
    assert done.returncode == 0, done.stderr
    assert "recorded 175 events" in done.stdout and str(out) in done.stdout
    report = verify_journal(out)
    assert report.ok and report.closed


def test_record_refuses_to_overwrite_and_names_bad_arguments(tmp_path: Path) -> None:
    out = tmp_path / "run.jsonl"
    out.write_text("keep me\n")
    done = record(CONFIG, "--agent", "fixtures.agents.crm:agent", "--input", QUESTION, "-o", str(out))
    assert done.returncode == 2 and "already exists" in done.stderr and out.read_text() == "keep me\n"
    missing = record(
        CONFIG,
        "--agent",
        "fixtures.agents.crm:agent",
        "--input",
        "@/nonexistent/q.json",
        "-o",
        str(tmp_path / "x.jsonl"),
    )
    assert missing.returncode == 2 and "cannot read" in missing.stderr and "Traceback" not in missing.stderr
    bad_agent = record(CONFIG, "--agent", "no_such_module:agent", "--input", QUESTION, "-o", str(tmp_path / "y.jsonl"))
    assert bad_agent.returncode == 2 and "no_such_module" in bad_agent.stderr and not (tmp_path / "y.jsonl").exists()


def test_follow_in_app_opens_the_app_following_the_journal(tmp_path: Path) -> None:
    out = tmp_path / "live.jsonl"
    app = PtyProcess(
        [
            sys.executable,
            "-c",
            ENTRY,
            "record",
            CONFIG,
            "--agent",
            "fixtures.agents.crm:agent",
            "--input",
            QUESTION,
            "-o",
            str(out),
            "--follow-in-app",
        ],
        cwd=REPO,
        columns=300,
    )
    try:
        assert app.read_until(b"following", timeout=60) is not None, app.screen[-2000:]
        assert app.read_until(b"175 events", timeout=60) is not None, app.screen[-2000:]
        app.send(b"q")
    finally:
        code = app.finish()  # kills the app if it is still running
    assert code == 0
    assert b"recorded 175 events" in app.screen
    assert verify_journal(out).ok

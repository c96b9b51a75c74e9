"""The runner leaves nothing behind, however ``wait`` ends: a raise in the read loop or in the verdict
still kills the child's process group, removes its scratch dir and closes its pipes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from replay_tui.replay.parent.outcome import ReplayOutcome
from replay_tui.replay.parent.runner import FAILED, ReplayRunner
from replay_tui.replay.parent.scratch import remove_orphans
from replay_tui.replay.protocol import ReplaySpec
from tests.journal.sample import write_sample_journal

from .conftest import REPO


class Boom(Exception):
    """Raised on purpose inside ``wait``."""


@pytest.fixture
def journal(tmp_path: Path) -> Path:
    return write_sample_journal(tmp_path / "run.jsonl", steps=2)


def runner_for(journal: Path, agent: str, **options) -> ReplayRunner:
    return ReplayRunner(ReplaySpec(journal=str(journal), agent=agent), cwd=str(REPO), timeout_s=120, **options)


def live_members(group: int) -> list[int]:
    """Processes of process group ``group`` that still run (a zombie left to init is not counted)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == group and fields[0] != "Z":
                found.append(int(entry))
    return found


def assert_nothing_left(runner: ReplayRunner) -> None:
    assert runner.pid is not None
    deadline = time.monotonic() + 30  # SIGKILL is delivered at once, but a dying process may take a moment
    while live_members(runner.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert live_members(runner.pid) == []  # the child and everything it started are gone
    assert runner._launch is not None and not os.path.exists(runner._launch.scratch)
    assert runner._pipe.closed
    assert runner._wake_r is None and runner._wake_w is None


def test_a_raise_in_the_read_loop_kills_the_group_and_removes_the_scratch_dir(journal):
    def explode(message: dict) -> None:
        if message["type"] == "hello":
            raise Boom("the app's callback failed")

    runner = runner_for(journal, "tests.replay.agents.hang_at_import:agent", on_message=explode)
    with pytest.raises(Boom):
        runner.run()  # the agent hangs for 10 minutes: only the clean-up ends it
    assert_nothing_left(runner)


def test_a_raise_after_the_read_loop_still_cleans_up(journal, monkeypatch):
    def broken_verdict(self: ReplayRunner, outcome: ReplayOutcome) -> None:
        raise Boom("the verdict failed")

    monkeypatch.setattr(ReplayRunner, "_decide", broken_verdict)
    runner = runner_for(journal, "tests.replay.agents.broken_import:agent")
    with pytest.raises(Boom):
        runner.run()
    assert_nothing_left(runner)


def test_a_cancel_after_the_run_does_not_touch_a_reaped_pid(journal):
    runner = runner_for(journal, "tests.replay.agents.broken_import:agent")
    outcome = runner.run()
    assert outcome.exit_code == 2
    runner.cancel()  # the wake pipe is closed: nothing is written, nothing is killed
    runner._clean_up()  # a second clean-up is a no-op (the pid may belong to another process by now)
    assert_nothing_left(runner)


def test_every_failure_decided_before_the_agent_runs_is_built_by_replay_outcome_failed(tmp_path, monkeypatch):
    """One shape for an early failure (status, error kind/message/traceback, timeout): ``ReplayOutcome.failed``."""
    built: list[str] = []
    original = ReplayOutcome.failed.__func__  # type: ignore[attr-defined]

    def spy(cls, spec, kind, message, **fields):
        built.append(kind)
        return original(cls, spec, kind, message, **fields)

    monkeypatch.setattr(ReplayOutcome, "failed", classmethod(spy))
    existing = write_sample_journal(tmp_path / "out.jsonl", steps=1)
    journal = write_sample_journal(tmp_path / "run.jsonl", steps=1)
    usage = ReplayRunner(ReplaySpec(journal=str(journal), out=str(existing), mode="model-live"), timeout_s=5).run()
    missing = ReplayRunner(ReplaySpec(journal=str(tmp_path / "absent.jsonl")), timeout_s=5).run()
    assert built == ["usage", "journal"]
    for outcome in (usage, missing):
        assert outcome.status == FAILED and outcome.exit_code == 2 and outcome.timeout_s == 5
        assert outcome.error is not None and outcome.error["traceback"] == []
    assert "already exists" in usage.error["message"] and "absent.jsonl" in missing.error["message"]


def start_hanging_cli(journal: Path, temp: Path) -> subprocess.Popen[bytes]:
    """``replay-tui replay`` of an agent that never finishes importing, with its own temp directory; returns
    once the run's scratch dir (one that was not there before) holds the journal's copy."""
    before = set(temp.glob("replay-tui-scratch-*"))
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "replay_tui",
            "replay",
            str(journal),
            "--agent",
            "tests.replay.agents.hang_at_import:agent",
        ],
        cwd=REPO,
        env={**os.environ, "TMPDIR": str(temp)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while not [
        entry for entry in temp.glob("replay-tui-scratch-*") if entry not in before and (entry / "run.jsonl").exists()
    ]:
        assert time.monotonic() < deadline and process.poll() is None, "the replay never started"
        time.sleep(0.05)
    return process


@pytest.mark.parametrize("signal_", [signal.SIGTERM, signal.SIGHUP])
def test_a_cli_replay_ended_by_a_signal_removes_its_scratch_dir(journal, tmp_path, signal_):
    temp = tmp_path / "tmp"
    temp.mkdir()
    process = start_hanging_cli(journal, temp)
    process.send_signal(signal_)
    assert process.wait(timeout=60) == 128 + signal_
    assert list(temp.iterdir()) == [], "the scratch dir and the journal's copy in it are gone"


def test_the_scratch_dir_of_a_run_killed_outright_goes_with_the_next_run(journal, tmp_path):
    """SIGKILL leaves the parent no way to clean up: the next run removes the scratch dir nobody holds any more,
    and never one whose run is alive."""
    temp = tmp_path / "tmp"
    temp.mkdir()
    killed = start_hanging_cli(journal, temp)
    killed.kill()
    killed.wait()
    (orphan,) = temp.glob("replay-tui-scratch-*")
    alive = start_hanging_cli(journal, temp)
    try:
        live = next(entry for entry in temp.glob("replay-tui-scratch-*") if entry != orphan)
        old = time.time() - 3600
        for entry in (orphan, live):
            os.utime(entry, (old, old))  # both old enough to be taken for orphans
        assert remove_orphans(str(temp)) == [str(orphan)]
        assert not orphan.exists() and live.exists()
    finally:
        alive.kill()
        alive.wait()

"""The child process and its protocol: start-up, isolation report, failures, timeout, cancel."""

from __future__ import annotations

import json
import os
import re
import threading
import time
from pathlib import Path

import pytest

from replay_tui.replay.parent.runner import CANCELLED, CRASHED, FAILED, TIMEOUT, ReplayRunner
from replay_tui.replay.protocol import ProtocolError, ReplaySpec, decode, encode
from tests.journal.sample import write_sample_journal

from .conftest import REPO


@pytest.fixture
def journal(tmp_path: Path) -> Path:
    return write_sample_journal(tmp_path / "run.jsonl", steps=3)


def runner_for(journal: Path, agent: str, **options) -> ReplayRunner:
    spec_options = {key: options.pop(key) for key in list(options) if key in ReplaySpec.__dataclass_fields__}
    return ReplayRunner(ReplaySpec(journal=str(journal), agent=agent, **spec_options), cwd=str(REPO), **options)


def test_agent_import_error_is_reported_with_its_traceback(journal):
    outcome = runner_for(journal, "tests.replay.agents.broken_import:agent", timeout_s=30).run()
    assert outcome.status == FAILED and outcome.exit_code == 2
    assert outcome.error["kind"] == "agent_import"
    assert "this_module_does_not_exist" in outcome.error["message"]
    assert any("broken_import.py" in line for line in outcome.error["traceback"])
    assert "child traceback" in outcome.to_text()


def test_a_bad_entry_point_is_a_usage_error(journal):
    outcome = runner_for(journal, "no-colon-here", timeout_s=30).run()
    assert outcome.exit_code == 2 and "module:attr" in outcome.error["message"]


def test_a_crash_is_reported_with_the_last_stderr_lines(journal):
    outcome = runner_for(journal, "tests.replay.agents.crash_at_import:agent", timeout_s=30).run()
    assert outcome.status == CRASHED and outcome.exit_code == 1
    assert outcome.child_exit is not None and outcome.child_exit < 0
    assert "crash_at_import: about to abort" in outcome.stderr_tail
    text = outcome.to_text()
    assert "SIGABRT" in text and "crash_at_import: about to abort" in text


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = Path(f"/proc/{pid}/stat")
    return not (status.exists() and status.read_text().split()[2] == "Z")


#: Timeouts tried in turn: the group part needs the agent to have started its grandchild before the
#: timeout, and a loaded machine can take longer than the first one just to start the child.
TIMEOUTS_S = (1.5, 6.0, 24.0)


def test_timeout_kills_the_child_and_its_process_group(journal):
    for timeout_s in TIMEOUTS_S:
        started = time.monotonic()
        outcome = runner_for(journal, "tests.replay.agents.hang_at_import:agent", timeout_s=timeout_s).run()
        assert time.monotonic() - started < timeout_s + 30  # the agent hangs for 10 minutes
        assert outcome.status == TIMEOUT and outcome.exit_code == 1
        assert f"timed out after {timeout_s:g} s" in outcome.to_text()
        found = [m.group(1) for line in outcome.stderr_tail if (m := re.search(r"grandchild pid \d+ cwd (\S+)", line))]
        if found:
            break
    else:
        pytest.fail(f"the agent never started its grandchild within {TIMEOUTS_S[-1]:g} s: {outcome.stderr_tail}")
    scratch = found[0]
    deadline = time.monotonic() + 30
    while _running_in(scratch) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _running_in(scratch)
    assert not os.path.exists(scratch)  # the scratch dir is removed afterwards


def _running_in(directory: str) -> list[int]:
    """Live processes whose working directory is ``directory`` (pids as this process sees them)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.readlink(f"/proc/{entry}/cwd").startswith(directory) and _alive(int(entry)):
                    found.append(int(entry))
            except OSError:
                continue
    return found


def test_cancel_from_another_thread_stops_the_run(journal):
    seen_hello = threading.Event()
    runner = runner_for(journal, "tests.replay.agents.hang_at_import:agent", timeout_s=60)
    runner.on_message = lambda message: message["type"] == "hello" and seen_hello.set()
    result = {}
    worker = threading.Thread(target=lambda: result.setdefault("outcome", runner.run()))
    worker.start()
    assert seen_hello.wait(120), "the child said hello"
    started = time.monotonic()
    runner.cancel()
    worker.join(60)
    assert not worker.is_alive() and time.monotonic() - started < 30  # the agent hangs for 10 minutes
    assert result["outcome"].status == CANCELLED


def test_child_reports_isolation_and_its_start_up_time(journal):
    """How fast it starts is measured by tests/bench/bench_replay.py, not asserted here (a loaded machine)."""
    outcome = runner_for(journal, "tests.replay.agents.broken_import:agent", timeout_s=30).run()
    assert outcome.isolation is not None and outcome.isolation.socket_guard
    if outcome.isolation.network_namespace:
        assert outcome.isolation.namespace_method in ("bwrap", "namespaces")
        assert outcome.isolation.sandbox and not outcome.isolation.missing_layers
    else:
        assert outcome.isolation.reason
    assert outcome.child_startup_s is not None and 0 < outcome.child_startup_s < 60


@pytest.mark.parametrize("isolation", ["auto", "guard-only"])
def test_import_time_connection_is_refused_and_reported(journal, listener, isolation):
    env = dict(os.environ, REPLAY_TEST_PORT=str(listener.port))
    outcome = runner_for(
        journal,
        "tests.replay.agents.connect_at_import:agent",
        timeout_s=30,
        env=env,
        isolation=isolation,
        pass_env=["REPLAY_TEST_PORT"],
    ).run()
    assert outcome.error["kind"] == "agent_import" and "reached=False" in outcome.error["message"]
    assert [(r.operation, r.target) for r in outcome.refusals] == [("connect", f"127.0.0.1:{listener.port}")]
    assert "connect_at_import.py" in outcome.refusals[0].where
    assert f"connect 127.0.0.1:{listener.port}" in outcome.to_text()
    assert outcome.isolation.network_namespace == (isolation == "auto")
    assert listener.accepted == 0


def test_unreadable_journal_is_exit_2(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{not json\n")
    outcome = runner_for(bad, "x:y", timeout_s=30).run()
    assert outcome.exit_code == 2 and outcome.error["kind"] == "journal"
    assert "bad.jsonl" in outcome.error["message"] and "line 1" in outcome.error["message"]


def test_protocol_lines_round_trip_and_reject_garbage():
    assert decode(encode("progress", consumed=1, total=2, seq=1, phase="replay"))["consumed"] == 1
    with pytest.raises(ProtocolError):
        decode(b'{"type": "nonsense"}')
    with pytest.raises(ProtocolError):
        decode(b"print output")
    spec = ReplaySpec(journal="j.jsonl", from_seq=4, allow_hosts=["h:1"])
    assert ReplaySpec.from_argv(spec.to_argv()) == spec


def test_a_journal_of_another_harness_is_refused_with_a_reason(tmp_path):
    lines = [
        {
            "type": "session_started",
            "event_id": "e1",
            "session_id": "s",
            "seq": 1,
            "ts": "2026-11-01T10:00:00Z",
            "data": {"agent": "bot"},
        },
        {
            "type": "session_ended",
            "event_id": "e2",
            "session_id": "s",
            "seq": 2,
            "ts": "2026-11-01T10:00:01Z",
            "data": {"status": "ok"},
        },
    ]
    other = tmp_path / "other.jsonl"
    other.write_text("".join(json.dumps(line) + "\n" for line in lines))
    outcome = runner_for(other, None, timeout_s=30).run()
    assert outcome.exit_code == 2 and "type-data dialect" in outcome.error["message"]


def test_cancel_during_the_replay_loop_from_a_progress_callback():
    """What the app does: follow progress, then cancel mid-run."""
    seen = []
    runner = ReplayRunner(
        ReplaySpec(journal=str(REPO / "fixtures" / "journals" / "stocktake-long.jsonl"), progress_interval_s=0),
        cwd=str(REPO),
        timeout_s=60,
    )

    def on_progress(progress):
        seen.append(progress)
        if progress.phase == "replay" and progress.consumed >= 200:
            runner.cancel()

    runner.on_progress = on_progress
    outcome = runner.run()
    assert outcome.status == CANCELLED and outcome.exit_code == 1
    assert 200 <= outcome.consumed < 2721 and outcome.total == 2721
    assert [p.phase for p in seen][:2] == ["verify", "load"] and seen[-1].phase == "replay"
    assert "cancelled at seq=" in outcome.to_text()


def test_an_agent_in_a_directory_nobody_can_read_is_named_with_the_fix(journal, tmp_path):
    """As root the sandbox runs the agent as nobody: an agent in a 0700 directory (what mktemp -d makes) does not
    import there, and the error says why and what to do (issue 27)."""
    if os.getuid() != 0:
        pytest.skip("the child runs as nobody only when replay-tui runs as root")
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    (private / "ex_tools.py").write_text("def agent(h, question):\n    return None\n")
    outcome = runner_for(journal, "ex_tools:agent", sys_path=[str(private)], timeout_s=60).run()
    assert outcome.status == FAILED and outcome.error["kind"] == "agent_import", outcome.to_text()
    message = outcome.error["message"]
    assert "No module named 'ex_tools'" in message
    assert f"nobody cannot read {private}" in message and "chmod o+rx" in message

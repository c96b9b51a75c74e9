"""The fork server: one warm interpreter forks a fresh sandboxed child per journal of a local corpus."""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest

from replay_tui.replay.corpus.executors import LocalExecutor
from replay_tui.replay.corpus.forkserver import FORK_SERVER_MECHANISM, ForkServer, label_isolation
from replay_tui.replay.corpus.runs import replay_corpus
from replay_tui.replay.parent.outcome import ReplayOutcome
from replay_tui.replay.parent.runner import CANCELLED, CRASHED, MATCH, TIMEOUT, ReplayRunner
from replay_tui.replay.protocol import ReplaySpec
from replay_tui.replay.sandbox import IPC_NAMESPACE, PID_NAMESPACE

from . import leaky_agent
from .conftest import CLEAN, REPO, cli, copy_corpus

FORKED = dict(isolation="namespaces", sys_path=[str(REPO)])


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = (
        Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0] if Path(f"/proc/{pid}").exists() else "X"
    )
    return status not in ("Z", "X")


def test_leaky_agent_detects_what_it_leaves(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The leak check can fail: run twice in one process and one cwd, the agent sees every leftover."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(leaky_agent, "runs_in_this_process", 0)
    assert leaky_agent.leftovers() == []
    try:
        leaky_agent.leave_state_behind()
        assert len(leaky_agent.leftovers()) == 4
    finally:
        os.environ.pop("LEFT_BEHIND_BY_AGENT", None)
        import replay_tui.harness as preloaded

        preloaded.__dict__.pop("left_behind_by_agent", None)


def test_nothing_leaks_between_journals(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Six journals, one server, one job: each child starts from the server's state, not its predecessor's,
    and never sees the parent's secrets."""
    monkeypatch.setenv(leaky_agent.SECRET_VARIABLE, "sk-do-not-leak")
    journals = [str(path) for path in copy_corpus(tmp_path / "corpus", CLEAN).glob("*.jsonl")]
    executor = LocalExecutor(1)
    result = replay_corpus(
        journals,
        executor=executor,
        spec_for=lambda journal: ReplaySpec(
            journal=journal, agent="tests.corpus.leaky_agent:agent", sys_path=[str(REPO)]
        ),
        timeout_s=120,
    )
    problems = [(entry.journal, entry.outcome.to_text()) for entry in result.entries if not entry.ok]
    assert not problems
    assert len(result.entries) == len(CLEAN)
    for entry in result.entries:
        isolation = entry.outcome.isolation
        assert isolation is not None and isolation.sandbox is not None
        assert isolation.sandbox["mechanism"] == FORK_SERVER_MECHANISM, "the corpus ran on the fork server"
        assert "bubblewrap cannot wrap a forked child" in isolation.summary
    assert executor._server is None, "the server is stopped after the corpus"


def test_forked_child_has_the_same_layers_as_a_spawned_one() -> None:
    spec = ReplaySpec(journal=str(CLEAN[0]), sys_path=[str(REPO)])
    spawned = ReplayRunner(spec, timeout_s=120).run()
    with ForkServer() as server:
        forked = ReplayRunner(replace(spec, isolation="namespaces"), timeout_s=120, spawner=server).run()
        server_pid = server.server_pid
    assert server_pid is not None and not alive(server_pid)
    label_isolation(forked)
    assert spawned.status == forked.status == MATCH, forked.to_text()
    assert forked.child_exit == 0
    assert spawned.isolation and forked.isolation
    assert forked.isolation.missing_layers == spawned.isolation.missing_layers
    assert "isolation: sandbox (namespaces, forked by the fork server)" in forked.to_text()


def test_runner_times_out_and_kills_a_forked_child() -> None:
    spec = ReplaySpec(journal=str(CLEAN[0]), agent="tests.corpus.sleepy_agent:agent", **FORKED)
    with ForkServer() as server:
        runner = ReplayRunner(spec, timeout_s=3, spawner=server)
        started = time.monotonic()
        outcome = runner.run()
        assert time.monotonic() - started < 60
        assert outcome.status == TIMEOUT and not outcome.ok
        assert outcome.child_exit == -9, "the server reports the exit status: killed by SIGKILL"
        assert runner.pid is not None and not alive(runner.pid)


def test_runner_cancels_a_forked_child() -> None:
    spec = ReplaySpec(journal=str(CLEAN[0]), agent="tests.corpus.sleepy_agent:agent", **FORKED)
    with ForkServer() as server:
        runner = ReplayRunner(spec, timeout_s=120, spawner=server)
        runner.start()
        canceller = threading.Timer(1.0, runner.cancel)
        canceller.start()
        outcome: ReplayOutcome = runner.wait()
        canceller.join()
    assert outcome.status == CANCELLED
    assert runner.pid is not None and not alive(runner.pid)


def test_exit_status_of_a_forked_child_reaches_the_runner() -> None:
    spec = ReplaySpec(journal=str(CLEAN[0]), agent="tests.corpus.leaky_agent:exits", **FORKED)
    with ForkServer() as server:
        outcome = ReplayRunner(spec, timeout_s=120, spawner=server).run()
    assert outcome.status == CRASHED
    assert outcome.child_exit == 7
    assert "exit code 7" in outcome.headline()


def test_bwrap_argv_is_not_forked() -> None:
    server = ForkServer()
    assert not server.accepts(
        ["/usr/bin/bwrap", "--unshare-net", "--", "python", "-m", "replay_tui.replay.child.main", "{}"]
    )
    assert server.accepts([server.python, "-m", "replay_tui.replay.child.main", "{}"])


def test_cli_report_is_the_same_with_and_without_the_fork_server(tmp_path: Path) -> None:
    directory = copy_corpus(tmp_path / "corpus", CLEAN[:3])
    runs = [
        subprocess.run(
            cli("replay", str(directory), "--jobs", "2", *extra), cwd=REPO, capture_output=True, text=True, timeout=300
        )
        for extra in ((), ("--no-fork-server",))
    ]
    assert [run.returncode for run in runs] == [0, 0], runs[0].stderr + runs[1].stderr
    first_lines = [run.stdout.splitlines()[0].split(" (")[0] for run in runs]
    assert (
        first_lines[0]
        == first_lines[1]
        == f"Corpus {directory}: 3 journal(s), 3 matched, 0 diverged, 0 failed otherwise"
    )


def test_a_dead_fork_server_falls_back_to_plain_children(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The server killed mid-corpus: the remaining journals replay as new interpreters, still refereed.

    It is killed just before the second fork (not from on_done, which raced the job thread: the second
    journal was already running, or on a loaded machine even done, on the server)."""
    journals = [str(path) for path in sorted(copy_corpus(tmp_path / "corpus", CLEAN[:3]).glob("*.jsonl"))]
    executor = LocalExecutor(1)
    mechanisms: list[str] = []
    forks = 0
    fork = ForkServer.__call__

    def kill_before_the_second_fork(server: ForkServer, argv: list[str], **options: object) -> object:
        nonlocal forks
        forks += 1
        if forks == 2 and server.server_pid is not None:
            os.kill(server.server_pid, signal.SIGKILL)
            deadline = time.monotonic() + 60
            while alive(server.server_pid) and time.monotonic() < deadline:
                time.sleep(0.01)
        return fork(server, argv, **options)

    monkeypatch.setattr(ForkServer, "__call__", kill_before_the_second_fork)

    def note_mechanism(entry: object, done: int, total: int) -> None:
        outcome = getattr(entry, "outcome")
        mechanisms.append((outcome.isolation.sandbox or {}).get("mechanism"))

    result = replay_corpus(
        journals,
        executor=executor,
        on_done=note_mechanism,
        timeout_s=120,
        spec_for=lambda journal: ReplaySpec(journal=journal, sys_path=[str(REPO)]),
    )
    assert [entry.outcome.status for entry in result.entries] == [MATCH] * 3
    assert forks >= 2, "the second journal went to the (dead) server first"
    assert mechanisms[0] == FORK_SERVER_MECHANISM
    assert FORK_SERVER_MECHANISM not in mechanisms[1:]


def _record_scratch_dirs(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The scratch dirs runs in this test make (recorded from mkdtemp), not another test's or session's."""
    made: list[str] = []
    real_mkdtemp = tempfile.mkdtemp

    def recording_mkdtemp(*args: object, **kwargs: object) -> str:
        path = real_mkdtemp(*args, **kwargs)  # type: ignore[call-overload]
        if os.path.basename(path).startswith("replay-tui-scratch-"):
            made.append(path)
        return str(path)

    monkeypatch.setattr(tempfile, "mkdtemp", recording_mkdtemp)
    return made


def test_a_server_that_dies_mid_run_ends_the_run_cleanly(monkeypatch: pytest.MonkeyPatch) -> None:
    """The child dies with its server: the runner reports it killed and still removes its scratch dir
    (the server's absence used to raise out of the runner's clean-up)."""
    made = _record_scratch_dirs(monkeypatch)
    spec = ReplaySpec(journal=str(CLEAN[0]), agent="tests.corpus.sleepy_agent:agent", **FORKED)
    with ForkServer() as server:
        said_hello = threading.Event()
        runner = ReplayRunner(spec, timeout_s=120, spawner=server)
        runner.on_message = lambda message: message.get("type") == "hello" and said_hello.set()
        runner.start()
        killer = threading.Thread(
            target=lambda: said_hello.wait(120) and os.kill(server.server_pid or 0, signal.SIGKILL)
        )
        killer.start()
        outcome = runner.wait()
        killer.join()
        assert runner.pid in server.lost
    assert not outcome.ok and outcome.child_exit == -signal.SIGKILL, outcome.to_text()
    assert runner.pid is not None and not alive(runner.pid)
    assert len(made) == 1 and not os.path.exists(made[0]), "the scratch dir is removed"


def test_a_journal_whose_child_died_with_the_server_is_replayed_plainly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made = _record_scratch_dirs(monkeypatch)
    fork = ForkServer.__call__

    def kill_after_the_fork(server: ForkServer, argv: list[str], **options: object) -> object:
        child = fork(server, argv, **options)
        if server.server_pid is not None:
            os.kill(server.server_pid, signal.SIGKILL)  # the child is forked, then its server dies
        return child

    monkeypatch.setattr(ForkServer, "__call__", kill_after_the_fork)
    journals = [str(path) for path in copy_corpus(tmp_path / "corpus", CLEAN[:1]).glob("*.jsonl")]
    result = replay_corpus(
        journals,
        executor=LocalExecutor(1),
        timeout_s=120,
        spec_for=lambda journal: ReplaySpec(journal=journal, sys_path=[str(REPO)]),
    )
    (entry,) = result.entries
    assert entry.outcome.status == MATCH, entry.outcome.to_text()
    assert entry.outcome.isolation and entry.outcome.isolation.sandbox
    assert entry.outcome.isolation.sandbox["mechanism"] != FORK_SERVER_MECHANISM, "replayed as a plain child"
    assert len(made) == 2 and not any(os.path.exists(path) for path in made), "no scratch dir left behind"


def test_a_forked_child_sees_no_host_process_and_no_host_ipc(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each child the server forks gets its own PID and IPC namespaces too (issue 27): it can neither signal a
    host process running as its own user nor open the host's System V shared memory."""
    from tests.replay import host_holdings
    from tests.replay.helpers import record_probe

    hostile = "tests.replay.agents.hostile:agent"
    journal = record_probe(tmp_path / "hostile.jsonl", entry_point=hostile)
    with host_holdings.victim() as process, host_holdings.shared_memory() as (key, secret, address):
        outcomes = []
        for attack in ("host-process", "sysv-shm"):
            env = {"HOSTILE_ATTACK": attack, "HOSTILE_VICTIM_PID": str(process.pid), "HOSTILE_SHM_KEY": str(key)}
            for name, value in env.items():
                monkeypatch.setenv(name, value)
            spec = ReplaySpec(journal=str(journal), agent=hostile, pass_env=sorted(env), **FORKED)
            with ForkServer() as server:
                outcomes.append(ReplayRunner(spec, timeout_s=120, spawner=server).run())
        assert process.poll() is None, "the forked agent killed a host process"
        assert host_holdings.read(address, len(secret)) == secret
    said = [line for outcome in outcomes for line in outcome.stderr_tail if line.startswith("ATTACK")]
    assert len(said) == 2 and "No such process" in said[0] and "shmget refused" in said[1], said
    for outcome in outcomes:
        assert outcome.status == MATCH, outcome.to_text()
        layers = {layer["name"]: layer["in_force"] for layer in outcome.isolation.sandbox["layers"]}
        assert layers[PID_NAMESPACE] and layers[IPC_NAMESPACE]

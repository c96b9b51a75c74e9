"""Corpus replays on a real local Ray cluster: the same report as local children, and lost workers."""

from __future__ import annotations

import json
import os
import shutil
import signal
import tempfile
import threading
import time
from pathlib import Path

import pytest

from replay_tui.replay.corpus.executors import RayExecutor
from replay_tui.replay.corpus.runs import find_journals, replay_corpus
from replay_tui.replay.parent.outcome import ReplayOutcome
from replay_tui.replay.parent.runner import CRASHED
from replay_tui.replay.protocol import ReplaySpec

from .conftest import CLEAN, REPO, cli

ray = pytest.importorskip("ray")
psutil = pytest.importorskip("psutil")

TASK_TITLE = "ray::replay_on_node"


def run_cli(*args: str) -> tuple[int, str]:
    import subprocess

    done = subprocess.run(cli("replay", *args), capture_output=True, text=True, timeout=600)
    return done.returncode, done.stdout


def comparable(report: dict) -> dict:
    """A corpus report without what depends on the machine (elapsed time, worker count)."""
    return {key: value for key, value in report.items() if key not in ("elapsed_s", "jobs")}


def test_ray_gives_the_same_grouping_report_and_exit_code_as_local(corpus_dir: Path) -> None:
    local_code, local = run_cli(str(corpus_dir), "--jobs", "2", "--json")
    ray_code, remote = run_cli(str(corpus_dir), "--executor", "ray", "--jobs", "2", "--json")
    assert local_code == ray_code == 1
    assert comparable(json.loads(remote)) == comparable(json.loads(local))
    assert json.loads(local)["groups"], "the corpus holds two divergence signatures on purpose"


@pytest.fixture(scope="module")
def ray_cluster():
    # The workers' temp dir is this module's: a worker killed mid-task (the lost-worker test) cannot remove its
    # replay-tui-ray-*/replay-tui-scratch-* dirs, and they would pile up in /tmp, one pair per kill and run.
    # Not below pytest's tmp_path: that is 0700, and the sandboxed child may run as nobody in its scratch dir.
    node_tmp = tempfile.mkdtemp(prefix="replay-tui-ray-node-")
    os.chmod(node_tmp, 0o755)
    # "local": a new cluster of our own, never one found through RAY_ADDRESS or a `ray start` on the machine
    ray.init(
        address="local",
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        configure_logging=False,
        runtime_env={"env_vars": {"TMPDIR": node_tmp}},
    )
    try:
        yield
    finally:
        ray.shutdown()
        shutil.rmtree(node_tmp, ignore_errors=True)


def test_the_text_table_is_the_same_too(ray_cluster: None, corpus_dir: Path) -> None:
    journals = find_journals(corpus_dir)
    spec = lambda journal: ReplaySpec(journal=journal, sys_path=[str(REPO)])  # noqa: E731
    local = replay_corpus(journals, jobs=2, root=corpus_dir, spec_for=spec)
    remote = replay_corpus(journals, root=corpus_dir, spec_for=spec, executor=RayExecutor())
    assert remote.to_text().splitlines()[1:] == local.to_text().splitlines()[1:]
    assert remote.exit_code == local.exit_code == 1


def _task_processes() -> list:
    """Workers of this process's own cluster running a replay task: our descendants only, never the tasks of
    a cluster another xdist worker (or another pytest session on the machine) is running at the same time."""
    found = []
    for process in psutil.Process().children(recursive=True):
        try:
            if any(TASK_TITLE in part for part in process.cmdline()):
                found.append(process)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return found


def test_a_task_whose_worker_dies_is_retried_once_then_reported_crashed(ray_cluster: None, tmp_path: Path) -> None:
    journal = tmp_path / CLEAN[0].name
    journal.write_bytes(CLEAN[0].read_bytes())
    spec = ReplaySpec(journal=str(journal), agent="tests.corpus.sleepy_agent:agent", sys_path=[str(REPO)])
    outcomes: list[ReplayOutcome] = []
    executor = RayExecutor()
    worker = threading.Thread(target=executor.run_all, args=([spec], 300, lambda _, outcome: outcomes.append(outcome)))
    worker.start()
    killed: set[int] = set()
    deadline = time.monotonic() + 240
    while worker.is_alive() and time.monotonic() < deadline:
        for process in _task_processes():
            if process.pid in killed:
                continue
            try:
                tree = process.children(recursive=True)
                os.kill(process.pid, signal.SIGKILL)  # the worker dies mid-task, as on a lost node
                for child in tree:
                    child.kill()
            except psutil.NoSuchProcess:
                continue
            killed.add(process.pid)
        time.sleep(0.2)
    worker.join(timeout=30)
    assert not worker.is_alive()
    assert len(killed) == 2, "the task ran twice: once, then its one retry"
    assert [outcome.status for outcome in outcomes] == [CRASHED]
    assert outcomes[0].error and outcomes[0].error["kind"] == "worker_lost"
    assert outcomes[0].exit_code == 1 and not outcomes[0].ok


def test_the_pytest_plugin_hands_its_journals_to_ray(tmp_path: Path) -> None:
    from .conftest import BEFORE_HISTORY
    from .test_pytest_plugin import INI, Project, journals, run

    project = Project(tmp_path)
    project.makeini(INI + "replay_journals_executor = ray\n")
    journals(project, CLEAN[0], BEFORE_HISTORY[0])
    result = run(project, "-q", "-rA")
    text = "\n".join(result.outlines)
    assert result.ret == 1, text + "\n".join(result.errlines)
    assert "1 failed, 1 passed" in text
    assert "diverged at seq=" in text

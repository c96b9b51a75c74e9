"""The replay job as the app runs it, in a child of its own: the child's hello as its isolation in
words, a niced process group, a cancel that still hands back the outcome so far, a job that cannot
start, and the round trip of its request and outcome through the pipe."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from replay_tui.jobs import JobCancelled, JobError, JobRun, run_job
from replay_tui.jobs.core import CHILD_NICENESS
from replay_tui.jobs.replay import ReplayJob, ReplayJobRequest, ReplayRequest
from replay_tui.replay.modes import MODEL_LIVE
from replay_tui.replay.parent.outcome import ReplayOutcome
from replay_tui.replay.parent.runner import Progress
from replay_tui.replay.parent.statuses import FAILED
from replay_tui.replay.protocol import ReplaySpec

from ..tui.replay_helpers import record_wobbly, slow_wobbly

REPO = Path(__file__).resolve().parents[2]
CRM = REPO / "fixtures" / "journals" / "crm.jsonl"


def group_gone(group: int, within_s: float = 10.0) -> bool:
    """No process is left in ``group`` (a pid namespace's members die just after its init is killed)."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            os.killpg(group, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


def test_the_hello_names_the_isolation_and_the_child_runs_niced() -> None:
    heard: list[str] = []
    niceness: list[int] = []
    children: list[int] = []
    steps: list[Progress] = []

    def on_progress(step: Progress) -> None:
        steps.append(step)
        if step.phase == "replay" and not niceness:
            niceness.append(os.getpriority(os.PRIO_PGRP, children[0]))

    request = ReplayJobRequest.of(
        ReplayRequest(timeout_s=120),
        CRM,
        str(REPO),
        on_isolation=heard.append,
        on_progress=on_progress,
        on_child=children.append,
    )
    assert request.cwd == str(REPO)
    outcome = run_job(ReplayJob(), request)
    assert outcome.status == "match", outcome.headline()
    assert outcome.isolation is not None and heard == [outcome.isolation.summary]
    assert niceness and niceness[0] >= CHILD_NICENESS
    assert children and children[0] != os.getpid()
    last = steps[-1]  # the last step always crosses the pipe, whatever the throttle
    assert (last.phase, last.consumed, last.total) == ("replay", outcome.consumed, outcome.total)


def test_the_request_carries_the_experiment_fields(tmp_path: Path) -> None:
    choice = ReplayRequest(
        mode=MODEL_LIVE,
        agent="fixtures.agents.crm:agent",
        agent_path=["agents"],
        model_config="model.toml",
        out=str(tmp_path / "new.jsonl"),
        timeout_s=30,
    )
    request = ReplayJobRequest.of(choice, CRM, str(tmp_path))
    spec = request.spec
    assert (spec.mode, spec.agent, spec.model_config, spec.tools_config) == (
        MODEL_LIVE,
        "fixtures.agents.crm:agent",
        "model.toml",
        None,
    )
    assert spec.out == choice.out and spec.journal == str(CRM.resolve()) and request.timeout_s == 30
    assert spec.sys_path == [os.path.abspath("agents"), str(tmp_path)]
    assert choice.label == "model-live experiment" and ReplayRequest().label == "replay"


def cancel_a_slow_replay(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, before_cancel: Callable[[JobRun], object] = lambda run: None
) -> tuple[JobRun, int, JobCancelled, str]:
    """A ~4 s replay cancelled at its fifth event (after ``before_cancel``): the run, the sandbox's process
    group, what the run raised and the sandbox's scratch directory."""
    journal = record_wobbly(tmp_path / "wobbly.jsonl", 40)
    slow_wobbly(monkeypatch, "0.1")
    run: JobRun
    children: list[int] = []
    scratch: list[str] = []

    def cancel_midway(step: Progress) -> None:  # the load phase counts bytes: wait for events
        if step.phase == "replay" and step.consumed >= 5:
            before_cancel(run)
            run.cancel()

    request = ReplayJobRequest.of(
        ReplayRequest(timeout_s=120),
        journal,
        str(REPO),
        on_progress=cancel_midway,
        on_child=children.append,
        on_scratch=scratch.append,
    )
    run = JobRun(ReplayJob(), request)
    with pytest.raises(JobCancelled) as cancelled:
        run.result()
    return run, children[0], cancelled.value, scratch[0]


def test_a_cancelled_replay_hands_back_its_outcome_so_far(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run, sandbox, cancelled, scratch = cancel_a_slow_replay(tmp_path, monkeypatch)
    outcome = cancelled.partial
    assert outcome.status == "cancelled" and 5 <= outcome.consumed < outcome.total, outcome.headline()
    assert run.process is not None and run.process.returncode == 0  # it answered: not killed
    assert group_gone(sandbox), "the sandbox's whole process group is gone"
    assert not os.path.exists(scratch), "the job removed its sandbox's scratch directory"


def test_a_job_that_does_not_answer_a_cancel_is_killed_with_its_sandbox(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("replay_tui.jobs.runner.STOP_WAIT_S", 0.0)  # no time to answer: the kill

    def stop_the_job(run: JobRun) -> None:
        os.kill(run.process.pid, signal.SIGSTOP)  # the job can no longer answer

    run, sandbox, cancelled, scratch = cancel_a_slow_replay(tmp_path, monkeypatch, stop_the_job)
    assert cancelled.partial is None
    assert run.process is not None and run.process.returncode == -9
    assert group_gone(run.process.pid) and group_gone(sandbox)
    assert os.path.basename(scratch).startswith("replay-tui-scratch-")
    assert not os.path.exists(scratch), "the killed job's scratch directory (with the journal's copy) is removed"


def test_a_job_child_that_cannot_be_spawned_is_a_job_error(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_more_processes(*args: Any, **kwargs: Any) -> Any:
        raise BlockingIOError(11, "Resource temporarily unavailable")  # what fork says at the process limit

    monkeypatch.setattr(subprocess, "Popen", no_more_processes)
    with pytest.raises(JobError) as error:
        run_job(ReplayJob(), ReplayJobRequest(ReplaySpec(journal=str(CRM)), timeout_s=30, cwd=str(REPO)))
    assert str(error.value) == (
        "could not start the replay child: BlockingIOError: [Errno 11] Resource temporarily unavailable"
    )


def test_a_sandbox_that_cannot_be_spawned_is_a_failed_outcome(monkeypatch: pytest.MonkeyPatch) -> None:
    """What the job's child does when the sandboxed child cannot be spawned (run here, in this process,
    where Popen can be made to fail)."""

    def no_more_processes(*args: Any, **kwargs: Any) -> Any:
        raise BlockingIOError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(subprocess, "Popen", no_more_processes)
    request = ReplayJobRequest(ReplaySpec(journal=str(CRM)), timeout_s=30, cwd=str(REPO))
    outcome = ReplayJob().run(request, lambda done, total: None, lambda: False)
    assert outcome.status == FAILED and outcome.exit_code == 1
    assert outcome.error == {
        "kind": "internal",
        "message": "could not start the replay child: BlockingIOError: [Errno 11] Resource temporarily unavailable",
        "traceback": [],
    }
    assert outcome.journal == str(CRM) and "could not start the replay child" in outcome.to_text()


def test_the_request_and_the_outcome_cross_the_pipe_unchanged() -> None:
    job = ReplayJob()
    request = ReplayJobRequest(ReplaySpec(journal=str(CRM), agent="a:b", pass_env=["X"]), timeout_s=5.0, cwd="/w")
    back = job.request_from_json(job.request_to_json(request))
    assert (back.spec, back.timeout_s, back.cwd) == (request.spec, 5.0, "/w")
    with pytest.raises(ValueError, match="unknown spec fields"):
        job.request_from_json({"spec": '{"journal": "j", "evil": 1}'})
    outcome = run_job(job, ReplayJobRequest(ReplaySpec(journal=str(CRM)), timeout_s=120, cwd=str(REPO)))
    assert isinstance(outcome, ReplayOutcome) and outcome.status == "match"
    assert job.result_from_json(job.result_to_json(outcome)).to_json() == outcome.to_json()

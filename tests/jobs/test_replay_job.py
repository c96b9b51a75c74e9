"""The replay job as the app runs it: the child's hello as its isolation in words, a niced process
group, a cancel that still hands back the outcome so far, and a child that cannot be spawned."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from replay_tui.jobs import JobCancelled, JobRun, run_job
from replay_tui.jobs.core import CHILD_NICENESS
from replay_tui.jobs.replay import ReplayJob, ReplayJobRequest, ReplayRequest
from replay_tui.replay.protocol import MODEL_LIVE, ReplaySpec
from replay_tui.replay.runner import Progress
from replay_tui.replay.statuses import FAILED

REPO = Path(__file__).resolve().parents[2]
CRM = REPO / "fixtures" / "journals" / "crm.jsonl"
LONG_RUN = REPO / "fixtures" / "journals" / "stocktake-long.jsonl"


def test_the_hello_names_the_isolation_and_the_child_runs_niced() -> None:
    heard: list[str] = []
    niceness: list[int] = []
    runners: list[Any] = []

    def on_progress(step: Progress) -> None:
        if step.phase == "replay" and not niceness:
            niceness.append(os.getpriority(os.PRIO_PGRP, runners[0].pid))

    request = ReplayJobRequest.of(
        ReplayRequest(timeout_s=120),
        CRM,
        str(REPO),
        on_isolation=heard.append,
        on_progress=on_progress,
        on_runner=runners.append,
    )
    assert request.niceness == CHILD_NICENESS and request.cwd == str(REPO)
    outcome = run_job(ReplayJob(), request)
    assert outcome.status == "match", outcome.headline()
    assert outcome.isolation is not None and heard == [outcome.isolation.summary]
    assert niceness and niceness[0] >= CHILD_NICENESS


def test_the_request_carries_the_experiment_fields(tmp_path: Path) -> None:
    choice = ReplayRequest(
        mode=MODEL_LIVE,
        agent="fixtures.agents.crm:agent",
        agent_path=["agents"],
        model_config="model.toml",
        out=str(tmp_path / "new.jsonl"),
        timeout_s=30,
    )
    request = ReplayJobRequest.of(choice, CRM, str(tmp_path), niceness=0)
    spec = request.spec
    assert (spec.mode, spec.agent, spec.model_config, spec.tools_config) == (
        MODEL_LIVE,
        "fixtures.agents.crm:agent",
        "model.toml",
        None,
    )
    assert spec.out == choice.out and spec.journal == str(CRM.resolve()) and request.timeout_s == 30
    assert spec.sys_path == [os.path.abspath("agents"), str(tmp_path)] and request.niceness == 0
    assert choice.label == "model-live experiment" and ReplayRequest().label == "replay"


def test_a_cancelled_replay_hands_back_its_outcome_so_far() -> None:
    run: JobRun

    def cancel_midway(step: Progress) -> None:  # the load phase counts bytes: wait for events
        if step.phase == "replay" and step.consumed >= 200:
            run.cancel()

    spec = ReplaySpec(journal=str(LONG_RUN), progress_interval_s=0)
    request = ReplayJobRequest(spec, timeout_s=120, cwd=str(REPO), on_progress=cancel_midway)
    run = JobRun(ReplayJob(), request)
    with pytest.raises(JobCancelled) as cancelled:
        run.result()
    outcome = cancelled.value.partial
    assert outcome.status == "cancelled" and 200 <= outcome.consumed < outcome.total


def test_a_child_that_cannot_be_spawned_is_a_failed_outcome(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_more_processes(*args: Any, **kwargs: Any) -> Any:
        raise BlockingIOError(11, "Resource temporarily unavailable")  # what fork says at the process limit

    monkeypatch.setattr(subprocess, "Popen", no_more_processes)
    outcome = run_job(ReplayJob(), ReplayJobRequest(ReplaySpec(journal=str(CRM)), timeout_s=30, cwd=str(REPO)))
    assert outcome.status == FAILED and outcome.exit_code == 1
    assert outcome.error == {
        "kind": "internal",
        "message": "could not start the replay child: BlockingIOError: [Errno 11] Resource temporarily unavailable",
        "traceback": [],
    }
    assert outcome.journal == str(CRM) and "could not start the replay child" in outcome.to_text()

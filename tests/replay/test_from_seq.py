"""--from-seq: fast-forward for function agents, snapshot resume for step-loop agents."""

from __future__ import annotations

import json

import pytest

from replay_tui.journal import call_key_of
from replay_tui.replay.parent.runner import DIVERGED, MATCH

from .conftest import REPO
from .helpers import STEP_AGENT, lines_of, rechained_copy, record_probe, replay

LONG = REPO / "fixtures" / "journals" / "stocktake-long.jsonl"


@pytest.fixture(scope="module")
def function_run(tmp_path_factory):
    return record_probe(tmp_path_factory.mktemp("fn") / "fn.jsonl")


@pytest.fixture(scope="module")
def step_run(tmp_path_factory):
    return record_probe(tmp_path_factory.mktemp("step") / "step.jsonl", STEP_AGENT)


def test_function_agent_fast_forwards_silently_then_reports_from_n(function_run):
    middle = len(lines_of(function_run)) // 2
    seen = []
    outcome = replay(function_run, from_seq=middle, progress_interval_s=0, on_progress=seen.append)
    assert outcome.status == MATCH and outcome.from_seq == middle
    assert outcome.resumed_from_snapshot is None and outcome.first_seq == 1  # it re-ran from the start
    events = [p for p in seen if p.phase in ("fast-forward", "replay")]
    assert all(p.seq < middle for p in events if p.phase == "fast-forward")
    assert all(p.seq >= middle for p in events if p.phase == "replay")
    assert any(p.phase == "fast-forward" for p in events) and events[-1].phase == "replay"
    assert f"fast-forwarded seq 1 to {middle - 1} without reporting" in outcome.to_text()


def test_step_agent_resumes_from_the_nearest_snapshot(step_run):
    events = lines_of(step_run)
    snapshots = [e["seq"] for e in events if e["kind"] == "state.snapshot"]
    assert len(snapshots) >= 3
    target = snapshots[2] + 3
    seen = []
    outcome = replay(step_run, from_seq=target, progress_interval_s=0, on_progress=seen.append)
    assert outcome.status == MATCH, outcome.to_text()
    assert outcome.resumed_from_snapshot == snapshots[2] and outcome.first_seq == snapshots[2] + 1
    assert outcome.consumed == outcome.total == len(events) - snapshots[2]
    replayed = [p.seq for p in seen if p.phase in ("fast-forward", "replay")]
    assert min(replayed) == snapshots[2] + 1  # nothing before the snapshot ran again
    assert f"resumed from the state.snapshot at seq={snapshots[2]}" in outcome.to_text()


def test_step_agent_resume_still_catches_an_edit_after_the_snapshot(step_run, tmp_path):
    events = lines_of(step_run)
    snapshot = [e["seq"] for e in events if e["kind"] == "state.snapshot"][1]
    call = next(e for e in events if e["kind"] == "tool.call" and e["seq"] > snapshot)

    def edit(events):
        for event in events:
            if event["seq"] == call["seq"]:
                event["payload"]["arguments"] = {"item": 42}
                event["payload"]["call_key"] = call_key_of("lookup", {"item": 42})
            yield event

    edited = rechained_copy(step_run, tmp_path / "edited.jsonl", edit)
    outcome = replay(edited, from_seq=snapshot + 1)
    assert outcome.resumed_from_snapshot == snapshot
    assert outcome.status == DIVERGED and outcome.divergence.seq == call["seq"]


def test_from_seq_before_the_first_snapshot_runs_from_the_start(step_run):
    outcome = replay(step_run, from_seq=2)
    assert outcome.status == MATCH and outcome.resumed_from_snapshot is None and outcome.first_seq == 1


def test_from_seq_past_the_end_is_a_usage_error(step_run):
    outcome = replay(step_run, from_seq=10_000)
    assert outcome.exit_code == 2 and "past the end" in outcome.error["message"]


def test_long_fixture_resumes_near_the_end(tmp_path):
    """The long run is a step-loop agent: resuming late replays only the tail."""
    last = json.loads(LONG.read_text().splitlines()[-1])["seq"]
    outcome = replay(LONG, from_seq=last - 100)
    assert outcome.status == MATCH
    assert outcome.resumed_from_snapshot is not None and outcome.consumed < 400


def test_snapshots_without_a_causal_cursor_resume_too(step_run, tmp_path):
    """Journals written before snapshots carried the cursor: it is read back from the journal."""

    def old_snapshots(events):
        for event in events:
            if event["kind"] == "state.snapshot":
                event["payload"]["resume"].pop("cursor", None)
            yield event

    old = rechained_copy(step_run, tmp_path / "old.jsonl", old_snapshots)
    snapshots = [e for e in lines_of(old) if e["kind"] == "state.snapshot"]
    assert snapshots and all("cursor" not in e["payload"]["resume"] for e in snapshots)
    assert replay(old).status == MATCH  # the snapshot bookkeeping differs from what this harness writes
    outcome = replay(old, from_seq=snapshots[-1]["seq"] + 1)
    assert outcome.status == MATCH, outcome.to_text()
    assert outcome.resumed_from_snapshot == snapshots[-1]["seq"]

"""State: deterministic RFC 6902 patches, and patches from any snapshot reproduce every after_hash."""

from __future__ import annotations

import subprocess
import sys

import jsonpatch
from hypothesis import given, settings
from hypothesis import strategies as st

from replay_tui.harness.patch import diff
from replay_tui.harness.state import apply_patch
from replay_tui.journal.hashing import state_hash

from .helpers import ROOT, events_of

JOURNALS = ROOT / "fixtures" / "journals"

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-1000, 1000) | st.text(max_size=5),
    lambda children: st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=4), children, max_size=5),
    max_leaves=25,
)


@settings(max_examples=400, deadline=None)
@given(json_values, json_values)
def test_diff_is_a_valid_rfc6902_patch(before, after):
    patch = diff(before, after)
    assert jsonpatch.apply_patch(before, patch, in_place=False) == after
    assert diff(before, after) == patch  # same input, same operations


def test_diff_of_a_sliding_window_is_small():
    before = {"transcript": [1, 2, 3, 4]}
    after = {"transcript": [2, 3, 4, 5]}
    assert diff(before, after) == [
        {"op": "remove", "path": "/transcript/0"},
        {"op": "add", "path": "/transcript/-", "value": 5},
    ]


def test_diff_is_the_same_under_another_hash_seed():
    code = (
        "from replay_tui.harness.patch import diff; import json;"
        "print(json.dumps(diff({k: 1 for k in 'abcdefghij'}, {k: 2 for k in 'abcdefghijklm'})))"
    )
    outputs = {
        subprocess.run(
            [sys.executable, "-c", code],
            env={"PYTHONHASHSEED": seed, "PATH": "/usr/bin:/bin"},
            capture_output=True,
            text=True,
            check=True,
            cwd=ROOT,
        ).stdout
        for seed in ("1", "2", "3")
    }
    assert len(outputs) == 1


def _check_patches_from_every_snapshot(name):
    events = events_of(JOURNALS / name)
    starts = [(0, events[0].payload["initial_state"])] + [
        (position, event.payload["state"]) for position, event in enumerate(events) if event.kind == "state.snapshot"
    ]
    assert len(starts) >= 3, "the fixture should hold several snapshots"
    for start, state in starts:
        current = state_hash(state)
        for event in events[start + 1 :]:
            if event.kind == "state.transition":
                assert event.payload["before_hash"] == current, f"{name} seq {event.seq}"
                state = apply_patch(state, event.payload["patch"])
                current = state_hash(state)
                assert current == event.payload["after_hash"], f"{name} seq {event.seq}: patch does not give after_hash"
            elif event.kind == "state.snapshot":
                assert event.payload["state_hash"] == current == state_hash(event.payload["state"])


def test_patches_from_any_snapshot_reproduce_every_after_hash_crm_incident():
    _check_patches_from_every_snapshot("crm-incident.jsonl")


def test_patches_from_any_snapshot_reproduce_every_after_hash_long_run():
    _check_patches_from_every_snapshot("stocktake-long.jsonl")


def test_transitions_carry_cause_and_reducer_version():
    events = events_of(JOURNALS / "crm-incident.jsonl")
    by_seq = {event.seq: event for event in events}
    transitions = [event for event in events if event.kind == "state.transition"]
    assert transitions
    for transition in transitions:
        cause = by_seq[transition.payload["cause_seq"]]
        assert transition.parent_event_id == cause.event_id and transition.step_id == cause.step_id
        assert transition.payload["reducer_version"] == events[0].payload["reducer_version"] == "crm-reducer-1"


def test_snapshots_come_every_snapshot_every_events_between_steps():
    events = events_of(JOURNALS / "stocktake-long.jsonl")
    every = events[0].payload["snapshot_every"]
    snapshots = [event for event in events if event.kind == "state.snapshot"]
    assert len(snapshots) >= len(events) // every - 1
    previous = 0
    for snapshot in snapshots:
        assert snapshot.step_id is None  # a StepAgent is snapshotted between steps only
        assert every <= snapshot.seq - previous < every + 10
        previous = snapshot.seq

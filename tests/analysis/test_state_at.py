"""State before/after any event, rebuilt from snapshots and patches, hashes checked."""

from __future__ import annotations

import sys
from pathlib import Path

import orjson
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from journal_factory import write_bulk, write_incident  # noqa: E402

from replay_tui.analysis.state import StateHistory, find_change, patch_touches  # noqa: E402
from replay_tui.journal import Event, open_journal  # noqa: E402
from replay_tui.journal.pointer import resolve as resolve_pointer  # noqa: E402


@pytest.fixture
def incident(tmp_path: Path) -> Path:
    return write_incident(tmp_path / "incident.jsonl")


def position_of_kind(journal, kind: str, nth: int = 0) -> int:
    found = [
        p for p in range(len(journal)) if isinstance(journal.try_event(p), Event) and journal.event(p).kind == kind
    ]
    return found[nth]


def test_state_before_and_after_a_transition(incident: Path) -> None:
    journal = open_journal(incident)
    history = StateHistory(journal)
    position = position_of_kind(journal, "state.transition", 0)  # replaces /customer
    state = history.at(position)
    assert state is not None
    assert state.before == {"customer": None, "refunds": [], "notes": []}
    assert state.after["customer"] == {"id": 42, "tier": "gold"}
    assert state.diff.changed == ("/customer",)
    assert state.verified and not state.mismatches


def test_state_after_the_last_event_matches_the_writer(incident: Path) -> None:
    journal = open_journal(incident)
    state = StateHistory(journal).at(len(journal) - 1)
    assert state is not None
    assert state.after["customer"] == {"id": 42, "tier": "silver", "charges": 2}
    assert state.after["refunds"] == [{"charge": "ch_1", "amount": 4200}]
    assert state.after == state.before  # run.ended changes nothing


def test_every_position_has_a_verified_state(incident: Path) -> None:
    journal = open_journal(incident)
    history = StateHistory(journal)
    for position in range(len(journal)):
        state = history.at(position)
        assert state is not None and not state.mismatches and not state.problems, position


def test_far_position_uses_the_nearest_snapshot(tmp_path: Path) -> None:
    journal = open_journal(write_bulk(tmp_path / "bulk.jsonl", 3000))
    state = StateHistory(journal).at(2500)
    assert state is not None and state.base_seq is not None
    assert 2500 - 400 < state.base_seq <= 2501  # a snapshot every 64 transitions = every ~320 events
    assert state.verified


def test_a_tampered_patch_is_reported_as_a_hash_mismatch(incident: Path, tmp_path: Path) -> None:
    lines = incident.read_bytes().splitlines()
    position = next(
        i for i, line in enumerate(lines) if b'"kind":"state.transition"' in line and b"/customer/tier" in line
    )
    event = orjson.loads(lines[position])
    event["payload"]["patch"][1]["value"] = "platinum"  # the recorded after_hash no longer fits
    lines[position] = orjson.dumps(event)
    tampered = tmp_path / "tampered.jsonl"
    tampered.write_bytes(b"\n".join(lines) + b"\n")
    state = StateHistory(open_journal(tampered)).at(position)
    assert state is not None
    assert state.after["customer"]["tier"] == "platinum"  # shown as recorded…
    mismatch = state.mismatches[0]
    assert mismatch.what == "after" and mismatch.seq == event["seq"]  # …and the mismatch is not hidden
    assert "hash mismatch" in state.status


def test_a_patch_that_does_not_apply_is_a_problem(incident: Path, tmp_path: Path) -> None:
    lines = incident.read_bytes().splitlines()
    position = next(i for i, line in enumerate(lines) if b'"kind":"state.transition"' in line)
    event = orjson.loads(lines[position])
    event["payload"]["patch"] = [{"op": "remove", "path": "/nowhere/at/all"}]
    lines[position] = orjson.dumps(event)
    broken = tmp_path / "broken.jsonl"
    broken.write_bytes(b"\n".join(lines) + b"\n")
    state = StateHistory(open_journal(broken)).at(position)
    assert state is not None and state.problems
    assert "does not apply" in state.problems[0]


def test_find_change_of_a_watched_path(incident: Path) -> None:
    journal = open_journal(incident)
    tier_changes = [
        p
        for p in range(len(journal))
        if journal.event(p).kind == "state.transition"
        and patch_touches(journal.event(p).payload["patch"], "/customer/tier")
    ]
    assert len(tier_changes) == 2  # set with /customer, then replaced to silver
    assert find_change(journal, "/customer/tier", 0, 1) == tier_changes[0]
    assert find_change(journal, "/customer/tier", tier_changes[0], 1) == tier_changes[1]
    assert find_change(journal, "/customer/tier", tier_changes[1], 1) is None
    assert find_change(journal, "/customer/tier", len(journal) - 1, -1) == tier_changes[1]


def test_patch_touches_and_resolve_pointer() -> None:
    assert patch_touches([{"op": "replace", "path": "/a", "value": {}}], "/a/b")
    assert patch_touches([{"op": "add", "path": "/a/b/c", "value": 1}], "/a/b")
    assert not patch_touches([{"op": "add", "path": "/ab", "value": 1}], "/a")
    assert patch_touches([{"op": "move", "from": "/x", "path": "/y"}], "/x")
    assert resolve_pointer({"a": [{"b~c/": 1}]}, "/a/0/b~0c~1") == 1
    with pytest.raises(KeyError):
        resolve_pointer({"a": []}, "/a/3")

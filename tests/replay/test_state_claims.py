"""The parent checks the agent's state claims: it applies each produced patch to its own copy of the
state and hashes it, so a child that reports the recorded hashes for another state cannot pass.

The hostile agent (agents/state_liar.py) counts stock twice and forges every transition's hashes
from the journal; the child's own tape compares hashes only and sees nothing wrong.
"""

from __future__ import annotations

import pytest

from replay_tui.journal import open_journal
from replay_tui.journal.hashing import state_hash
from replay_tui.replay.compare import read_events
from replay_tui.replay.parent.runner import DIVERGED, MATCH
from replay_tui.replay.sandbox import bwrap_path
from replay_tui.replay.state_book import StateBook, first_false_state

from .conftest import REPO
from .helpers import AGENTS, lines_of, record_probe, replay

LIAR = "tests.replay.agents.state_liar:agent"
MECHANISMS = [
    pytest.param("bwrap", marks=pytest.mark.skipif(bwrap_path() is None, reason="bubblewrap is not installed")),
    "namespaces",
]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """A probe run without snapshots: the liar's state would otherwise show in a snapshot's payload."""
    folder = tmp_path_factory.mktemp("state-claims")
    config = folder / "probe-no-snapshots.toml"
    config.write_text((AGENTS / "probe.toml").read_text().replace("snapshot_every = 4", "snapshot_every = 100000"))
    return record_probe(folder / "probe.jsonl", config=config)


def first_lie(journal) -> int:
    """The seq of the first transition whose state the liar's doubled stock changes (the first stocked lookup)."""
    return next(
        event["seq"]
        for event in lines_of(journal)
        if event["kind"] == "state.transition" and any(op["path"] == "/stock" for op in event["payload"]["patch"])
    )


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_a_child_that_forges_after_hash_is_a_divergence_at_that_transition(recorded, mechanism):
    honest = replay(recorded, isolation=mechanism)
    assert honest.status == MATCH and honest.state_checks > 0, honest.to_text()
    outcome = replay(recorded, agent=LIAR, isolation=mechanism)
    assert outcome.status == DIVERGED and outcome.exit_code == 1, outcome.to_text()
    assert outcome.divergence.seq == first_lie(recorded)
    assert "after_hash differs from the hash of the state the agent's patch builds" in outcome.divergence.reason
    assert "Replay matched" not in outcome.to_text()


def test_an_experiment_whose_journal_forges_after_hash_fails(recorded, tmp_path):
    honest = replay(recorded, mode="tools-live", tools_config=str(AGENTS / "probe.toml"), out=str(tmp_path / "a.jsonl"))
    assert honest.status == MATCH and honest.experiment["identical"], honest.to_text()
    out = tmp_path / "liar.jsonl"
    outcome = replay(recorded, agent=LIAR, mode="tools-live", tools_config=str(AGENTS / "probe.toml"), out=str(out))
    assert not outcome.ok and outcome.exit_code != 0, outcome.to_text()
    assert not outcome.experiment["identical"]
    assert outcome.divergence is not None and outcome.divergence.seq == first_lie(out)
    assert "after_hash differs" in outcome.divergence.reason
    assert "the new trajectory matches" not in outcome.to_text()


def test_the_state_book_catches_each_kind_of_false_claim():
    start = {"n": 0, "items": []}
    patch = [{"op": "replace", "path": "/n", "value": 1}, {"op": "add", "path": "/items/-", "value": {"id": 1}}]
    after = {"n": 1, "items": [{"id": 1}]}
    good = {"before_hash": state_hash(start), "after_hash": state_hash(after), "patch": patch}
    assert StateBook({"n": 0, "items": []}).transition(good) is None

    forged_after = {**good, "after_hash": state_hash({"n": 2, "items": []})}
    assert "after_hash differs" in StateBook({"n": 0, "items": []}).transition(forged_after)
    forged_before = {**good, "before_hash": state_hash({"n": 5})}
    assert "before_hash differs" in StateBook({"n": 0, "items": []}).transition(forged_before)
    unpatchable = {**good, "patch": [{"op": "remove", "path": "/missing"}]}
    assert "does not apply" in StateBook({"n": 0, "items": []}).transition(unpatchable)
    assert "no patch" in StateBook({"n": 0, "items": []}).transition({**good, "patch": "rm -rf"})

    book = StateBook({"n": 0, "items": []})
    book.transition(good)
    assert book.snapshot({"state_hash": state_hash(after), "state": after}) is None
    assert "state_hash differs" in book.snapshot({"state_hash": state_hash(start), "state": start})
    assert "not the state" in book.snapshot({"state_hash": state_hash(after), "state": start})
    assert patch[1]["value"] == {"id": 1}  # the produced patch is not changed by applying it


def test_every_fixture_journal_bears_out_its_own_state_claims():
    for path in sorted((REPO / "fixtures" / "journals").glob("*.jsonl")):
        with open_journal(path) as journal:
            assert first_false_state(read_events(journal)) is None, path.name


@pytest.mark.parametrize(
    "patch",
    [
        [{"op": "add", "path": "/items/-", "value": 3}],
        [{"op": "add", "path": "/items/0", "value": 0}, {"op": "remove", "path": "/items/1"}],
        [{"op": "add", "path": "/items/2", "value": 9}],
        [{"op": "replace", "path": "/a~1b/c~0d", "value": None}],
        [{"op": "add", "path": "/new", "value": {"x": [1]}}, {"op": "add", "path": "/new/x/1", "value": 2}],
        [{"op": "remove", "path": "/a~1b"}],
        [{"op": "copy", "from": "/items", "path": "/copy"}, {"op": "test", "path": "/copy/0", "value": 1}],
        [{"op": "replace", "path": "", "value": {"whole": True}}],
    ],
)
def test_the_books_patch_applier_agrees_with_jsonpatch(patch):
    import copy

    import jsonpatch

    from replay_tui.replay.state_book import apply_patch

    state = {"items": [1, 2], "a/b": {"c~d": 1}}
    assert apply_patch(copy.deepcopy(state), copy.deepcopy(patch)) == jsonpatch.apply_patch(state, patch)


@pytest.mark.parametrize(
    "patch",
    [
        [{"op": "replace", "path": "/missing", "value": 1}],
        [{"op": "remove", "path": "/items/2"}],
        [{"op": "add", "path": "/items/3", "value": 1}],
        [{"op": "add", "path": "/items/01", "value": 1}],
        [{"op": "add", "path": "/items/x/y", "value": 1}],
        [{"op": "add", "path": "/items/0/y", "value": 1}],
        [{"op": "replace", "path": "/items/-", "value": 1}],
        [{"op": "add", "path": "/n"}],
    ],
)
def test_a_patch_jsonpatch_refuses_is_refused(patch):
    import jsonpatch

    from replay_tui.replay.state_book import apply_patch

    with pytest.raises(Exception):
        jsonpatch.apply_patch({"items": [1, 2]}, patch)
    with pytest.raises(Exception):
        apply_patch({"items": [1, 2]}, patch)

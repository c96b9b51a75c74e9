"""``Cursor.unused`` is a pure query: what the run recorded and the agent never produced, without moving the
cursor, and never counting the recorder's checkpoints and seals or an importer's notes, wherever they sit."""

from __future__ import annotations

from pathlib import Path

import pytest

from replay_tui.journal import Journal, JournalWriter
from replay_tui.journal.seal import generate_key_pair, load_private_key
from replay_tui.replay.referee import Cursor, Mismatch
from tests.journal.sample import write_sample_journal
from tests.journal_factory import run_started


@pytest.fixture(scope="module")
def signer_key(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("keys")
    generate_key_pair(folder / "key", folder / "key.pub")
    return folder / "key"


@pytest.fixture
def checkpointed(tmp_path: Path, signer_key: Path) -> Journal:
    """run.started, three model/tool round trips, run.ended; a chain.checkpoint every 5 events, run.sealed last."""
    path = write_sample_journal(
        tmp_path / "sealed.jsonl", steps=3, signer=load_private_key(signer_key), checkpoint_every=5
    )
    journal = Journal(path)
    journal.index()
    return journal


def replay_until(cursor: Cursor, seq: int) -> None:
    """Produce the recorded events before ``seq`` (the checkpoints are the writer's: not produced)."""
    while cursor.next_seq < seq:
        recorded = cursor.peek()
        assert recorded is not None
        if recorded.seq >= seq:
            return
        found = cursor.emit(recorded.kind, recorded.payload, recorded.step_id, recorded.parent_event_id)
        assert not isinstance(found, Mismatch), found


def run_kinds(journal: Journal, after_seq: int) -> dict[str, int]:
    kinds: dict[str, int] = {}
    for event in journal.events():
        assert not isinstance(event, Exception)
        if event.seq > after_seq and event.kind not in ("chain.checkpoint", "run.sealed"):
            kinds[event.kind] = kinds.get(event.kind, 0) + 1
    return kinds


def test_a_checkpoint_mid_run_after_a_divergence_is_not_an_unused_event(checkpointed: Journal) -> None:
    kinds = [event.kind for event in checkpointed.events()]  # type: ignore[union-attr]
    assert kinds.count("chain.checkpoint") == 3 and kinds[-1] == "run.sealed"
    cursor = Cursor(checkpointed)
    replay_until(cursor, 4)
    found = cursor.emit("tool.call", {"call_key": "sha256:" + "0" * 64}, "step-01", None)
    assert isinstance(found, Mismatch) and found.seq == 4
    position, consumed = cursor.position, cursor.consumed
    unused = cursor.unused()
    expected = run_kinds(checkpointed, after_seq=3)
    assert unused == {"count": sum(expected.values()), "first_seq": 4, "kinds": expected}
    assert "chain.checkpoint" not in unused["kinds"]
    assert (cursor.position, cursor.consumed) == (position, consumed)  # a query: the cursor did not move
    assert cursor.unused() == unused


def test_a_checkpoint_at_the_end_is_not_unused_and_the_cursor_stays(checkpointed: Journal, tmp_path: Path) -> None:
    lines = Path(checkpointed.path).read_bytes().splitlines(keepends=True)
    checkpoint_at = next(i for i, line in enumerate(lines) if b'"chain.checkpoint"' in line)
    cut = tmp_path / "cut.jsonl"  # a recording that stopped just after the writer's first checkpoint
    cut.write_bytes(b"".join(lines[: checkpoint_at + 1]))
    journal = Journal(cut)
    journal.index()
    cursor = Cursor(journal)
    for position in range(checkpoint_at):
        recorded = journal.event(position)
        assert not isinstance(
            cursor.emit(recorded.kind, recorded.payload, recorded.step_id, recorded.parent_event_id), Mismatch
        )
    assert cursor.position == checkpoint_at  # the checkpoint is still ahead
    assert cursor.unused() is None
    assert cursor.position == checkpoint_at and cursor.consumed == checkpoint_at


def test_notes_are_never_unused_events(tmp_path: Path) -> None:
    path = tmp_path / "imported.jsonl"
    with JournalWriter(path, run_id="run-notes") as writer:
        writer.append("run.started", run_started())
        writer.append("note", {"text": "a handoff the trace recorded"})
        writer.append("input.received", {"role": "user", "content": "hi"})
        writer.append("note", {"text": "a score"})
        writer.append("run.ended", {"status": "ok", "output": None})
    journal = Journal(path)
    journal.index()
    cursor = Cursor(journal)
    replay_until(cursor, 2)
    assert cursor.unused() == {"count": 2, "first_seq": 3, "kinds": {"input.received": 1, "run.ended": 1}}
    assert cursor.position == 1


#: Parallel MCP sessions each send this one call (one call key).
ALIKE_CALL = {"tool": "mcp:crm notify notifications/initialized", "arguments": {}, "call_key": "sha256:" + "0" * 64}


def _past_run_started(tmp_path: Path, calls: list[tuple[str | None, str | None]]) -> Cursor:
    """A cursor past run.started of a journal of ``ALIKE_CALL``s, one per (step id, parent event id)."""
    path = tmp_path / "alike.jsonl"
    with JournalWriter(path, run_id="r") as writer:
        writer.append("run.started", run_started())
        for index, (step_id, parent) in enumerate(calls):
            writer.append("tool.call", {**ALIKE_CALL, "call_id": f"c{index}"}, step_id=step_id, parent_event_id=parent)
    journal = Journal(path)
    journal.index()
    cursor = Cursor(journal)
    replay_until(cursor, 2)
    return cursor


def test_of_calls_alike_in_key_the_one_in_the_produced_step_is_placed(tmp_path: Path) -> None:
    """Parallel MCP sessions each send the same ``notifications/initialized`` (one call key): a produced call is
    placed on the recorded one of its own step, not on the first alike, which belongs to another branch."""
    cursor = _past_run_started(tmp_path, [(f"02:tools[{index}]", None) for index in range(3)])
    call = ALIKE_CALL
    placed = cursor.place("tool.call", call, step_id="02:tools[2]")
    assert placed is not None and cursor.event_at(placed).step_id == "02:tools[2]"
    assert cursor.event_at(cursor.place("tool.call", call) or 0).step_id == "02:tools[0]"  # no step: the first
    assert cursor.place("tool.call", call, step_id="03:other") == 1  # no event in that step: the first alike


def test_of_calls_alike_in_key_the_one_hanging_from_the_produced_parent_is_placed(tmp_path: Path) -> None:
    """Parallel MCP sessions in one step each send the same notification after their own session's answer:
    a produced call is placed on the recorded one that hangs from the answer its flow received (the parent it
    will be written with), whichever session sends first; the step still counts when no parent matches."""
    cursor = _past_run_started(tmp_path, [*((None, f"r:answer{index}") for index in range(3)), ("s", "r:answer3")])
    call = ALIKE_CALL
    for index in (2, 0, 1, 3):
        placed = cursor.place("tool.call", call, parent=f"r:answer{index}")
        assert placed is not None and cursor.event_at(placed).parent_event_id == f"r:answer{index}"
    assert cursor.place("tool.call", call, step_id="s", parent="r:unknown") == 4  # the step, then the first
    assert cursor.place("tool.call", call, parent="r:unknown") == 1

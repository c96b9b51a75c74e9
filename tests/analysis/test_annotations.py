"""Bookmarks and notes in the sidecar: keyed by event hash, atomic, never in the journal."""

from __future__ import annotations

import gzip
import json
import os
import sys
from pathlib import Path

import pytest

from replay_tui.analysis.annotations import AnnotationError, AnnotationStore, annotation_key, sidecar_path
from replay_tui.journal import open_journal

sys.path.insert(0, str(Path(__file__).parent))
from incident_sample import write_incident_journal  # noqa: E402


@pytest.fixture
def journal_path(tmp_path: Path) -> Path:
    return write_incident_journal(tmp_path / "crm-incident.jsonl")


def test_bookmarks_and_notes_survive_a_reopen_and_never_touch_the_journal(journal_path: Path) -> None:
    before = journal_path.read_bytes()
    journal = open_journal(journal_path)
    store = AnnotationStore.open(journal_path)
    timeout = journal.event(journal.position_of_seq(13))  # type: ignore[arg-type]
    rejected = journal.event(journal.position_of_seq(18))  # type: ignore[arg-type]
    assert store.toggle_bookmark(rejected) is True
    assert store.toggle_bookmark(timeout) is True
    store.set_note(timeout, "  The payments API timed out after 30 s; the agent retried with 10x the amount.  ")
    journal.close()

    assert journal_path.read_bytes() == before
    assert sidecar_path(journal_path) == journal_path.with_name("crm-incident.jsonl.replay-tui.json")
    document = json.loads(sidecar_path(journal_path).read_text())
    assert document["format"] == "replay-tui-annotations" and document["version"] == 1
    assert document["annotations"][0]["key"] == timeout.event_hash

    reopened = AnnotationStore.open(journal_path)
    journal = open_journal(journal_path)
    assert [a.seq for a in reopened.bookmarks()] == [13, 18]  # seq order: the presenter's walk
    assert reopened.get(journal.event(12)).note.startswith("The payments API")  # type: ignore[union-attr]
    assert reopened.is_bookmarked(journal.event(17)) and not reopened.is_bookmarked(journal.event(0))
    assert reopened.stale(journal) == []
    journal.close()


def test_cycling_through_bookmarks_wraps(journal_path: Path) -> None:
    journal = open_journal(journal_path)
    store = AnnotationStore.open(journal_path)
    for seq in (18, 4, 11):
        store.set_bookmark(journal.event(seq - 1))
    store.set_note(journal.event(7), "a note without a bookmark")
    assert store.next_bookmark(None).seq == 4  # type: ignore[union-attr]
    assert store.next_bookmark(4).seq == 11  # type: ignore[union-attr]
    assert store.next_bookmark(11).seq == 18  # type: ignore[union-attr]
    assert store.next_bookmark(18).seq == 4  # type: ignore[union-attr]
    assert store.next_bookmark(4, backwards=True).seq == 18  # type: ignore[union-attr]
    assert store.next_bookmark(15, backwards=True).seq == 11  # type: ignore[union-attr]
    assert [a.seq for a in store.notes()] == [8]
    assert store.toggle_bookmark(journal.event(10)) is False
    assert [a.seq for a in store.bookmarks()] == [4, 18]
    store.set_note(journal.event(7), "   ")  # blank removes the note, and with it the annotation
    assert len(store) == 2
    journal.close()


def test_a_replaced_journal_makes_annotations_stale_not_wrong(journal_path: Path, tmp_path: Path) -> None:
    journal = open_journal(journal_path)
    AnnotationStore.open(journal_path).set_note(journal.event(12), "timeout here")
    journal.close()
    journal_path.unlink()
    write_incident_journal(journal_path, run_id="another-run")  # same path, different events
    journal = open_journal(journal_path)
    store = AnnotationStore.open(journal_path)
    assert [a.seq for a in store.stale(journal)] == [13]
    assert store.get(journal.event(12)) is None
    journal.close()


def test_saves_are_atomic_and_leave_no_temporary_files(journal_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    journal = open_journal(journal_path)
    store = AnnotationStore.open(journal_path)
    store.set_note(journal.event(0), "first")
    good = sidecar_path(journal_path).read_bytes()

    def crash(*args: object, **kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(AnnotationError, match="cannot be written .*No space left"):
        store.set_note(journal.event(1), "second")
    monkeypatch.undo()
    assert sidecar_path(journal_path).read_bytes() == good  # the old file is intact
    assert sorted(p.name for p in journal_path.parent.iterdir()) == [
        "crm-incident.jsonl",
        "crm-incident.jsonl.replay-tui.json",
    ]
    journal.close()


@pytest.mark.parametrize(
    "content,message",
    [
        (b"{not json", "is not valid JSON"),
        (b"[]", "is not a replay-tui annotations file"),
        (b'{"format": "replay-tui-annotations", "version": 9, "annotations": []}', "has version 9"),
        (
            b'{"format": "replay-tui-annotations", "version": 1, "annotations": [{"key": "k", "seq": "3", "run_id": "r"}]}',
            r"annotations\[0\].seq: expected a positive integer",
        ),
    ],
)
def test_a_corrupt_sidecar_is_a_clear_error_that_does_not_block(
    journal_path: Path, content: bytes, message: str
) -> None:
    sidecar_path(journal_path).write_bytes(content)
    with pytest.raises(AnnotationError, match=message) as caught:
        AnnotationStore.open(journal_path)
    assert str(sidecar_path(journal_path)) in str(caught.value)

    store, error = AnnotationStore.open_lenient(journal_path)
    assert error is not None and len(store) == 0
    journal = open_journal(journal_path)  # the journal opens regardless
    store.set_bookmark(journal.event(3))
    journal.close()
    assert store.preserved_as is not None and store.preserved_as.read_bytes() == content  # nothing lost
    assert AnnotationStore.open(journal_path).bookmarks()[0].seq == 4


def test_chainless_dialect_keys_by_run_and_seq(tmp_path: Path) -> None:
    path = tmp_path / "other.jsonl"
    lines = [
        {
            "type": "session_started",
            "event_id": "e1",
            "session_id": "sess-9",
            "seq": 1,
            "ts": "2026-01-01T00:00:00Z",
            "data": {"agent": "x"},
        },
        {
            "type": "user_message",
            "event_id": "e2",
            "session_id": "sess-9",
            "seq": 2,
            "ts": "2026-01-01T00:00:01Z",
            "data": {"content": "hi"},
        },
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    journal = open_journal(path)
    event = journal.event(1)
    assert event.event_hash is None and annotation_key(event) == "run:sess-9:seq:2"
    AnnotationStore.open(path).set_bookmark(event)
    assert AnnotationStore.open(path).is_bookmarked(journal.event(1))
    journal.close()


def test_gzip_and_shard_directories_get_a_sidecar_beside_them(tmp_path: Path) -> None:
    plain = write_incident_journal(tmp_path / "run.jsonl")
    packed = tmp_path / "run.jsonl.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    assert sidecar_path(packed).name == "run.jsonl.gz.replay-tui.json"
    assert sidecar_path(tmp_path / "shards") == tmp_path / "shards.replay-tui.json"
    assert sidecar_path(str(tmp_path / "shards") + "/") == tmp_path / "shards.replay-tui.json"


def test_an_unwritable_location_is_a_clear_error(journal_path: Path, tmp_path: Path) -> None:
    journal = open_journal(journal_path)
    gone = tmp_path / "removed-directory" / "crm-incident.jsonl"  # e.g. a journal on a detached mount
    with pytest.raises(
        AnnotationError, match=r"removed-directory/crm-incident.jsonl.replay-tui.json: cannot be written"
    ):
        AnnotationStore(gone).set_bookmark(journal.event(0))
    journal.close()


def test_two_stores_on_one_journal_do_not_lose_each_others_changes(journal_path: Path) -> None:
    journal = open_journal(journal_path)
    presenter = AnnotationStore.open(journal_path)
    editor = AnnotationStore.open(journal_path)
    presenter.set_bookmark(journal.event(2))
    editor.set_note(journal.event(5), "written in the second window")  # editor never saw the bookmark
    presenter.set_note(journal.event(2), "bookmark with a note")
    editor.set_bookmark(journal.event(5))
    final = AnnotationStore.open(journal_path)
    assert [(a.seq, a.bookmarked, a.note) for a in final.all()] == [
        (3, True, "bookmark with a note"),
        (6, True, "written in the second window"),
    ]
    presenter.toggle_bookmark(journal.event(5))  # un-bookmark what the editor bookmarked
    assert [(a.seq, a.bookmarked) for a in AnnotationStore.open(journal_path).all()] == [(3, True), (6, False)]
    journal.close()


def test_a_read_only_journal_directory_keeps_annotations_in_the_state_home(
    journal_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    state_home = tmp_path / "state"
    monkeypatch.setenv("XDG_STATE_HOME", str(state_home))
    real_access = os.access
    monkeypatch.setattr(
        os, "access", lambda path, mode: False if Path(path) == journal_path.parent else real_access(path, mode)
    )
    journal = open_journal(journal_path)
    store = AnnotationStore.open(journal_path)
    store.set_note(journal.event(3), "noted on a read-only install")
    journal.close()
    assert store.path.parent == state_home / "replay-tui" / "annotations"
    assert store.path.name.startswith("crm-incident.jsonl.") and store.path.name.endswith(".replay-tui.json")
    assert not journal_path.with_name("crm-incident.jsonl.replay-tui.json").exists()
    assert AnnotationStore.open(journal_path).notes()[0].note == "noted on a read-only install"

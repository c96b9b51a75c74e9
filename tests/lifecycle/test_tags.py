"""replay-tui tag / untag: a manifest beside the journals, never the journal itself."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from replay_tui.cli import main
from replay_tui.store.places import LocalPlace
from replay_tui.store.tags import MANIFEST_NAME, read_manifest, tag

from .conftest import CRM, copy


def test_tag_writes_the_manifest_beside_the_journal_and_never_the_journal(tmp_path: Path, capsys) -> None:
    journal = copy(CRM, tmp_path / "runs" / "crm.jsonl")
    before = journal.read_bytes(), journal.stat().st_mtime_ns
    assert main(["tag", str(journal), "incident", "--note", "INC-2211"]) == 0
    assert "tagged incident" in capsys.readouterr().out
    manifest = json.loads((journal.parent / MANIFEST_NAME).read_bytes())
    entry = manifest["journals"]["crm.jsonl"]
    assert entry["run_id"] == "crm" and entry["tags"]["incident"]["note"] == "INC-2211"
    assert (journal.read_bytes(), journal.stat().st_mtime_ns) == before
    assert (journal.parent / MANIFEST_NAME).stat().st_mode & 0o777 == 0o600

    assert main(["tag", str(journal), "incident", "--note", "INC-2212"]) == 0  # again: the note is replaced
    capsys.readouterr()
    assert main(["tag", str(journal), "keep.2026", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    tags = read_manifest(LocalPlace(journal.parent), "")["crm.jsonl"]["tags"]
    assert tags["incident"]["note"] == "INC-2212" and set(tags) == set(shown["tags"]) == {"incident", "keep.2026"}

    assert main(["untag", str(journal), "incident"]) == 0
    assert set(read_manifest(LocalPlace(journal.parent), "")["crm.jsonl"]["tags"]) == {"keep.2026"}
    assert main(["untag", str(journal), "--all"]) == 0
    assert not (journal.parent / MANIFEST_NAME).exists()  # no tag left: no manifest
    assert journal.read_bytes() == before[0]


def test_a_shard_directory_is_tagged_by_its_name(tmp_path: Path) -> None:
    from replay_tui.journal import JournalWriter

    run = tmp_path / "runs" / "sharded"
    with JournalWriter(run, run_id="sharded-run", rotate_bytes=300) as writer:
        for index in range(20):
            writer.append("input.received", {"role": "user", "content": f"message {index}"})
    assert len(list(run.iterdir())) > 2
    change = tag(str(run), "incident")
    assert change.journal == str(run)
    assert read_manifest(LocalPlace(run.parent), "")["sharded"]["run_id"] == "sharded-run"
    assert not any(path.name == MANIFEST_NAME for path in run.iterdir())  # beside it, not inside


@pytest.mark.parametrize(
    "args, message",
    [
        (["tag", "{journal}", "in cident"], "a tag is 1 to 64 letters"),
        (["tag", "{missing}", "incident"], "no such journal"),
        (["tag", "{not_journal}", "incident"], "not a journal"),
        (["untag", "{journal}"], "give the TAG to remove, or --all"),
    ],
)
def test_bad_tag_arguments_get_one_line_and_exit_2(tmp_path: Path, capsys, args: list[str], message: str) -> None:
    journal = copy(CRM, tmp_path / "crm.jsonl")
    other = tmp_path / "notes.txt"
    other.write_text("x")
    names = {"journal": str(journal), "missing": str(tmp_path / "gone.jsonl"), "not_journal": str(other)}
    assert main([arg.format(**names) for arg in args]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert journal.read_bytes() == CRM.read_bytes()


def test_an_unreadable_manifest_is_named_and_left_alone(tmp_path: Path, capsys) -> None:
    journal = copy(CRM, tmp_path / "crm.jsonl")
    (tmp_path / MANIFEST_NAME).write_text('{"format": "something else"}')
    assert main(["tag", str(journal), "incident"]) == 2
    assert f"{tmp_path / MANIFEST_NAME}: not a replay-tui tags manifest" in capsys.readouterr().err
    assert (tmp_path / MANIFEST_NAME).read_text() == '{"format": "something else"}'


def test_a_hostile_note_is_stored_as_data_and_printed_escaped(tmp_path: Path, capsys) -> None:
    journal = copy(CRM, tmp_path / "crm.jsonl")
    note = "INC \x1b[2J\x1b]0;owned\x07 \u202e"
    assert main(["tag", str(journal), "incident", "--note", note]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\u202e" not in out
    assert read_manifest(LocalPlace(tmp_path), "")["crm.jsonl"]["tags"]["incident"]["note"] == note

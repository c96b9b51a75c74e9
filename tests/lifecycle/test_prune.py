"""replay-tui prune: expired journals go whole with their copies; tagged and young ones stay."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from replay_tui.cli import main
from replay_tui.journal import JournalWriter
from replay_tui.store import places
from replay_tui.store.places import REMOVING_PREFIX, LocalPlace
from replay_tui.store.retention import parse_age, prune
from replay_tui.store.tags import tag

from .conftest import CRM, INVENTORY, copy, set_age


def sharded(path: Path, run_id: str, events: int = 30) -> Path:
    with JournalWriter(path, run_id=run_id, rotate_bytes=400) as writer:
        for index in range(events):
            writer.append("input.received", {"role": "user", "content": f"message {index}"})
    assert len(list(path.iterdir())) > 3
    return path


@pytest.fixture
def runs(tmp_path: Path) -> Path:
    root = tmp_path / "runs"
    set_age(copy(CRM, root / "old.jsonl"), 20)
    set_age(copy(INVENTORY, root / "young.jsonl"), 1)
    set_age(copy(CRM, root / "incident.jsonl"), 200)
    set_age(sharded(root / "sharded", "sharded-run"), 16)
    set_age(copy(INVENTORY, root / "2026" / "11" / "nested.jsonl"), 30)
    (root / "old.jsonl.replay-tui.json").write_text('{"format": "replay-tui-annotations"}')
    (root / "notes.txt").write_text("not a journal")
    tag(str(root / "incident.jsonl"), "incident", "INC-1")
    return root


def test_dry_run_says_what_would_go_and_removes_nothing(runs: Path, capsys) -> None:
    before = sorted(path.relative_to(runs) for path in runs.rglob("*"))
    assert main(["prune", str(runs), "--older-than", "15d", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert f"would remove {runs / 'old.jsonl'}" in out and f"would remove {runs / 'sharded'}" in out
    assert f"would remove {runs / '2026/11/nested.jsonl'}" in out
    assert f"kept {runs / 'incident.jsonl'} (200.0 days old): tagged incident" in out
    assert "young.jsonl" not in out
    assert out.rstrip().endswith("3 journal(s) unchanged for more than 15d (--older-than) to remove, 2 kept.")
    assert sorted(path.relative_to(runs) for path in runs.rglob("*")) == before


def test_prune_removes_expired_journals_whole_and_keeps_tagged_and_young(runs: Path, capsys) -> None:
    assert main(["prune", str(runs), "--older-than", "15d", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["removed"] == 3 and report["kept_young"] == 1
    actions = {Path(entry["journal"]).name: entry["action"] for entry in report["journals"]}
    assert actions == {
        "old.jsonl": "removed",
        "sharded": "removed",
        "nested.jsonl": "removed",
        "incident.jsonl": "kept: tagged",
    }
    left = sorted(path.relative_to(runs).as_posix() for path in runs.rglob("*") if not path.name.endswith(".lock"))
    assert left == [".replay-tui-tags.json", "2026", "2026/11", "incident.jsonl", "notes.txt", "young.jsonl"]
    assert [
        copy["kind"]
        for entry in report["journals"]
        for copy in entry["copies"]
        if entry["journal"].endswith("old.jsonl")
    ] == ["annotations"]


def test_the_default_age_comes_from_the_settings_then_15_days(tmp_path: Path, user_dirs, capsys) -> None:
    root = tmp_path / "runs"
    set_age(copy(CRM, root / "five-days.jsonl"), 5)
    assert main(["prune", str(root), "--dry-run"]) == 0
    assert "unchanged for more than 15d (the default) to remove" in capsys.readouterr().out
    settings = user_dirs["config"] / "replay-tui" / "config.toml"
    settings.parent.mkdir()
    settings.write_text('[retention]\nolder_than = "3d"\n')
    assert main(["prune", str(root)]) == 0
    assert f"3d ({settings})" in capsys.readouterr().out and not (root / "five-days.jsonl").exists()
    settings.write_text('[retention]\nolder_than = "three days"\n')
    assert main(["prune", str(root)]) == 2
    assert f"{settings}: [retention] older_than 'three days': an age is a number and a unit" in capsys.readouterr().err


@pytest.mark.parametrize(
    "text, seconds", [("15d", 15 * 86400), ("36h", 36 * 3600), ("2w", 14 * 86400), ("1.5d", 129600)]
)
def test_ages(text: str, seconds: float) -> None:
    assert parse_age(text) == seconds


def test_a_sharded_journal_is_removed_whole_even_when_its_deletion_breaks_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    root = tmp_path / "runs"
    journal = sharded(root / "run", "run-1")
    set_age(journal, 30)
    real_rmtree = shutil.rmtree

    def crash(path: Path, ignore_errors: bool = False) -> None:
        next(iter(sorted(Path(path).iterdir()))).unlink()  # one shard deleted, then the process dies
        raise KeyboardInterrupt

    monkeypatch.setattr(places.shutil, "rmtree", crash)
    with pytest.raises(KeyboardInterrupt):
        prune(str(root), "15d")
    monkeypatch.setattr(places.shutil, "rmtree", real_rmtree)
    assert not journal.exists() and LocalPlace(root).journals() == []  # no half journal is ever listed
    (aside,) = [path for path in root.iterdir() if path.name.startswith(REMOVING_PREFIX)]
    assert main(["prune", str(root), "--older-than", "15d"]) == 0
    assert f"finished removing {aside}" in capsys.readouterr().out and not aside.exists()


def test_a_journal_that_cannot_be_moved_is_left_whole_and_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    root = tmp_path / "runs"
    set_age(sharded(root / "run", "run-1"), 30)
    files = sorted(path.name for path in (root / "run").iterdir())

    def refuse(source: object, target: object) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(places.os, "rename", refuse)
    assert main(["prune", str(root), "--older-than", "15d"]) == 1
    assert f"FAILED {root / 'run'}: cannot be removed (Permission denied); nothing of it was" in capsys.readouterr().out
    assert sorted(path.name for path in (root / "run").iterdir()) == files


def test_a_tags_manifest_that_cannot_be_read_keeps_every_journal_beside_it(tmp_path: Path, capsys) -> None:
    root = tmp_path / "runs"
    set_age(copy(CRM, root / "old.jsonl"), 30)
    (root / ".replay-tui-tags.json").write_text("{not json")
    assert main(["prune", str(root), "--older-than", "15d"]) == 1
    out = capsys.readouterr().out
    assert (root / "old.jsonl").exists()
    assert f"kept {root / 'old.jsonl'} (30.0 days old): its {root / '.replay-tui-tags.json'}: not valid JSON" in out


def test_hostile_file_names_are_printed_escaped(tmp_path: Path, capsys) -> None:
    root = tmp_path / "runs"
    set_age(copy(CRM, root / "evil\x1b]0;owned\x07.jsonl"), 30)
    assert main(["prune", str(root), "--older-than", "15d"]) == 0
    assert "\x1b" not in capsys.readouterr().out and list(root.iterdir()) == []


def test_prune_leaves_copies_of_a_run_a_kept_journal_still_holds(tmp_path: Path) -> None:
    from replay_tui.store import storage

    root = tmp_path / "runs"
    set_age(copy(CRM, root / "old-copy.jsonl"), 30)
    set_age(copy(CRM, root / "recent.jsonl"), 1)  # the same run, recorded again or copied
    set_age(copy(INVENTORY, root / "old-inventory.jsonl"), 30)
    crm_cache = storage.fetch(f"file://{root / 'recent.jsonl'}").local
    inventory_cache = storage.fetch(f"file://{root / 'old-inventory.jsonl'}").local
    report = prune(str(root), "15d")
    assert [d.journal for d in report.removed] == [str(root / "old-copy.jsonl"), str(root / "old-inventory.jsonl")]
    assert crm_cache.exists() and not inventory_cache.exists()
    assert os.path.exists(root / "recent.jsonl")


def test_a_shard_directory_is_one_journal_never_pruned_shard_by_shard(tmp_path: Path, capsys) -> None:
    run = sharded(tmp_path / "run", "run-1")
    set_age(run, 30)
    files = sorted(path.name for path in run.iterdir())
    assert main(["prune", str(run), "--older-than", "15d"]) == 2
    assert "one journal (a directory of rotated shards), not a directory of journals" in capsys.readouterr().err
    assert main(["forget", "run-1", "--in", str(run)]) == 2
    assert sorted(path.name for path in run.iterdir()) == files
    assert main(["prune", str(tmp_path), "--older-than", "15d"]) == 0 and not run.exists()

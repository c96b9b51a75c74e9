"""Owner-only: every kind of file replay-tui creates is 0600, every directory 0700, whatever the umask."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Iterator

import pytest

from replay_tui.analysis.annotations import AnnotationStore
from replay_tui.journal import JournalWriter, open_journal
from replay_tui.journal.shipping import ShipOptions, Shipper
from replay_tui.store import storage
from replay_tui.store.sources import resolve_source
from replay_tui.store.tags import tag

from .conftest import CRM, INVENTORY, REPO, copy

CASSETTE = REPO / "fixtures" / "imports" / "weather.cassette.yaml"


@pytest.fixture(params=[0o000, 0o022, 0o277], ids=["umask-000", "umask-022", "umask-277"])
def umask(request: pytest.FixtureRequest) -> Iterator[int]:
    """0o000: the most open; 0o277: one that takes the owner's own write and run bits (modes are set exactly)."""
    previous = os.umask(request.param)
    try:
        yield request.param
    finally:
        os.umask(previous)


def created(root: Path, made_by_test: set[Path]) -> dict[Path, int]:
    modes = {}
    for path in [root, *root.rglob("*")]:
        if path not in made_by_test and not path.is_symlink():
            modes[path] = stat.S_IMODE(path.lstat().st_mode)
    return modes


def test_every_kind_replay_tui_creates_is_owner_only(tmp_path: Path, user_dirs, umask: int, monkeypatch) -> None:
    inputs = tmp_path / "inputs"
    with pytest.MonkeyPatch.context():
        previous = os.umask(0o022)
        try:
            crm, inventory = copy(CRM, inputs / "crm.jsonl"), copy(INVENTORY, inputs / "inventory.jsonl")
            trace = copy(CASSETTE, inputs / "weather.cassette.yaml")
        finally:
            os.umask(previous)
    out = tmp_path / "out"
    kinds: dict[str, list[Path]] = {}

    # a journal (and the directories made for it), a shard directory with plain and gzipped shards
    with JournalWriter(out / "sessions" / "2026" / "one.jsonl", run_id="one") as writer:
        writer.append("input.received", {"role": "user", "content": "hi"})
    with JournalWriter(out / "sessions" / "sharded", run_id="sharded", rotate_bytes=300) as writer:
        for index in range(12):
            writer.append("input.received", {"role": "user", "content": f"message {index}"})
    shards = sorted((out / "sessions" / "sharded").iterdir())
    assert any(s.name.endswith(".gz") for s in shards) and any(s.name.endswith(".jsonl") for s in shards)
    kinds["journal"] = [out / "sessions", out / "sessions" / "2026", out / "sessions" / "2026" / "one.jsonl"]
    kinds["shards"] = [out / "sessions" / "sharded", *shards]

    # sidecars: beside the journal, and in the fallback directory
    store = AnnotationStore.open(out / "sessions" / "2026" / "one.jsonl")
    with open_journal(out / "sessions" / "2026" / "one.jsonl") as journal:
        store.toggle_bookmark(journal.event(0))
    store.save()
    with monkeypatch.context() as patched:
        patched.setattr("replay_tui.analysis.annotations.installed_data_dir", lambda: inputs)
        fallback = AnnotationStore.open(crm)
        with open_journal(crm) as journal:
            fallback.set_note(journal.event(1), "a note")
        fallback.save()
    kinds["sidecars"] = [store.path, fallback.path, fallback.path.parent]

    # caches: an import, a downloaded object, a mirrored prefix, a followed object
    imported = resolve_source(str(trace))
    fetched = storage.fetch(f"file://{crm}")
    mirror = storage.fetch(f"file://{inputs}/")
    follower = storage.ObjectFollower(f"file://{inventory}")
    followed = follower.start()
    follower.stop()
    kinds["caches"] = [imported.path, imported.path.parent, fetched.local, mirror.local, followed]

    # the corpus index and its registry, a tags manifest, the shipping ledger, the audit log
    pytest.importorskip("duckdb")
    from replay_tui.analysis.corpus_index import build_index, registry_path

    build_index([("crm.jsonl", crm)], out / "corpus.duckdb")
    tag(str(out / "sessions" / "2026" / "one.jsonl"), "incident")
    shipper = Shipper((out / "sessions").resolve(), ShipOptions(f"file://{tmp_path / 'remote'}/", keep_local=True))
    shipper.submit(out / "sessions" / "2026" / "one.jsonl", True)
    assert shipper.drain(30)
    shipper.stop()
    monkeypatch.setenv("REPLAY_TUI_AUDIT_LOG", str(out / "audit" / "reads.ndjson"))
    resolve_source(str(crm))
    kinds["lifecycle"] = [
        out / "corpus.duckdb",
        registry_path(),
        out / "sessions" / "2026" / ".replay-tui-tags.json",
        out / "sessions" / ".replay-tui-shipping.ndjson",
        out / "audit" / "reads.ndjson",
    ]

    made_by_test = {tmp_path / "home", *user_dirs.values()}
    modes = {**created(out, set()), **created(tmp_path / "home", made_by_test)}
    for kind, paths in kinds.items():
        for path in paths:
            assert path in modes, (kind, path)
    wrong = {str(path): oct(mode) for path, mode in modes.items() if mode != (0o700 if path.is_dir() else 0o600)}
    assert wrong == {}

"""The bundled demo keeps its bookmarks in the user's state directory (XDG), never in the installed package,
and its agent ships inside the package so `r` works without a checkout."""

from __future__ import annotations

import importlib
import importlib.util
import shutil
from pathlib import Path

import pytest

from replay_tui.analysis import annotations
from replay_tui.analysis.annotations import AnnotationStore, sidecar_path
from replay_tui.journal import Journal
from replay_tui.tui.launch import DEMO_AGENT, demo_journal_path


def test_bookmarks_on_the_installed_demo_go_to_xdg_state_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    demo = demo_journal_path()
    assert demo is not None
    bundled = tmp_path / "site-packages" / "replay_tui" / "_bundled"
    (bundled / "journals").mkdir(parents=True)
    installed = bundled / "journals" / demo.name
    shutil.copyfile(demo, installed)
    monkeypatch.setattr(annotations, "installed_data_dir", lambda: bundled)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))

    journal = Journal(installed)
    journal.index()
    store = AnnotationStore.open(installed)
    assert store.toggle_bookmark(journal.event(3)) is True
    journal.close()

    saved = sidecar_path(installed)
    assert saved.is_file() and saved.is_relative_to(tmp_path / "state" / "replay-tui" / "annotations")
    assert not any(path.name.endswith(annotations.SIDECAR_SUFFIX) for path in bundled.rglob("*"))
    assert [a.seq for a in AnnotationStore.open(installed).bookmarks()] == [journal.event(3).seq]


def test_a_journal_outside_the_package_keeps_its_sidecar_beside_it(tmp_path: Path) -> None:
    journal = tmp_path / "run.jsonl"
    assert sidecar_path(journal) == tmp_path / ("run.jsonl" + annotations.SIDECAR_SUFFIX)


def test_the_demo_agent_is_importable_from_the_package() -> None:
    module, _, attribute = DEMO_AGENT.partition(":")
    spec = importlib.util.find_spec(module)
    assert spec is not None and spec.origin is not None
    loaded = importlib.import_module(module)
    assert hasattr(loaded, attribute)

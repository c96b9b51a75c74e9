"""Experiment journals written without a path go to a private folder of this app run, never a fixed shared
/tmp name (a symlink planted there by another user would redirect the write; two runs would collide)."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from replay_tui.tui.screens import experiments

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def shared_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A stand-in for the shared /tmp, with a fresh experiment folder for this test."""
    shared = tmp_path / "shared-tmp"
    shared.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(shared))
    monkeypatch.setattr(experiments, "_experiment_dir", None)
    return shared


def test_a_planted_symlink_at_the_old_fixed_name_is_never_followed(shared_tmp: Path, tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.mkdir()
    (shared_tmp / "replay-tui-experiments").symlink_to(victim)  # what another local user could plant
    out = experiments.default_out(Path("run.jsonl"), "model-live")
    assert victim not in out.resolve().parents
    assert out.parent.parent == shared_tmp and out.parent.name.startswith("replay-tui-experiments-")
    assert not out.parent.is_symlink()


def test_the_folder_is_private_and_the_same_for_the_whole_run(shared_tmp: Path) -> None:
    first = experiments.default_out(Path("run.jsonl"), "model-live")
    second = experiments.default_out(Path("other.jsonl"), "tools-live")
    assert first.parent == second.parent
    info = first.parent.stat()
    assert stat.S_IMODE(info.st_mode) == 0o700 and info.st_uid == os.getuid()


def test_two_runs_get_different_folders_and_each_is_removed_at_exit(tmp_path: Path) -> None:
    script = (
        "import sys, tempfile; from pathlib import Path; tempfile.tempdir = sys.argv[1];"
        "from replay_tui.tui.screens.experiments import default_out;"
        "out = default_out(Path('run.jsonl'), 'model-live'); out.write_text('{}');"
        "print(out.parent)"
    )
    folders = []
    for _ in range(2):
        done = subprocess.run(
            [sys.executable, "-c", script, str(tmp_path)], cwd=REPO, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stderr
        folders.append(Path(done.stdout.strip()))
    assert folders[0] != folders[1]
    assert all(folder.parent == tmp_path and not folder.exists() for folder in folders)  # removed at exit

"""Lifecycle tests: each runs with its own cache, state, settings and temp directories (the user's are never
touched), and a helper to run the real `replay-tui` console entry point in-process or as a child."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
JOURNALS = REPO / "fixtures" / "journals"
CRM = JOURNALS / "crm.jsonl"
INVENTORY = JOURNALS / "inventory.jsonl"


@pytest.fixture(autouse=True)
def user_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    dirs = {name: tmp_path / "home" / name for name in ("cache", "state", "config", "tmp")}
    for path in dirs.values():
        path.mkdir(parents=True)
    monkeypatch.setenv("XDG_CACHE_HOME", str(dirs["cache"]))
    monkeypatch.setenv("XDG_STATE_HOME", str(dirs["state"]))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(dirs["config"]))
    for name in ("REPLAY_TUI_CACHE_DIR", "REPLAY_TUI_AUDIT_LOG", "REPLAY_TUI_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(tempfile, "tempdir", str(dirs["tmp"]))  # replay-tui's temporary directories
    return dirs


def copy(source: Path, target: Path) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    if source.is_dir():
        shutil.copytree(source, target)
    else:
        shutil.copyfile(source, target)
    return target


def set_age(path: Path, days: float) -> None:
    """Make a journal (every file of a shard directory) last changed ``days`` ago."""
    import time

    stamp = time.time() - days * 86400
    for member in [path, *path.rglob("*")] if path.is_dir() else [path]:
        os.utime(member, (stamp, stamp))


def run_cli(*args: str, env: dict[str, str] | None = None, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    """The console entry point as a child process of this tree, with this test's directories."""
    child_env = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
    child_env["TMPDIR"] = tempfile.gettempdir()
    return subprocess.run(
        [sys.executable, "-m", "replay_tui", *args], capture_output=True, text=True, env=child_env, cwd=cwd, timeout=600
    )

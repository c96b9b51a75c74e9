"""Fixtures for every test: nothing is written to the user's own cache (the app keeps parsed stylesheets there,
the object store its copies). A test that needs a cache of its own sets ``XDG_CACHE_HOME`` itself."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def _session_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("user-cache")


@pytest.fixture(autouse=True)
def _no_user_cache(monkeypatch: pytest.MonkeyPatch, _session_cache: Path) -> Iterator[None]:
    monkeypatch.setenv("XDG_CACHE_HOME", str(_session_cache))
    monkeypatch.delenv("REPLAY_TUI_CACHE_DIR", raising=False)
    yield

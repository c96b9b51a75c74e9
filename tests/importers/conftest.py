"""Real producers of each foreign format, run in a child process against the loopback LLM server."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from ..httpx.servers import LLMServer

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "fixtures" / "imports"

Produce = Callable[..., Path]


@pytest.fixture
def llm_server() -> Iterator[LLMServer]:
    server = LLMServer()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def produce(tmp_path: Path, llm_server: LLMServer) -> Produce:
    """``produce(format, name, **env)``: run that format's real producer, return the trace it wrote."""

    def run(fmt: str, name: str, **env: str) -> Path:
        out = tmp_path / name
        child_env = {**os.environ, **env, "PYTHONPATH": str(REPO)}
        done = subprocess.run(
            [sys.executable, "-m", "fixtures.imports.producers", fmt, str(out), llm_server.url],
            check=False,
            cwd=REPO,
            env=child_env,
            capture_output=True,
            text=True,
            timeout=180,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        return out

    return run


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Imports opened by path go to a cache under the test's own directory."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))

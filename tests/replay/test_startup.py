"""Child start-up: what it costs is measured (tests/bench/bench_replay.py); here, that the ways it is kept
short hold with every sandbox layer in force."""

from __future__ import annotations

import os
import py_compile
import sys
from pathlib import Path

import pytest

from replay_tui.replay.parent.runner import MATCH, ReplayRunner
from replay_tui.replay.protocol import ReplaySpec
from replay_tui.replay.sandbox import bwrap_path, child_environment

from .conftest import REPO

LONG = REPO / "fixtures" / "journals" / "stocktake-long.jsonl"
MECHANISMS = [
    pytest.param("bwrap", marks=pytest.mark.skipif(bwrap_path() is None, reason="bubblewrap is not installed")),
    "namespaces",
]


def cached(prefix: Path, source: Path) -> Path:
    """Where Python looks for ``source``'s bytecode under PYTHONPYCACHEPREFIX ``prefix``."""
    return prefix / str(source.resolve().parent).lstrip("/") / f"{source.stem}.{sys.implementation.cache_tag}.pyc"


def test_the_callers_bytecode_cache_is_passed_on_and_nothing_else_is():
    env = child_environment({"PYTHONPYCACHEPREFIX": "/var/cache/py", "PYTHONSTARTUP": "/x.py"}, [], "/tmp/s")
    assert env["PYTHONPYCACHEPREFIX"] == "/var/cache/py" and "PYTHONSTARTUP" not in env


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_the_child_reads_the_callers_bytecode_cache_and_cannot_write_it(tmp_path, mechanism):
    """The cache below /tmp (hidden in the sandbox) is bound back read-only; the replay holds every layer."""
    if os.getuid() != 0:
        pytest.skip("the full set of layers is checked as root here")
    prefix = tmp_path / "pycache"
    for module in ("child/main.py", "child/engine.py", "child/tape.py", "referee.py"):
        source = REPO / "replay_tui" / "replay" / module
        py_compile.compile(str(source), cfile=str(cached(prefix, source)), doraise=True)
    for folder in [prefix, *prefix.rglob("*")]:
        folder.chmod(0o755 if folder.is_dir() else 0o644)
    tmp_path.chmod(0o755)
    before = {path: path.stat().st_mtime_ns for path in prefix.rglob("*")}
    spec = ReplaySpec(journal=str(LONG), sys_path=[str(REPO)], isolation=mechanism, require_isolation=True)
    environ = {**os.environ, "PYTHONPYCACHEPREFIX": str(prefix)}
    outcome = ReplayRunner(spec, timeout_s=120, cwd=str(REPO), env=environ).run()
    assert outcome.status == MATCH, outcome.to_text()
    assert {path: path.stat().st_mtime_ns for path in prefix.rglob("*")} == before  # nothing written, nothing added
    assert outcome.first_event_s is not None and outcome.first_event_s > 0
    assert isinstance(outcome.first_event_cpu_s, float) and 0 < outcome.first_event_cpu_s < 60

"""The pytest plugin, run by pytest itself (a subprocess per run) on harness-recorded journals."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from ..docs import README, block
from .conftest import BEFORE_HISTORY, CLEAN, REPO

INI = f"""[pytest]
replay_journals = true
replay_journals_agent_path = {REPO}
"""


# the app tests' snapshot plugin expects its own session set-up, asyncio and benchmark warn on a
# bare ini: all left out of the inner runs
NO_SNAPSHOTS = ("-p", "no:textual-snapshot", "-p", "no:asyncio", "-p", "no:benchmark", "-p", "no:cacheprovider")


class Project:
    """A directory with its own pytest config, run by pytest in a subprocess (as a user would)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def makeini(self, text: str) -> None:
        (self.path / "pytest.ini").write_text(text)

    def makefile(self, ext: str, **files: str) -> None:
        for name, text in files.items():
            (self.path / f"{name}{ext}").write_text(text)

    def makeconftest(self, text: str) -> None:
        (self.path / "conftest.py").write_text(textwrap.dedent(text))


def run(project: Project, *args: str) -> pytest.RunResult:
    started = time.perf_counter()
    # the plugin (and the replay children it starts) come from this checkout, whatever else is installed
    python_path = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    done = subprocess.run(
        [sys.executable, "-m", "pytest", *NO_SNAPSHOTS, *args],
        cwd=project.path,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": python_path},
    )
    return pytest.RunResult(
        done.returncode, done.stdout.splitlines(), done.stderr.splitlines(), time.perf_counter() - started
    )


@pytest.fixture
def project(tmp_path: Path) -> Project:
    directory = tmp_path / "project"
    directory.mkdir()
    return Project(directory)


def journals(project: Project, *sources: Path) -> None:
    for source in sources:
        shutil.copy(source, project.path / source.name)


def test_each_journal_is_a_test_and_a_divergence_fails_with_the_report(project: Project) -> None:
    project.makeini(INI)
    journals(project, *CLEAN[:2], BEFORE_HISTORY[0])
    result = run(project, "-rf")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(
        [
            f"*replay {BEFORE_HISTORY[0].name}*",
            "Replay divergence at seq=7",
            "expected: tool.call callKey=sha256:*",
            "why: call_key differs: the tool name or arguments changed",
            "*Item root?'arguments'??'include_history'? (True) added to dictionary.",
            f"FAILED {BEFORE_HISTORY[0].name}::replay*",
        ]
    )


def test_inert_unless_switched_on(project: Project) -> None:
    journals(project, CLEAN[0])
    result = run(project)
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    project.makeini(f"[pytest]\nreplay_journals_agent_path = {REPO}\n")
    result = run(project, "--replay-journals")
    result.assert_outcomes(passed=1)


def test_glob_is_configurable(project: Project) -> None:
    project.makeini(INI + "replay_journals_glob = incident-*.jsonl\n")
    journals(project, CLEAN[0])
    shutil.copy(CLEAN[1], project.path / "incident-7.jsonl")
    result = run(project, "-v")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["incident-7.jsonl::replay PASSED*"])
    result = run(project, "--replay-journals-glob", "*.replay.jsonl")
    result.assert_outcomes(passed=1)
    result.stdout.no_fnmatch_line("*incident-7*")


def test_sidecar_xfail(project: Project) -> None:
    project.makeini(INI)
    journals(project, BEFORE_HISTORY[0], CLEAN[0])
    stem = BEFORE_HISTORY[0].name.removesuffix(".jsonl")
    (project.path / f"{stem}.toml").write_text('[replay]\nxfail = "history lookups since v2; re-record after review"\n')
    clean_stem = CLEAN[0].name.removesuffix(".jsonl")
    (project.path / f"{clean_stem}.toml").write_text('[replay]\nxfail = "expected to diverge"\n')
    result = run(project, "-rxX")  # -rf is not asked: the strict XPASS shows in FAILURES
    # the diverging journal is an expected failure; the clean one is a strict XPASS, so a fixed journal is noticed
    result.assert_outcomes(xfailed=1, failed=1)
    result.stdout.fnmatch_lines(
        [f"*replay {CLEAN[0].name}*", "?XPASS(strict)? expected to diverge", "*XFAIL*history lookups since v2*"]
    )


def test_sidecar_xfail_does_not_hide_a_broken_journal(project: Project) -> None:
    project.makeini(INI)
    (project.path / "broken.replay.jsonl").write_bytes(b'{"seq": 1}\n')
    (project.path / "broken.replay.toml").write_text('[replay]\nxfail = "diverges"\n')
    (project.path / "typo.replay.jsonl").write_bytes(CLEAN[0].read_bytes())
    (project.path / "typo.replay.toml").write_text('[replay]\nxfial = "oops"\n')
    result = run(project)
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(
        [
            "*Replay not started: the journal failed verification.*",
            "*typo.replay.toml: unknown key(s) ?'xfial'? in ?replay?*",
        ]
    )
    assert "Traceback" not in result.stdout.str()


def test_conftest_hook_marks_expected_failures(project: Project) -> None:
    project.makeini(INI)
    journals(project, BEFORE_HISTORY[0], CLEAN[0])
    project.makeconftest(
        """
import pytest
from replay_tui.replay.corpus.pytest_plugin import ReplayDiverged

def pytest_collection_modifyitems(items):
    for item in items:
        if item.get_closest_marker("replay_journal") and item.path.name.startswith("before-"):
            item.add_marker(pytest.mark.xfail(reason="legacy", raises=ReplayDiverged, strict=True))
"""
    )
    result = run(project)
    result.assert_outcomes(passed=1, xfailed=1)


def test_sidecar_agent_override(project: Project) -> None:
    """The CRM incident replays clean with the code that recorded it, and diverges with the fix."""
    project.makeini(INI)
    shutil.copy(REPO / "fixtures" / "journals" / "crm-incident.jsonl", project.path / "crm-incident.replay.jsonl")
    result = run(project)
    result.assert_outcomes(passed=1)
    (project.path / "crm-incident.replay.toml").write_text('[replay]\nagent = "fixtures.agents.crm:agent"\n')
    result = run(project)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["Replay divergence at seq=144", "step: step-23"])


def test_under_xdist(project: Project) -> None:
    project.makeini(INI)
    journals(project, *CLEAN, BEFORE_HISTORY[0])
    result = run(project, "-n", "2", "-v")
    result.assert_outcomes(passed=len(CLEAN), failed=1)
    output = result.stdout.str()
    assert "[gw0]" in output and "[gw1]" in output
    result.stdout.fnmatch_lines(["*Replay divergence at seq=7*"])


def test_the_readme_pyproject_settings(project: Project) -> None:
    """The [tool.pytest.ini_options] block of the README and of REPLAY.md (the same), as written (agent path
    adapted)."""
    settings = block(README, "## CI and corpora", lang="toml", first_line="# pyproject.toml")
    reference = REPO / "replay_tui" / "replay" / "REPLAY.md"
    assert block(reference, "## Turn an incident into a regression test", first_line="# pyproject.toml") == settings
    project.makefile(".toml", pyproject=settings.replace('["src"]', f'["{REPO}"]'))
    journals(project, CLEAN[0], BEFORE_HISTORY[0])
    (project.path / "ignored.jsonl").write_bytes(CLEAN[1].read_bytes())
    result = run(project, "-v")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.no_fnmatch_line("*ignored.jsonl*")


def test_a_tampered_journal_fails_verification(project: Project) -> None:
    project.makeini(INI)
    data = CLEAN[0].read_bytes().replace(b'"order_id":"A-101"', b'"order_id":"A-102"', 1)
    assert data != CLEAN[0].read_bytes()
    (project.path / "tampered.replay.jsonl").write_bytes(data)
    result = run(project)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["Replay not started: the journal failed verification.", "verification failed (seq *modified_event*"]
    )
    project.makeini(INI + "replay_journals_verify_chain = false\n")
    result = run(project)
    result.assert_outcomes(failed=1)  # still caught, now by the replay itself
    result.stdout.no_fnmatch_line("*failed verification*")

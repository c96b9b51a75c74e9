"""The pytest plugin, run by pytest itself (pytester) on harness-recorded journals."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from .conftest import BEFORE_HISTORY, CLEAN, REPO

INI = f"""[pytest]
replay_journals = true
replay_journals_agent_path = {REPO}
"""


# the app tests' snapshot plugin expects its own session set-up, asyncio warns on a bare ini: both left out of inner runs
NO_SNAPSHOTS = ("-p", "no:textual-snapshot", "-p", "no:asyncio", "-p", "no:benchmark", "-p", "no:cacheprovider")


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest(*NO_SNAPSHOTS, *args)


def run_subprocess(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess(*NO_SNAPSHOTS, *args)


def journals(pytester: pytest.Pytester, *sources: Path) -> None:
    for source in sources:
        shutil.copy(source, pytester.path / source.name)


def test_each_journal_is_a_test_and_a_divergence_fails_with_the_report(pytester: pytest.Pytester) -> None:
    pytester.makeini(INI)
    journals(pytester, *CLEAN[:2], BEFORE_HISTORY[0])
    result = run(pytester, "-rf")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines([
        f"*replay {BEFORE_HISTORY[0].name}*",
        "Replay divergence at seq=7",
        "expected: tool.call callKey=sha256:*",
        "why: call_key differs: the tool name or arguments changed",
        "*Item root?'arguments'??'include_history'? (True) added to dictionary.",
        f"FAILED {BEFORE_HISTORY[0].name}::replay*",
    ])


def test_inert_unless_switched_on(pytester: pytest.Pytester) -> None:
    journals(pytester, CLEAN[0])
    result = run(pytester)
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    pytester.makeini(f"[pytest]\nreplay_journals_agent_path = {REPO}\n")
    result = run(pytester, "--replay-journals")
    result.assert_outcomes(passed=1)


def test_glob_is_configurable(pytester: pytest.Pytester) -> None:
    pytester.makeini(INI + "replay_journals_glob = incident-*.jsonl\n")
    journals(pytester, CLEAN[0])
    shutil.copy(CLEAN[1], pytester.path / "incident-7.jsonl")
    result = run(pytester, "-v")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["incident-7.jsonl::replay PASSED*"])
    result = run(pytester, "--replay-journals-glob", "*.replay.jsonl")
    result.assert_outcomes(passed=1)
    result.stdout.no_fnmatch_line("*incident-7*")


def test_sidecar_xfail(pytester: pytest.Pytester) -> None:
    pytester.makeini(INI)
    journals(pytester, BEFORE_HISTORY[0], CLEAN[0])
    stem = BEFORE_HISTORY[0].name.removesuffix(".jsonl")
    (pytester.path / f"{stem}.toml").write_text('[replay]\nxfail = "history lookups since v2; re-record after review"\n')
    clean_stem = CLEAN[0].name.removesuffix(".jsonl")
    (pytester.path / f"{clean_stem}.toml").write_text('[replay]\nxfail = "expected to diverge"\n')
    result = run(pytester, "-rxX")  # -rf is not asked: the strict XPASS shows in FAILURES
    # the diverging journal is an expected failure; the clean one is a strict XPASS, so a fixed journal is noticed
    result.assert_outcomes(xfailed=1, failed=1)
    result.stdout.fnmatch_lines([f"*replay {CLEAN[0].name}*", "?XPASS(strict)? expected to diverge", "*XFAIL*history lookups since v2*"])


def test_sidecar_xfail_does_not_hide_a_broken_journal(pytester: pytest.Pytester) -> None:
    pytester.makeini(INI)
    (pytester.path / "broken.replay.jsonl").write_bytes(b'{"seq": 1}\n')
    (pytester.path / "broken.replay.toml").write_text('[replay]\nxfail = "diverges"\n')
    (pytester.path / "typo.replay.jsonl").write_bytes(CLEAN[0].read_bytes())
    (pytester.path / "typo.replay.toml").write_text('[replay]\nxfial = "oops"\n')
    result = run(pytester)
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(["*Replay failed (journal)*", "*typo.replay.toml: unknown key(s) ?'xfial'? in ?replay?*"])
    assert "Traceback" not in result.stdout.str()


def test_conftest_hook_marks_expected_failures(pytester: pytest.Pytester) -> None:
    pytester.makeini(INI)
    journals(pytester, BEFORE_HISTORY[0], CLEAN[0])
    pytester.makeconftest(
        """
import pytest
from replay_tui.replay.pytest_plugin import ReplayDiverged

def pytest_collection_modifyitems(items):
    for item in items:
        if item.get_closest_marker("replay_journal") and item.path.name.startswith("before-"):
            item.add_marker(pytest.mark.xfail(reason="legacy", raises=ReplayDiverged, strict=True))
"""
    )
    result = run(pytester)
    result.assert_outcomes(passed=1, xfailed=1)


def test_sidecar_agent_override(pytester: pytest.Pytester) -> None:
    """The CRM incident replays clean with the code that recorded it, and diverges with the fix."""
    pytester.makeini(INI)
    shutil.copy(REPO / "fixtures" / "journals" / "crm-incident.jsonl", pytester.path / "crm-incident.replay.jsonl")
    result = run(pytester)
    result.assert_outcomes(passed=1)
    (pytester.path / "crm-incident.replay.toml").write_text('[replay]\nagent = "fixtures.agents.crm:agent"\n')
    result = run(pytester)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["Replay divergence at seq=144", "step: step-23"])


def test_under_xdist(pytester: pytest.Pytester) -> None:
    pytester.makeini(INI)
    journals(pytester, *CLEAN, BEFORE_HISTORY[0])
    result = run_subprocess(pytester, "-n", "2", "-v")
    result.assert_outcomes(passed=len(CLEAN), failed=1)
    output = result.stdout.str()
    assert "[gw0]" in output and "[gw1]" in output
    result.stdout.fnmatch_lines(["*Replay divergence at seq=7*"])


def test_the_readme_pyproject_settings(pytester: pytest.Pytester) -> None:
    """The [tool.pytest.ini_options] block of the README section, as written (agent path adapted)."""
    text = (REPO / "README.md").read_text()
    section = text[text.index("## Turn an incident into a regression test"):]
    block = section[section.index("```toml\n# pyproject.toml") + len("```toml\n"):]
    block = block[: block.index("```")]
    pytester.makefile(".toml", pyproject=block.replace('["src"]', f'["{REPO}"]'))
    journals(pytester, CLEAN[0], BEFORE_HISTORY[0])
    (pytester.path / "ignored.jsonl").write_bytes(CLEAN[1].read_bytes())
    result = run(pytester, "-v")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.no_fnmatch_line("*ignored.jsonl*")

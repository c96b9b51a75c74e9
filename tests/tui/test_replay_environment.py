"""The recorded environment fingerprint against the current one, computed in a child
process (the app never imports the harness)."""

from __future__ import annotations

import sys
from pathlib import Path

from replay_tui.tui.widgets.replay_environment import COMPARED, compare_environment, current_environment

REPO = Path(__file__).resolve().parents[2]


def test_the_same_environment_has_no_difference() -> None:
    current = current_environment(REPO)
    assert set(current) == set(COMPARED)
    recorded = {**current, "tool_schema_hash": "sha256:" + "0" * 64, "feature_flags": {}}
    comparison = compare_environment(recorded, REPO)
    assert comparison.error is None
    assert comparison.differences == []
    assert comparison.not_compared == ["feature_flags", "tool_schema_hash"]
    assert comparison.lines()[0].startswith("no difference in code_revision")


def test_a_different_runtime_and_revision_are_named() -> None:
    current = current_environment(REPO)
    recorded = {
        **current,
        "runtime": {**current["runtime"], "version": "3.10.0"},
        "code_revision": {"vcs": "git", "commit": "0123456789abcdef0123", "dirty": False},
    }
    del recorded["locale"]
    comparison = compare_environment(recorded, REPO)
    names = [name for name, _, _ in comparison.differences]
    assert names == ["code_revision", "runtime", "locale"]
    runtime = dict((name, (was, now)) for name, was, now in comparison.differences)["runtime"]
    assert "3.10.0" in runtime[0] and sys.version.split()[0] in runtime[1]
    assert dict((name, was) for name, was, _ in comparison.differences)["locale"] == "not recorded"
    assert comparison.lines()[0].startswith("code_revision: recorded 0123456789ab")


def test_no_recorded_environment_at_all() -> None:
    comparison = compare_environment(None, REPO)
    assert [name for name, _, _ in comparison.differences] == list(COMPARED)

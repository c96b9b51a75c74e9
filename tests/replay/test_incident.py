"""The step-23 incident, the committed fixtures, and the `replay-tui replay` command."""

from __future__ import annotations

import json
import shutil

import pytest

from replay_tui.cli import main
from replay_tui.replay.parent.runner import DIVERGED, MATCH

from .conftest import REPO
from .helpers import replay

JOURNALS = REPO / "fixtures" / "journals"
INCIDENT = JOURNALS / "crm-incident.jsonl"
FIXED_AGENT = "fixtures.agents.crm:agent"


@pytest.fixture(scope="module")
def incident_outcome():
    return replay(INCIDENT, agent=FIXED_AGENT)


def test_the_fixed_agent_diverges_from_the_incident_at_exactly_step_23(incident_outcome):
    events = [json.loads(line) for line in INCIDENT.read_text().splitlines()]
    recorded_call = next(e for e in events if e["kind"] == "tool.call" and e["step_id"] == "step-23")
    assert "include_inactive" in recorded_call["payload"]["arguments"]  # the recorded bug
    report = incident_outcome.divergence
    assert incident_outcome.status == DIVERGED and incident_outcome.exit_code == 1
    assert report.seq == recorded_call["seq"] and report.step == "step-23"
    assert report.expected.kind == report.actual.kind == "tool.call"
    assert "call_key" in report.reason
    assert report.payload_diff["dictionary_item_removed"] == {"root['arguments']['include_inactive']": True}
    assert any("include_inactive" in line for line in report.diff_lines)
    assert incident_outcome.consumed == recorded_call["seq"] - 1  # everything before it matched


def test_the_incident_report_text_names_the_extra_argument(incident_outcome):
    text = incident_outcome.to_text()
    assert "Replay divergence at seq=144" in text and "step: step-23" in text
    assert "root['arguments']['include_inactive']" in text


def test_the_incident_replays_cleanly_with_the_code_that_recorded_it():
    outcome = replay(INCIDENT, verify_hash_chain=True)
    assert outcome.status == MATCH and outcome.unused is None


@pytest.mark.parametrize("name", ["crm", "inventory", "stocktake-long"])
def test_committed_fixtures_replay_strictly(name):
    """inventory is async with parallel tool calls, a tool error and a timeout; stocktake is the long run."""
    outcome = replay(JOURNALS / f"{name}.jsonl", verify_hash_chain=True)
    assert outcome.status == MATCH, outcome.to_text()
    assert outcome.consumed == outcome.total


def test_cli_replay_exit_codes_and_json(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(REPO)
    assert main(["replay", str(INCIDENT), "--quiet"]) == 0
    assert "Replay matched" in capsys.readouterr().out
    assert main(["replay", "--journal", str(INCIDENT), "--agent", FIXED_AGENT, "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["status"] == "diverged" and data["divergence"]["seq"] == 144 and data["divergence"]["step"] == "step-23"
    assert data["isolation"]["socket_guard"] is True
    assert main(["replay", str(INCIDENT), "--agent", "fixtures.agents.nope:agent"]) == 2
    assert "cannot import agent module" in capsys.readouterr().out
    assert main(["replay", str(tmp_path / "missing.jsonl")]) == 2
    assert main(["replay", str(INCIDENT), "--mode", "model-live"]) == 2  # no --out, no --model-config
    assert "--out" in capsys.readouterr().out


def test_cli_replay_of_a_truncated_copy_names_the_line(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(REPO)
    copy = tmp_path / "cut.jsonl"
    shutil.copy(INCIDENT, copy)
    lines = copy.read_text().splitlines()
    lines[40] = lines[40][: len(lines[40]) // 2]
    copy.write_text("\n".join(lines) + "\n")
    assert main(["replay", str(copy)]) == 2
    out = capsys.readouterr().out
    assert "cut.jsonl" in out and "line 41" in out and "Traceback" not in out

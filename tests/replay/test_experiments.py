"""Experiments: one dependency group live, the rest from the journal; each writes its own journal."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from replay_tui.journal import verify_journal
from replay_tui.replay.hosts import hosts_in_config
from replay_tui.replay.parent.runner import DIVERGED, MATCH, UNRECORDED_CALL

from .agents import probe
from .conftest import REPO, LoopbackListener
from .helpers import AGENTS, lines_of, rechained_copy, record_probe, replay

HOSTILE = "tests.replay.agents.hostile:agent"

CRM = REPO / "fixtures" / "journals" / "crm.jsonl"
CRM_NEW_MODEL = REPO / "fixtures" / "configs" / "crm-new-model.toml"


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    return record_probe(tmp_path_factory.mktemp("probe") / "probe.jsonl")


def test_model_live_with_the_new_crm_model_reports_the_first_differing_decision(tmp_path):
    out = tmp_path / "crm-model-live.jsonl"
    outcome = replay(CRM, mode="model-live", model_config=str(CRM_NEW_MODEL), out=str(out))
    assert outcome.status == DIVERGED and outcome.exit_code == 1
    experiment = outcome.experiment
    decision = experiment["first_decision"]
    assert decision["kind"] == "model.response" and decision["step_id"] == "step-01"
    # the child's network stays off: the live model's calls are made by the parent's broker
    assert outcome.isolation.network_namespace is True and "broker" in outcome.isolation.reason
    assert outcome.live_calls and all(call["kind"] == "model.response" for call in outcome.live_calls)
    assert outcome.unused is None  # the new model made every recorded tool call, each used once
    assert verify_journal(out).ok and lines_of(out)[0]["run_id"].endswith("-model-live")
    assert outcome.divergence.seq == decision["a"]["seq"]
    assert "first differing decision" in outcome.to_text()


def test_model_live_stops_at_a_call_the_journal_never_saw_and_shows_it(recorded, tmp_path):
    out = tmp_path / "new-model.jsonl"
    outcome = replay(recorded, mode="model-live", model_config=str(AGENTS / "probe-new-model.toml"), out=str(out))
    assert outcome.status == UNRECORDED_CALL and outcome.exit_code == 1
    stopped = outcome.experiment["stopped"]
    assert stopped["kind"] == "tool.result" and stopped["request"]["arguments"] == {"item": 99}
    assert "lookup" in outcome.headline() and '"item":99' in outcome.headline()
    # the live model ran (the child cannot write a log outside its scratch dir: the journal says it)
    assert [call["kind"] for call in outcome.live_calls] == ["model.response", "model.response"]
    assert outcome.unused["first_seq"] == next(
        e["seq"] for e in lines_of(recorded) if e["kind"] == "tool.result" and e["payload"]["call_id"] == "call-2"
    )
    written = lines_of(out)
    assert written[-1]["kind"] == "tool.call" and written[-1]["payload"]["arguments"] == {"item": 99}


def test_tools_live_stops_at_an_unseen_request_and_shows_which_observation_changed(recorded, tmp_path):
    out = tmp_path / "restocked.jsonl"
    outcome = replay(recorded, mode="tools-live", tools_config=str(AGENTS / "probe-restocked.toml"), out=str(out))
    assert outcome.status == UNRECORDED_CALL
    assert outcome.experiment["stopped"]["kind"] == "model.response"
    changed = outcome.experiment["first_live_observation"]
    assert changed["kind"] == "tool.result" and changed["step_id"] == "step-03"
    assert any("stock" in line for line in changed["diff_lines"])
    assert outcome.divergence.expected.kind == "tool.result" and outcome.divergence.step == "step-03"
    assert "first changed live observation" in outcome.to_text()


def test_tools_live_with_unchanged_tools_matches(recorded, tmp_path):
    outcome = replay(
        recorded, mode="tools-live", tools_config=str(AGENTS / "probe.toml"), out=str(tmp_path / "same.jsonl")
    )
    assert outcome.status == MATCH and outcome.experiment["identical"]
    assert {call["kind"] for call in outcome.live_calls} == {"tool.result"}


def test_experiments_reach_only_the_hosts_named_in_the_live_config(tmp_path):
    service, mirror = LoopbackListener(), LoopbackListener()
    try:
        config = tmp_path / "networked.toml"
        config.write_text(
            '[[plugins]]\nid = "tools"\ntype = "python-tools"\n'
            f'options = {{ provider = "tests.replay.agents.probe:networked_tools", '
            f'base_url = "http://127.0.0.1:{service.port}/v1", other_port = {mirror.port} }}\n'
        )
        assert hosts_in_config(config) == [f"127.0.0.1:{service.port}"]
        journal = record_probe(tmp_path / "networked.jsonl", config=_with_model(config, tmp_path))
        recorded_service, recorded_mirror = service.accepted, mirror.accepted
        assert recorded_service > 0 and recorded_mirror > 0
        outcome = replay(journal, mode="tools-live", tools_config=str(config), out=str(tmp_path / "live.jsonl"))
        assert outcome.isolation.allowed_hosts == [f"127.0.0.1:{service.port}"]
        assert service.accepted > recorded_service  # the named host is reachable
        assert mirror.accepted == recorded_mirror  # anything else is refused ...
        assert {r.target for r in outcome.refusals} == {f"127.0.0.1:{mirror.port}"}  # ... and reported
        assert outcome.experiment["first_live_observation"]["kind"] == "tool.result"
        assert outcome.isolation.network_namespace and "broker" in outcome.isolation.reason
        results = [e["payload"]["result"] for e in lines_of(tmp_path / "live.jsonl") if e["kind"] == "tool.result"]
        assert results and all(r["service"] and not r["mirror"] for r in results)
        assert not any(
            r["raw_service"] for r in results
        )  # past the guard there is no network, even to the allowed host
        recorded = [e["payload"]["result"] for e in lines_of(journal) if e["kind"] == "tool.result"]
        assert all(r["raw_service"] for r in recorded)  # while recording, the raw path did reach it
    finally:
        service.close()
        mirror.close()


def _with_model(tools_config, tmp_path):
    """The recording config: the probe's model plus the networked tools."""
    config = tmp_path / "record.toml"
    model = (AGENTS / "probe.toml").read_text().split("[[plugins]]")[:2]
    config.write_text("[[plugins]]".join(model) + tools_config.read_text())
    return config


def test_experiment_without_out_or_config_is_a_usage_error(recorded, tmp_path):
    outcome = replay(recorded, mode="model-live", model_config=str(AGENTS / "probe-new-model.toml"))
    assert outcome.exit_code == 2 and "--out" in outcome.error["message"]
    outcome = replay(recorded, mode="tools-live", out=str(tmp_path / "x.jsonl"))
    assert outcome.exit_code == 2 and "--tools-config" in outcome.error["message"]
    existing = tmp_path / "exists.jsonl"
    existing.write_text("keep me\n")
    outcome = replay(recorded, mode="model-live", model_config=str(AGENTS / "probe-new-model.toml"), out=str(existing))
    assert outcome.exit_code == 2 and existing.read_text() == "keep me\n"


def test_new_code_mode_is_strict_and_writes_its_own_journal(recorded, tmp_path):
    out = tmp_path / "new-code.jsonl"
    outcome = replay(recorded, mode="new-code", out=str(out))
    assert outcome.status == MATCH
    assert len(lines_of(out)) == len(lines_of(recorded)) and verify_journal(out).ok


def test_a_journal_cannot_turn_redaction_off_for_a_live_run(recorded, tmp_path):
    """run.started's redaction rules say {"enabled": false}: the live tools' token is redacted all the same,
    with the rules of the user's config (issue 27, item 4)."""

    def redaction_off(events):
        events[0]["payload"]["harness"]["redaction"] = {"enabled": False}
        return events

    journal = rechained_copy(recorded, tmp_path / "redaction-off.jsonl", redaction_off)
    out = tmp_path / "live.jsonl"
    outcome = replay(journal, mode="tools-live", tools_config=str(AGENTS / "probe-leaky.toml"), out=str(out))
    assert outcome.out == str(out), outcome.to_text()
    written = out.read_bytes()
    assert b'"token"' in written and probe.LIVE_TOKEN.encode() not in written


@pytest.mark.parametrize("swap", ["fifo", "symlink", "grow"])
def test_an_out_journal_swapped_for_a_fifo_a_symlink_or_a_huge_file_neither_blocks_nor_leaks(tmp_path, swap):
    """The agent replaces its out journal in the scratch dir, or grows it to 256 MiB: the parent opens it
    O_NOFOLLOW | O_NONBLOCK, refuses it (not a regular file; over 4 times the recording), stays within
    --timeout and leaves no scratch dir (issue 27, item 6)."""
    journal = record_probe(tmp_path / "hostile.jsonl", entry_point=HOSTILE)
    out, temp = tmp_path / "new.jsonl", tmp_path / "tmp"
    temp.mkdir()
    env = {"HOSTILE_ATTACK": "swap-out", "HOSTILE_OUT": swap, "HOSTILE_JOURNAL": str(journal)}
    command = [sys.executable, "-m", "replay_tui", "replay", str(journal), "--agent", HOSTILE, "--mode", "tools-live"]
    command += ["--tools-config", str(AGENTS / "probe-restocked.toml"), "--out", str(out), "--timeout", "8"]
    command += [part for name in env for part in ("--pass-env", name)]
    started = time.monotonic()
    done = subprocess.run(
        command, cwd=REPO, env={**os.environ, **env, "TMPDIR": str(temp)}, capture_output=True, timeout=120
    )
    assert time.monotonic() - started < 60 and done.returncode in (1, 2), done.stderr.decode(errors="replace")[-2000:]
    assert not out.exists() and not os.path.lexists(out)
    assert list(temp.iterdir()) == [], "the scratch dir (and the journal's copy in it) is gone"

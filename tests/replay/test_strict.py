"""Strict replay: DESIGN.md's seven "Replay passes when" checks, each against a real child."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from replay_tui.journal import call_key_of, hash_value
from replay_tui.journal.model import OBSERVATION_KINDS
from replay_tui.replay.parent.runner import DIVERGED, MATCH, UNUSED_EVENTS, VERIFICATION_FAILED

from .helpers import FUNCTION_AGENT, lines_of, rechained_copy, record_probe, replay


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> Path:
    return record_probe(tmp_path_factory.mktemp("probe") / "probe.jsonl")


def seq_of(events, kind, nth=0, **payload):
    found = [e for e in events if e["kind"] == kind and all(e["payload"].get(k) == v for k, v in payload.items())]
    return found[nth]["seq"]


# 1. the network is off ------------------------------------------------------------------


def test_network_is_off_a_connection_to_a_listening_loopback_server_is_refused_and_reported(tmp_path, listener):
    journal = record_probe(tmp_path / "net.jsonl", REPLAY_TEST_PORT=str(listener.port))
    assert listener.wait_for(1) == 1  # while recording, the agent did reach the server
    outcome = replay(journal, env={"REPLAY_TEST_PORT": str(listener.port)})
    assert outcome.status == MATCH, outcome.to_text()
    assert listener.accepted == 1  # ... and during replay it did not
    assert [(r.operation, r.target) for r in outcome.refusals] == [("connect", f"127.0.0.1:{listener.port}")]
    assert "probe.py" in outcome.refusals[0].where
    text = outcome.to_text()
    assert f"connect 127.0.0.1:{listener.port}" in text
    isolation = outcome.isolation
    assert isolation.socket_guard and isolation.summary in text
    assert isolation.network_namespace or isolation.reason


# 2. no live model or tool call --------------------------------------------------------


def test_no_model_or_tool_is_called_during_strict_replay(tmp_path):
    log = tmp_path / "calls.log"
    journal = record_probe(tmp_path / "calls.jsonl", PROBE_LOG=str(log))
    recorded_calls = log.read_text().splitlines()
    assert "model" in recorded_calls and "tool lookup 1" in recorded_calls  # the log does see real calls
    log.unlink()
    outcome = replay(journal, env={"PROBE_LOG": str(log)})
    assert outcome.status == MATCH
    assert not log.exists(), f"replay called out: {log.read_text()}"
    observations = [e for e in lines_of(journal) if e["kind"] in OBSERVATION_KINDS]
    assert outcome.observations_served == len(observations)


# 3. the hash chain verifies -----------------------------------------------------------


def test_hash_chain_is_verified_before_replay(recorded, tmp_path):
    outcome = replay(recorded, verify_hash_chain=True)
    assert outcome.status == MATCH and outcome.verification["ok"] and outcome.verification["chain"] == "verified"
    tampered = tmp_path / "tampered.jsonl"
    lines = recorded.read_text().splitlines()
    target = next(i for i, line in enumerate(lines) if '"kind":"tool.result"' in line)
    lines[target] = lines[target].replace('"stock":10', '"stock":11')
    tampered.write_text("\n".join(lines) + "\n")
    before = tampered.read_bytes()
    outcome = replay(tampered, verify_hash_chain=True)
    assert outcome.status == VERIFICATION_FAILED and outcome.exit_code == 1
    assert outcome.verification["fault"]["seq"] == target + 1
    assert outcome.consumed == 0  # the agent never ran
    assert f"seq {target + 1}" in outcome.to_text()
    assert tampered.read_bytes() == before  # nothing is ever written to a journal


# 4. every event is consumed exactly once; unused events reported at their first seq ---------


def test_every_event_is_consumed_exactly_once(recorded):
    outcome = replay(recorded)
    count = len(lines_of(recorded))
    assert outcome.status == MATCH and outcome.consumed == outcome.total == count
    assert outcome.unused is None and outcome.last_seq == count


def _with_trailing_events(events):
    yield from events
    yield {**events[-2], "seq": None}  # a second copy of the last tool.result-or-transition
    yield {**events[-1], "seq": None}


def test_unused_events_are_reported_with_their_first_seq(recorded, tmp_path):
    padded = rechained_copy(recorded, tmp_path / "padded.jsonl", _with_trailing_events)
    count = len(lines_of(recorded))
    outcome = replay(padded, verify_hash_chain=False)  # events after run.ended: verify refuses them (issue 12)
    assert outcome.status == UNUSED_EVENTS and outcome.exit_code == 1
    assert outcome.unused["count"] == 2 and outcome.unused["first_seq"] == count + 1
    assert f"the first at seq={count + 1}" in outcome.to_text()
    relaxed = replay(padded, strict=False, verify_hash_chain=False)
    assert relaxed.status == MATCH and relaxed.unused["first_seq"] == count + 1
    assert f"the first at seq={count + 1}" in relaxed.to_text()
    assert replay(padded, strict=False, fail_on_unused_events=True, verify_hash_chain=False).status == UNUSED_EVENTS


# 5. every state hash matches --------------------------------------------------------------


def test_every_state_hash_is_checked_and_a_wrong_one_is_caught(recorded, tmp_path):
    events = lines_of(recorded)
    states = [e for e in events if e["kind"] in ("state.transition", "state.snapshot")]
    outcome = replay(recorded)
    assert outcome.state_checks == len(states) > 0
    target = next(e for e in events if e["kind"] == "state.transition" and e["step_id"] == "step-02")

    def wrong_state(events):
        for event in events:
            if event["seq"] == target["seq"]:
                event["payload"]["after_hash"] = hash_value({"not": "the state"})
            yield event

    edited = rechained_copy(recorded, tmp_path / "state.jsonl", wrong_state)
    outcome = replay(edited)
    assert outcome.status == DIVERGED and outcome.divergence.seq == target["seq"]
    assert "after_hash" in outcome.divergence.reason
    assert outcome.divergence.step == "step-02"


# 6. a one-argument edit in a copy is detected at its seq --------------------------------------


def test_one_argument_edit_is_detected_at_its_seq(recorded, tmp_path):
    events = lines_of(recorded)
    target = seq_of(events, "tool.call", 0)

    def edit(events):
        for event in events:
            if event["seq"] == target:
                event["payload"]["arguments"] = {"item": 7}
                event["payload"]["call_key"] = call_key_of("lookup", {"item": 7})
            yield event

    edited = rechained_copy(recorded, tmp_path / "edited.jsonl", edit)
    outcome = replay(edited, verify_hash_chain=True)  # the copy's chain verifies: only replay catches it
    assert outcome.verification["ok"]
    assert outcome.status == DIVERGED and outcome.exit_code == 1
    report = outcome.divergence
    assert report.seq == target and report.expected.kind == report.actual.kind == "tool.call"
    assert "call_key" in report.reason and report.expected.key != report.actual.key
    assert any("root['arguments']['item']" in line and "7" in line for line in report.diff_lines)
    assert outcome.consumed == target - 1


def test_an_argument_edited_without_its_key_is_detected_too(recorded, tmp_path):
    target = seq_of(lines_of(recorded), "tool.call", 1)

    def edit(events):
        for event in events:
            if event["seq"] == target:
                event["payload"]["arguments"]["item"] = 8  # the call_key still says the original
            yield event

    outcome = replay(rechained_copy(recorded, tmp_path / "edited.jsonl", edit))
    assert outcome.divergence.seq == target and "payload.arguments" in outcome.divergence.reason


# 7. a deleted event is detected before the run completes ----------------------------------------


@pytest.mark.parametrize("kind", ["tool.result", "model.request"])
def test_deleted_event_is_detected_at_its_seq_before_the_run_completes(recorded, tmp_path, kind):
    lines = recorded.read_text().splitlines()
    events = [json.loads(line) for line in lines]
    target = seq_of(events, kind, 1)
    shortened = tmp_path / "deleted.jsonl"
    shortened.write_text("\n".join(line for line, event in zip(lines, events) if event["seq"] != target) + "\n")
    outcome = replay(shortened, verify_hash_chain=False)  # the chain check would catch it first (tested above)
    assert outcome.status == DIVERGED
    assert outcome.divergence.seq == target
    assert f"no event with seq {target}" in outcome.divergence.reason
    assert outcome.last_seq == target - 1 and outcome.consumed == target - 1 < outcome.total
    assert outcome.divergence.actual.kind == kind  # what the agent produced where the event was


# the report ---------------------------------------------------------------------------------


def test_divergence_report_has_the_design_shape(recorded, tmp_path):
    target = seq_of(lines_of(recorded), "tool.call", 2)

    def edit(events):
        for event in events:
            if event["seq"] == target:
                event["payload"]["arguments"] = {"item": 3, "fresh": True}
                event["payload"]["call_key"] = call_key_of("lookup", event["payload"]["arguments"])
            yield event

    outcome = replay(rechained_copy(recorded, tmp_path / "edited.jsonl", edit))
    lines = outcome.divergence.to_text().splitlines()
    assert lines[0] == f"Replay divergence at seq={target}"
    assert lines[1].startswith("expected: tool.call callKey=sha256:")
    assert lines[2].startswith("actual:   tool.call callKey=sha256:")
    assert lines[3].startswith("state before: sha256:")
    assert lines[4] == "step: step-03"
    text = outcome.divergence.to_text()
    assert "Item root['arguments']['fresh'] (True) removed from dictionary." in text
    chain = outcome.divergence.causal_chain
    assert chain[0].kind == "input.received" and chain[-1].seq == target
    assert [ref.kind for ref in chain[-3:]] == ["model.request", "model.response", "tool.call"]
    assert outcome.to_json()["divergence"]["payload_diff"]["dictionary_item_removed"] == {
        "root['arguments']['fresh']": True
    }


def test_replay_with_a_different_agent_entry_point_is_compared_on_behaviour(recorded):
    outcome = replay(recorded, agent=FUNCTION_AGENT)
    assert outcome.status == MATCH


def test_recorded_tool_errors_are_raised_again_as_the_recorded_type(recorded):
    """The probe's second lookup raised KeyError and the agent catches exactly KeyError: if replay
    raised anything else, the agent would fail and run.ended would diverge."""
    errors = [
        e["payload"]["error"] for e in lines_of(recorded) if e["kind"] == "tool.result" and e["payload"].get("error")
    ]
    assert [error["type"] for error in errors] == ["KeyError"]
    outcome = replay(recorded)
    assert outcome.status == MATCH


def test_an_agent_that_exits_mid_run_is_reported_with_its_traceback(recorded):
    outcome = replay(recorded, agent="tests.replay.agents.misbehaving:exits")
    assert outcome.exit_code == 1 and outcome.error["kind"] == "agent_crash"
    assert "sys.exit(3)" in outcome.error["message"]
    assert any("misbehaving.py" in line for line in outcome.error["traceback"])


def test_an_agent_exception_mid_run_is_a_divergence_that_shows_the_error(recorded):
    outcome = replay(recorded, agent="tests.replay.agents.misbehaving:raises")
    report = outcome.divergence
    assert outcome.status == DIVERGED and report.actual.kind == "run.ended" and report.actual.key == "error"
    assert report.actual_payload["error"]["type"] == "RuntimeError"
    assert "the agent broke" in report.to_text()
    assert any("misbehaving.py" in line for line in report.agent_traceback)
    assert "the agent raised (last traceback lines):" in outcome.to_text()

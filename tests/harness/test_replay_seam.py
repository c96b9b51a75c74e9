"""The seam the replay engine plugs into: sinks and observation sources.

These drive the harness with sources built from the committed fixture journals,
so they also prove the fixtures still replay against the current agent code.
"""

from __future__ import annotations

import dataclasses
import json
import time

import pytest

from fixtures.agents import crm_backend, inventory_backend
from replay_tui.harness import JsonlSink, ObservationMissing, PluginSet, StopRun, load_config, run_agent
from replay_tui.harness.replay_support import RecordedObservations, harness_for_recording, sources_for
from replay_tui.journal import Journal
from replay_tui.journal.model import CLOCK_READ, MODEL_RESPONSE, OBSERVATION_KINDS, RANDOM_DRAW, TOOL_RESULT
from replay_tui.replay.child.tape import Divergence, StrictSink, StrictSource, Tape

from .helpers import CONFIGS, ROOT, events_of, logical

JOURNALS = ROOT / "fixtures" / "journals"


def _inputs(events):
    return [event.payload for event in events if event.kind == "input.received"]


def _replay(tmp_path, recorded, *, kinds, entry_point=None, **live):
    """The harness with recorded observations of ``kinds`` served by key (as an experiment serves them)."""
    source = RecordedObservations(recorded)
    out = tmp_path / "replay.jsonl"
    harness = harness_for_recording(
        recorded[0],
        sink=JsonlSink(out, run_id=recorded[0].run_id),
        observation_sources=sources_for(source, kinds),
        **live,
    )
    outcome = run_agent(entry_point or recorded[0].payload["agent"], harness, _inputs(recorded))
    return outcome, events_of(out), source


def _strict(tmp_path, name, *, entry_point=None, sink_class=StrictSink):
    """The harness on the strict replay's tape and scheduler (``replay_tui.replay``), its events copied to a file."""
    journal = Journal(JOURNALS / f"{name}.jsonl")
    journal.index()
    tape = Tape(journal)
    out = tmp_path / "replay.jsonl"
    sink = sink_class(tape, tee=JsonlSink(out, run_id=journal.event(0).run_id))
    source = StrictSource(tape)
    recorded = events_of(JOURNALS / f"{name}.jsonl")
    harness = harness_for_recording(
        recorded[0], sink=sink, observation_sources=sources_for(source, OBSERVATION_KINDS), turns=sink.turns
    )
    outcome = run_agent(entry_point or recorded[0].payload["agent"], harness, _inputs(recorded))
    sink.close()
    return outcome, events_of(out), tape


@pytest.mark.parametrize("name", ["crm-incident", "crm", "inventory"])
def test_strict_replay_reproduces_every_event_without_calling_out(tmp_path, name):
    recorded = events_of(JOURNALS / f"{name}.jsonl")
    # no model and no tools are given: any live call would fail the run
    outcome, replayed, tape = _strict(tmp_path, name)
    assert [logical(event) for event in replayed] == [logical(event) for event in recorded]
    assert outcome.output == recorded[-1].payload["output"]
    assert tape.unused() is None and tape.stopped is None


@pytest.mark.parametrize("name", ["crm", "inventory"])
def test_served_by_key_the_fixtures_make_the_same_decisions(tmp_path, name):
    """Without the tape's order (an experiment's source, every kind served by key) the agent still makes the
    same calls and gives the same answer; only the order of concurrent results may differ."""
    recorded = events_of(JOURNALS / f"{name}.jsonl")
    outcome, replayed, source = _replay(tmp_path, recorded, kinds=OBSERVATION_KINDS)
    assert sorted(map(logical, replayed), key=str) == sorted(map(logical, recorded), key=str) or name == "inventory"

    def decisions(events):
        return [
            e.payload.get("call_key") or e.payload.get("request_hash")
            for e in events
            if e.kind in ("tool.call", "model.request")
        ]

    assert decisions(replayed) == decisions(recorded)
    assert outcome.output == recorded[-1].payload["output"]
    assert source.remaining() == 0


def test_recorded_errors_and_timeouts_are_raised_again_in_replay(tmp_path):
    recorded = events_of(JOURNALS / "inventory.jsonl")
    errors = [e.payload["error"] for e in recorded if e.kind == TOOL_RESULT and e.payload.get("error")]
    assert {(error["type"], error["timeout"]) for error in errors} == {("KeyError", False), ("TimeoutError", True)}
    _, replayed, _ = _replay(tmp_path, recorded, kinds=OBSERVATION_KINDS)
    # the agent saw the same exceptions: its failure summary in state and its answer are unchanged
    first_answer = next(
        e
        for e in replayed
        if e.kind == MODEL_RESPONSE and "Could not check" in (e.payload["response"]["content"] or "")
    )
    assert (
        "Q-404" in first_answer.payload["response"]["content"]
        and "C-102" in first_answer.payload["response"]["content"]
    )


def test_fixed_code_against_the_incident_stops_at_step_23(tmp_path):
    recorded = events_of(JOURNALS / "crm-incident.jsonl")
    with pytest.raises(ObservationMissing) as stopped:
        _replay(tmp_path, recorded, kinds=OBSERVATION_KINDS, entry_point="fixtures.agents.crm:agent")
    assert stopped.value.kind == TOOL_RESULT
    replayed = events_of(tmp_path / "replay.jsonl")
    last = replayed[-1]
    assert (last.kind, last.step_id) == ("tool.call", "step-23")
    assert "include_inactive" not in last.payload["arguments"]
    assert [logical(e) for e in replayed[1:-1]] == [logical(e) for e in recorded[1 : len(replayed) - 1]]
    assert all(e.kind != "run.ended" for e in replayed)


def test_model_live_serves_tools_clock_random_and_asks_the_new_model(tmp_path):
    recorded = events_of(JOURNALS / "crm.jsonl")
    plugins = PluginSet(load_config(CONFIGS / "crm-new-model.toml")).build().start()
    try:
        model = plugins.plugins["model"]
        outcome, replayed, _ = _replay(tmp_path, recorded, kinds={TOOL_RESULT, CLOCK_READ, RANDOM_DRAW}, model=model)
    finally:
        plugins.stop()
    calls = lambda events: [e.payload["call_key"] for e in events if e.kind == "tool.call"]  # noqa: E731
    assert calls(replayed) == calls(recorded)  # same decisions about tools...
    assert outcome.output == "East region, October 2026: 388 active customers (deduplicated by customer id)."
    streamed = [e for e in replayed if e.kind == MODEL_RESPONSE]
    assert all(e.payload["stream"]["chunks"] >= 1 for e in streamed)  # the new model streams


def test_tools_live_serves_model_answers_and_calls_the_tools(tmp_path):
    recorded = events_of(JOURNALS / "crm.jsonl")
    tools = {spec.name: spec for spec in crm_backend.tools({})}
    _, replayed, source = _replay(tmp_path, recorded, kinds={MODEL_RESPONSE, CLOCK_READ, RANDOM_DRAW}, tools=tools)
    assert [logical(e) for e in replayed] == [logical(e) for e in recorded]
    assert source.remaining() == sum(1 for e in recorded if e.kind == TOOL_RESULT)  # tool results were not used


def test_step_agent_resumes_from_a_snapshot(tmp_path):
    recorded = events_of(JOURNALS / "crm-incident.jsonl")
    snapshot = [e for e in recorded if e.kind == "state.snapshot"][1]
    assert snapshot.payload["resume"]["cursor"]["observation_seq"] is not None
    after = recorded[snapshot.seq :]
    out = tmp_path / "resumed.jsonl"
    harness = harness_for_recording(
        recorded[0],
        sink=JsonlSink(out, run_id=snapshot.run_id, start_after=(snapshot.seq, snapshot.event_hash)),
        observation_sources=sources_for(RecordedObservations(after), OBSERVATION_KINDS),
    )
    outcome = run_agent(recorded[0].payload["agent"], harness, [], resume_from=snapshot)
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert lines[0]["seq"] == snapshot.seq + 1 and lines[0]["prev_event_hash"] == snapshot.event_hash
    resumed = [(e["seq"], e["kind"], e["step_id"], e["parent_event_id"], e["payload"]) for e in lines]
    expected = [(e.seq, e.kind, e.step_id, e.parent_event_id, e.raw["payload"]) for e in after]
    strip = lambda rows: [(*row[:4], {a: b for a, b in row[4].items() if a != "duration_ms"}) for row in rows]  # noqa: E731
    assert strip(resumed) == strip(expected)
    assert outcome.output == recorded[-1].payload["output"]


# (an edit of the snapshot's payload, the field the journal error names)
HOSTILE_RESUMES = [
    (lambda payload: payload.update(state_hash="sha256:" + "0" * 64), "payload.state_hash"),
    (lambda payload: payload.update(resume="2 steps"), "payload.resume"),
    (lambda payload: payload["resume"].update(steps_done=-1), "payload.resume.steps_done"),
    (lambda payload: payload["resume"].update(cursor=[9]), "payload.resume.cursor"),
    (lambda payload: payload["resume"]["cursor"].update(observation_seq="9"), "payload.resume.cursor.observation_seq"),
]


@pytest.mark.parametrize(("edit", "field"), HOSTILE_RESUMES)
def test_a_snapshot_the_harness_cannot_resume_from_is_a_journal_error_naming_its_seq(tmp_path, edit, field):
    """What ``Harness.resume`` reads of a snapshot comes from a hostile journal: before, a state hash that did not
    match was a HarnessError and a steps_done of "2" an int() ValueError, each reported as an internal error."""
    from replay_tui.harness import UnusableJournal
    from replay_tui.journal import validate_event

    recorded = events_of(JOURNALS / "crm-incident.jsonl")
    original = [e for e in recorded if e.kind == "state.snapshot"][1]
    raw = json.loads(json.dumps(original.raw))
    edit(raw["payload"])
    snapshot = validate_event(raw)
    harness = harness_for_recording(
        recorded[0],
        sink=JsonlSink(
            tmp_path / "resumed.jsonl", run_id=snapshot.run_id, start_after=(snapshot.seq, "sha256:" + "1" * 64)
        ),
        observation_sources=sources_for(RecordedObservations(recorded[snapshot.seq :]), OBSERVATION_KINDS),
    )
    with pytest.raises(UnusableJournal) as raised:
        harness.resume(snapshot)
    assert str(raised.value).startswith(f"seq {snapshot.seq}: field {field}: expected "), raised.value


def test_inventory_lookups_run_at_the_same_time_and_their_results_name_their_calls():
    recorded = events_of(JOURNALS / "inventory.jsonl")
    calls = {e.event_id: e for e in recorded if e.kind == "tool.call" and e.payload["tool"] == "inventory.lookup"}
    results = [e for e in recorded if e.kind == TOOL_RESULT and e.payload["tool"] == "inventory.lookup"]
    assert {e.parent_event_id for e in results} == set(calls)  # each result answers its own call
    first_four = list(calls.values())[:4]
    # the calls were written before any of their results: they were in flight together
    assert max(e.seq for e in first_four) < min(e.seq for e in results[:4])
    assert inventory_backend.TIMEOUT_S == 0.2


def test_a_missing_observation_in_parallel_calls_stops_the_run_without_hanging(tmp_path):
    """A tape whose recorded result of a concurrent lookup is not there: the replay stops at its seq (it does
    not wait for it), and nothing is written after."""
    recorded = events_of(JOURNALS / "inventory.jsonl")
    results = [e for e in recorded if e.kind == TOOL_RESULT and e.payload["tool"] == "inventory.lookup"]
    dropped = results[1]

    class DroppingTape(Tape):
        def event_at(self, position):
            event = super().event_at(position)
            if event.seq == dropped.seq:  # as if another event were recorded there
                return dataclasses.replace(event, kind="clock.read", payload={"source": "x"})
            return event

    journal = Journal(JOURNALS / "inventory.jsonl")
    journal.index()
    tape = DroppingTape(journal)
    sink = StrictSink(tape)
    harness = harness_for_recording(
        recorded[0], sink=sink, observation_sources=sources_for(StrictSource(tape), OBSERVATION_KINDS), turns=sink.turns
    )
    started = time.monotonic()
    with pytest.raises(StopRun):
        run_agent(recorded[0].payload["agent"], harness, _inputs(recorded))
    assert time.monotonic() - started < 4  # stopped, not stalled
    assert isinstance(tape.stopped, Divergence)
    assert tape.stopped.seq <= dropped.seq


def test_a_sink_that_stops_the_run_mid_parallel_writes_nothing_after(tmp_path):
    recorded = events_of(JOURNALS / "inventory.jsonl")
    first_result = next(e for e in recorded if e.kind == TOOL_RESULT and e.payload["tool"] == "inventory.lookup")

    class StoppingSink(StrictSink):
        def emit(self, kind, payload, *, step_id, parent_event_id, position=None):
            if kind == TOOL_RESULT and payload.get("call_id") == first_result.payload["call_id"]:
                raise StopRun("divergence found by the sink")
            return super().emit(kind, payload, step_id=step_id, parent_event_id=parent_event_id, position=position)

    with pytest.raises(StopRun, match="divergence found by the sink"):
        _strict(tmp_path, "inventory", sink_class=StoppingSink)
    assert events_of(tmp_path / "replay.jsonl")[-1].seq == first_result.seq - 1

"""The three framework agents: committed journals replay strictly in the sandbox with the network
off, a fresh recording replays on another day in another time zone, a one-line change to an
agent diverges at the right step naming the field, and model-live reaches the loopback model."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from fixtures.agents.loopback_llm import LoopbackLLM
from replay_tui.journal import verify_journal
from tests.replay.helpers import rechained_copy

from .conftest import AGENTS, JOURNALS, REPO, events, record, replay_cli

LATER_CLOCK = Path(__file__).resolve().parent / "later_clock"


@pytest.mark.parametrize("name", sorted(AGENTS))
def test_committed_journal_names_its_agent_and_replays_with_the_network_off(name: str) -> None:
    journal = JOURNALS / f"{name}.jsonl"
    assert verify_journal(journal).ok
    recorded = events(journal)
    assert recorded[0].payload["agent"] == AGENTS[name]
    assert recorded[-1].kind == "run.ended" and recorded[-1].payload["status"] == "ok"
    code, outcome = replay_cli(journal)
    assert (code, outcome["status"]) == (0, "match"), outcome.get("divergence") or outcome.get("error")
    assert outcome["consumed"] == outcome["total"] == len(recorded)
    assert outcome["isolation"]["network_namespace"] and outcome["isolation"]["allowed_hosts"] == []
    assert outcome["refusals"] == []


def test_the_later_clock_really_moves_the_clock() -> None:
    """The fake clock the next test uses: a process started with it reads a date three years on."""
    script = "import datetime, time; print(datetime.date.today().year - time.localtime(0).tm_year)"
    plain = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    later = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": str(LATER_CLOCK), "PATH": "/usr/bin:/bin"},
    )
    assert int(later.stdout) == int(plain.stdout) + 3


@pytest.mark.parametrize("name", sorted(AGENTS))
def test_a_fresh_recording_replays_on_another_day_in_another_time_zone(
    name: str, tmp_path: Path, llm: LoopbackLLM
) -> None:
    journal = tmp_path / f"{name}.jsonl"
    outcome = record(name, llm, journal)
    assert outcome.status == "ok", outcome.error
    heard = len(llm.requests)
    assert heard >= 3  # the question, two tool calls, a final answer
    code, replayed = replay_cli(journal, env={"TZ": "Pacific/Kiritimati", "PYTHONPATH": str(LATER_CLOCK)})
    assert (code, replayed["status"]) == (0, "match"), replayed.get("divergence") or replayed.get("error")
    assert len(llm.requests) == heard  # nothing reached the model


# (journal, variant entry point, the step it diverges at, a field the diff names)
ONE_LINE_CHANGES = [
    ("agents-sdk", "agents_sdk_extra_argument", "turn-02:CRM analyst", "include_inactive"),
    ("langgraph", "langgraph_extra_argument", "step-01:agent", "['properties']['since']"),
    ("pydantic-ai", "pydantic_ai_other_prompt", "turn-01:crm_agent", "['messages'][0]['content']"),
]


@pytest.mark.parametrize(("name", "variant", "step", "field"), ONE_LINE_CHANGES)
def test_a_one_line_change_diverges_at_the_right_step_naming_the_field(
    name: str, variant: str, step: str, field: str
) -> None:
    journal = JOURNALS / f"{name}.jsonl"
    code, outcome = replay_cli(journal, "--agent", f"tests.frameworks.variants:{variant}")
    assert code == 1 and outcome["status"] == "diverged"
    divergence = outcome["divergence"]
    first_request = next(e for e in events(journal) if e.kind == "model.request" and e.step_id == step)
    assert divergence["seq"] == first_request.seq and divergence["step"] == step
    assert divergence["expected"]["kind"] == "model.request" and "request_hash differs" in divergence["reason"]
    assert any(field in line for line in divergence["diff_lines"]), divergence["diff_lines"]


@pytest.mark.parametrize("name", sorted(AGENTS))
def test_model_live_against_the_loopback_server(name: str, tmp_path: Path, llm: LoopbackLLM) -> None:
    journal = tmp_path / f"{name}.jsonl"
    assert record(name, llm, journal).status == "ok"
    config = tmp_path / "loopback-model.toml"
    config.write_text(
        '[[plugins]]\nid = "model"\ntype = "openai-compatible"\n'
        f'options = {{ base_url = "{llm.url}", model = "crm-local" }}\n'
    )
    heard = len(llm.requests)
    out = tmp_path / "model-live.jsonl"
    code, outcome = replay_cli(journal, "--mode", "model-live", "--model-config", str(config), "--out", str(out))
    assert outcome["experiment"]["mode"] == "model-live", outcome.get("error")
    assert f"127.0.0.1:{llm.port}" in outcome["isolation"]["allowed_hosts"]
    assert len(llm.requests) - heard == heard  # every model call went live, to the loopback model
    # the loopback model answers the same request with the same bytes: the same trajectory
    assert (code, outcome["status"]) == (0, "match"), outcome["experiment"]
    assert outcome["experiment"]["stopped"] is None
    assert verify_journal(out).ok
    assert [(e.kind, e.step_id) for e in events(out)] == [(e.kind, e.step_id) for e in events(journal)]


def test_from_seq_resumes_langgraph_at_a_recorded_snapshot() -> None:
    journal = JOURNALS / "langgraph.jsonl"
    snapshots = [e for e in events(journal) if e.kind == "state.snapshot"]
    middle = snapshots[len(snapshots) // 2]
    code, outcome = replay_cli(journal, "--from-seq", str(middle.seq + 2))
    assert (code, outcome["status"]) == (0, "match"), outcome.get("divergence") or outcome.get("error")
    assert outcome["resumed_from_snapshot"] == middle.seq
    assert outcome["first_seq"] == middle.seq + 1


def test_the_repo_fixtures_record_command_starts_and_stops_its_own_model(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "fixtures.record", "--only", *sorted(AGENTS), "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO,
    )
    assert done.returncode == 0, done.stderr
    for name in AGENTS:
        fresh = events(tmp_path / f"{name}.jsonl")
        committed = events(JOURNALS / f"{name}.jsonl")
        # same trajectory as the committed journal (the loopback port, times and hashes aside)
        assert [(e.kind, e.step_id) for e in fresh] == [(e.kind, e.step_id) for e in committed]


# (journal, the kind of the event edited, its payload path, the hostile value, what the error names)
HOSTILE_SHAPES = [
    ("agents-sdk", "model.response", ("response", "http", "status"), "200", "payload.response.http.status"),
    ("pydantic-ai", "model.response", ("response", "http", "headers"), [1, 2], "payload.response.http.headers"),
    ("langgraph", "model.response", ("response", "http"), {"status": 200, "body_base64": "!!"}, "body_base64"),
    ("langgraph", "tool.result", ("result",), 5, "payload.result"),
    ("langgraph", "tool.result", ("result",), {"content": {"a": 1}}, "payload.result"),
]


@pytest.mark.parametrize(("name", "kind", "path", "value", "field"), HOSTILE_SHAPES)
def test_a_recorded_answer_of_another_shape_is_a_journal_error_naming_its_seq(
    name: str, kind: str, path: tuple[str, ...], value: object, field: str, tmp_path: Path
) -> None:
    """A journal is hostile: a validly chained one whose recorded answer or tool result is not the shape its
    recorder writes ends the replay as a bad journal does (exit 2), naming the file, the seq and the field. Not
    a divergence explained by an error from deep inside the SDK (an int() of the status, a dict's .items() on a
    list, LangChain's validation), nor one the SDK hides: the openai client turns its transport's exceptions
    into a "Connection error.", and PydanticAI then went on to a state that diverged for another reason."""
    edited: list[int] = []

    def edit(recorded: list[dict[str, Any]]) -> list[dict[str, Any]]:
        target = next(event for event in recorded if event["kind"] == kind)
        holder = target["payload"]
        for key in path[:-1]:
            holder = holder[key]
        holder[path[-1]] = value
        edited.append(target["seq"])
        return recorded

    journal = rechained_copy(JOURNALS / f"{name}.jsonl", tmp_path / "hostile.jsonl", edit)
    assert verify_journal(journal).ok
    code, outcome = replay_cli(journal)
    assert (code, outcome["status"], outcome["error"]["kind"]) == (2, "error", "journal"), outcome
    message = outcome["error"]["message"]
    assert message.startswith(f"{journal}, seq {edited[0]}: field "), message
    assert field in message and "expected" in message


def _resume_edit(path: tuple[str, ...], value: object) -> Any:
    """An edit of the LangGraph journal's second snapshot (``path`` under its payload), its state hash made to
    match again: a hostile journal can be consistent."""
    from replay_tui.journal.hashing import state_hash

    def edit(recorded: list[dict[str, Any]]) -> list[dict[str, Any]]:
        snapshot = [event for event in recorded if event["kind"] == "state.snapshot"][1]
        holder = snapshot["payload"]
        for key in path[:-1]:
            holder = holder[key]
        holder[path[-1]] = value
        snapshot["payload"]["state_hash"] = state_hash(snapshot["payload"]["state"])
        return recorded

    return edit


# (the path under the snapshot's payload, the hostile value, the field the journal error names)
HOSTILE_SNAPSHOTS = [
    (("state", "graph"), 5, "payload.state.graph"),
    (("state", "node"), ["agent"], "payload.state.node"),
    (("state", "graph", "messages", 0, "data"), {"content": {"a": 1}}, "payload.state.graph.messages"),
    (("resume", "steps_done"), "2", "payload.resume.steps_done"),
    (("resume",), 5, "payload.resume"),  # (before: "argument of type 'int' is not iterable", an internal error)
    (("resume", "cursor", "response_call_ids"), [{"id": 1}], "payload.resume.cursor.response_call_ids"),
]


@pytest.mark.parametrize(("path", "value", "field"), HOSTILE_SNAPSHOTS)
def test_resuming_from_a_snapshot_of_another_shape_is_a_journal_error_naming_its_seq(
    path: tuple[str, ...], value: object, field: str, tmp_path: Path
) -> None:
    """--from-seq hands the snapshot's state to the recorder (and its resume block to the harness): what they
    cannot use is a journal error at the snapshot's seq. Before, ``int("2")`` of steps_done and an unhashable call
    id were internal errors with a traceback, and a bad state an error from inside LangChain."""
    journal = rechained_copy(JOURNALS / "langgraph.jsonl", tmp_path / "hostile.jsonl", _resume_edit(path, value))
    snapshot = [event for event in events(journal) if event.kind == "state.snapshot"][1]
    code, outcome = replay_cli(journal, "--from-seq", str(snapshot.seq + 2))
    assert (code, outcome["status"], outcome["error"]["kind"]) == (2, "error", "journal"), outcome
    assert outcome["error"]["message"].startswith(f"{journal}, seq {snapshot.seq}: field {field}: expected ")


def test_resuming_after_a_node_the_graph_no_longer_has_says_which(tmp_path: Path) -> None:
    """A node name the graph does not have may be a renamed node in the agent's code: the agent's error (a
    divergence), naming the snapshot, the node and the graph's nodes, not LangGraph's own."""
    edit = _resume_edit(("state", "node"), "planner")
    journal = rechained_copy(JOURNALS / "langgraph.jsonl", tmp_path / "renamed.jsonl", edit)
    snapshot = [event for event in events(journal) if event.kind == "state.snapshot"][1]
    code, outcome = replay_cli(journal, "--from-seq", str(snapshot.seq + 2))
    assert (code, outcome["status"]) == (1, "diverged"), outcome
    raised = outcome["divergence"]["agent_traceback"][-1]
    assert f"the snapshot at seq {snapshot.seq} was taken after the node 'planner'" in raised
    assert "(its nodes: 'agent', 'tools')" in raised

"""The Harness's public recording API, which the httpx transport and the framework recorders use
(and nothing outside harness.py touches Harness._*)."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import pytest

from replay_tui.harness import Harness, HarnessError, JsonlSink, RecordedToolError
from replay_tui.harness.state import apply_patch
from replay_tui.journal.hashing import state_hash

from .conftest import REPO, events


class Served:
    """An ObservationSource serving fixed payloads by kind (a stand-in for the replay engine)."""

    def __init__(self, payloads: dict[str, dict[str, Any]]) -> None:
        self.payloads, self.asked = payloads, []

    def observe(self, kind: str, key: str, request: dict) -> dict:
        self.asked.append((kind, key))
        return {**self.payloads[kind], **({"call_key": key} if kind == "tool.result" else {"request_hash": key})}


def harness(tmp_path: Path, **options: Any) -> Harness:
    h = Harness(sink=JsonlSink(tmp_path / "run.jsonl", run_id="api"), run_id="api", **options)
    h.start_run("tests:agent")
    h.receive_input("question")
    return h


def test_record_tool_call_copies_the_arguments_when_called(tmp_path: Path) -> None:
    h = harness(tmp_path)
    arguments = {"customer_id": "C-042", "filters": ["open"]}

    def live(copy: Any) -> Any:
        copy["filters"].append("changed by the tool")  # the tool's copy, not the record's
        arguments["filters"].append("changed by the caller")
        return {"count": 3}

    assert h.record_tool_call("open_tickets", arguments, live, call_id="call_9") == {"count": 3}
    h.end_run("ok")
    call, result = [e for e in events(tmp_path / "run.jsonl") if e.kind.startswith("tool.")]
    assert call.payload["arguments"] == {"customer_id": "C-042", "filters": ["open"]}
    assert call.payload["call_id"] == "call_9" and result.payload["result"] == {"count": 3}


def test_record_tool_call_errors_are_recorded_and_raised(tmp_path: Path) -> None:
    h = harness(tmp_path)

    def live(copy: Any) -> Any:
        raise LookupError("no such customer")

    with pytest.raises(LookupError, match="no such customer"):
        h.record_tool_call("find_customer", {"name": "Nobody"}, live)
    h.end_run("ok")
    result = next(e for e in events(tmp_path / "run.jsonl") if e.kind == "tool.result")
    assert result.payload["error"]["type"] == "LookupError"


def test_in_replay_the_recorded_result_is_served_and_the_tool_is_not_run(tmp_path: Path) -> None:
    served = Served(
        {
            "tool.result": {
                "call_id": "call_1",
                "tool": "find_customer",
                "error": {"type": "crm.RateLimited", "message": "slow down", "code": 429},
            }
        }
    )
    h = harness(tmp_path, observation_sources={"tool.result": served})

    async def never(copy: Any) -> Any:
        raise AssertionError("a replay ran the tool")

    with pytest.raises(RecordedToolError, match="slow down"):
        asyncio.run(h.arecord_tool_call("find_customer", {"name": "Acme"}, never, call_id="call_1"))
    assert [kind for kind, _ in served.asked] == ["tool.result"]


def test_model_exchange_records_live_and_serves_recorded(tmp_path: Path) -> None:
    h = harness(tmp_path)
    request = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "headers": {"authorization": "Bearer x"}}
    response = {
        "content": "hello",
        "tool_calls": [{"id": "c1", "name": "t", "arguments": {}}],
        "finish_reason": "tool_calls",
        "usage": {},
    }
    event = h.record_model_exchange(request, lambda request_hash: {"request_hash": request_hash, "response": response})
    assert event.kind == "model.response" and event.payload["response"]["content"] == "hello"
    # the tool call the response asked for hangs from it
    call = h.record_tool_call("t", {}, lambda copy: "ok", call_id="c1")
    assert call == "ok"
    h.end_run("ok")
    recorded = events(tmp_path / "run.jsonl")
    by_kind = {e.kind: e for e in recorded}
    assert by_kind["tool.call"].parent_event_id == by_kind["model.response"].event_id
    assert "Bearer" not in (tmp_path / "run.jsonl").read_text()  # redacted before it was hashed or written
    (tmp_path / "replay").mkdir()
    served = Served({"model.response": {"response": {**response, "content": "served"}}})
    replay = harness(tmp_path / "replay", observation_sources={"model.response": served})
    request_event, payload = replay.open_model_exchange(request)
    assert request_event.payload["request_hash"] == by_kind["model.request"].payload["request_hash"]
    assert payload is not None and payload["response"]["content"] == "served"
    assert replay.close_model_exchange(request_event, payload, recorded=True).payload["response"]["content"] == "served"


def test_record_state_writes_transitions_in_the_current_step(tmp_path: Path) -> None:
    h = harness(tmp_path)
    with h.step("node-1"):
        first = h.record_state({"agent": "Triage", "turn": 0})
        assert h.record_state({"agent": "Triage", "turn": 0}) is None  # no change, no event
        second = h.record_state({"agent": "CRM analyst", "turn": 1})
        snapshot = h.write_snapshot(diagnostics={"checkpoint_id": "1f0c-uuid6"}, at_step_end=True)
    h.end_run("ok")
    assert first is not None and second is not None
    assert second.step_id == "node-1" and second.parent_event_id == first.event_id
    state = None
    for transition in (first, second):
        assert state_hash(state) == transition.payload["before_hash"]
        state = apply_patch(state, transition.payload["patch"])
        assert state_hash(state) == transition.payload["after_hash"]
    assert snapshot.payload["state"] == state and snapshot.payload["state_hash"] == state_hash(state)
    assert snapshot.payload["diagnostics"] == {"checkpoint_id": "1f0c-uuid6"}
    assert snapshot.payload["resume"]["steps_done"] == 1


def test_record_state_sees_a_state_changed_in_between(tmp_path: Path) -> None:
    """The same framework state reported again is skipped only while the run state is still the one it gave:
    after the reducer moved the state, the same bytes are a transition back."""
    h = Harness(sink=JsonlSink(tmp_path / "run.jsonl", run_id="api"), run_id="api")

    def reduce(state: Any, event: Any) -> Any:
        return {"reduced": True} if event.kind == "tool.result" else state

    h.use_reducer(reduce, "tests-1", None)
    h.start_run("tests:agent")
    h.receive_input("question")
    framework = {"agent": "Triage", "turn": 0}
    assert h.record_state(framework) is not None
    assert h.record_state({"turn": 0, "agent": "Triage"}) is None  # the same state, its keys in another order
    assert h.record_state(framework) is None
    h.record_tool_call("lookup", {}, lambda copy: "found")
    assert h.state == {"reduced": True}
    back = h.record_state(framework)
    assert back is not None and back.payload["after_hash"] == state_hash(framework)
    assert h.state == framework
    h.end_run("ok")


def test_record_state_refuses_a_state_that_is_not_json(tmp_path: Path) -> None:
    h = harness(tmp_path)
    with pytest.raises(HarnessError, match="framework state is not JSON"):
        h.record_state({"client": object()})


def test_nothing_outside_harness_py_touches_private_harness_members() -> None:
    pattern = re.compile(r"\b(?:h|harness|self\.h|self\.harness|self\._harness|recording\.harness)\._[a-z]\w*")
    offenders = []
    for path in sorted((REPO / "replay_tui").rglob("*.py")):
        if path.name == "harness.py" and path.parent.name == "harness":
            continue
        text = path.read_text("utf-8")
        offenders += [f"{path.relative_to(REPO)}: {match}" for match in pattern.findall(text)]
    assert offenders == []


def test_an_unusable_record_stops_the_run_for_good(tmp_path: Path) -> None:
    """A recorder that cannot hand over a recorded payload ends the run with ``unusable_record``: a StopRun, so
    an SDK's ``except Exception`` cannot turn it into its own error, and every later event raises it again, so
    agent code that catches even a BaseException cannot run on past it to a verdict."""
    from replay_tui.harness import StopRun, UnusableJournal
    from replay_tui.journal.errors import SchemaError

    h = harness(tmp_path)
    stop = h.unusable_record(SchemaError("payload.result", "an object", 5, seq=9))
    assert isinstance(stop, UnusableJournal) and isinstance(stop, StopRun) and not isinstance(stop, Exception)
    assert str(stop) == "seq 9: field payload.result: expected an object, found integer 5"
    assert h.unusable_record(SchemaError("payload.other", "x", 1, seq=12)) is stop  # the first one is the reason
    with pytest.raises(UnusableJournal) as again:
        h.record_tool_call("lookup", {"id": 1}, lambda arguments: "live")
    assert again.value is stop
    with pytest.raises(UnusableJournal):
        h.record_state({"turn": 2})

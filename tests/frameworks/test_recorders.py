"""What each framework recorder writes: tools with their callers as parents, steps for turns and
nodes, the framework's state as state.transition, snapshots at checkpoints, validation failures,
trace upload off, and the version check."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path

import pytest

from fixtures.agents.loopback_llm import LoopbackLLM
from replay_tui.harness.frameworks import versions
from replay_tui.harness.state import apply_patch
from replay_tui.journal.hashing import state_hash

from .conftest import JOURNALS, events, record


def _by_id(journal_events: list) -> dict:
    return {e.event_id: e for e in journal_events}


def _tool_calls(journal_events: list) -> list:
    return [e for e in journal_events if e.kind == "tool.call"]


def _replayed_states(journal_events: list) -> list:
    """Every state the transitions describe, checked against their after hashes."""
    state, states = journal_events[0].payload["initial_state"], []
    for event in journal_events:
        if event.kind == "state.transition":
            assert state_hash(state) == event.payload["before_hash"]
            state = apply_patch(state, event.payload["patch"])
            assert state_hash(state) == event.payload["after_hash"]
            states.append((event, state))
    return states


@pytest.mark.parametrize("name", ["agents-sdk", "langgraph", "pydantic-ai"])
def test_tools_are_called_by_the_model_response_that_asked_for_them(name: str) -> None:
    recorded = events(JOURNALS / f"{name}.jsonl")
    by_id = _by_id(recorded)
    calls = [e for e in _tool_calls(recorded) if e.payload["tool"] in ("find_customer", "open_tickets")]
    assert [e.payload["tool"] for e in calls] == ["find_customer", "open_tickets"]
    assert calls[0].payload["arguments"] == {"name": "Acme"}
    assert calls[1].payload["arguments"] == {"customer_id": "C-042"}
    for call in calls:
        asked_by = by_id[call.parent_event_id]
        assert asked_by.kind == "model.response"
        assert call.payload["call_id"] in [c["id"] for c in asked_by.payload["response"]["tool_calls"]]
        result = next(e for e in recorded if e.kind == "tool.result" and e.parent_event_id == call.event_id)
        assert "error" not in result.payload
    _replayed_states(recorded)


def test_agents_sdk_turns_handoff_and_run_context() -> None:
    recorded = events(JOURNALS / "agents-sdk.jsonl")
    steps = [e.step_id for e in recorded if e.kind == "model.request"]
    assert steps == ["turn-01:Triage", "turn-02:CRM analyst", "turn-03:CRM analyst", "turn-04:CRM analyst"]
    handoff = next(e for e in _tool_calls(recorded) if e.payload["tool"] == "transfer_to_crm_analyst")
    assert _by_id(recorded)[handoff.parent_event_id].kind == "model.response"
    handoff_result = next(e for e in recorded if e.kind == "tool.result" and e.parent_event_id == handoff.event_id)
    first_analyst_request = next(e for e in recorded if e.kind == "model.request" and "CRM analyst" in e.step_id)
    assert first_analyst_request.parent_event_id == handoff_result.event_id  # the handoff caused the new turn
    final = _replayed_states(recorded)[-1][1]["runs"]["run-01"]  # the run's part of the run state
    assert final["agent"] == "CRM analyst" and final["turn"] == 4
    assert final["handoffs"] == [{"from": "Triage", "to": "CRM analyst", "turn": "1"}]
    assert final["context"] == {"team": "ops", "region": "EU"}
    assert final["usage"]["requests"] == 4
    # the SDK session's items: the conversation it keeps, as the session held it
    items = final["session"]["items"]
    assert items[0] == {"role": "user", "content": "How many open tickets does Acme have, and which one is the oldest?"}
    assert [item["name"] for item in items if item.get("type") == "function_call"] == [
        "transfer_to_crm_analyst",
        "find_customer",
        "open_tickets",
    ]


def test_agents_sdk_session_is_read_again_only_after_it_changed() -> None:
    """The run state's session items come from one read per change (add, pop, clear), not one per hook;
    a session class the watch does not know is read every time; the session is put back as it was."""
    import asyncio

    from agents import SQLiteSession

    from replay_tui.harness.frameworks.agents_sdk import SessionWatch

    class OwnSession(SQLiteSession):  # a subclass may change its items some other way
        pass

    async def reads_for(session: SQLiteSession) -> list[int]:
        reads = []
        real = session.get_items

        async def counted(*args: object, **kwargs: object) -> object:
            reads.append(1)
            return await real(*args, **kwargs)  # type: ignore[arg-type]

        session.get_items = counted  # type: ignore[method-assign]
        watch = SessionWatch(session)
        counts = []
        for step in range(3):
            view = await watch.view()
            counts.append(len(reads))
            assert len(view["items"]) == step
            await watch.view()
            await session.add_items([{"role": "user", "content": f"turn {step}"}])
        popped = await session.pop_item()
        assert popped == {"role": "user", "content": "turn 2"}
        assert [item["content"] for item in (await watch.view())["items"]] == ["turn 0", "turn 1"]
        watch.close()
        assert not {"add_items", "pop_item", "clear_session"} & set(vars(session))
        return counts

    assert asyncio.run(reads_for(SQLiteSession("watched"))) == [1, 2, 3]
    assert asyncio.run(reads_for(OwnSession("own"))) == [1, 3, 5]


def test_agents_sdk_session_read_overlapping_a_change_is_not_kept() -> None:
    import asyncio

    from agents import SQLiteSession

    from replay_tui.harness.frameworks.agents_sdk import SessionWatch

    async def scenario() -> tuple[list, list]:
        session = SQLiteSession("overlap")
        real, have_read, go_on = session.get_items, asyncio.Event(), asyncio.Event()

        async def slow_read(*args: object, **kwargs: object) -> object:
            items = await real(*args, **kwargs)  # type: ignore[arg-type]
            have_read.set()
            await go_on.wait()
            return items

        session.get_items = slow_read  # type: ignore[method-assign]
        watch = SessionWatch(session)
        reading = asyncio.ensure_future(watch.view())
        await have_read.wait()  # the read has its (empty) items and is not back yet
        await session.add_items([{"role": "user", "content": "meanwhile"}])
        go_on.set()
        return (await reading)["items"], (await watch.view())["items"]

    during, after = asyncio.run(scenario())
    assert during == [] and after == [{"role": "user", "content": "meanwhile"}]


def test_agents_sdk_trace_upload_is_off(tmp_path: Path, llm: LoopbackLLM) -> None:
    from agents.tracing import get_trace_provider

    assert record("agents-sdk", llm, tmp_path / "run.jsonl").status == "ok"
    assert get_trace_provider()._disabled  # noqa: SLF001 (the SDK has no public getter)
    urls = {
        e.payload["request"]["params"]["http"]["url"]
        for e in events(tmp_path / "run.jsonl")
        if e.kind == "model.request"
    }
    assert urls == {f"{llm.url}/chat/completions"}


def test_langgraph_nodes_are_steps_and_checkpoints_are_snapshots() -> None:
    recorded = events(JOURNALS / "langgraph.jsonl")
    snapshots = [e for e in recorded if e.kind == "state.snapshot"]
    node_steps = sorted({e.step_id for e in recorded if e.step_id})
    assert node_steps == ["step-01:agent", "step-02:tools", "step-03:agent", "step-04:tools", "step-05:agent"]
    assert [s.step_id for s in snapshots] == node_steps  # one checkpoint per node execution
    states = dict((event.seq, state) for event, state in _replayed_states(recorded))
    for snapshot in snapshots:
        assert snapshot.payload["diagnostics"]["checkpoint_id"]  # the SQLite saver's checkpoint
        transition = recorded[snapshot.seq - 2]
        assert transition.kind == "state.transition" and states[transition.seq] == snapshot.payload["state"]
        assert snapshot.payload["state_hash"] == transition.payload["after_hash"]
    final = snapshots[-1].payload["state"]
    assert final["next"] == [] and [m["type"] for m in final["graph"]["messages"]] == [
        "human",
        "ai",
        "tool",
        "ai",
        "tool",
        "ai",
    ]
    assert all("id" not in m["data"] for m in final["graph"]["messages"])


def test_langgraph_parallel_tool_calls_run_in_threads_as_unrecorded_and_replay(tmp_path: Path) -> None:
    """Six calls in one answer: ToolNode runs them in its threads, recorded as unrecorded; each event is written
    when it happens (every call before its result, each result naming its call), the chain is whole, and a
    replay matches, the threads getting their results in the recorded order."""
    from replay_tui.harness import record_run
    from replay_tui.journal import verify_journal

    from .conftest import CONFIG, replay_cli
    from .parallel_tools_graph import CALLS

    journal = tmp_path / "parallel.jsonl"
    outcome = record_run(
        CONFIG, "tests.frameworks.parallel_tools_graph:agent", [{"question": "stock?"}], journal=journal
    )
    assert outcome.status == "ok", outcome.error
    assert verify_journal(journal).ok
    recorded = events(journal)
    calls = {e.event_id: e.payload["call_id"] for e in recorded if e.kind == "tool.call"}
    results = [e for e in recorded if e.kind == "tool.result"]
    assert sorted(calls.values()) == sorted(f"call-{i}" for i in range(CALLS))
    assert all(calls[e.parent_event_id] == e.payload["call_id"] for e in results)
    threads = {e.payload["result"]["content"].split(":")[0] for e in results}
    assert len(threads) == CALLS
    code, replayed = replay_cli(journal)
    assert (code, replayed["status"]) == (0, "match"), replayed.get("divergence") or replayed.get("error")


def test_pydantic_ai_records_the_output_validation_failure_when_it_happened() -> None:
    recorded = events(JOURNALS / "pydantic-ai.jsonl")
    states = _replayed_states(recorded)
    failed_at = next(event for event, state in states if state["output_validation_failures"])
    failure = states[[event for event, _ in states].index(failed_at)][1]["output_validation_failures"]
    assert len(failure) == 1 and failure[0]["errors"][0]["loc"] == ["open_tickets"]
    assert failure[0]["errors"][0]["type"] == "missing"
    # written after the invalid answer and before the retry request that tells the model
    invalid = [
        e
        for e in recorded
        if e.kind == "model.response" and any(c["name"] == "final_result" for c in e.payload["response"]["tool_calls"])
    ][0]
    retry = next(e for e in recorded if e.kind == "model.request" and e.seq > invalid.seq)
    assert invalid.seq < failed_at.seq < retry.seq
    assert "open_tickets" in str(retry.payload["request"]["messages"][-1])
    run_ids = [e for e in recorded if e.kind == "random.draw"]
    assert [e.payload["source"] for e in run_ids] == ["uuid4"]  # PydanticAI's run id, recorded


@pytest.fixture(autouse=True)
def _fresh_version_cache() -> Iterator[None]:
    yield
    versions.version_problem.cache_clear()  # no monkeypatched answer outlives its test


def test_version_check_warns_outside_the_tested_range(monkeypatch: pytest.MonkeyPatch) -> None:
    assert versions.check_versions(*versions.TESTED_RANGES) == []  # the installed ones are the tested ones
    real = metadata.version
    monkeypatch.setattr(metadata, "version", lambda name: "9.0.0" if name == "langgraph" else real(name))
    monkeypatch.setattr(versions, "_warned", set())
    versions.version_problem.cache_clear()  # the check reads metadata once per process
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        problems = versions.check_versions("langgraph", "openai-agents")
    assert problems == [
        "langgraph 9.0.0 is outside the range the replay-tui recorder was tested with (>=1.2.0,<1.3): "
        "recording may miss events and replays may diverge"
    ]
    assert [w.category for w in caught] == [versions.FrameworkVersionWarning]


def test_version_check_names_the_extra_when_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing(name: str) -> str:
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "version", missing)
    versions.version_problem.cache_clear()
    assert "pip install 'replay-tui[pydantic-ai]'" in (versions.version_problem("pydantic-ai-slim") or "")


def test_the_test_extra_installs_only_tested_framework_versions() -> None:
    """Each framework the test extra asks for is capped where its tested range ends, so a fresh install (CI on a
    new machine) gets versions the suite ran on, not a release nobody tried (langchain-openai 1.8 came that way)."""
    import re
    import tomllib

    project = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())
    test_extra = project["project"]["optional-dependencies"]["test"]
    caps = {}
    for requirement in test_extra:
        found = re.fullmatch(r"([A-Za-z0-9._-]+)(?:\[[^\]]*\])?(.*)", requirement)
        assert found is not None, requirement
        caps[found.group(1).lower()] = re.findall(r"<([0-9][0-9.]*)", found.group(2))
    for distribution, (_, first_untested) in versions.TESTED_RANGES.items():
        assert caps.get(distribution) == [first_untested], f"{distribution}: cap the test extra at <{first_untested}"

"""Replay reproduces the recorded interleaving: concurrent calls are matched by key among those in flight
together, and their recorded results are handed back in the order they arrived in production."""

from __future__ import annotations

from pathlib import Path

import pytest

from replay_tui.harness import record_run
from replay_tui.journal import verify_journal

from .helpers import AGENTS, lines_of, replay

CONFIG = AGENTS / "concurrent.toml"
MODULE = "tests.replay.agents.concurrent"


def record(tmp_path: Path, agent: str) -> Path:
    journal = tmp_path / f"{agent}.jsonl"
    outcome = record_run(CONFIG, f"{MODULE}:{agent}", ["weather in Lisbon"], journal=journal)
    assert outcome.status == "ok", outcome
    assert verify_journal(journal).ok
    return journal


def completion_order(journal: Path) -> list[str]:
    return [line["payload"]["call_id"] for line in lines_of(journal) if line["kind"] == "tool.result"]


@pytest.mark.parametrize("agent", ["first_wins", "first_wins_wait", "first_wins_threads"])
def test_an_agent_that_acts_on_the_first_answer_sees_production_s_order(tmp_path: Path, agent: str) -> None:
    journal = record(tmp_path, agent)
    assert completion_order(journal)[0] == "beta"  # the fastest search arrived first, though made second
    output = lines_of(journal)[-1]["payload"]["output"]
    assert output.startswith("beta: ")
    outcome = replay(journal)
    assert outcome.status == "match", outcome.to_text()
    assert outcome.consumed == outcome.total


def test_the_same_calls_made_in_another_order_are_no_divergence(tmp_path: Path) -> None:
    journal = record(tmp_path, "first_wins")
    outcome = replay(journal, agent=f"{MODULE}:first_wins_reversed")
    assert outcome.status == "match", outcome.to_text()


def test_a_call_outside_the_recorded_set_is_a_divergence_that_names_it(tmp_path: Path) -> None:
    journal = record(tmp_path, "first_wins")
    outcome = replay(journal, agent=f"{MODULE}:first_wins_extra")
    assert outcome.status == "diverged", outcome.to_text()
    report = outcome.divergence.to_json()
    assert report["actual"]["kind"] == "tool.call" and "delta" in str(report), report


def test_a_call_missing_from_the_recorded_set_is_a_divergence_that_names_it(tmp_path: Path) -> None:
    journal = record(tmp_path, "first_wins")
    gamma = next(
        line for line in lines_of(journal) if line["kind"] == "tool.call" and line["payload"]["call_id"] == "gamma"
    )
    outcome = replay(journal, agent=f"{MODULE}:first_wins_missing")
    assert outcome.status == "diverged", outcome.to_text()
    assert outcome.divergence.seq == gamma["seq"], outcome.to_text()
    assert gamma["payload"]["call_key"] in str(outcome.divergence.to_json())


def test_a_thread_started_before_its_turn_hangs_from_what_its_flow_received_by_then(tmp_path: Path) -> None:
    """A thread that starts after a sibling's result hangs from it; in a replay where the thread asks before that
    result is written, its call still hangs from it (a ToolNode thread's start is timing, not the agent's choice)."""
    journal = record(tmp_path, "thread_after_a_result")
    results = {line["payload"]["call_id"]: line for line in lines_of(journal) if line["kind"] == "tool.result"}
    gamma_call = next(
        line for line in lines_of(journal) if line["kind"] == "tool.call" and line["payload"]["call_id"] == "gamma"
    )
    assert gamma_call["parent_event_id"] == results["beta"]["event_id"]
    outcome = replay(journal, agent=f"{MODULE}:thread_after_a_result_started_early")
    assert outcome.status == "match", outcome.to_text()

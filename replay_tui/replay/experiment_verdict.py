"""The parent's verdict on an experiment (model-live, tools-live): from the journal the child wrote.

The child writes its new trajectory to a journal in its scratch dir; the parent copies it out and
judges it here, never from the child's own summary: the copy must verify, its state claims must
hold (each patch applied to the parent's own copy of the state hashes to the after_hash it names,
``state_book.py``), and the comparison with the recording (first differing decision, first changed
live observation, the live calls) is the parent's. The child's claims (a call the journal never
recorded, unused recorded observations) can only make an experiment fail. Harness-free.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..journal import Event, Journal, JournalError, open_journal, verify_journal
from ..journal.depth import deep_enough
from ..journal.model import (
    OBSERVATION_KINDS,
    STATE_SNAPSHOT,
    STATE_TRANSITION,
)
from .referee import EXPERIMENT_SERVED_KINDS, OBSERVATION_KEY
from .state_book import first_false_state

if TYPE_CHECKING:  # report.py is imported when a report is made
    from .report import DivergenceReport

SERVED_KINDS = EXPERIMENT_SERVED_KINDS


@dataclass
class ExperimentVerdict:
    status: str  # "match" | "diverged" | "unrecorded_call" | "failed"
    experiment: dict[str, Any] | None = None
    consumed: int = 0
    total: int = 0
    last_seq: int | None = None
    live_calls: list[dict[str, Any]] = field(default_factory=list)
    state_checks: int = 0  # state.transition / state.snapshot claims that held
    divergence: "DivergenceReport | None" = None
    error: str | None = None


def summarize_experiment(
    mode: str, recorded: list[Event], produced: list[Event], served: frozenset[str], stopped: dict[str, Any] | None
) -> dict[str, Any]:
    """First decision and first observation where the two trajectories differ."""
    from .compare import DECISION_KINDS, align_events

    alignment = align_events(recorded, produced)
    first = alignment.first_difference()
    decision = alignment.first_difference(DECISION_KINDS)
    observation = alignment.first_difference(OBSERVATION_KINDS - served)
    if stopped and stopped.get("kind"):
        summary = f"stopped: the journal has no {stopped['kind']} for {stopped['key']}"
    elif first is None:
        summary = "the new trajectory matches the recording"
    else:
        summary = "first differing decision: " + (decision.describe() if decision else "none")
    if observation is not None:
        summary += f"; first changed live observation: {observation.describe()}"
    return {
        "mode": mode,
        "identical": first is None and not stopped,
        "summary": summary,
        "stopped": stopped,
        "first_difference": first.to_json(with_diff=True) if first else None,
        "first_decision": decision.to_json(with_diff=True) if decision else None,
        "first_live_observation": observation.to_json(with_diff=True) if observation else None,
        "alignment": alignment.summary(),
        "_first_pair": first,
    }


def pair_report(journal: Journal, pair: Any, stopped: dict[str, Any] | None) -> "DivergenceReport":
    """The divergence report of the first pair of events where the trajectories differ."""
    from .report import build_report

    produced = None
    if pair.b is not None:
        produced = as_produced(pair.b)
    seq = pair.a.seq if pair.a is not None else pair.b.seq
    if pair.a is None:
        reason = f"the new run has a {pair.kind} the recording does not"
    elif pair.b is None:
        reason = f"the new run has no counterpart of the recorded {pair.kind}"
    else:
        reason = f"the trajectories differ in {', '.join(pair.differs_in)}"
    if stopped and stopped.get("kind"):
        reason += f"; the run stopped: the journal has no {stopped['kind']} for {stopped['key']}"
    return build_report(journal, seq, reason, produced, expected=pair.a)


def read_child_journal(
    recorded: Journal, produced_path: str, where: str
) -> tuple[list[Event], list[Event], tuple[int, str] | None] | ExperimentVerdict:
    """The recorded events, the events of the journal a child wrote (it must verify), and its first false state
    claim; or the failed verdict that says why it cannot be read."""
    from .compare import read_events

    try:
        verification = verify_journal(produced_path)
    except (JournalError, OSError) as error:
        return ExperimentVerdict("failed", error=f"{where} cannot be read: {error}")
    if not verification.ok:
        fault = verification.fault
        detail = f"seq {fault.seq}: {fault.message}" if fault is not None else "its hash chain is broken"
        return ExperimentVerdict("failed", error=f"{where} does not verify ({detail})")
    try:
        with open_journal(produced_path) as produced_journal:
            produced = read_events(produced_journal)
        recorded_events = read_events(recorded)
        with deep_enough():
            false_state = first_false_state(produced)
    except (JournalError, OSError, RecursionError) as error:
        return ExperimentVerdict("failed", error=f"{where} cannot be compared: {error}")
    return recorded_events, produced, false_state


def judge_experiment(
    mode: str, recorded: Journal, produced_path: str, stopped: dict[str, Any] | None
) -> ExperimentVerdict:
    """Verify and compare the journal the child wrote against the parent's own recording."""
    from .report import build_report

    where = "the experiment journal the child wrote"
    read = read_child_journal(recorded, produced_path, where)
    if isinstance(read, ExperimentVerdict):
        return read
    recorded_events, produced, false_state = read
    try:
        with deep_enough():
            experiment = summarize_experiment(mode, recorded_events, produced, SERVED_KINDS[mode], stopped)
    except RecursionError as error:
        return ExperimentVerdict("failed", error=f"{where} cannot be compared: {error}")
    first_pair = experiment.pop("_first_pair")
    live_calls = [
        {"seq": event.seq, "kind": event.kind, "key": event.payload.get(OBSERVATION_KEY[event.kind])}
        for event in produced
        if event.kind in OBSERVATION_KINDS and event.kind not in SERVED_KINDS[mode]
    ]
    verdict = ExperimentVerdict(
        "unrecorded_call" if stopped and stopped.get("kind") else ("match" if experiment["identical"] else "diverged"),
        experiment,
        len(produced),
        len(recorded_events),
        produced[-1].seq if produced else None,
        live_calls,
    )
    if false_state is None:
        verdict.state_checks = sum(1 for event in produced if event.kind in (STATE_TRANSITION, STATE_SNAPSHOT))
        if first_pair is not None:
            verdict.divergence = pair_report(recorded, first_pair, stopped)
    else:
        seq, reason = false_state
        event = next(event for event in produced if event.seq == seq)
        claim = f"the agent's state claims do not hold at seq {seq} ({reason})"
        experiment["summary"] = claim if experiment["identical"] else f"{claim}; {experiment['summary']}"
        experiment["identical"] = False
        verdict.status = "diverged" if verdict.status == "match" else verdict.status
        verdict.divergence = build_report(recorded, seq, reason, as_produced(event))
    return verdict


def as_produced(event: Event) -> dict[str, Any]:
    return {
        "kind": event.kind,
        "step_id": event.step_id,
        "parent_event_id": event.parent_event_id,
        "payload": event.payload,
    }

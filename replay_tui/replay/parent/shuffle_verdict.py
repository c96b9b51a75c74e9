"""The parent's verdict on one shuffle run, from the journal the child wrote (harness-free).

A shuffle run hands the agent the recorded answers with the completion order of concurrent calls
permuted (``shuffle.py``). Its trajectory *changed* when the agent then decided otherwise: a model
request or a tool call the recording does not have (the run stopped there: the journal has no answer
to it), one it does not make, or another output. The same decisions made in another order are no
change (an agent that handles each result as it comes makes its follow-up calls in the order they
come): the verdict says so. As for experiments, the child's journal must verify and its state
claims hold; the child's own summary is never taken.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from ...journal import Event, Journal
from ...journal.model import MODEL_REQUEST, RUN_ENDED, TOOL_CALL
from ..experiment_verdict import ExperimentVerdict, as_produced, read_child_journal
from ..modes import SHUFFLE

#: What the agent decides: the calls it makes, and how its run ends.
_DECISIONS = frozenset({MODEL_REQUEST, TOOL_CALL, RUN_ENDED})


def _decision(event: Event) -> tuple[str, Any]:
    payload = event.payload
    if event.kind == MODEL_REQUEST:
        return MODEL_REQUEST, payload.get("request_hash")
    if event.kind == TOOL_CALL:
        return TOOL_CALL, payload.get("call_key")
    return RUN_ENDED, (payload.get("status"), repr(payload.get("output")))


def compare_decisions(recorded: list[Event], produced: list[Event]) -> dict[str, Any]:
    """(changed, the first produced decision the recording lacks or the first recorded one never made, and
    whether the same decisions came in another order)."""
    wanted = [event for event in recorded if event.kind in _DECISIONS]
    made = [event for event in produced if event.kind in _DECISIONS]
    left = Counter(_decision(event) for event in wanted)
    extra = None
    for event in made:
        key = _decision(event)
        if left[key] > 0:
            left[key] -= 1
        elif extra is None:
            extra = event
    missing = next((event for event in wanted if left[_decision(event)] > 0), None)
    reordered = [_decision(e) for e in wanted] != [_decision(e) for e in made]
    return {"extra": extra, "missing": missing, "reordered": reordered and extra is None and missing is None}


def judge_shuffle(recorded: Journal, produced_path: str, stopped: dict[str, Any] | None) -> ExperimentVerdict:
    """Verify and compare the journal a shuffle run wrote against the parent's own recording."""
    from ..report import build_report

    where = "the shuffle run's journal the child wrote"
    read = read_child_journal(recorded, produced_path, where)
    if isinstance(read, ExperimentVerdict):
        return read
    recorded_events, produced, false_state = read
    if false_state is not None:
        seq, reason = false_state
        return ExperimentVerdict("failed", error=f"{where} makes a false state claim at seq {seq}: {reason}")
    found = compare_decisions(recorded_events, produced)
    extra, missing = found["extra"], found["missing"]
    changed = bool(stopped and stopped.get("kind")) or extra is not None or missing is not None
    if stopped and stopped.get("kind"):
        summary = (
            f"trajectory changed: the agent made a call the recording never made (the journal has no "
            f"{stopped['kind']} for {stopped['key']})"
        )
    elif extra is not None:
        summary = f"trajectory changed: the agent made a {extra.kind} the recording does not have (new seq {extra.seq})"
    elif missing is not None:
        summary = f"trajectory changed: the agent never made the recorded {missing.kind} (seq {missing.seq})"
    elif found["reordered"]:
        summary = "same trajectory: the same decisions, in another order"
    else:
        summary = "same trajectory"
    divergence = None
    if changed:
        anchor = missing or _counterpart(recorded_events, produced, extra) or recorded_events[-1]
        reason = summary + (" (the run stopped there)" if stopped and stopped.get("kind") else "")
        divergence = build_report(
            recorded, anchor.seq, reason, as_produced(extra) if extra is not None else None, expected=anchor
        )
    experiment = {
        "mode": SHUFFLE,
        "identical": not changed,
        "summary": summary,
        "stopped": stopped,
        "first_difference": None,
        "first_decision": {"seq": (extra or missing).seq, "kind": (extra or missing).kind}
        if (extra or missing)
        else None,
        "first_live_observation": None,
        "alignment": {"recorded": len(recorded_events), "produced": len(produced), "reordered": found["reordered"]},
    }
    return ExperimentVerdict(
        "diverged" if changed else "match",
        experiment,
        consumed=len(produced),
        total=len(recorded_events),
        last_seq=produced[-1].seq if produced else None,
        divergence=divergence,
    )


def _counterpart(recorded: list[Event], produced: list[Event], extra: Event | None) -> Event | None:
    """The recorded decision that stands where the extra one was made (the n-th decision of either run)."""
    if extra is None:
        return None
    index = [event.seq for event in produced if event.kind in _DECISIONS].index(extra.seq)
    wanted = [event for event in recorded if event.kind in _DECISIONS]
    return wanted[min(index, len(wanted) - 1)] if wanted else None

"""What one replay came to: ``ReplayOutcome``, its verdict, figures and words (text, JSON, exit code).

Built by the parent (``runner.py``) from its own comparison, rebuilt from ``replay --json`` output
(``results.py``) and read by the CLI, the app and CI; it holds no process and imports no runner.
"""

from __future__ import annotations

import signal
from dataclasses import dataclass, field
from typing import Any

import orjson

from ...journal.safe_text import safe
from ..isolation import IsolationInfo, Refusal
from ..modes import STRICT
from ..protocol import ReplaySpec
from ..report import DivergenceReport
from .statuses import (
    CANCELLED,
    CRASHED,
    DIVERGED,
    FAILED,
    MATCH,
    TIMEOUT,
    UNUSED_EVENTS,
    VERIFICATION_FAILED,
)


@dataclass
class ReplayOutcome:
    """Everything known about one finished replay (or experiment)."""

    status: str
    journal: str
    mode: str
    isolation: IsolationInfo | None = None
    consumed: int = 0
    total: int = 0
    last_seq: int | None = None
    first_seq: int | None = None  # first seq the agent re-ran (after a snapshot resume: snapshot + 1)
    from_seq: int | None = None  # --from-seq: events before it were fast-forwarded, not reported
    resumed_from_snapshot: int | None = None  # seq of the state.snapshot a step-loop agent resumed from
    state_checks: int = 0  # state.transition / state.snapshot hashes that matched
    observations_served: int = 0
    divergence: DivergenceReport | None = None
    refusals: list[Refusal] = field(default_factory=list)  # the first MAX_REFUSALS
    refusals_dropped: int = 0  # refusals after those (counted, not kept)
    unused: dict[str, Any] | None = None
    verification: dict[str, Any] | None = None
    error: dict[str, Any] | None = None  # {kind, message, traceback}
    out: str | None = None
    experiment: dict[str, Any] | None = None
    live_calls: list[dict[str, Any]] = field(default_factory=list)
    child_exit: int | None = None
    stderr_tail: list[str] = field(default_factory=list)
    stdout_tail: list[str] = field(default_factory=list)
    child_startup_s: float | None = None  # spawn to the child's hello (sandbox entered)
    first_event_s: float | None = None  # spawn to the first event the agent produced
    first_event_cpu_s: float | None = None  # the child's CPU from exec to its first event (stable under load)
    child_cpu_s: float | None = None  # the child's CPU in all, as it reports it (informational)
    child_phases: dict[str, dict[str, float]] | None = None  # each step of the child, as it reports it (benches)
    elapsed_s: float | None = None  # whole child run, from start-up to result
    replay_s: float | None = None  # the replay loop alone
    replay_cpu_s: float | None = None  # CPU seconds of the replay loop (stable under machine load)
    events_per_s: float | None = None  # consumed / replay_s
    timeout_s: float | None = None

    @property
    def ok(self) -> bool:
        return self.status == MATCH

    @property
    def exit_code(self) -> int:
        """0 match; 2 unusable input (journal, usage, agent import); 1 everything else."""
        if self.status == MATCH:
            return 0
        if (
            self.status == FAILED
            and self.error
            and self.error.get("kind") in ("journal", "usage", "agent_import", "isolation")
        ):
            return 2
        return 1

    def to_json(self) -> dict[str, Any]:
        data = dict(self.__dict__)
        data["ok"] = self.ok
        data["isolation"] = self.isolation.to_json() if self.isolation else None
        data["divergence"] = self.divergence.to_json() if self.divergence else None
        data["refusals"] = [refusal.to_json() for refusal in self.refusals]
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ReplayOutcome:
        """Rebuild from ``to_json`` output (``replay --json``); ValueError names the field that is wrong.
        Fields this version does not know are ignored, so older and newer results both load."""
        if not isinstance(data.get("status"), str):
            raise ValueError("field status: expected a string (match, diverged, timeout, cancelled, crashed, ...)")
        values: dict[str, Any] = {name: data[name] for name in cls.__dataclass_fields__ if name in data}
        values.setdefault("journal", "")
        values.setdefault("mode", STRICT)
        for name in ("consumed", "total", "state_checks", "observations_served", "refusals_dropped"):
            if not isinstance(values.get(name, 0), int) or isinstance(values.get(name), bool):
                raise ValueError(f"field {name}: expected a whole number")
        isolation, divergence = data.get("isolation"), data.get("divergence")
        values["isolation"] = IsolationInfo.from_json(isolation) if isinstance(isolation, dict) else None
        if divergence is not None and not (isinstance(divergence, dict) and isinstance(divergence.get("seq"), int)):
            raise ValueError("field divergence: expected an object with an integer seq")
        if divergence:  # a short report (seq and reason only) is still one
            divergence = {
                "reason": "",
                "expected": None,
                "actual": None,
                "state_before": None,
                "step": None,
                **divergence,
            }
        values["divergence"] = DivergenceReport.from_json(divergence) if divergence else None
        refusals = data.get("refusals") or []
        values["refusals"] = [
            Refusal(str(item.get("operation")), str(item.get("target")), item.get("where"))
            for item in refusals
            if isinstance(item, dict)
        ]
        return cls(**values)

    @classmethod
    def failed(cls, spec: ReplaySpec, kind: str, message: str, *, status: str = FAILED, **fields: Any) -> ReplayOutcome:
        """The outcome of a run that never reached a verdict (its child could not start, its worker
        was lost): never a match, and the error says why in ``message``."""
        outcome = cls(status=status, journal=spec.journal, mode=spec.mode, **fields)
        outcome.fail(kind, message, status=status)
        return outcome

    def fail(self, kind: str, message: str, *, status: str = FAILED) -> None:
        """Turn this outcome into a failure that says why (the one shape of ``error`` the parent writes)."""
        self.status = status
        self.error = {"kind": kind, "message": message, "traceback": []}

    def headline(self) -> str:
        if self.experiment is not None:
            return self._experiment_headline()
        where = f"{self.consumed} of {self.total} events consumed"
        at = f"at seq={self.last_seq}" if self.last_seq is not None else "before the first event"
        if self.status == MATCH:
            return f"Replay matched: {where}; every key and state hash agrees with the journal."
        if self.status == DIVERGED and self.divergence:
            return f"Replay diverged at seq={self.divergence.seq} ({where})."
        if self.status == VERIFICATION_FAILED:
            return "Replay not started: the journal failed verification."
        if self.status == UNUSED_EVENTS and self.unused:
            return (
                f"Replay left {self.unused.get('count')} recorded event(s) unused, "
                f"the first at seq={self.unused.get('first_seq')} ({where})."
            )
        if self.status == TIMEOUT:
            return f"Replay timed out after {self.timeout_s:g} s {at} ({where}); the child was killed."
        if self.status == CANCELLED:
            return f"Replay cancelled {at} ({where}); the child was killed."
        if self.status == CRASHED:
            return f"Replay child crashed ({describe_exit(self.child_exit)}) {at} ({where})."
        if self.error:
            return f"Replay failed ({self.error.get('kind')}): {self.error.get('message')}"
        return f"Replay ended: {self.status}"

    def _experiment_headline(self) -> str:
        experiment = self.experiment or {}
        mode = experiment.get("mode", self.mode)
        stopped = experiment.get("stopped")
        if stopped and stopped.get("kind"):
            request = stopped.get("request") or {}
            call = ""
            if request.get("tool"):
                call = f" (the call: {request['tool']} {json_text(request.get('arguments'))})"
            return f"Experiment {mode} stopped: the journal has no {stopped['kind']} for {stopped['key']}{call}."
        if experiment.get("identical"):
            return f"Experiment {mode}: the new trajectory matches the recording ({self.consumed} events written)."
        return f"Experiment {mode}: the new trajectory differs from the recording ({self.consumed} events written, {self.total} recorded)."

    def to_text(self) -> str:
        lines = [self.headline()]
        if self.divergence:
            lines += ["", self.divergence.to_text(), ""]
        if self.status == VERIFICATION_FAILED and self.verification and self.verification.get("fault"):
            fault = self.verification["fault"]
            where = ", ".join(f"{name} {fault[name]}" for name in ("seq", "line") if fault.get(name) is not None)
            lines.append(f"verification failed ({where or 'journal'}): {fault.get('kind')}: {fault.get('message')}")
            if fault.get("expected") or fault.get("found"):
                lines.append(f"  expected {fault.get('expected')}, found {fault.get('found')}")
        if self.resumed_from_snapshot is not None:
            lines.append(
                f"resumed from the state.snapshot at seq={self.resumed_from_snapshot} "
                f"(the nearest at or before --from-seq {self.from_seq}); replayed from seq={self.first_seq}"
            )
        elif self.from_seq is not None and self.from_seq > 1:
            lines.append(
                f"fast-forwarded seq 1 to {self.from_seq - 1} without reporting; reported from seq={self.from_seq}"
            )
        if self.verification and self.verification.get("ok"):
            chain = self.verification.get("chain")
            lines.append(f"hash chain: {chain} ({self.verification.get('events')} events)")
        elif self.verification is None and self.status not in (VERIFICATION_FAILED,):
            lines.append("hash chain: not verified (--no-verify-hash-chain)")
        if self.status == MATCH and self.experiment is None:
            lines.append(
                f"checked: {self.state_checks} state hashes, {self.observations_served} observations served from the journal"
            )
        if self.unused and self.unused.get("count") and self.status == DIVERGED and not self.experiment:
            lines.append(
                f"not replayed after the divergence: {self.unused['count']} events from seq={self.unused.get('first_seq')}"
            )
        elif self.unused and self.unused.get("count") and self.status != UNUSED_EVENTS:
            lines.append(
                f"unused recorded events: {self.unused['count']}, the first at seq={self.unused.get('first_seq')}"
            )
        if self.experiment:
            lines.append(f"experiment: {self.experiment.get('summary')}")
            alignment = self.experiment.get("alignment") or {}
            if alignment.get("differences"):
                lines.append(
                    f"  {alignment['differences']} differing events: {alignment.get('changed', 0)} changed, "
                    f"{alignment.get('only_a', 0)} only recorded, {alignment.get('only_b', 0)} only new"
                )
            lines.append(f"  live calls: {len(self.live_calls)}")
        if self.out:
            lines.append(f"experiment journal: {self.out}")
        if self.status == FAILED and self.error and self.error.get("kind") == "usage":
            return safe("\n".join(lines), multiline=True)  # refused before any agent code ran: no isolation
        if self.isolation:
            lines.append(f"isolation: {self.isolation.summary}")
        if self.refusals:
            count = len(self.refusals) + self.refusals_dropped
            lines.append(f"refused network access ({count}):")
            lines.extend(f"  {refusal}" for refusal in self.refusals[:20])
            if count > 20:
                lines.append(f"  … and {count - 20} more")
        else:
            lines.append("refused network access: none attempted")
        if self.error and self.error.get("traceback"):
            lines.append("child traceback (last lines):")
            lines.extend(f"  {line}" for line in self.error["traceback"][-15:])
        if self.status in (CRASHED, TIMEOUT, FAILED) and self.stderr_tail:
            lines.append("child stderr (last lines):")
            lines.extend(f"  {line}" for line in self.stderr_tail[-15:])
        return safe("\n".join(lines), multiline=True)  # journal text, agent output: never raw to a terminal


def json_text(value: Any, limit: int = 200) -> str:
    text = orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
    return text if len(text) <= limit else text[: limit - 1] + "…"


def describe_exit(code: int | None) -> str:
    if code is None:
        return "exit status unknown"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"

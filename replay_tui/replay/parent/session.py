"""The parent's half of the replay protocol: every line the child writes, checked and applied, and the verdict.

``ReplayRunner`` (``runner.py``) supervises the child (``journal/processes.py``) and hands each line of the
protocol pipe to a ``ProtocolSession``: its shape and place are checked (``protocol.decode``,
``MessageOrder``), the events go to the parent's own referee over its own journal, and ``decide`` turns
the parent's comparison (never the child's claim) into the outcome's status; experiments are judged from
the journal the child wrote (``judge_experiment``). Nothing here starts, reads or kills a process.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable

from ..isolation import IsolationInfo, Refusal
from ..modes import JOURNAL_JUDGED_MODES, SHUFFLE
from ..protocol import (
    AGENT_IMPORT,
    DIVERGENCE,
    ERROR,
    EVENTS,
    HELLO,
    MAX_REFUSALS,
    PROGRESS,
    REFUSAL,
    RESULT,
    START,
    MessageOrder,
    ProtocolError,
    ReplaySpec,
    decode,
)
from ..report import DivergenceReport
from .outcome import ReplayOutcome
from .sandbox_launch import Launch, unreadable_path_hint
from .statuses import DIVERGED, FAILED, MATCH, UNRECORDED_CALL, UNUSED_EVENTS

#: Progress phases that count journal events (the "load" phase counts bytes indexed).
EVENT_PHASES = frozenset({"replay", "fast-forward"})
#: The error kind of a run the child's protocol stream broke (a malformed, misplaced or oversized message).
PROTOCOL = "protocol"


@dataclass(frozen=True)
class Progress:
    """How far a replay is: ``consumed`` of ``total`` journal events, last ``seq`` matched."""

    phase: str
    consumed: int
    total: int
    seq: int | None

    @property
    def fraction(self) -> float:
        return self.consumed / self.total if self.total else 0.0


class ProtocolSession:
    """One child's protocol stream, read by the parent: ``handle`` each line, then ``decide`` (or, for an
    experiment, ``judge_experiment``). ``stop_reason`` says when the run must stop before the child ends."""

    def __init__(
        self,
        spec: ReplaySpec,
        launch: Launch | None,
        journal: Any,
        verification: dict[str, Any] | None,
        spawned: float,
        *,
        on_progress: Callable[[Progress], None] | None = None,
        on_message: Callable[[dict[str, Any]], None] | None = None,
        note: Callable[[str], None] = lambda line: None,
    ) -> None:
        self.spec = spec
        self._launch = launch
        self._journal = journal  # the parent's own Journal: the only one the verdict reads
        self._verification = verification
        self._spawned = spawned
        self.on_progress = on_progress
        self.on_message = on_message
        self._note = note  # a line for the run's stderr tail (the protocol fault, in the user's words)
        self._referee: Any = None  # referee.Referee once the child said where it starts
        self._child_divergence: DivergenceReport | None = None
        self._protocol_fault: str | None = None
        self._order = MessageOrder()
        self._stop_reason: str | None = None

    @property
    def stop_reason(self) -> str | None:
        """Why the run stops before the child ends (PROTOCOL, "isolation", "journal"), or None."""
        return self._stop_reason

    def fault(self, problem: str) -> None:
        self._fault(problem)

    def decide(self, outcome: ReplayOutcome) -> None:
        """The verdict, from the parent's own comparison; the child's claims can only make it fail."""
        claimed = outcome.status
        referee = self._referee
        if self._protocol_fault is not None:
            if referee is None or referee.mismatch is None:  # a divergence the parent found itself stands
                outcome.divergence = None
                outcome.fail(PROTOCOL, self._protocol_fault)
                return
        if outcome.experiment is not None or self.spec.mode in JOURNAL_JUDGED_MODES:
            outcome.divergence = self._child_divergence
            return  # experiments: the child's summary of its own new journal (see the README)
        if referee is None:
            if claimed in (MATCH, UNUSED_EVENTS, DIVERGED):
                outcome.fail("internal", "the child claimed a result but never started the replay")
            return
        cursor = referee.cursor
        outcome.consumed, outcome.total, outcome.last_seq = (
            cursor.consumed,
            cursor.total - cursor.start,
            cursor.last_seq,
        )
        outcome.state_checks, outcome.observations_served = cursor.state_checks, cursor.observations
        outcome.unused = cursor.unused()
        if referee.mismatch is not None:
            outcome.status = DIVERGED
            outcome.divergence = self._report(referee.mismatch)
            outcome.error = None
            return
        if referee.fault is not None:
            # "internal": the child's events broke the protocol; "journal": the parent's journal is unreadable there
            outcome.fail(PROTOCOL if referee.fault_kind == "internal" else referee.fault_kind, referee.fault)
            return
        if outcome.status not in (MATCH, UNUSED_EVENTS):
            if outcome.status == DIVERGED:  # the child saw a divergence the parent did not: still a failure
                outcome.divergence = self._child_divergence
            return
        if not cursor.ended:
            outcome.fail(
                "internal",
                f"the child claimed {claimed!r}, but the agent never reached the recorded run.ended "
                f"({outcome.consumed} of {outcome.total} events produced)",
            )
            return
        if outcome.unused and (self.spec.strict or self.spec.fail_on_unused_events):
            outcome.status = UNUSED_EVENTS
        else:
            outcome.status = MATCH

    def judge_experiment(self, outcome: ReplayOutcome) -> None:
        """The parent's verdict on an experiment, from the journal the child wrote (experiment_verdict.py):
        the child's summary is replaced; its claims (a call the journal never saw) can only make it fail."""
        claimed = outcome.status
        if claimed not in (MATCH, DIVERGED, UNRECORDED_CALL):
            return  # the child failed, crashed or was stopped: there is nothing to judge
        if outcome.out is None:
            outcome.experiment = None
            outcome.fail("internal", "the child wrote no experiment journal")
            return
        from ...journal import Journal, JournalError
        from ..experiment_verdict import judge_experiment
        from .shuffle_verdict import judge_shuffle

        stopped = (outcome.experiment or {}).get("stopped") if claimed == UNRECORDED_CALL else None
        if claimed == UNRECORDED_CALL and not (isinstance(stopped, dict) and isinstance(stopped.get("kind"), str)):
            stopped = {"kind": "observation", "key": "(not said)", "request": None}
        try:
            with Journal(self.spec.journal) as recorded:
                recorded.index()
                if self.spec.mode == SHUFFLE:
                    verdict = judge_shuffle(recorded, outcome.out, stopped)
                else:
                    verdict = judge_experiment(self.spec.mode, recorded, outcome.out, stopped)
        except (JournalError, OSError) as error:
            outcome.experiment = None
            outcome.fail("journal", str(error))
            return
        if verdict.error is not None:
            outcome.experiment, outcome.divergence = None, None
            outcome.fail("internal", verdict.error)
            return
        outcome.experiment, outcome.live_calls = verdict.experiment, verdict.live_calls
        outcome.consumed, outcome.total, outcome.last_seq = verdict.consumed, verdict.total, verdict.last_seq
        outcome.state_checks, outcome.divergence = verdict.state_checks, verdict.divergence
        outcome.status = verdict.status
        if verdict.status == MATCH and claimed != MATCH:
            outcome.fail("internal", f"the child reported {claimed!r}, but the journal it wrote matches the recording")

    def _report(self, found: Any) -> DivergenceReport:
        from ..report import build_report

        report = build_report(
            self._journal,
            found.seq,
            found.reason,
            found.produced,
            expected=found.expected,
            parent_matches=found.parent_matches,
        )
        child = self._child_divergence
        if child is not None and child.seq == found.seq and getattr(child, "agent_traceback", None):
            report.agent_traceback = child.agent_traceback
        return report

    def _start_referee(self, message: dict[str, Any]) -> None:
        from ..referee import Referee, nearest_snapshot

        journal = self._journal
        resume_seq = message.get("resume_seq")
        start = 0
        if resume_seq is not None:
            snapshot = nearest_snapshot(journal, self.spec.from_seq) if self.spec.from_seq else None
            if snapshot is None or snapshot.seq != resume_seq:
                self._fault(
                    f"the child asked to resume from seq {resume_seq!r}, which is not the snapshot for --from-seq"
                )
                return
            start = (journal.position_of_seq(resume_seq) or 0) + 1
        verified = bool(self._verification and self._verification.get("ok"))  # every line parsed and checked
        self._referee = Referee(journal, start, verified=verified)

    def _fault(self, problem: str) -> None:
        """The child broke the protocol: the run stops here and fails, saying how (the first fault is kept)."""
        if self._protocol_fault is None:
            self._protocol_fault = f"the child broke the protocol: {problem}"
            self._note(f"(replay-tui: {self._protocol_fault})")
        self._stop_reason = PROTOCOL

    def handle(self, line: bytes, outcome: ReplayOutcome) -> None:
        """One line from the child: checked (its shape, ``decode``; its place, ``MessageOrder``) before use."""
        try:
            message = decode(line)
            self._order.admit(message["type"])
        except ProtocolError as error:
            self._fault(str(error))
            return
        kind = message["type"]
        if kind == EVENTS:
            if outcome.first_event_s is None:
                outcome.first_event_s = round(time.perf_counter() - self._spawned, 4)
            if self._referee is not None:
                self._referee.feed(message["items"])
            return
        if kind == START:
            if self._journal is None:
                self._fault("a start message in an experiment (an experiment is judged from the journal it writes)")
                return
            try:
                self._journal.index()
                self._start_referee(message)
            except Exception as error:  # the parent's journal: unreadable is a journal error, never a traceback
                self._stop_reason = "journal"
                outcome.fail("journal", str(error))
        elif kind == HELLO:
            self._hello(message, outcome)
        elif kind == PROGRESS:
            progress = Progress(message["phase"], message["consumed"], message["total"], message["seq"])
            if progress.phase in EVENT_PHASES:
                outcome.consumed, outcome.total, outcome.last_seq = progress.consumed, progress.total, progress.seq
            if self.on_progress is not None:
                self.on_progress(progress)
        elif kind == REFUSAL:
            if len(outcome.refusals) < MAX_REFUSALS:
                outcome.refusals.append(Refusal(message["operation"], message["target"], message.get("where")))
            else:
                outcome.refusals_dropped += 1
        elif kind == DIVERGENCE:
            self._child_divergence = DivergenceReport.from_json(message["report"])
        elif kind == RESULT:
            self._apply_result(message, outcome)
        elif kind == ERROR:
            self._child_error(message, outcome)
        if self.on_message is not None and self._stop_reason != PROTOCOL:
            self.on_message(message)

    def _hello(self, message: dict[str, Any], outcome: ReplayOutcome) -> None:
        """The isolation the child entered, checked against the sandbox the parent launched it into."""
        outcome.child_startup_s = round(time.perf_counter() - self._spawned, 4)
        isolation = IsolationInfo.from_json(message["isolation"])
        launched = self._launch.policy.mechanism if self._launch is not None else None
        said = isolation.sandbox.get("mechanism") if isolation.sandbox is not None else None
        if launched is not None and said != launched:
            self._fault(
                f"hello message: field isolation.sandbox.mechanism: the child was launched with {launched!r}, found {said!r}"
            )
            return
        outcome.isolation = isolation
        missing = isolation.missing_layers or ([] if isolation.sandbox else ["sandbox"])
        if self.spec.require_isolation and missing:
            self._stop_reason = "isolation"
            outcome.fail("isolation", "--require-isolation: missing sandbox layer(s): " + ", ".join(missing))

    def _child_error(self, message: dict[str, Any], outcome: ReplayOutcome) -> None:
        """The child's error, in the user's terms: their journal (not its copy), and why an agent did not import."""
        outcome.status = FAILED
        text: str = message["message"]
        copy = self._launch.journal_copy if self._launch is not None else None
        if copy:  # the user knows their journal, not its copy
            text = text.replace(copy, self.spec.journal)
        if message["kind"] == AGENT_IMPORT and self._launch is not None:
            text += unreadable_path_hint(self._launch)
        outcome.error = {"kind": message["kind"], "message": text, "traceback": list(message["traceback"])}

    def _apply_result(self, message: dict[str, Any], outcome: ReplayOutcome) -> None:
        """The child's own view: its status is a claim (``_decide`` checks it), its timings are informational."""
        outcome.status = str(message.get("status", FAILED))
        names = [
            "first_seq",
            "from_seq",
            "resumed_from_snapshot",
            "elapsed_s",
            "replay_s",
            "replay_cpu_s",
            "events_per_s",
            "first_event_cpu_s",
            "child_cpu_s",
        ]
        if self.spec.mode in JOURNAL_JUDGED_MODES:
            names += ["consumed", "total", "state_checks", "observations_served", "unused", "experiment"]
        if self.spec.out:
            names.append("out")
        for name in names:
            if name in message:
                setattr(outcome, name, message[name])
        outcome.child_phases = message.get("phases")
        outcome.live_calls = list(message.get("live_calls") or [])
        if message.get("last_seq") is not None and self.spec.mode in JOURNAL_JUDGED_MODES:
            outcome.last_seq = message["last_seq"]

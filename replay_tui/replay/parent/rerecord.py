"""Re-record: after an intended behaviour change, turn an old journal into a new one.

Two passes. First an ordinary strict replay (child process, network off) finds the
first divergence, seq N. Then the agent runs again, in this process (outside the sandbox: its
live plugins are the point), on a harness
whose observations come from the old journal for every event before N (looked up
by key, each once, as recorded) and from the live plugins of ``config`` from N on;
every event goes to the new journal. The events before N are checked against the
old journal as they are written, so a run that is not deterministic up to the
divergence is stopped and its partial journal removed. The old journal is only
ever read. Since the second pass runs outside the sandbox, its code is the one the user names
with ``--agent``: the entry point the journal records is never imported here (a journal could
name ``builtins:print``, or any script in the current directory), and the redaction rules are
the config's (``recorded.recorded_config``), never the journal's.

    replay-tui replay OLD.jsonl --rerecord-from-divergence --agent my_agent:run --config agent.toml --out NEW.jsonl
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from ...harness import ConfigError, Harness, HarnessError, JsonlSink, StopRun, build_harness, load_config, run_agent
from ...harness.replay_support import RecordedObservations
from ...harness.seam import ObservationSource
from ...journal import Event, JournalError, open_journal
from ...journal.hashing import file_sha256
from ...journal.levels import recorded_level
from ...journal.model import OBSERVATION_KINDS, event_id_for
from ..compare import read_events
from ..protocol import ReplaySpec
from ..recorded import recorded_config, recorded_inputs
from ..referee import mismatch
from .outcome import ReplayOutcome
from .runner import DIVERGED, MATCH, UNUSED_EVENTS, ReplayRunner


class RerecordError(Exception):
    """Re-recording cannot start or could not finish; nothing was left at ``--out``."""


class PrefixMismatch(StopRun):
    """The second run left the old journal before the divergence the replay found."""


@dataclass
class RerecordResult:
    journal: str
    out: str | None  # None: nothing to re-record (the replay matched)
    replay: ReplayOutcome
    divergence_seq: int | None
    events_written: int = 0
    served_from_journal: int = 0
    run_status: str | None = None
    journal_sha256: str = ""

    @property
    def exit_code(self) -> int:
        """0 re-recorded, or nothing to do; otherwise the replay's own exit code (1, or 2 for bad input)."""
        return 0 if self.out is not None else self.replay.exit_code

    def to_text(self) -> str:
        if self.out is None:
            if self.replay.status == MATCH:
                return f"{self.replay.headline()}\nNothing to re-record: the journal already matches the current code."
            return f"Cannot re-record: the replay stopped before any divergence ({self.replay.status}).\n\n{self.replay.to_text()}"
        lines = [
            f"Re-recorded from seq={self.divergence_seq}: {self.served_from_journal} observations before it came from "
            f"{self.journal}, the rest ran live.",
            f"new journal: {self.out} ({self.events_written} events, run ended {self.run_status})",
            f"old journal untouched: sha256 {self.journal_sha256[:16]}… before and after",
        ]
        if self.replay.divergence:
            lines += ["", "the divergence that was re-recorded:", self.replay.divergence.to_text()]
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        return {
            "journal": self.journal,
            "out": self.out,
            "divergence_seq": self.divergence_seq,
            "events_written": self.events_written,
            "served_from_journal": self.served_from_journal,
            "run_status": self.run_status,
            "journal_sha256": self.journal_sha256,
            "replay": self.replay.to_json(),
        }


class BeforeDivergence(Mapping[str, ObservationSource]):
    """The harness's ``sources``: the recorded source for every observation kind while
    the next event the harness writes comes before ``divergence_seq``, none after it
    (so the harness calls its live plugins)."""

    def __init__(self, harness: Harness, source: ObservationSource, divergence_seq: int) -> None:
        self._harness = harness
        self._source = source
        self._divergence_seq = divergence_seq

    def _active(self) -> bool:
        return self._harness.last_seq + 1 < self._divergence_seq

    def __getitem__(self, kind: str) -> ObservationSource:
        if kind in OBSERVATION_KINDS and self._active():
            return self._source
        raise KeyError(kind)

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(OBSERVATION_KINDS) if self._active() else ())

    def __len__(self) -> int:
        return len(OBSERVATION_KINDS) if self._active() else 0


class PrefixCheckingSink:
    """Writes every event to the new journal; before ``divergence_seq`` each one must
    match the old journal's event of the same seq (parents compared by seq)."""

    def __init__(self, sink: JsonlSink, recorded: Sequence[Event], divergence_seq: int, new_run_id: str) -> None:
        self.sink = sink
        self.recorded = {event.seq: event for event in recorded if event.seq < divergence_seq}
        self.divergence_seq = divergence_seq
        self.new_prefix = f"{new_run_id}:"
        self.written = 0

    def emit(self, kind: str, payload: dict[str, Any], *, step_id: str | None, parent_event_id: str | None) -> Event:
        event = self.sink.emit(kind, payload, step_id=step_id, parent_event_id=parent_event_id)
        self.written += 1
        old = self.recorded.get(event.seq)
        if event.seq < self.divergence_seq and old is not None:
            parent = parent_event_id
            if parent is not None and parent.startswith(self.new_prefix):
                parent = event_id_for(old.run_id, int(parent[len(self.new_prefix) :]))
            found = mismatch(old, kind, payload, step_id, parent)
            if found is not None:
                raise PrefixMismatch(
                    f"seq {event.seq} differs from the old journal before the divergence at seq {self.divergence_seq} "
                    f"({found[0]}): the agent is not deterministic up to the divergence"
                )
        return event

    def close(self) -> None:
        self.sink.close()


def rerecord(
    journal: str,
    *,
    config: str,
    out: str,
    agent: str | None = None,
    agent_path: Sequence[str] = (),
    timeout_s: float | None = 600.0,
) -> RerecordResult:
    """Replay ``journal`` strictly; on a divergence, re-run live from it into ``out``."""
    if not agent:
        raise RerecordError(
            "--rerecord-from-divergence runs the agent live in this process, outside the sandbox: name the code to "
            "run with --agent MODULE:ATTR (the entry point the journal records is never imported outside the sandbox)"
        )
    if Path(out).exists():
        raise RerecordError(f"--out {out} already exists; re-recording never overwrites a journal")
    if Path(out).resolve() == Path(journal).resolve():
        raise RerecordError("--out must be a new file, not the journal being re-recorded")
    try:
        live_config = load_config(config)
    except (ConfigError, OSError) as error:
        raise RerecordError(str(error)) from None
    before = file_sha256(journal)
    replay = ReplayRunner(
        ReplaySpec(journal=journal, agent=agent, sys_path=list(agent_path)), timeout_s=timeout_s
    ).run()
    result = RerecordResult(journal, None, replay, None, journal_sha256=before)
    if replay.status == DIVERGED and replay.divergence is not None:
        result.divergence_seq = replay.divergence.seq
    elif replay.status == UNUSED_EVENTS and replay.last_seq is not None:
        result.divergence_seq = replay.last_seq + 1  # the new code ends earlier: the rest is dropped
    else:
        return result
    sys.path[:0] = [path for path in agent_path if path not in sys.path]
    try:
        _continue_live(result, live_config, out, agent)
    except BaseException:
        Path(out).unlink(missing_ok=True)
        raise
    if file_sha256(journal) != before:  # cannot happen: the journal is opened read-only
        raise RerecordError(f"{journal} changed while it was re-recorded")
    return result


def _continue_live(result: RerecordResult, live_config: Any, out: str, agent: str) -> None:
    assert result.divergence_seq is not None
    try:
        with open_journal(result.journal) as journal:
            recorded = read_events(journal)
            inputs = recorded_inputs(journal)
    except JournalError as error:
        raise RerecordError(str(error)) from None
    first = recorded[0]
    agent_name = agent  # the user's: never the entry point the journal names (this process has no sandbox)
    new_run_id = f"{first.run_id}-rerecorded"
    before = [event for event in recorded if event.seq < result.divergence_seq]
    source = RecordedObservations(before)
    sink = PrefixCheckingSink(JsonlSink(out, run_id=new_run_id), recorded, result.divergence_seq, new_run_id)
    try:
        recording = build_harness(
            recorded_config(first, result.journal, plugins_from=live_config),
            sink=sink,
            run_id=new_run_id,
            agent=agent_name,
            level=recorded_level(first.payload),
        )
    except (ConfigError, HarnessError, ValueError, ImportError) as error:  # a plugin refused its options
        sink.close()
        raise RerecordError(
            f"{live_config.source}: {error}" if str(live_config.source) not in str(error) else str(error)
        ) from None
    harness = recording.harness
    harness.sources = BeforeDivergence(harness, source, result.divergence_seq)
    with recording:
        try:
            outcome = run_agent(agent_name, harness, inputs)
        except PrefixMismatch as error:
            raise RerecordError(str(error)) from None
    result.out = out
    result.events_written = sink.written
    result.served_from_journal = sum(1 for event in before if event.kind in OBSERVATION_KINDS) - source.remaining()
    result.run_status = outcome.status

"""The replay session inside the child: open the journal, verify it, load the agent, run it.

This module runs only in the child, after isolation. It builds the harness the way
the recording did (same redaction and harness options, taken from run.started), but
with the tape as its sink and sources, so in strict mode no plugin is even started:
there is no model and no tool to call. Experiments start exactly one plugin group
from the live config and serve the other observations from the journal by key.
"""

from __future__ import annotations

import os
import time
import traceback
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from ...journal import Event, Journal, open_journal
from ...journal.dialects import V1
from ...journal.levels import recorded_level
from ...journal.model import (
    INPUT_RECEIVED,
    MODEL_RESPONSE,
    OBSERVATION_KINDS,
    RUN_ENDED,
    RUN_STARTED,
    STATE_SNAPSHOT,
    STATE_TRANSITION,
    TOOL_RESULT,
)
from ..modes import MODEL_LIVE, MODES, SHUFFLE, TOOLS_LIVE
from ..protocol import DIVERGENCE, START, ReplaySpec
from ..recorded import recorded_config, recorded_inputs
from ..referee import EXPERIMENT_SERVED_KINDS, nearest_snapshot
from .entry_point import load_entry_point
from .scheduler import TapeTurns
from .tape import (
    OBSERVATION_KEY,
    Divergence,
    KeyedSource,
    StrictSink,
    StrictSource,
    Tape,
    UnrecordedCall,
)

if TYPE_CHECKING:
    from ..isolation import SocketGuard
    from .main import Channel

#: Per experiment: the observation kinds served from the journal, and the plugin kinds started live.
EXPERIMENTS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    MODEL_LIVE: (EXPERIMENT_SERVED_KINDS[MODEL_LIVE], frozenset({"model"})),
    TOOLS_LIVE: (EXPERIMENT_SERVED_KINDS[TOOLS_LIVE], frozenset({"tools", "memory"})),
}


AGENT_TRACEBACK_LINES = 20


class UsageError(Exception):
    """The spec asks for something impossible (bad mode, bad --from-seq, missing config)."""


class ReplaySession:
    """One replay or experiment, from the child's point of view."""

    def __init__(self, spec: ReplaySpec, channel: "Channel", guard: "SocketGuard") -> None:
        if spec.mode not in MODES:
            raise UsageError(f"unknown mode {spec.mode!r}; expected one of {', '.join(MODES)}")
        if spec.from_seq is not None and spec.from_seq < 1:
            raise UsageError(f"--from-seq must be a positive seq, not {spec.from_seq}")
        if spec.mode == SHUFFLE and (not spec.out or spec.shuffle_seed is None):
            raise UsageError("a shuffle run writes its own journal: give --out PATH and a seed")
        if spec.mode in EXPERIMENTS and not spec.out:
            raise UsageError(f"a {spec.mode} experiment writes its own journal: give --out PATH")
        if spec.mode == MODEL_LIVE and not spec.model_config:
            raise UsageError("model-live needs --model-config FILE naming the model plugin that answers")
        if spec.mode == TOOLS_LIVE and not spec.tools_config:
            raise UsageError("tools-live needs --tools-config FILE naming the tool plugins that run")
        if spec.out and Path(spec.out).exists():
            raise UsageError(f"--out {spec.out} already exists; an experiment never overwrites a journal")
        self.spec = spec
        self.channel = channel
        self.guard = guard
        self.started = time.perf_counter()
        self.verification: dict[str, Any] | None = None
        self.loop: tuple[float, float] | None = None  # (wall, cpu) seconds of the replay loop
        self.agent_error: list[str] | None = None  # traceback of the exception the agent ended with

    # -- entry ---------------------------------------------------------------------------

    def run(self) -> dict[str, Any]:
        self.channel.phase("engine")
        journal = Journal(self.spec.journal)
        total_bytes = max(journal.known_bytes(), 1)
        journal.index(progress=lambda done, _: self.channel.progress("load", done, total_bytes, None))
        total = len(journal)
        self.channel.phase("journal_index")
        if self.spec.verify_hash_chain:
            self.channel.progress("verify", 0, total, None, force=True)
            from ...journal import verify_journal  # only when asked: the runner verifies in the parent instead

            verification = verify_journal(self.spec.journal)
            self.verification = verification.to_json()
            if not verification.ok:
                return self.result("verification_failed", 0, total)
        if journal.dialect != V1:
            raise UsageError(
                f"{self.spec.journal} is in the {journal.dialect} dialect of another harness: it can be opened, "
                "verified and diffed, but only a journal recorded by the replay-tui harness can be replayed"
            )
        first = journal.event(0)
        if first.kind != RUN_STARTED:
            raise UsageError(
                f"{self.spec.journal}: seq {first.seq} is {first.kind}; a replayable journal starts with run.started"
            )
        last_seq = journal.event(total - 1).seq
        if self.spec.from_seq is not None and self.spec.from_seq > last_seq:
            raise UsageError(f"--from-seq {self.spec.from_seq} is past the end of the journal (last seq {last_seq})")
        agent_name = self.spec.agent or first.payload["agent"]
        if self.spec.wait_for_go:
            self.channel.phase("journal_checks")
            await_go()
            self.channel.phase("wait_for_go")
        entry = load_entry_point(agent_name)
        self.channel.phase("agent_import")
        if self.spec.mode in EXPERIMENTS:
            return self.run_experiment(journal, first, agent_name)
        if self.spec.mode == SHUFFLE:
            return self.run_shuffle(journal, first, agent_name)
        return self.run_strict(journal, first, agent_name, entry)

    # -- strict --------------------------------------------------------------------------

    def run_strict(self, journal: Journal, first: Event, agent_name: str, entry: Any) -> dict[str, Any]:
        from ...harness import HarnessError, JsonlSink, StepAgent, StopRun, UnusableJournal, run_agent
        from ...harness.replay_support import harness_for_recording

        spec = self.spec
        resume: Event | None = None
        if spec.from_seq is not None and _is_step_agent(entry, StepAgent):
            resume = nearest_snapshot(journal, spec.from_seq)
        start = journal.position_of_seq(resume.seq) + 1 if resume is not None else 0  # type: ignore[operator]
        tape = Tape(journal, start, verified=spec.journal_verified)
        to_consume = tape.total - start
        checks = {"state": 0, "observations": 0}
        from_seq = spec.from_seq or 1

        def matched(event: Event) -> None:
            if event.kind in (STATE_TRANSITION, STATE_SNAPSHOT):
                checks["state"] += 1
            elif event.kind in OBSERVATION_KINDS:
                checks["observations"] += 1
            phase = "fast-forward" if event.seq < from_seq else "replay"
            self.channel.progress(phase, tape.consumed, to_consume, event.seq)

        tee = None
        if spec.out:
            start_after = (resume.seq, resume.event_hash) if resume is not None and resume.event_hash else None
            tee = JsonlSink(spec.out, run_id=f"{first.run_id}-{spec.mode}", start_after=start_after)
        self.channel.send(START, resume_seq=resume.seq if resume is not None else None)
        turns = TapeTurns(tape, on_request=self.channel.request)
        sink = StrictSink(tape, tee=tee, on_match=matched, on_produce=self.channel.produce, turns=turns)
        source = StrictSource(tape, on_request=self.channel.request)
        sources = {kind: source for kind in OBSERVATION_KEY}
        inputs = [] if resume is not None else recorded_inputs(journal)
        divergence: Divergence | None = None
        # strict: no model and no tools are given to the harness, so nothing live can be called
        try:
            harness = harness_for_recording(first, sink=sink, observation_sources=sources, turns=turns)
        except HarnessError as error:
            raise UsageError(f"{spec.journal}: its run.started cannot configure a replay: {error}") from None
        if resume is not None:
            restore_causal_cursor(harness, journal, resume)
        self.keep_agent_error(harness)
        self.channel.phase("tape_and_harness")
        loop_started, loop_cpu = time.perf_counter(), time.process_time()
        try:
            run_agent(agent_name, harness, inputs, resume_from=resume)
        except Divergence as found:
            divergence = found
        except UnusableJournal as unusable:  # an unreadable line, or a payload its recorder cannot hand over
            raise unusable.error.located(path=spec.journal) from None
        except StopRun:
            pass  # ReplayStopped after a swallowed divergence: the tape knows the first one
        finally:
            sink.close()
            self.loop = (time.perf_counter() - loop_started, time.process_time() - loop_cpu)
            self.channel.phase("agent_run")
        if divergence is None and isinstance(tape.stopped, Divergence):
            divergence = tape.stopped
        self.channel.progress("replay", tape.consumed, to_consume, tape.last_seq, force=True)
        common = {
            "first_seq": resume.seq + 1 if resume is not None else 1,
            "from_seq": spec.from_seq,
            "resumed_from_snapshot": resume.seq if resume is not None else None,
            "state_checks": checks["state"],
            "observations_served": checks["observations"],
            "last_seq": tape.last_seq,
        }
        if divergence is not None:
            self.send_divergence(journal, divergence)
            return self.result("diverged", tape.consumed, to_consume, unused=tape.unused(), **common)
        unused = tape.unused()
        if unused and (spec.strict or spec.fail_on_unused_events):
            return self.result("unused_events", tape.consumed, to_consume, unused=unused, **common)
        return self.result("match", tape.consumed, to_consume, unused=unused, **common)

    def keep_agent_error(self, harness: Any) -> None:
        """Remember the traceback of an exception the agent ends its run with.

        ``run_agent`` turns it into run.ended {status: error}; when that diverges, the
        report shows where in the agent code it was raised.
        """
        end_run: Callable[[str, Any, Any], Event] = harness.end_run

        def end_run_keeping_traceback(status: str = "ok", output: Any = None, error: Any = None) -> Event:
            if isinstance(error, BaseException):
                lines = "".join(traceback.format_exception(error)).rstrip("\n").splitlines()
                self.agent_error = lines[-AGENT_TRACEBACK_LINES:]
            return end_run(status, output, error)

        harness.end_run = end_run_keeping_traceback

    def send_divergence(self, journal: Journal, divergence: Divergence) -> None:
        from ..report import build_report

        report = build_report(
            journal,
            divergence.seq,
            divergence.reason,
            divergence.produced,
            expected=divergence.expected,
            parent_matches=divergence.parent_matches,
        )
        if self.agent_error and divergence.produced and divergence.produced.get("kind") == RUN_ENDED:
            report.agent_traceback = self.agent_error
        self.channel.send(DIVERGENCE, report=report.to_json())

    # -- experiments -----------------------------------------------------------------------

    def run_experiment(self, journal: Journal, first: Event, agent_name: str) -> dict[str, Any]:
        from ...harness import ConfigError, JsonlSink, build_harness, load_config
        from ..compare import read_events
        from ..experiment_verdict import summarize_experiment

        spec = self.spec
        served, live = EXPERIMENTS[spec.mode]
        try:
            live_config = load_config(spec.model_config if spec.mode == MODEL_LIVE else spec.tools_config)  # type: ignore[arg-type]
            config = recorded_config(first, spec.journal, plugins_from=live_config)
        except ConfigError as error:
            raise UsageError(str(error)) from None
        recorded = read_events(journal)
        source = KeyedSource(recorded, served)
        sink = CountingSink(
            JsonlSink(spec.out, run_id=f"{first.run_id}-{spec.mode}"),  # type: ignore[arg-type]
            lambda count, event: self.channel.progress("replay", count, len(recorded), event.seq),
        )
        try:
            recording = build_harness(
                config,
                sink=sink,
                run_id=f"{first.run_id}-{spec.mode}",
                agent=agent_name,
                observation_sources={kind: source for kind in served},
                extensions=live,
                environment=first.payload.get("environment") or {},
                level=recorded_level(first.payload),  # the experiment keeps what the recording kept
            )
        except ConfigError as error:
            sink.close()
            Path(spec.out).unlink()  # type: ignore[arg-type]  # nothing was written: leave no empty journal
            raise UsageError(str(error)) from None
        with recording:
            stopped = self.run_to_its_end(agent_name, recording.harness, journal)
        with open_journal(spec.out) as produced_journal:  # type: ignore[arg-type]
            produced = read_events(produced_journal)
        experiment = summarize_experiment(spec.mode, recorded, produced, served, stopped)
        first_pair = experiment.pop("_first_pair")
        if first_pair is not None:
            self.send_pair_report(journal, first_pair, stopped)
        status = "unrecorded_call" if stopped else ("match" if experiment["identical"] else "diverged")
        live_calls = [
            {"seq": event.seq, "kind": event.kind, "key": event.payload.get(OBSERVATION_KEY[event.kind])}
            for event in produced
            if event.kind in OBSERVATION_KINDS and event.kind not in served
        ]
        return self.result(
            status,
            sink.count,
            len(recorded),
            unused=source.unused(),
            experiment=experiment,
            live_calls=live_calls,
            last_seq=produced[-1].seq if produced else None,
        )

    def run_shuffle(self, journal: Journal, first: Event, agent_name: str) -> dict[str, Any]:
        """Everything served from the journal by key, the answers of concurrent calls released in the seed's
        permuted order (shuffle.py); the agent's events go to the run's own journal, which the parent judges."""
        from ...harness import HarnessError, JsonlSink
        from ...harness.replay_support import harness_for_recording
        from ..compare import read_events
        from .shuffle import ShuffleTurns

        spec = self.spec
        recorded = read_events(journal)
        assert spec.shuffle_seed is not None and spec.out is not None  # (checked in __init__)
        turns = ShuffleTurns(recorded, spec.shuffle_seed)
        source = KeyedSource(recorded, OBSERVATION_KINDS)  # (turns serve; the source says what is served)
        sink = CountingSink(
            JsonlSink(spec.out, run_id=f"{first.run_id}-{SHUFFLE}"),
            lambda count, event: self.channel.progress("replay", count, len(recorded), event.seq),
        )
        try:
            harness = harness_for_recording(
                first, sink=sink, observation_sources={kind: source for kind in OBSERVATION_KINDS}, turns=turns
            )
        except HarnessError as error:
            sink.close()
            raise UsageError(f"{spec.journal}: its run.started cannot configure a replay: {error}") from None
        try:
            stopped = self.run_to_its_end(agent_name, harness, journal)
        finally:
            sink.close()
        with open_journal(spec.out) as produced_journal:
            produced = read_events(produced_journal)
        status = "unrecorded_call" if stopped and stopped.get("kind") else "match"
        summary = f"seed {spec.shuffle_seed}: {turns.groups} group(s) of concurrent calls permuted"
        experiment = {
            "mode": SHUFFLE,
            "identical": status == "match",
            "summary": summary,
            "stopped": stopped,
            "first_difference": None,
            "first_decision": None,
            "first_live_observation": None,
            "alignment": {"groups": turns.groups, "skipped": len(turns.skipped)},
        }
        return self.result(
            status,
            sink.count,
            len(recorded),
            experiment=experiment,
            last_seq=produced[-1].seq if produced else None,
        )

    def run_to_its_end(self, agent_name: str, harness: Any, journal: Journal) -> dict[str, Any] | None:
        """Run the agent on the recorded inputs, writing its own journal (an experiment, a shuffle run); what
        stopped it (a call the journal never recorded, another stop), or None when it ended."""
        from ...harness import StopRun, UnusableJournal, run_agent

        try:
            run_agent(agent_name, harness, recorded_inputs(journal))
        except UnrecordedCall as missing:
            return {"kind": missing.kind, "key": missing.key, "request": missing.request}
        except UnusableJournal as unusable:
            raise unusable.error.located(path=self.spec.journal) from None
        except StopRun as other:
            return {"kind": None, "key": None, "request": None, "message": str(other)}
        return None

    def send_pair_report(self, journal: Journal, pair: Any, stopped: dict[str, Any] | None) -> None:
        from ..experiment_verdict import pair_report

        self.channel.send(DIVERGENCE, report=pair_report(journal, pair, stopped).to_json())

    # -- result ------------------------------------------------------------------------------

    def result(self, status: str, consumed: int, total: int, **fields: Any) -> dict[str, Any]:
        elapsed = time.perf_counter() - self.started
        loop_s, loop_cpu_s = self.loop or (elapsed, None)
        fields.setdefault("unused", None)
        fields.setdefault("verification", self.verification)
        fields.setdefault("out", self.spec.out)
        fields.setdefault("experiment", None)
        fields.setdefault("live_calls", [])
        fields.setdefault("first_seq", 1)
        fields.setdefault("from_seq", self.spec.from_seq)
        return {
            "status": status,
            "consumed": consumed,
            "total": total,
            "refusals": [refusal.to_json() for refusal in self.guard.refusals],
            "elapsed_s": round(elapsed, 4),
            # the rate of the replay loop itself (journal indexing and agent import excluded)
            "replay_s": round(loop_s, 4),
            "replay_cpu_s": round(loop_cpu_s, 4) if loop_cpu_s is not None else None,
            "events_per_s": round(consumed / loop_s, 1) if loop_s > 0 else None,
            **fields,
        }


# -- helpers -------------------------------------------------------------------------------


def await_go() -> None:
    """Block until the parent says "go" on stdin (its verification passed); then stdin is /dev/null.

    Anything else (EOF: the parent killed us or went away) ends the child before agent code runs.
    """
    received = b""
    while not received.endswith(b"\n"):
        chunk = os.read(0, 16)
        if not chunk:
            os._exit(3)
        received += chunk
    if received != b"go\n":
        os._exit(3)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)


class CountingSink:
    """An EventSink that passes events on to ``sink`` and reports each one (progress)."""

    def __init__(self, sink: Any, on_event: Callable[[int, Event], None]) -> None:
        self.sink = sink
        self.on_event = on_event
        self.count = 0

    def emit(self, kind: str, payload: dict[str, Any], *, step_id: str | None, parent_event_id: str | None) -> Event:
        event: Event = self.sink.emit(kind, payload, step_id=step_id, parent_event_id=parent_event_id)
        self.count += 1
        self.on_event(self.count, event)
        return event

    def close(self) -> None:
        self.sink.close()


def _is_step_agent(entry: Any, step_agent: type) -> bool:
    return isinstance(entry, step_agent) or (isinstance(entry, type) and issubclass(entry, step_agent))


def restore_causal_cursor(harness: Any, journal: Journal, snapshot: Event) -> None:
    """Give a resumed harness the causes the recording had at the snapshot.

    Snapshots written by this harness carry the causal cursor and ``resume`` restores
    it. For older snapshots it is read back from the journal: the last tool.result or
    input.received before the snapshot (parent of the next model.request) and the last
    model.response with the ids of the calls it asked for (parent of those tool.calls).
    """
    resume = snapshot.payload.get("resume")
    if isinstance(resume, dict) and "cursor" in resume:
        return  # (any other shape: Harness.resume names it as a journal error)
    observation = response = None
    for position in range(journal.position_of_seq(snapshot.seq) or 0, -1, -1):
        event = journal.event(position)
        if observation is None and event.kind in (TOOL_RESULT, INPUT_RECEIVED):
            observation = event
        if response is None and event.kind == MODEL_RESPONSE:
            response = event
        if observation is not None and response is not None:
            break
    calls = ((response.payload.get("response") or {}).get("tool_calls") or []) if response is not None else []
    harness.restore_causal_cursor(
        {
            "observation_seq": observation.seq if observation is not None else None,
            "response_seq": response.seq if response is not None else None,
            "response_call_ids": sorted(
                call["id"] for call in calls if isinstance(call, dict) and isinstance(call.get("id"), str)
            ),
        }
    )

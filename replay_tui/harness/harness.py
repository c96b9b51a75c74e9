"""The Harness: the one object an agent talks to, and the only writer of events.

Every boundary of non-determinism goes through it: ``model``, ``tool``/``atool``,
``clock``, ``random``, ``ids``, ``memory``. For each observation kind the harness
either asks its ``ObservationSource`` (replay) or calls the live plugin (record),
never both, and then emits the observation through the sink either way, so seq
numbering is the same in record and in replay. After each event the reducer runs
and a ``state.transition`` is written when the state changed.
"""

from __future__ import annotations

import contextlib
import inspect
import os
import threading
import time
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, AsyncIterable, Awaitable, Callable, Iterator, Mapping, Sequence

import orjson

from .. import __version__
from ..journal import Event, JournalError, call_key_of
from ..journal.canonical import CanonicalizationError, canonical_json_of_parsed
from ..journal.errors import SchemaError, missing
from ..journal.hashing import sha256_hex, state_hash
from ..journal.levels import TRACE, info_request, info_response
from ..journal.model import (
    INPUT_RECEIVED,
    MODEL_REQUEST,
    MODEL_RESPONSE,
    RUN_ENDED,
    RUN_STARTED,
    STATE_SNAPSHOT,
    STATE_TRANSITION,
    TOOL_CALL,
    TOOL_RESULT,
    event_id_for,
)
from .adapters import Clock, Expected, Ids, RandomSource
from .chunk_relay import OnChunk, astreamed_payload, recorded_cut, streamed_payload
from .lanes import Cursor, Lane, LaneKeeper
from .patch import diff
from .plugins import HookPoint, ModelClient, ToolSpec
from .redaction import Redactor
from .seam import (
    EventSink,
    ObservationSource,
    SealingSink,
    StopRun,
    UnusableJournal,
    cancellation_payload,
    error_from_payload,
    error_to_payload,
)
from .state import Reducer, StateTracker, Transition, identity_reducer
from .streaming import split_stream
from .transport import JsonlSink
from .turns import Pending, Reserved, Turns
from .unrecorded import LOG, RecordingFailed, UnrecordedSink

DEFAULT_SNAPSHOT_EVERY = 100


class HarnessError(RuntimeError):
    """Misuse of the harness (unknown tool, non-JSON arguments, a sink that skipped a seq)."""


@dataclass(frozen=True)
class RunInfo:
    """What run.started records about the harness itself (besides agent and state)."""

    agent: str
    environment: Mapping[str, Any]
    harness: Mapping[str, Any]


class Harness:
    """One run of one agent.

    Record: ``Harness(sink=JsonlSink(...), model=..., tools=...)``, or
    ``build_harness(config, journal=...)``. Replay: the same with
    ``observation_sources={kind: source}`` for the kinds to serve from a journal
    (see ``replay_tui.harness.replay_support``).
    """

    def __init__(
        self,
        *,
        sink: EventSink,
        run_id: str,
        observation_sources: Mapping[str, ObservationSource] | None = None,
        model: ModelClient | None = None,
        tools: Mapping[str, ToolSpec] | None = None,
        hooks: Sequence[HookPoint] = (),
        redactor: Redactor | None = None,
        snapshot_every: int = DEFAULT_SNAPSHOT_EVERY,
        wall_clock: Callable[[], float] = time.time,
        monotonic_clock: Callable[[], float] = time.monotonic,
        random_seed: int | None = None,
        run_info: RunInfo | None = None,
        turns: Turns | None = None,
        on_journal_error: str = "fail",
        level: str = TRACE,
        trace_flag: str | None = None,
    ) -> None:
        if snapshot_every < 1:
            raise HarnessError("snapshot_every must be at least 1")
        self.sink = sink
        self._sealing_sink = sink if isinstance(sink, SealingSink) else None  # checked once: a Protocol check is slow
        # takes a payload's canonical JSON (a subclass may have its own emit, without it)
        self._journal_sink = sink if type(sink) is JsonlSink else None
        self.run_id = run_id
        self.sources: Mapping[str, ObservationSource] = dict(observation_sources or {})  # replay may swap in a view
        # A strict replay's order of writes (the recorded interleaving); None while recording, where the
        # order of writes is the order things happen.
        self.turns = turns
        self.model_client = model
        self.tool_specs = dict(tools or {})
        self.hooks = list(hooks)
        self.redactor = redactor or Redactor()
        self.snapshot_every = snapshot_every
        self.run_info = run_info or RunInfo(
            agent="", environment={}, harness={"version": __version__, "plugins": [], "config_hash": None}
        )
        self.clock = Clock(self, wall_clock, monotonic_clock)
        self.random = RandomSource(self, random_seed)
        self.ids = Ids(self)
        self.tracker = StateTracker(identity_reducer, "none", None)
        self.last_seq = 0
        self.last_hash: str | None = None
        self.steps_done = 0
        self.snapshot_at_step_boundaries = False
        self._since_snapshot = 0
        self._last_event: Event | None = None
        # What the next events of each flow hang from (see lanes.py and causal_cursor()).
        self._lanes = LaneKeeper()
        # record_state's last input as orjson wrote it, and the state hash it gave
        self._last_framework_state: tuple[bytes, str] | None = None
        self.ended = False
        self._unusable: UnusableJournal | None = None  # see unusable_record
        # A journal that cannot be written: "fail" stops the run (RecordingFailed, raised again at every later
        # call), "continue" goes on with an UnrecordedSink (see unrecorded.py).
        self.on_journal_error = on_journal_error
        # What a model call keeps (journal/levels.py); ``trace_flag``: a file whose existence turns trace on
        # from the next model call, for a running session that needs it
        self.level = level
        self.trace_flag = trace_flag
        self._failed: RecordingFailed | None = None
        self.unrecorded: BaseException | None = None  # why the run went on unrecorded
        # replay: the responses open_model_exchange wrote (or took, to write when their stream ends), by request
        self._served_responses: dict[str, Event | _Deferred] = {}
        self.session: Any = None  # the Session a service records (record_session), else None
        self.session_input: Event | None = None
        # Events come from any task or thread (concurrent tool calls, LangGraph's ToolNode threads, a
        # service's sessions): each is written whole, with its own seq and its link in the chain, under
        # this lock, in the order they happen.
        self._bus_lock = threading.RLock()

    @property
    def step_id(self) -> str | None:
        """The step the calling flow is in (``with h.step()``, or set by a framework recorder): concurrent
        sub-agents, graph branches and sessions each name their own (see lanes.py)."""
        return self._lanes.lane().step

    @step_id.setter
    def step_id(self, value: str | None) -> None:
        self._lanes.lane().set_step(value)

    def flow_observation_seq(self) -> int | None:
        """The seq of the calling flow's last observation (a tool's result just served to it), whatever other
        flows wrote since: ``last_event`` is the run's, which a parallel branch may have moved on."""
        return self._lanes.lane().own.observation_seq or None

    def name_flow_step(self, step: str | None) -> str | None:
        """Name the step of the calling flow only, not of the flows it was started from (as ``step_id = ...``
        does: a graph node running beside others must not rename its parent's step); returns the step it had."""
        lane = self._lanes.lane()
        previous, lane.step = lane.step, step
        return previous

    # -- run lifecycle -----------------------------------------------------------------

    def use_reducer(self, reducer: Reducer, reducer_version: str, initial_state: Any) -> None:
        """Register the reducer before the run starts (``next = reduce(state, event)``)."""
        if self.last_seq:
            raise HarnessError("the reducer is registered before run.started")
        self.tracker = StateTracker(reducer, reducer_version, initial_state)

    def start_run(self, agent: str | None = None) -> Event:
        info = self.run_info
        payload = {
            "agent": agent or info.agent,
            "environment": dict(info.environment),
            "harness": dict(info.harness),
            "reducer_version": self.tracker.reducer_version,
            "snapshot_every": self.snapshot_every,
            "initial_state": self.tracker.state,
        }
        event = self._emit(RUN_STARTED, payload, step_id=None, parent=None, reduce=False)
        if event.payload["initial_state"] != self.tracker.state:
            self.tracker.reset(
                event.payload["initial_state"]
            )  # later snapshots hold the redacted state, not the secret
        return event

    def resume(self, snapshot: Event) -> None:
        """Continue a run from a recorded ``state.snapshot``: state = the snapshot's state,
        the next event gets snapshot seq + 1 and chains to its hash. The sink must
        continue at the same point (``JsonlSink(start_after=...)`` or a replay sink)."""
        if snapshot.kind != STATE_SNAPSHOT:
            raise HarnessError(f"can only resume from a state.snapshot, seq {snapshot.seq} is {snapshot.kind}")
        if self.last_seq:
            raise HarnessError("resume() must come before any event is emitted")
        self.tracker.reset(snapshot.payload["state"])
        if self.tracker.hash != snapshot.payload["state_hash"]:
            expected = f"the hash of payload.state ({self.tracker.hash})"
            found = snapshot.payload["state_hash"]
            raise self.unusable_record(SchemaError("payload.state_hash", expected, found, seq=snapshot.seq))
        resume = snapshot.payload.get("resume")
        if resume is None:
            resume = {}
        problem = _resume_problem(resume)
        if problem is not None:
            field, expected, found = problem
            raise self.unusable_record(SchemaError(f"payload.resume{field}", expected, found, seq=snapshot.seq))
        self.last_seq, self.last_hash = snapshot.seq, snapshot.event_hash
        self.steps_done = resume.get("steps_done", 0)
        if "cursor" in resume:
            self.restore_causal_cursor(resume["cursor"])
        self._since_snapshot = 0

    def causal_cursor(self) -> dict[str, Any]:
        """What the run's next events hang from: the last observation it received (parent of the next
        model.request) and the last model response with the ids of the tool calls it asked for (parent of
        those tool.call events). Snapshots record it so a resumed run links its first events exactly as
        the original (a run resumes in its own flow, which every flow's observations reach)."""
        with self._bus_lock:
            return _cursor_of(self._lanes.run_cursor())

    def restore_causal_cursor(self, cursor: Mapping[str, Any]) -> None:
        """Inverse of ``causal_cursor`` (seqs, so it holds across run ids), for the run's own flow."""
        observation, response = cursor.get("observation_seq"), cursor.get("response_seq")
        root = self._lanes.root.own
        root.observation = event_id_for(self.run_id, observation) if observation else None
        root.observation_seq = observation or 0
        root.response = event_id_for(self.run_id, response) if response else None
        root.response_seq = response or 0
        root.response_calls = frozenset(cursor.get("response_call_ids") or ())

    @staticmethod
    def _note_response(event: Event, lane: Lane) -> None:
        response = event.payload.get("response") or {}
        calls = response.get("tool_calls")
        lane.saw_response(
            event.event_id,
            event.seq,
            frozenset(
                call["id"]
                for call in (calls if isinstance(calls, list) else ())  # (a hostile journal's may be anything)
                if isinstance(call, Mapping) and isinstance(call.get("id"), str)
            ),
        )

    def receive_input(self, content: Any, *, role: str = "user", context: Any = None) -> Event:
        payload: dict[str, Any] = {"role": role, "content": _json_or_error(content, "input content")}
        if context is not None:
            payload["context"] = _json_or_error(context, "input context")
        return self._emit(INPUT_RECEIVED, payload, step_id=None, parent=None)

    def end_run(self, status: str = "ok", output: Any = None, error: Any = None) -> Event:
        """Write run.ended and close the sink. ``status`` is ok, error or cancelled."""
        if self.ended:
            raise HarnessError("run.ended was already written")
        if status not in ("ok", "error", "cancelled"):
            raise HarnessError(f"run status must be ok, error or cancelled, not {status!r}")
        try:
            output = _json_or_error(output, "agent output")
        except HarnessError as not_json:
            status, output, error = "error", None, not_json
        payload: dict[str, Any] = {"status": status, "output": output}
        if error is not None:
            payload["error"] = (
                error_to_payload(error) if isinstance(error, BaseException) else _json_or_error(error, "run error")
            )
        event = self._emit(RUN_ENDED, payload, step_id=None, parent=None, reduce=False)
        self.ended = True
        try:
            self.sink.close()
        except OSError as error:
            self._journal_failed(error)
        return event

    def _journal_failed(self, error: OSError) -> None:
        """The journal cannot be written: fail the run, or (``on_journal_error = "continue"``) go on unrecorded,
        said once in the recording log. Never anything beyond this run: each run has its own sink."""
        path = getattr(self.sink, "path", None)
        where = f"the journal {path}" if path is not None else "the journal"
        if self.on_journal_error != "continue":
            self._failed = RecordingFailed(
                f"run {self.run_id}: {where} cannot be written ({error}); the run is stopped "
                '(on_journal_error = "fail"; "continue" lets it go on unrecorded)'
            )
            raise self._failed from error
        if self.unrecorded is None:
            LOG.error(
                'run %s goes on UNRECORDED: %s cannot be written (%s); on_journal_error = "continue"',
                self.run_id,
                where,
                error,
            )
        self.unrecorded = error
        self.sink = UnrecordedSink(self.run_id, self.last_seq)
        self._journal_sink = self._sealing_sink = None

    @property
    def state(self) -> Any:
        """The reducer state as recorded (a JSON value; treat it as read-only)."""
        return self.tracker.state

    @contextlib.contextmanager
    def step(self, step_id: str | None = None) -> Iterator[str]:
        """Group the events of one agent step under ``step_id`` (default ``step-NN``)."""
        lane = self._lanes.lane()
        previous, named = lane.step, step_id or f"step-{self.steps_done + 1:02d}"
        lane.set_step(named)
        try:
            yield named
        finally:
            self.steps_done += 1
            lane.set_step(previous)
            if self.snapshot_at_step_boundaries:
                self._maybe_snapshot()

    # -- the bus -----------------------------------------------------------------------
    # Recording: an event is written at once, under the bus lock, from whichever task or thread it
    # happens in. A strict replay (``turns``) writes it at its recorded turn instead: ``_pending``
    # makes the event final, ``turns`` decides when ``_write`` writes it.

    def _emit(
        self,
        kind: str,
        payload: dict[str, Any],
        *,
        step_id: str | None,
        parent: str | None,
        reduce: bool = True,
        redact: bool = True,
        payload_json: bytes | None = None,
        finalize: Callable[[], dict[str, Any]] | None = None,
    ) -> Event:
        """Write one event; ``payload_json``: the canonical JSON of ``payload`` as written (``redact`` False);
        ``finalize``: makes the payload at the moment it is written (it depends on the state then)."""
        if self.turns is None:
            with self._bus_lock:  # one event at a time, whole, from any thread (see __init__)
                pending = self._pending(kind, payload, step_id, parent, redact, finalize)
                return self._write(pending, reduce=reduce, payload_json=payload_json)
        pending = self._placed(self._pending(kind, payload, step_id, parent, redact, finalize))
        return self.turns.write(pending, self._writer(reduce), nested=self._bus_lock._is_owned())  # type: ignore[attr-defined]

    async def _aemit(
        self,
        kind: str,
        payload: dict[str, Any],
        *,
        step_id: str | None,
        parent: str | None,
        reduce: bool = True,
        redact: bool = True,
        payload_json: bytes | None = None,
        finalize: Callable[[], dict[str, Any]] | None = None,
    ) -> Event:
        """``_emit`` for a coroutine: in a strict replay it awaits its turn instead of blocking the loop."""
        if self.turns is None:
            return self._emit(
                kind,
                payload,
                step_id=step_id,
                parent=parent,
                reduce=reduce,
                redact=redact,
                payload_json=payload_json,
                finalize=finalize,
            )
        pending = self._placed(self._pending(kind, payload, step_id, parent, redact, finalize))
        return await self.turns.awrite(pending, self._writer(reduce))

    def _lane_parent(self, kind: str, payload: Mapping[str, Any], lane: Lane | None) -> str | None:
        """The parent of an event that hangs from what its flow received so far: a tool call hangs from the
        model response that asked for it, anything else from the flow's last observation."""
        return _hung_from((lane or self._lanes.root).cursor(), kind, payload)

    def _placed(self, pending: Pending) -> Pending:
        """``pending`` with the parent it will be written with, where only its flow knows it yet: a replay
        tells alike events apart by it (parallel MCP sessions each send the same notification, each after
        its own session's answer). A flow that has not written yet gets none: where it starts is read at its
        turn (a ToolNode thread that starts after a sibling's result hangs from that result)."""
        if pending.parent != LANE_CURSOR:
            return pending
        with self._bus_lock:
            cursor = (pending.lane or self._lanes.root).settled()
            if cursor is None:
                return pending
            return pending._replace(parent_hint=_hung_from(cursor, pending.kind, pending.payload))

    def _writer(self, reduce: bool) -> Callable[[Pending], Event]:
        return self._write if reduce else self._write_unreduced

    def _write_unreduced(self, pending: Pending) -> Event:
        return self._write(pending, reduce=False)

    def _pending(
        self,
        kind: str,
        payload: dict[str, Any],
        step_id: str | None,
        parent: str | None,
        redact: bool,
        finalize: Callable[[], dict[str, Any]] | None = None,
    ) -> Pending:
        """The event as it will be written: checked, redacted (under the bus lock: redaction's caches are shared)."""
        with self._bus_lock:
            if self.ended:
                raise HarnessError(f"{kind} after run.ended")
            if self._unusable is not None:
                raise self._unusable
            if self._failed is not None:
                raise self._failed
            # a secret in a step id or tool name stops the run
            self.redactor.check_matched_fields(kind, step_id, payload)
            if redact:
                payload = self.redactor.redact(kind, payload)
        return Pending(kind, payload, step_id, parent, finalize=finalize, lane=self._lanes.lane())

    def _write(self, pending: Pending, *, reduce: bool = True, payload_json: bytes | None = None) -> Event:
        """Write ``pending`` now (its turn, in a replay), then what it causes: hooks, the reducer's transition,
        a periodic snapshot."""
        with self._bus_lock:
            kind = pending.kind
            if self.ended:
                raise HarnessError(f"{kind} after run.ended")
            if self._unusable is not None:
                raise self._unusable
            step_id, parent = pending.step_id, pending.parent
            if parent == LAST_EVENT:  # hangs from the event written just before it
                cause = self._last_event
                parent, step_id = (cause.event_id, step_id or cause.step_id) if cause is not None else (None, step_id)
            payload = pending.payload if pending.finalize is None else pending.finalize()
            if kind == TOOL_CALL and payload.get("call_id") is None:  # a default id, from the seq it is written at
                payload = {**payload, "call_id": f"call-{self.last_seq + 1}"}
            if parent == LANE_CURSOR:  # what the flow received so far (see lanes.py)
                parent = self._lane_parent(kind, payload, pending.lane)
            try:
                if payload_json is not None and self._journal_sink is not None:
                    event = self._journal_sink.emit(
                        kind, payload, step_id=step_id, parent_event_id=parent, payload_json=payload_json
                    )
                elif pending.position is not None:  # a replay's turn: the recorded event at that position
                    event = self.sink.emit(  # type: ignore[call-arg]
                        kind, payload, step_id=step_id, parent_event_id=parent, position=pending.position
                    )
                else:
                    event = self.sink.emit(kind, payload, step_id=step_id, parent_event_id=parent)
            except OSError as error:
                self._journal_failed(error)  # raises, or the sink writes nothing from now on
                event = self.sink.emit(kind, payload, step_id=step_id, parent_event_id=parent)
            if self.turns is None:
                expected = self.last_seq + 1
                if self._sealing_sink is not None and self._sealing_sink.last_seal_seq == expected:
                    expected += 1  # the sink's own seal took that seq
                if event.seq != expected:
                    raise HarnessError(f"the sink gave seq {event.seq} to a {kind} event; expected {expected}")
            self.last_seq, self.last_hash = event.seq, event.event_hash
            self._last_event = event
            for hook in self.hooks:
                hook.on_event(event)
            if reduce:
                transition = self.tracker.apply(event)
                if transition is not None:
                    self._emit_transition(event, transition)
            self._since_snapshot += 1
            if not self.snapshot_at_step_boundaries and kind not in (STATE_SNAPSHOT, RUN_ENDED):
                self._maybe_snapshot(event.step_id, pending.lane)
            # what the flow received, once the event and what it caused are written (a replay writes a waiting
            # flow's event on its behalf: the flow's cursor moves now, not when it next runs)
            lane = pending.lane
            if lane is not None:
                if kind in (TOOL_RESULT, INPUT_RECEIVED):
                    lane.saw_observation(event.event_id, event.seq)
                elif kind == MODEL_RESPONSE:
                    self._note_response(event, lane)
            return event

    def _transition_payload(self, cause: Event, transition: Transition) -> dict[str, Any]:
        return {
            "cause_seq": cause.seq,
            "before_hash": transition.before_hash,
            "after_hash": transition.after_hash,
            "reducer_version": self.tracker.reducer_version,
            "patch": transition.patch,
        }

    def _emit_transition(self, cause: Event, transition: Transition, step_id: str | None = None) -> Event:
        return self._emit(
            STATE_TRANSITION,
            self._transition_payload(cause, transition),
            step_id=step_id or cause.step_id,
            parent=cause.event_id,
            reduce=False,
            redact=False,
        )

    def _maybe_snapshot(self, step_id: str | None = None, lane: Lane | None = None) -> None:
        if self._since_snapshot < self.snapshot_every or self.ended:
            return
        self._write_snapshot(step_id if lane is not None else self.step_id)

    def write_snapshot(self, *, diagnostics: Mapping[str, Any] | None = None, at_step_end: bool = False) -> Event:
        """Write a state.snapshot now. Framework recorders call it where the framework saves its own
        checkpoint (LangGraph's saver), so the journal's snapshots line up with the framework's.
        ``diagnostics`` (the checkpoint id...) is shown to people, never compared. ``at_step_end``:
        written as the last event of the current step, so a resume starts at the next step."""
        return self._write_snapshot(self.step_id, diagnostics, at_step_end)

    def _write_snapshot(
        self, step_id: str | None, diagnostics: Mapping[str, Any] | None = None, at_step_end: bool = False
    ) -> Event:
        """The snapshot's resume cursor is the run's own flow's, which every flow's observations reach (the last
        the run received): a resumed run continues from there."""
        extra = _json_or_error(dict(diagnostics), "snapshot diagnostics") if diagnostics else None

        def payload() -> dict[str, Any]:  # the state when it is written (a replay's turn may come later)
            self._since_snapshot = 0
            steps = self.steps_done + (1 if at_step_end else 0)
            resume = {"steps_done": steps, "cursor": _cursor_of(self._lanes.run_cursor())}
            made: dict[str, Any] = {"state_hash": self.tracker.hash, "state": self.tracker.state, "resume": resume}
            if extra is not None:
                made["diagnostics"] = extra
            return made

        event = self._emit(
            STATE_SNAPSHOT, {}, step_id=step_id, parent=None, reduce=False, redact=False, finalize=payload
        )
        self._since_snapshot = 0
        return event

    def _observe(
        self,
        kind: str,
        key: str,
        request: dict[str, Any],
        live: Callable[[], dict[str, Any]],
        *,
        parent: str | None,
        answers: Event | None = None,
        step_id: str | None = None,
    ) -> Event:
        """One observation: live (recording), or the recorded one from its source (at its turn, in a strict
        replay), written either way. ``answers``: the event it answers (the request or the tool call)."""
        step = step_id or self.step_id
        source = self.sources.get(kind)
        if source is None:
            return self._emit(kind, live(), step_id=step, parent=parent)
        if self.turns is not None:
            reserved = self.turns.reserve(kind, key, request, answers)
            return self.turns.observe_reserved(reserved, self._served(kind, step, parent), self._write)
        return self._emit(kind, source.observe(kind, key, request), step_id=step, parent=parent, redact=False)

    async def _aobserve(
        self, kind: str, key: str, request: dict[str, Any], *, parent: str | None, answers: Event | None
    ) -> Event:
        """A recorded observation for a coroutine (``_observe``'s replay half): awaits its turn in a strict replay."""
        source = self.sources[kind]
        step = self.step_id
        if self.turns is not None:
            reserved = self.turns.reserve(kind, key, request, answers)
            return await self.turns.aobserve_reserved(reserved, self._served(kind, step, parent), self._write)
        return self._emit(kind, source.observe(kind, key, request), step_id=step, parent=parent, redact=False)

    def _served(self, kind: str, step_id: str | None, parent: str | None) -> Callable[[dict[str, Any]], Pending]:
        """How a recorded observation's payload becomes the event to write (as served: not redacted again)."""
        lane = self._lanes.lane()
        return lambda payload: Pending(kind, payload, step_id, parent, lane=lane)

    # -- model ---------------------------------------------------------------------------

    def model(self, request: Mapping[str, Any], *, on_chunk: Callable[[str], None] | None = None) -> dict[str, Any]:
        """Ask the model. Returns the recorded response ``{content, tool_calls, finish_reason,
        usage}``; a recorded model error is raised (see ``error_from_payload``). A streamed answer's
        text reaches ``on_chunk`` chunk by chunk as it arrives (harness/STREAMING.md)."""
        request_event, normalized = self._model_request(request)
        if MODEL_RESPONSE in self.sources:
            reserved = self._reserve_response(request_event)
            handed = self._hand_recorded_chunks(reserved, on_chunk)
            return self._model_outcome(self._write_reserved(request_event, reserved), None if handed else on_chunk)
        raised: list[BaseException] = []  # the caller's own error while streaming: raised once the answer is written
        payload = self._at_level(self._live_model(request_event.payload["request_hash"], normalized, on_chunk, raised))
        response_event = self._emit(MODEL_RESPONSE, payload, step_id=self.step_id, parent=request_event.event_id)
        if raised:
            raise raised[0]
        return self._model_outcome(response_event, on_chunk)

    async def amodel(
        self, request: Mapping[str, Any], *, on_chunk: Callable[[str], None] | None = None
    ) -> dict[str, Any]:
        """``model`` for async agents; a plugin with ``acomplete`` is awaited, and concurrent calls run
        concurrently (each answer is written when it arrives)."""
        self._need_model()
        request_event, normalized = await self._aemit_model_request(request)
        request_hash = request_event.payload["request_hash"]
        if MODEL_RESPONSE in self.sources:
            reserved = self._reserve_response(request_event)
            handed = self._hand_recorded_chunks(reserved, on_chunk)
            event = await self._awrite_reserved(request_event, reserved)
            return self._model_outcome(event, None if handed else on_chunk)
        raised: list[BaseException] = []  # the caller's own error while streaming: raised once the answer is written
        acomplete = getattr(self.model_client, "acomplete", None)
        if acomplete is None:
            payload = self._live_model(request_hash, normalized, on_chunk, raised)
        else:
            try:
                output = await acomplete(normalized)
                if isinstance(output, AsyncIterable):
                    payload = await astreamed_payload(self.redactor, request_hash, output, on_chunk, raised)
                else:
                    payload = self._model_payload(request_hash, output, on_chunk, raised)
            except BaseException as error:
                if not isinstance(error, Exception):  # the caller's task cancelled before the answer began
                    raised.append(error)
                payload = {"request_hash": request_hash, "response": None, "error": error_to_payload(error)}
        event = self._emit_live_response(request_event, payload)
        if raised:
            raise raised[0]
        return self._model_outcome(event, on_chunk)

    def _need_model(self) -> None:
        if self.model_client is None and MODEL_RESPONSE not in self.sources:
            raise HarnessError("no model plugin is configured, and no source serves model.response")

    def _model_request(self, request: Mapping[str, Any]) -> tuple[Event, dict[str, Any]]:
        self._need_model()
        return self._emit_model_request(request)

    def _model_request_parts(
        self, request: Mapping[str, Any], parsed: bool
    ) -> tuple[dict[str, Any], dict[str, Any], bytes, str]:
        """(payload, normalized request, the payload's canonical JSON, parent) of a model.request."""
        normalized = _drop_top_level_nulls(request) if parsed else normalize_request(request)
        payload = self.redactor.redact(MODEL_REQUEST, {"request": normalized})
        request_json = canonical_json_of_parsed(payload["request"])
        payload["request_hash"] = request_hash = sha256_hex(request_json)
        if not self.tracing():  # info: the hash and a summary (journal/levels.py)
            payload = info_request(payload)
            return payload, normalized, canonical_json_of_parsed(payload), LANE_CURSOR
        # the payload's canonical JSON from the request's, which is hashed anyway ("request" sorts before
        # "request_hash"; a hash needs no escaping): the writer splices it in, not serializing the request again
        payload_json = b'{"request":%s,"request_hash":"%s"}' % (request_json, request_hash.encode("ascii"))
        return payload, normalized, payload_json, LANE_CURSOR

    def tracing(self) -> bool:
        """Whether this model call is recorded at ``trace`` (the run's level, or its trace flag file is there)."""
        if self.level == TRACE:
            return True
        return self.trace_flag is not None and os.path.exists(self.trace_flag)

    def _at_level(self, payload: dict[str, Any]) -> dict[str, Any]:
        """A live model.response payload as this run's level keeps it."""
        return payload if self.tracing() else info_response(payload)

    def _emit_model_request(self, request: Mapping[str, Any], *, parsed: bool = False) -> tuple[Event, dict[str, Any]]:
        payload, normalized, payload_json, parent = self._model_request_parts(request, parsed)
        event = self._emit(
            MODEL_REQUEST,
            payload,
            step_id=self.step_id,
            parent=parent,
            redact=False,
            payload_json=payload_json,
        )
        return event, normalized

    async def _aemit_model_request(
        self, request: Mapping[str, Any], *, parsed: bool = False
    ) -> tuple[Event, dict[str, Any]]:
        payload, normalized, payload_json, parent = self._model_request_parts(request, parsed)
        event = await self._aemit(
            MODEL_REQUEST, payload, step_id=self.step_id, parent=parent, redact=False, payload_json=payload_json
        )
        return event, normalized

    def _live_model(
        self, request_hash: str, normalized: dict[str, Any], on_chunk: OnChunk | None, raised: list[BaseException]
    ) -> dict[str, Any]:
        if self.model_client is None:
            raise HarnessError("no model plugin is configured, and no source serves model.response")
        try:
            return self._model_payload(request_hash, self.model_client.complete(normalized), on_chunk, raised)
        except HarnessError:
            raise
        except Exception as error:
            return {"request_hash": request_hash, "response": None, "error": error_to_payload(error)}

    def _model_payload(
        self, request_hash: str, output: Any, on_chunk: OnChunk | None, raised: list[BaseException]
    ) -> dict[str, Any]:
        if isinstance(output, Mapping):
            response = {
                "content": output.get("content"),
                "tool_calls": [dict(call) for call in output.get("tool_calls") or ()],
                "finish_reason": output.get("finish_reason"),
                "usage": dict(output.get("usage") or {}),
            }
            return {"request_hash": request_hash, "response": response}
        return streamed_payload(self.redactor, request_hash, output, on_chunk, raised)

    def _model_outcome(self, event: Event, on_chunk: Callable[[str], None] | None) -> dict[str, Any]:
        """The answer ``model()`` returns; ``on_chunk`` is handed its text as recorded, unless it was handed
        it live as it streamed. A stream cut by an error: the text that arrived, then the error."""
        payload = event.payload
        response = payload.get("response")
        served = MODEL_RESPONSE in self.sources
        if payload.get("error") and not (served and on_chunk is not None and payload.get("stream") and response):
            raise recorded_cut(payload)
        if not isinstance(response, dict):  # null without an error: what the model said is missing
            raise self.unusable_record(SchemaError("payload.response", _AN_ANSWER, response, seq=event.seq))
        if served:  # served from the journal (a live answer is the plugin's, as it gave it)
            problem = _answer_problem(response)
            if problem is not None:
                field, expected, found = problem
                raise self.unusable_record(SchemaError(f"payload.response.{field}", expected, found, seq=event.seq))
        if on_chunk is not None and (served or not payload.get("stream")):
            for delta in self._recorded_deltas(event.payload, response, event.seq):
                on_chunk(delta)
        if payload.get("error"):
            raise recorded_cut(payload)
        return response

    def _hand_recorded_chunks(self, reserved: Reserved, on_chunk: Callable[[str], None] | None) -> bool:
        """Hand a recorded streamed answer's text to ``on_chunk`` chunk by chunk before its model.response is
        written (the recording wrote it when the stream ended, after what the agent did with each chunk).
        False: not a streamed answer, or nobody to hand it to (``_model_outcome`` hands the rest)."""
        payload = reserved.payload
        response = payload.get("response")
        if on_chunk is None or not payload.get("stream") or not isinstance(response, dict):
            return False
        problem = _answer_problem(response)
        if problem is not None:
            field, expected, found = problem
            raise self.unusable_record(SchemaError(f"payload.response.{field}", expected, found, seq=reserved.seq))
        for delta in self._recorded_deltas(payload, response, reserved.seq):
            on_chunk(delta)
        return True

    def _recorded_deltas(self, payload: dict[str, Any], response: dict[str, Any], seq: int | None) -> list[Any]:
        """The text deltas the answer came in: its chunks when it was streamed, else the whole content. A streamed
        answer's content is text: assembled from its chunks when live, checked (``_answer_problem``) when served."""
        content = response.get("content") or ""
        stream = payload.get("stream")
        if not stream:
            return [content]
        if not isinstance(stream, Mapping):
            raise self.unusable_record(SchemaError("payload.stream", "the stream record, an object", stream, seq=seq))
        if "boundaries" not in stream:  # kept at info level: the text in one chunk
            return [content]
        boundaries: list[int] = stream["boundaries"]
        if not _fit(boundaries, len(content)):
            error = SchemaError("payload.stream.boundaries", _CHUNK_BOUNDARIES, boundaries, seq=seq)
            raise self.unusable_record(error)
        return split_stream(content, boundaries)

    # -- tools ---------------------------------------------------------------------------

    def tool(self, name: str, arguments: Mapping[str, Any] | None = None, *, call_id: str | None = None) -> Any:
        """Call a tool. Returns the result as recorded (JSON round trip, after redaction),
        so record and replay give the agent the same value; a recorded error or
        timeout is raised (see ``error_from_payload``)."""
        source = self.sources.get(TOOL_RESULT)
        spec = self.tool_specs.get(name)
        if source is None and spec is not None and inspect.iscoroutinefunction(spec.function) and _loop_running():
            raise HarnessError(f"tool {name!r} is async and an event loop is running: use 'await h.atool(...)'")
        call_event, live_arguments = self._tool_call(name, arguments or {}, call_id)
        event = self._tool_result(call_event, lambda: self._run_tool(call_event, live_arguments))
        return _raise_or_return(event.payload)

    async def atool(self, name: str, arguments: Mapping[str, Any] | None = None, *, call_id: str | None = None) -> Any:
        """Async tool call. tool.call is written when the call is made and tool.result when it ends, so
        concurrent calls run concurrently and the journal holds the order they finished in (a strict
        replay hands the results back in that order)."""
        call_event, live_arguments = await self._atool_call(name, arguments or {}, call_id)
        return await self._await_tool_result(call_event, lambda: self._run_tool_async(call_event, live_arguments))

    def _tool_result(self, call_event: Event, run_live: Callable[[], dict[str, Any]]) -> Event:
        """The tool.result of a written tool.call: ``run_live()`` while recording, the recorded one in a replay."""
        if TOOL_RESULT in self.sources:
            event = self._observe(
                TOOL_RESULT,
                call_event.payload["call_key"],
                call_event.payload,
                _no_live,
                parent=call_event.event_id,
                answers=call_event,
                step_id=call_event.step_id,
            )
        else:
            event = self._emit(
                TOOL_RESULT, run_live(), step_id=call_event.step_id, parent=call_event.event_id, redact=True
            )
        return event

    async def _await_tool_result(self, call_event: Event, run_live: Callable[[], Awaitable[dict[str, Any]]]) -> Any:
        """The result of a written tool.call, for a coroutine: recorded (replay) or ``run_live()``, written
        when it is there (a replay: at its recorded turn)."""
        import asyncio

        if TOOL_RESULT in self.sources:
            event = await self._aobserve(
                TOOL_RESULT,
                call_event.payload["call_key"],
                call_event.payload,
                parent=call_event.event_id,
                answers=call_event,
            )
        else:
            try:
                payload = await run_live()
            except asyncio.CancelledError:
                # what the caller stopped waiting for is in the journal too: the call ended, cancelled
                failure = {**self._base(call_event), "error": cancellation_payload()}
                self._emit(TOOL_RESULT, failure, step_id=call_event.step_id, parent=call_event.event_id)
                raise
            event = self._emit(TOOL_RESULT, payload, step_id=call_event.step_id, parent=call_event.event_id)
        return _raise_or_return(event.payload)

    async def tools_parallel(self, calls: Sequence[tuple[Any, ...]]) -> list[Any]:
        """Run ``(name, arguments[, call_id])`` calls concurrently; results (or the
        exceptions raised) in call order."""
        import asyncio

        outcomes = await asyncio.gather(
            *(self.atool(call[0], call[1], call_id=call[2] if len(call) > 2 else None) for call in calls),
            return_exceptions=True,
        )
        for outcome in outcomes:
            if isinstance(outcome, StopRun):  # a replay stop is never a tool result
                raise outcome
        return outcomes

    def _tool_call_parts(
        self, name: str, arguments: Mapping[str, Any], call_id: str | None, registered: bool
    ) -> tuple[dict[str, Any], str, Any]:
        """(payload, parent, the tool's own copy of the arguments) of a tool.call; the arguments are copied now."""
        if registered and TOOL_RESULT not in self.sources and name not in self.tool_specs:
            raise HarnessError(f"unknown tool {name!r}; known: {', '.join(sorted(self.tool_specs)) or 'none'}")
        try:
            frozen = orjson.dumps(arguments)  # the arguments as they are at call time
        except TypeError as error:
            raise HarnessError(f"arguments of tool {name!r} are not JSON: {error}") from None
        recorded = self.redactor.redact(TOOL_CALL, {"tool": name, "arguments": orjson.loads(frozen)})["arguments"]
        payload = {
            "call_id": call_id,  # None: "call-<seq>", filled in when it is written
            "call_key": call_key_of(name, recorded, parsed=True),  # recorded: parsed from ``frozen``
            "tool": name,
            "arguments": recorded,
        }
        # the parent (the response that asked for this call, else the flow's last observation) is read when the
        # call is written: LANE_CURSOR
        return payload, LANE_CURSOR, orjson.loads(frozen)  # the tool gets its own copy: it cannot change the record

    def _tool_call(
        self, name: str, arguments: Mapping[str, Any], call_id: str | None, *, registered: bool = True
    ) -> tuple[Event, Any]:
        payload, parent, copy = self._tool_call_parts(name, arguments, call_id, registered)
        return self._emit(TOOL_CALL, payload, step_id=self.step_id, parent=parent, redact=False), copy

    async def _atool_call(
        self, name: str, arguments: Mapping[str, Any], call_id: str | None, *, registered: bool = True
    ) -> tuple[Event, Any]:
        payload, parent, copy = self._tool_call_parts(name, arguments, call_id, registered)
        return await self._aemit(TOOL_CALL, payload, step_id=self.step_id, parent=parent, redact=False), copy

    @staticmethod
    def _base(call_event: Event) -> dict[str, Any]:
        return {key: call_event.payload[key] for key in ("call_id", "call_key", "tool")}

    def _failure_payload(
        self, call_event: Event, error: BaseException, *, timeout: bool = False, started: float | None = None
    ) -> dict[str, Any]:
        payload = {**self._base(call_event), "error": error_to_payload(error, timeout=timeout)}
        if started is not None:
            payload["duration_ms"] = round((time.perf_counter() - started) * 1000, 3)
        return payload

    def _success_payload(self, call_event: Event, result: Any, started: float) -> dict[str, Any]:
        try:
            recorded = in_journal_order(result)
        except (TypeError, CanonicalizationError) as error:
            tool = call_event.payload["tool"]
            return self._failure_payload(
                call_event, TypeError(f"tool {tool!r} returned a non-JSON value: {error}"), started=started
            )
        return {
            **self._base(call_event),
            "result": recorded,
            "duration_ms": round((time.perf_counter() - started) * 1000, 3),
        }

    def _timeout_payload(
        self, call_event: Event, spec: ToolSpec, error: BaseException, started: float
    ) -> dict[str, Any]:
        message = str(error) or f"tool {spec.name!r} timed out after {spec.timeout_s}s"
        return self._failure_payload(call_event, TimeoutError(message), timeout=True, started=started)

    def _run_tool(self, call_event: Event, arguments: Any) -> dict[str, Any]:
        spec = self.tool_specs[call_event.payload["tool"]]
        started = time.perf_counter()
        try:
            if inspect.iscoroutinefunction(spec.function):
                import asyncio

                result = asyncio.run(asyncio.wait_for(spec.function(**arguments), spec.timeout_s))
            elif spec.timeout_s is not None:
                result = _call_with_timeout(spec.function, arguments, spec.timeout_s)
            else:
                result = spec.function(**arguments)
        except TimeoutError as error:  # asyncio.TimeoutError is TimeoutError (3.11+)
            return self._timeout_payload(call_event, spec, error, started)
        except Exception as error:
            return self._failure_payload(call_event, error, started=started)
        return self._success_payload(call_event, result, started)

    async def _run_tool_async(self, call_event: Event, arguments: Any) -> dict[str, Any]:
        import asyncio

        spec = self.tool_specs[call_event.payload["tool"]]
        started = time.perf_counter()
        try:
            if inspect.iscoroutinefunction(spec.function):
                result = await asyncio.wait_for(spec.function(**arguments), spec.timeout_s)
            else:
                result = await asyncio.wait_for(asyncio.to_thread(spec.function, **arguments), spec.timeout_s)
        except TimeoutError as error:  # asyncio.TimeoutError is TimeoutError (3.11+)
            return self._timeout_payload(call_event, spec, error, started)
        except Exception as error:
            return self._failure_payload(call_event, error, started=started)
        return self._success_payload(call_event, result, started)

    def _run_live(self, call_event: Event, live: Callable[[], Any]) -> dict[str, Any]:
        started = time.perf_counter()
        try:
            result = live()
        except TimeoutError as error:  # asyncio.TimeoutError is TimeoutError (3.11+)
            return self._failure_payload(call_event, error, timeout=True, started=started)
        except Exception as error:
            return self._failure_payload(call_event, error, started=started)
        return self._success_payload(call_event, result, started)

    async def _run_live_async(self, call_event: Event, live: Callable[[], Awaitable[Any]]) -> dict[str, Any]:
        started = time.perf_counter()
        try:
            result = await live()
        except TimeoutError as error:  # asyncio.TimeoutError is TimeoutError (3.11+)
            return self._failure_payload(call_event, error, timeout=True, started=started)
        except Exception as error:
            return self._failure_payload(call_event, error, started=started)
        return self._success_payload(call_event, result, started)

    # -- the recording API of transports and framework recorders ---------------------------
    # A framework owns its loop, its tools and its state; these calls put what it does on the
    # same bus as ``model``/``tool`` (same redaction, hashing, causal parents and sources).

    def unusable_record(self, error: JournalError) -> UnusableJournal:
        """The exception that ends a replay whose journal holds a payload a recorder cannot hand over in the
        shape it records (``error`` names the seq and the field): raise it. Every later event raises it
        again, so an agent that catches even a BaseException cannot run on past it to a verdict."""
        if self._unusable is None:
            self._unusable = UnusableJournal(error)
        return self._unusable

    @property
    def last_event(self) -> Event | None:
        """The event written last (the default cause of ``record_state``)."""
        return self._last_event

    def open_model_exchange(
        self, request: Mapping[str, Any], *, parsed: bool = False, defer: Callable[[dict[str, Any]], bool] | None = None
    ) -> tuple[Event, dict[str, Any] | None]:
        """Write the model.request of a call made outside ``model`` (the httpx transport, a recorder).
        Returns the event, and None while recording: call the model, then ``close_model_exchange``. In a
        replay the recorded model.response is written too (at its recorded turn, after the events that came
        between them) and its payload returned; ``close_model_exchange(..., recorded=True)`` then hands back
        that event. ``defer(payload)`` true (a streamed answer): the response is only taken for this call, and
        written by ``close_model_exchange`` when the caller is done reading it, as the recording wrote it
        when the stream ended. ``parsed``: ``request`` holds JSON types only (parsed from JSON, strings added)
        and is not changed later, so the JSON round trip that copies and checks it is skipped. A coroutine
        uses ``aopen_model_exchange``."""
        event, _ = self._emit_model_request(request, parsed=parsed)
        if MODEL_RESPONSE not in self.sources:
            return event, None
        reserved = self._reserve_response(event)
        if defer is not None and defer(reserved.payload):
            return event, self._defer_response(event, reserved)
        return event, self._served_response(event, self._write_reserved(event, reserved))

    async def aopen_model_exchange(
        self, request: Mapping[str, Any], *, parsed: bool = False, defer: Callable[[dict[str, Any]], bool] | None = None
    ) -> tuple[Event, dict[str, Any] | None]:
        """``open_model_exchange`` for a coroutine (the async httpx transport): in a strict replay it awaits
        its turns instead of blocking the loop, so concurrent calls are answered in the recorded order."""
        event, _ = await self._aemit_model_request(request, parsed=parsed)
        if MODEL_RESPONSE not in self.sources:
            return event, None
        reserved = self._reserve_response(event)
        if defer is not None and defer(reserved.payload):
            return event, self._defer_response(event, reserved)
        return event, self._served_response(event, await self._awrite_reserved(event, reserved))

    def served_seq(self, request_event: Event) -> int | None:
        """The seq of the recorded model.response a replay took for ``request_event`` (written or deferred)."""
        with self._bus_lock:
            served = self._served_responses.get(request_event.event_id)
        return served.seq if isinstance(served, (Event, _Deferred)) else None

    def _reserve_response(self, request_event: Event) -> Reserved:
        """The recorded answer to ``request_event``, taken for it: in a strict replay not written until its
        turn; served by key (an experiment: no recorded order to keep) it is written at once."""
        return self._take(MODEL_RESPONSE, request_event.payload["request_hash"], request_event, self.step_id)

    def _take(self, kind: str, key: str, answers: Event, step_id: str | None) -> Reserved:
        """The recorded ``kind`` observation answering ``answers``, taken for it (``_reserve_response``,
        ``_take_tool_result``)."""
        if self.turns is not None:
            return self.turns.reserve(kind, key, answers.payload, answers)
        payload = self.sources[kind].observe(kind, key, answers.payload)
        event = self._write(self._served(kind, step_id, answers.event_id)(payload))
        return Reserved(event.payload, event.seq, event)

    def _write_reserved(self, request_event: Event, reserved: Reserved, step_id: str | None = None) -> Event:
        if isinstance(reserved.token, Event):
            return reserved.token  # (written when it was taken)
        served = self._served(MODEL_RESPONSE, step_id or self.step_id, request_event.event_id)
        assert self.turns is not None
        return self.turns.observe_reserved(reserved, served, self._write)

    async def _awrite_reserved(self, request_event: Event, reserved: Reserved, step_id: str | None = None) -> Event:
        if isinstance(reserved.token, Event):
            return reserved.token
        served = self._served(MODEL_RESPONSE, step_id or self.step_id, request_event.event_id)
        assert self.turns is not None
        return await self.turns.aobserve_reserved(reserved, served, self._write)

    def _defer_response(self, request_event: Event, reserved: Reserved) -> dict[str, Any]:
        with self._bus_lock:
            self._served_responses[request_event.event_id] = _Deferred(reserved, self.step_id)
        return reserved.payload

    def _served_response(self, request_event: Event, response: Event) -> dict[str, Any]:
        with self._bus_lock:
            self._served_responses[request_event.event_id] = response
        return response.payload

    def close_model_exchange(self, request_event: Event, payload: dict[str, Any], *, recorded: bool) -> Event:
        """Write the model.response to ``request_event``: ``payload`` is ``{request_hash, response,
        [stream], [error]}``, redacted first. ``recorded``: it came from ``open_model_exchange``, which
        has written it already (its event is returned) or deferred it (it is written now, at its turn)."""
        if recorded:
            with self._bus_lock:
                served = self._served_responses.pop(request_event.event_id, None)
            if isinstance(served, Event):
                return served
            if isinstance(served, _Deferred):
                return self._write_reserved(request_event, served.reserved, served.step_id)
        if not recorded:
            return self._emit_live_response(request_event, payload)
        return self._emit(MODEL_RESPONSE, payload, step_id=self.step_id, parent=request_event.event_id, redact=False)

    def _emit_live_response(self, request_event: Event, payload: dict[str, Any]) -> Event:
        """Write a live model.response at the run's level, redacted, its JSON made once (``_redacted_once``)."""
        payload, payload_json = self._redacted_once(MODEL_RESPONSE, self._at_level(payload))
        return self._emit(
            MODEL_RESPONSE,
            payload,
            step_id=self.step_id,
            parent=request_event.event_id,
            redact=False,
            payload_json=payload_json,
        )

    def _redacted_once(self, kind: str, payload: dict[str, Any]) -> tuple[dict[str, Any], bytes | None]:
        """``payload`` redacted, and its canonical JSON when redaction left it as it was: serialized once, for
        redaction's gate and for the journal line (a model answer was serialized for the one, then again
        inside the whole event for the other)."""
        try:
            payload_json: bytes | None = canonical_json_of_parsed(payload)
        except CanonicalizationError:
            payload_json = None  # the writer says what it cannot write, naming the event
        with self._bus_lock:  # redaction's caches are shared
            redacted = self.redactor.redact(kind, payload, serialized=payload_json)
        return (payload, payload_json) if redacted is payload else (redacted, None)

    async def aclose_model_exchange(self, request_event: Event, payload: dict[str, Any], *, recorded: bool) -> Event:
        """``close_model_exchange`` for a coroutine: a deferred recorded answer awaits its turn."""
        if recorded:
            with self._bus_lock:
                served = self._served_responses.get(request_event.event_id)
            if isinstance(served, _Deferred):
                with self._bus_lock:
                    self._served_responses.pop(request_event.event_id, None)
                return await self._awrite_reserved(request_event, served.reserved, served.step_id)
        return self.close_model_exchange(request_event, payload, recorded=recorded)

    def record_model_exchange(self, request: Mapping[str, Any], live: Callable[[str], dict[str, Any]]) -> Event:
        """One model call made by someone else: ``live(request_hash)`` gives the payload while
        recording; in replay the recorded one is written instead and ``live`` is not called."""
        request_event, payload = self.open_model_exchange(request)
        recorded = payload is not None
        if payload is None:
            payload = live(request_event.payload["request_hash"])
        return self.close_model_exchange(request_event, payload, recorded=recorded)

    def record_tool_call(
        self, name: str, arguments: Mapping[str, Any], live: Callable[[Any], Any], *, call_id: str | None = None
    ) -> Any:
        """A tool the framework runs itself (no ToolSpec): tool.call with the arguments copied now,
        then ``live(copy)`` while recording or the recorded result in replay (``live`` not called).
        Returns the result as recorded, or raises the recorded error. Safe from any thread."""
        call_event, copy = self._tool_call(name, arguments, call_id, registered=False)
        event = self._tool_result(call_event, lambda: self._run_live(call_event, lambda: live(copy)))
        return _raise_or_return(event.payload)

    async def arecord_tool_call(
        self,
        name: str,
        arguments: Mapping[str, Any],
        live: Callable[[Any], Awaitable[Any]],
        *,
        call_id: str | None = None,
    ) -> Any:
        """``record_tool_call`` for async tools; concurrent calls run concurrently, each result written when it
        arrives."""
        call = await self.aopen_tool_call(name, arguments, call_id=call_id)
        return await self.aclose_tool_call(call, lambda: live(call.arguments))

    async def aopen_tool_call(
        self, name: str, arguments: Mapping[str, Any], *, call_id: str | None = None, take_result: bool = False
    ) -> OpenToolCall:
        """``arecord_tool_call`` in two halves, for a recorder whose call and result are written from different
        places (an MCP request: its tool.call when the client sends it, its tool.result when the answer comes):
        the tool.call, written now (at its turn in a strict replay). ``take_result``: a replay also takes the
        recorded tool.result for this call now, without writing it, and hands over its payload (``recorded``),
        for a call whose answer holds what the caller needs before the result is written (what an MCP server
        sent during a session, written when it closes), as a streamed model answer is taken. Close it with
        ``aclose_tool_call``."""
        call_event, copy = await self._atool_call(name, arguments, call_id, registered=False)
        taken = self._take_tool_result(call_event) if take_result and TOOL_RESULT in self.sources else None
        return OpenToolCall(call_event, copy, taken)

    async def aclose_tool_call(self, call: OpenToolCall, live: Callable[[], Awaitable[Any]]) -> Any:
        """The tool.result of an ``aopen_tool_call``: ``await live()`` while recording (its error recorded and
        raised), the recorded one in a replay (at its turn; ``live`` not called). Returns the result as
        recorded, or raises the recorded error; a cancelled wait is recorded as ``arecord_tool_call`` does."""
        taken = call.taken
        if taken is None:
            run_live = lambda: self._run_live_async(call.event, live)  # noqa: E731
            return await self._await_tool_result(call.event, run_live)
        if isinstance(taken.token, Event):
            event = taken.token  # (served by key, written when it was taken)
        else:
            assert self.turns is not None
            served = self._served(TOOL_RESULT, call.event.step_id, call.event.event_id)
            event = await self.turns.aobserve_reserved(taken, served, self._write)
        return _raise_or_return(event.payload)

    def _take_tool_result(self, call_event: Event) -> Reserved:
        """The recorded tool.result of ``call_event``, taken for it: in a strict replay written at its turn by
        ``aclose_tool_call``; served by key (an experiment) it is written at once."""
        return self._take(TOOL_RESULT, call_event.payload["call_key"], call_event, call_event.step_id)

    def record_state(self, state: Any, *, cause: Event | None = None) -> Event | None:
        """Make ``state`` (a framework's own state: graph channels, run context) the run state and
        write the state.transition from the previous one, caused by ``cause`` (default: the event
        written last before it), in the current step (else the cause's). None when the state did not
        change. The state is kept as the journal holds it."""
        made = self._framework_state(state, cause)
        if made is None:
            return None
        payload, parent, finalize = made
        step = self.step_id or (cause.step_id if cause is not None else None)
        return self._emit(
            STATE_TRANSITION, payload, step_id=step, parent=parent, reduce=False, redact=False, finalize=finalize
        )

    async def arecord_state(self, state: Any, *, cause: Event | None = None) -> Event | None:
        """``record_state`` for a coroutine: in a strict replay it awaits its turn instead of being written
        ahead of the flows recorded before it."""
        made = self._framework_state(state, cause)
        if made is None:
            return None
        payload, parent, finalize = made
        step = self.step_id or (cause.step_id if cause is not None else None)
        return await self._aemit(
            STATE_TRANSITION, payload, step_id=step, parent=parent, reduce=False, redact=False, finalize=finalize
        )

    async def arecord_state_member(self, path: Sequence[str], value: Any, *, cause: Event | None = None) -> Event:
        """Set one member of the framework state (``path``: the keys to it from the top) to ``value``, the rest
        of the state as it is when the transition is written. Flows that run at once (parallel agent runs) each
        keep their own member, and none writes back another's older one: ``record_state`` takes the whole state
        at the call, which a flow that calls first while its turn comes later cannot know. A strict replay places
        the transition by its member and the member's value (``member``, ``member_hash``), so its turn does not
        depend on what the other flows wrote before it; its hashes are judged when it is written."""
        try:
            given = orjson.dumps(value)
        except TypeError as error:
            raise HarnessError(f"framework state is not JSON: {error}") from None
        member = self.redactor.redact_value(orjson.loads(_canonical_or_error(orjson.loads(given), "framework state")))
        keys = [str(key) for key in path]
        placing = {
            "member": "".join("/" + key.replace("~", "~0").replace("/", "~1") for key in keys),  # a JSON Pointer
            "member_hash": state_hash(member),
        }
        if cause is None and self._last_event is None:
            raise HarnessError("record_state needs an event to hang from: start the run first")

        def transition() -> dict[str, Any]:  # from the state as it is when written
            caused_by = cause or self._last_event
            assert caused_by is not None  # (checked above; the run's events only grow)
            after = _with_member(self.tracker.state, keys, member)
            after_hash = state_hash(after)
            made = Transition(self.tracker.hash, after_hash, diff(self.tracker.state, after))
            self.tracker.state, self.tracker.hash = after, after_hash
            self._last_framework_state = None  # (``record_state``'s "the same bytes as last time" no longer holds)
            return {**self._transition_payload(caused_by, made), **placing}

        step = self.step_id or (cause.step_id if cause is not None else None)
        parent = cause.event_id if cause is not None else LAST_EVENT
        return await self._aemit(
            STATE_TRANSITION, placing, step_id=step, parent=parent, reduce=False, redact=False, finalize=transition
        )

    def _framework_state(
        self, state: Any, cause: Event | None
    ) -> tuple[dict[str, Any], str, Callable[[], dict[str, Any]]] | None:
        """What ``record_state`` writes: the placing payload (``after_hash``), the parent, and the function
        that makes the transition from the state at the moment it is written; None when nothing changed."""
        try:
            given = orjson.dumps(state)
        except TypeError as error:
            raise HarnessError(f"framework state is not JSON: {error}") from None
        if self._last_framework_state == (given, self.tracker.hash):
            return None  # the same bytes as the state recorded last (recorders report it at every hook)
        in_order = _canonical_or_error(orjson.loads(given), "framework state")
        after = orjson.loads(in_order)
        redacted = self.redactor.redact_value(after)  # written as a patch and snapshots
        after_hash = sha256_hex(in_order) if redacted is after else state_hash(redacted)
        after = redacted
        if after_hash == self.tracker.hash:
            self._last_framework_state = (given, after_hash)
            return None
        if cause is None and self._last_event is None:
            raise HarnessError("record_state needs an event to hang from: start the run first")

        def transition() -> dict[str, Any]:  # from the state as it is when written
            caused_by = cause or self._last_event
            assert caused_by is not None  # (checked above; the run's events only grow)
            made = Transition(self.tracker.hash, after_hash, diff(self.tracker.state, after))
            self.tracker.state, self.tracker.hash = after, after_hash
            self._last_framework_state = (given, after_hash)
            return self._transition_payload(caused_by, made)

        parent = cause.event_id if cause is not None else LAST_EVENT
        return {"after_hash": after_hash}, parent, transition

    # -- memory --------------------------------------------------------------------------

    def memory(self, plugin_id: str) -> "MemoryHandle":
        """Memory plugin ``plugin_id``; its calls are recorded as tools ``<id>.get`` etc."""
        if f"{plugin_id}.get" not in self.tool_specs and TOOL_RESULT not in self.sources:
            raise HarnessError(f"no memory plugin with id {plugin_id!r}")
        return MemoryHandle(self, plugin_id)

    # -- observations the adapters use -----------------------------------------------------

    def read_observation(
        self, kind: str, source_name: str, live: Callable[[], Any], *, expected: Expected | None = None
    ) -> Any:
        """One clock read or random draw: recorded value in replay, live value in record. ``expected``: what the
        caller can use (its description and its test); a value served from the journal that fails it ends the
        replay on a journal error naming the seq (``unusable_record``), not on whatever the caller does with it."""
        event = self._observe(
            kind, source_name, {"source": source_name}, lambda: {"source": source_name, "value": live()}, parent=None
        )
        value = event.payload["value"]
        if expected is not None and kind in self.sources and not expected.test(value):  # (a live value is ours)
            raise self.unusable_record(SchemaError("payload.value", expected.description, value, seq=event.seq))
        return value


@dataclass(frozen=True)
class OpenToolCall:
    """A tool call whose tool.call is written and whose tool.result is not yet (``aopen_tool_call``):
    ``arguments`` is the tool's own copy; ``taken``, in a replay asked to, the recorded result taken for it."""

    event: Event
    arguments: Any
    taken: Reserved | None = None

    @property
    def recorded(self) -> dict[str, Any] | None:
        """The recorded tool.result payload taken for this call (a replay), else None (recording)."""
        return self.taken.payload if self.taken is not None else None


@dataclass(frozen=True)
class _Deferred:
    """A recorded streamed answer taken for its request, written when the caller is done reading it."""

    reserved: Reserved
    step_id: str | None

    @property
    def seq(self) -> int | None:
        return self.reserved.seq


#: The harness of the run or session the calling code belongs to (``current_harness``): set by ``run_agent``
#: around the agent and by ``record_session`` around its block; tasks and threads started there inherit it.
CURRENT_HARNESS: ContextVar[Harness | None] = ContextVar("replay_tui_current_harness", default=None)


def current_harness() -> Harness:
    """The harness of the session or run the calling code belongs to: a framework hook that draws a random
    value or reads the clock gets its own session's clock and random source, never another session's."""
    harness = CURRENT_HARNESS.get()
    if harness is None:
        raise HarnessError("no run is being recorded or replayed here: current_harness() works inside an agent run")
    return harness


#: The parent of a model request or a tool call: what its flow received last, read when it is written.
LANE_CURSOR = "\x00lane-cursor"
#: The parent of an event that hangs from whatever was written just before it (``record_state``'s cause):
#: resolved when it is written, which in a replay is its recorded turn.
LAST_EVENT = "\x00last-event"


def _no_live() -> dict[str, Any]:
    raise HarnessError("a recorded observation has no live call")


def _cursor_of(cursor: Cursor) -> dict[str, Any]:
    return {
        "observation_seq": cursor.observation_seq or None,
        "response_seq": cursor.response_seq or None,
        "response_call_ids": sorted(cursor.response_calls),
    }


def _resume_problem(resume: Any) -> tuple[str, str, Any] | None:
    """What is wrong with a snapshot's ``resume`` block (field under it, what was expected, what was found), as
    ``write_snapshot`` writes it: ``{steps_done, cursor: causal_cursor()}``. None when nothing is."""
    if not isinstance(resume, Mapping):
        return "", "an object {steps_done, cursor}", resume
    steps = resume.get("steps_done", 0)
    if type(steps) is not int or steps < 0:
        return ".steps_done", "a count of steps, an integer from 0", steps
    cursor = resume.get("cursor", {})
    if not isinstance(cursor, Mapping):
        return ".cursor", "an object {observation_seq, response_seq, response_call_ids}", cursor
    for name in ("observation_seq", "response_seq"):
        seq = cursor.get(name)
        if seq is not None and (type(seq) is not int or seq < 1):
            return f".cursor.{name}", "a seq (an integer from 1) or null", seq
    call_ids = cursor.get("response_call_ids")
    if call_ids is not None and not (isinstance(call_ids, list) and all(type(item) is str for item in call_ids)):
        return ".cursor.response_call_ids", "a list of tool call ids (texts)", call_ids
    return None


def _answer_problem(response: dict[str, Any]) -> tuple[str, str, Any] | None:
    """What is wrong with a recorded answer that ``model()`` hands the agent as ``{content, tool_calls,
    finish_reason, usage}`` (field, what was expected, what was found); None when nothing is."""
    missing_value = missing()
    content = response.get("content", missing_value)
    if content is not None and type(content) is not str:
        return "content", "the answer's text, or null", content
    calls = response.get("tool_calls", missing_value)
    if not (isinstance(calls, list) and all(isinstance(call, dict) for call in calls)):
        return "tool_calls", "the tool calls asked for, a list of objects", calls
    reason = response.get("finish_reason", missing_value)
    if reason is not None and type(reason) is not str:
        return "finish_reason", "text, or null", reason
    usage = response.get("usage", missing_value)
    if not isinstance(usage, dict):
        return "usage", "the token counts, an object", usage
    return None


_AN_ANSWER = "the model's answer, an object (the payload holds no error)"
_CHUNK_BOUNDARIES = "the ends of the streamed chunks in the answer's text: ascending integers from 0 to its length"


def _fit(boundaries: Any, length: int) -> bool:
    """Whether ``boundaries`` cut a text of ``length`` characters into chunks (``split_stream``)."""
    if not isinstance(boundaries, list):
        return False
    previous = 0
    for end in boundaries:
        if type(end) is not int or not previous <= end <= length:
            return False
        previous = end
    return True


def _call_with_timeout(function: Callable[..., Any], arguments: Mapping[str, Any], timeout_s: float) -> Any:
    """Run a sync tool in a daemon thread. A thread cannot be killed: on timeout it is
    left to finish on its own (its result is dropped), and the call is a timeout."""
    outcome: dict[str, Any] = {}

    def target() -> None:
        try:
            outcome["result"] = function(**arguments)
        except BaseException as error:  # handed to the caller's thread
            outcome["error"] = error

    worker = threading.Thread(target=target, name="replay-tui-tool", daemon=True)
    worker.start()
    worker.join(timeout_s)
    if worker.is_alive():
        raise TimeoutError("")
    if "error" in outcome:
        raise outcome["error"]
    return outcome.get("result")


def _loop_running() -> bool:
    import asyncio

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _seq_of(event_id: str | None) -> int | None:
    return int(event_id.rsplit(":", 1)[1]) if event_id else None


def _raise_or_return(payload: Mapping[str, Any]) -> Any:
    if payload.get("error"):
        raise error_from_payload(payload)
    return payload.get("result")


class MemoryHandle:
    def __init__(self, harness: Harness, plugin_id: str) -> None:
        self._harness, self._id = harness, plugin_id

    def get(self, key: str) -> Any:
        return self._harness.tool(f"{self._id}.get", {"key": key})

    def put(self, key: str, value: Any) -> None:
        self._harness.tool(f"{self._id}.put", {"key": key, "value": value})

    def search(self, prefix: str) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = self._harness.tool(f"{self._id}.search", {"prefix": prefix})
        return found


def in_journal_order(value: Any) -> Any:
    """``value`` with every JSON object's members in the journal's canonical (RFC 8785) order.

    A replay serves tool results, inputs and state as the journal holds them, members
    sorted; an agent that prints a dict (``str``, its own JSON serializer) into the next
    model request would print the live and the served value differently. Handing the
    agent this order while recording makes record and replay give it the same value.
    Raises TypeError (or CanonicalizationError) for a value with no JSON form."""
    return orjson.loads(canonical_json_of_parsed(orjson.loads(orjson.dumps(value))))


def _json_or_error(value: Any, what: str) -> Any:
    """``value`` as the journal will hold it (see ``in_journal_order``); no JSON form is a HarnessError."""
    try:
        return in_journal_order(value)
    except (TypeError, CanonicalizationError) as error:
        raise HarnessError(f"{what} is not JSON: {error}") from None


def _canonical_or_error(parsed: Any, what: str) -> bytes:
    """The canonical JSON of a parsed value (what ``in_journal_order`` loads, and its state hash's input)."""
    try:
        return canonical_json_of_parsed(parsed)
    except CanonicalizationError as error:
        raise HarnessError(f"{what} is not JSON: {error}") from None


def normalize_request(request: Mapping[str, Any]) -> dict[str, Any]:
    """The request as hashed: a JSON round trip with null members dropped at the top level."""
    try:
        value = orjson.loads(orjson.dumps(request))
    except TypeError as error:
        raise HarnessError(f"model request is not JSON: {error}") from None
    return _drop_top_level_nulls(value)


def _with_member(state: Any, keys: Sequence[str], member: Any) -> Any:
    """A copy of ``state`` with the member at ``keys`` set to ``member`` (objects made on the way as needed)."""
    if not keys:
        return member
    copied = dict(state) if isinstance(state, dict) else {}
    copied[keys[0]] = _with_member(copied.get(keys[0]), keys[1:], member)
    return copied


def _drop_top_level_nulls(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise HarnessError("a model request is a JSON object")
    return {key: item for key, item in value.items() if item is not None}


def _hung_from(cursor: Cursor, kind: str, payload: Mapping[str, Any]) -> str | None:
    """The parent ``cursor`` gives an event: a tool call hangs from the response that asked for it, anything
    else from the last observation."""
    asked = kind == TOOL_CALL and payload.get("call_id") in cursor.response_calls
    return cursor.response if asked else cursor.observation

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
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, AsyncIterable, Awaitable, Callable, Iterator, Mapping, Sequence

import orjson

from .. import __version__
from ..journal import Event, JournalError, call_key_of
from ..journal.canonical import CanonicalizationError, canonical_json_of_parsed
from ..journal.errors import SchemaError, missing
from ..journal.hashing import sha256_hex

# Twin of journal/describe.py's and replay/report.py's imports (the kind names each uses; an import list)
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
from .patch import diff
from .plugins import HookPoint, ModelClient, ToolSpec
from .redaction import Redactor
from .seam import (
    EventSink,
    ObservationSource,
    SealingSink,
    StopRun,
    UnusableJournal,
    error_from_payload,
    error_to_payload,
)
from .state import Reducer, StateTracker, Transition, identity_reducer, state_hash
from .streaming import split_stream
from .transport import JsonlSink

if TYPE_CHECKING:  # asyncio is imported where async code runs: a sync agent's replay child never pays for it
    import asyncio

DEFAULT_SNAPSHOT_EVERY = 100


class _StoppedEarlier(StopRun):
    """A concurrent tool call released because an earlier call stopped the run."""


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
    ) -> None:
        if snapshot_every < 1:
            raise HarnessError("snapshot_every must be at least 1")
        self.sink = sink
        self._sealing_sink = sink if isinstance(sink, SealingSink) else None  # checked once: a Protocol check is slow
        # takes a payload's canonical JSON (a subclass may have its own emit, without it)
        self._journal_sink = sink if type(sink) is JsonlSink else None
        self.run_id = run_id
        self.sources: Mapping[str, ObservationSource] = dict(observation_sources or {})  # replay may swap in a view
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
        self.step_id: str | None = None
        self.steps_done = 0
        self.snapshot_at_step_boundaries = False
        self._since_snapshot = 0
        self._last_event: Event | None = None
        # The causal cursor: what the next events hang from (see causal_cursor()).
        self._last_observation_id: str | None = None
        self._last_response_id: str | None = None
        self._last_response_call_ids: frozenset[str] = frozenset()
        self._turn = 0
        self._next_ticket = 0
        self._turn_changed: asyncio.Condition | None = None
        self._turn_loop: asyncio.AbstractEventLoop | None = None
        self._stop_ticket: int | None = None
        # record_state's last input as orjson wrote it, and the state hash it gave
        self._last_framework_state: tuple[bytes, str] | None = None
        self.ended = False
        self._unusable: UnusableJournal | None = None  # see unusable_record
        # The harness is driven from one thread, but a framework may call it from several (LangGraph's
        # ToolNode runs parallel tool calls in threads): each event is then still written whole, with
        # its own seq and its link in the chain. Their order is the threads' (see the recorders).
        self._bus_lock = threading.RLock()

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
        """What the next events hang from: the last observation the agent received
        (parent of the next model.request) and the last model response with the ids
        of the tool calls it asked for (parent of those tool.call events). Snapshots
        record it so a resumed run links its first events exactly as the original."""
        return {
            "observation_seq": _seq_of(self._last_observation_id),
            "response_seq": _seq_of(self._last_response_id),
            "response_call_ids": sorted(self._last_response_call_ids),
        }

    def restore_causal_cursor(self, cursor: Mapping[str, Any]) -> None:
        """Inverse of ``causal_cursor`` (seqs, so it holds across run ids)."""
        observation, response = cursor.get("observation_seq"), cursor.get("response_seq")
        self._last_observation_id = event_id_for(self.run_id, observation) if observation else None
        self._last_response_id = event_id_for(self.run_id, response) if response else None
        self._last_response_call_ids = frozenset(cursor.get("response_call_ids") or ())

    def _note_response(self, event: Event) -> None:
        response = event.payload.get("response") or {}
        calls = response.get("tool_calls")
        self._last_response_id = event.event_id
        self._last_response_call_ids = frozenset(
            call["id"]
            for call in (calls if isinstance(calls, list) else ())  # (a hostile journal's may be anything)
            if isinstance(call, Mapping) and isinstance(call.get("id"), str)
        )

    def receive_input(self, content: Any, *, role: str = "user", context: Any = None) -> Event:
        payload: dict[str, Any] = {"role": role, "content": _json_or_error(content, "input content")}
        if context is not None:
            payload["context"] = _json_or_error(context, "input context")
        event = self._emit(INPUT_RECEIVED, payload, step_id=None, parent=None)
        self._last_observation_id = event.event_id
        return event

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
        self.sink.close()
        return event

    @property
    def state(self) -> Any:
        """The reducer state as recorded (a JSON value; treat it as read-only)."""
        return self.tracker.state

    @contextlib.contextmanager
    def step(self, step_id: str | None = None) -> Iterator[str]:
        """Group the events of one agent step under ``step_id`` (default ``step-NN``)."""
        previous = self.step_id
        self.step_id = step_id or f"step-{self.steps_done + 1:02d}"
        try:
            yield self.step_id
        finally:
            self.steps_done += 1
            self.step_id = previous
            if self.snapshot_at_step_boundaries:
                self._maybe_snapshot()

    # -- the bus -----------------------------------------------------------------------

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
    ) -> Event:
        """Write one event; ``payload_json``: the canonical JSON of ``payload`` as written (``redact`` False)."""
        with self._bus_lock:  # one event at a time, whole, from any thread (see __init__)
            if self.ended:
                raise HarnessError(f"{kind} after run.ended")
            if self._unusable is not None:
                raise self._unusable
            # a secret in a step id or tool name stops the run
            self.redactor.check_matched_fields(kind, step_id, payload)
            if redact:
                payload = self.redactor.redact(kind, payload)
            if payload_json is not None and self._journal_sink is not None:
                event = self._journal_sink.emit(
                    kind, payload, step_id=step_id, parent_event_id=parent, payload_json=payload_json
                )
            else:
                event = self.sink.emit(kind, payload, step_id=step_id, parent_event_id=parent)
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
                self._maybe_snapshot()
            return event

    def _emit_transition(self, cause: Event, transition: Transition, step_id: str | None = None) -> Event:
        payload = {
            "cause_seq": cause.seq,
            "before_hash": transition.before_hash,
            "after_hash": transition.after_hash,
            "reducer_version": self.tracker.reducer_version,
            "patch": transition.patch,
        }
        return self._emit(
            STATE_TRANSITION,
            payload,
            step_id=step_id or cause.step_id,
            parent=cause.event_id,
            reduce=False,
            redact=False,
        )

    def _maybe_snapshot(self) -> None:
        if self._since_snapshot < self.snapshot_every or self.ended:
            return
        self.write_snapshot()

    def write_snapshot(self, *, diagnostics: Mapping[str, Any] | None = None, at_step_end: bool = False) -> Event:
        """Write a state.snapshot now. Framework recorders call it where the framework saves its own
        checkpoint (LangGraph's saver), so the journal's snapshots line up with the framework's.
        ``diagnostics`` (the checkpoint id...) is shown to people, never compared. ``at_step_end``:
        written as the last event of the current step, so a resume starts at the next step."""
        self._since_snapshot = 0
        resume = {"steps_done": self.steps_done + (1 if at_step_end else 0), "cursor": self.causal_cursor()}
        payload: dict[str, Any] = {"state_hash": self.tracker.hash, "state": self.tracker.state, "resume": resume}
        if diagnostics:
            payload["diagnostics"] = _json_or_error(dict(diagnostics), "snapshot diagnostics")
        event = self._emit(STATE_SNAPSHOT, payload, step_id=self.step_id, parent=None, reduce=False, redact=False)
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
        step_id: str | None = None,
    ) -> Event:
        """Serve one observation from its source, or live, and emit it."""
        source = self.sources.get(kind)
        if source is not None:
            payload = source.observe(kind, key, request)
            return self._emit(kind, payload, step_id=step_id or self.step_id, parent=parent, redact=False)
        return self._emit(kind, live(), step_id=step_id or self.step_id, parent=parent)

    # -- model ---------------------------------------------------------------------------

    def model(self, request: Mapping[str, Any], *, on_chunk: Callable[[str], None] | None = None) -> dict[str, Any]:
        """Ask the model. Returns the recorded response ``{content, tool_calls, finish_reason,
        usage}``; a recorded model error is raised (see ``error_from_payload``). A streamed answer's
        text reaches ``on_chunk`` chunk by chunk as it arrives (harness/STREAMING.md)."""
        request_event, normalized = self._model_request(request)
        raised: list[BaseException] = []  # the caller's own error while streaming: raised once the answer is written
        response_event = self._observe(
            MODEL_RESPONSE,
            request_event.payload["request_hash"],
            request_event.payload,
            lambda: self._live_model(request_event.payload["request_hash"], normalized, on_chunk, raised),
            parent=request_event.event_id,
        )
        if raised:
            raise raised[0]
        return self._model_outcome(response_event, on_chunk)

    async def amodel(
        self, request: Mapping[str, Any], *, on_chunk: Callable[[str], None] | None = None
    ) -> dict[str, Any]:
        """``model`` for async agents; a plugin with ``acomplete`` is awaited."""
        request_event, normalized = self._model_request(request)
        request_hash = request_event.payload["request_hash"]
        source = self.sources.get(MODEL_RESPONSE)
        acomplete = getattr(self.model_client, "acomplete", None)
        raised: list[BaseException] = []
        if source is None and acomplete is not None:
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
            event = self._emit(MODEL_RESPONSE, payload, step_id=self.step_id, parent=request_event.event_id)
        else:
            event = self._observe(
                MODEL_RESPONSE,
                request_hash,
                request_event.payload,
                lambda: self._live_model(request_hash, normalized, on_chunk, raised),
                parent=request_event.event_id,
            )
        if raised:
            raise raised[0]
        return self._model_outcome(event, on_chunk)

    def _model_request(self, request: Mapping[str, Any]) -> tuple[Event, dict[str, Any]]:
        if self.model_client is None and MODEL_RESPONSE not in self.sources:
            raise HarnessError("no model plugin is configured, and no source serves model.response")
        return self._emit_model_request(request)

    def _emit_model_request(self, request: Mapping[str, Any], *, parsed: bool = False) -> tuple[Event, dict[str, Any]]:
        normalized = _drop_top_level_nulls(request) if parsed else normalize_request(request)
        payload = self.redactor.redact(MODEL_REQUEST, {"request": normalized})
        request_json = canonical_json_of_parsed(payload["request"])
        payload["request_hash"] = request_hash = sha256_hex(request_json)
        # the payload's canonical JSON from the request's, which is hashed anyway ("request" sorts before
        # "request_hash"; a hash needs no escaping): the writer splices it in, not serializing the request again
        payload_json = b'{"request":%s,"request_hash":"%s"}' % (request_json, request_hash.encode("ascii"))
        event = self._emit(
            MODEL_REQUEST,
            payload,
            step_id=self.step_id,
            parent=self._last_observation_id,
            redact=False,
            payload_json=payload_json,
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
        self._note_response(event)
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
            for delta in self._recorded_deltas(event, response):
                on_chunk(delta)
        if payload.get("error"):
            raise recorded_cut(payload)
        return response

    def _recorded_deltas(self, event: Event, response: dict[str, Any]) -> list[Any]:
        """The text deltas the answer came in: its chunks when it was streamed, else the whole content. A streamed
        answer's content is text: assembled from its chunks when live, checked (``_answer_problem``) when served."""
        content = response.get("content") or ""
        stream = event.payload.get("stream")
        if not stream:
            return [content]
        boundaries = stream.get("boundaries")
        if not _fit(boundaries, len(content)):
            error = SchemaError("payload.stream.boundaries", _CHUNK_BOUNDARIES, boundaries, seq=event.seq)
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
        if source is not None:
            payload = source.observe(TOOL_RESULT, call_event.payload["call_key"], call_event.payload)
        else:
            payload = self._run_tool(call_event, live_arguments)
        event = self._emit_tool_result(call_event, payload, from_source=source is not None)
        return _raise_or_return(event.payload)

    async def atool(self, name: str, arguments: Mapping[str, Any] | None = None, *, call_id: str | None = None) -> Any:
        """Async tool call. tool.call is written when the call is made; the tool.result
        events of concurrent calls are written in call order, whatever order the tools
        finish in, so the seq order never depends on timing."""
        call_event, live_arguments = self._tool_call(name, arguments or {}, call_id)
        return await self._await_tool_result(call_event, lambda: self._run_tool_async(call_event, live_arguments))

    async def _await_tool_result(self, call_event: Event, run_live: Callable[[], Awaitable[dict[str, Any]]]) -> Any:
        """The result of a written tool.call: recorded (replay) or ``run_live()``, written in call order."""
        import asyncio

        ticket = self._next_ticket
        self._next_ticket += 1
        source = self.sources.get(TOOL_RESULT)
        try:
            if source is not None:
                payload = source.observe(TOOL_RESULT, call_event.payload["call_key"], call_event.payload)
            else:
                payload = await run_live()
            # One turn of the loop before the result is written, as the task below takes: concurrent calls
            # made meanwhile write their tool.call first, in record and in replay alike (a recorded result
            # is ready at once, a live one maybe too), so the journal's order does not depend on the source.
            await asyncio.sleep(0)
        except StopRun:
            # Calls made before this one still write their results in turn; calls made
            # after it are released with StopRun instead of waiting for a turn that never comes.
            self._stop_ticket = ticket if self._stop_ticket is None else min(self._stop_ticket, ticket)
            await self._notify_turn()
            raise
        except asyncio.CancelledError:
            # The result slot is still filled in turn, so later results are not held back.
            failure = self._failure_payload(call_event, RuntimeError("tool call cancelled"))
            asyncio.ensure_future(self._emit_in_turn(ticket, call_event, failure, False))
            raise
        if self._turn == ticket and self._next_ticket == ticket + 1 and self._stop_ticket is None:
            # The only call in flight, and its turn: written here and now. No later call can be waiting
            # for the turn, and with no await left there is no cancel to shield the write from. A task, a
            # shield and the condition were ~60 µs of every async tool call.
            return _raise_or_return(self._write_in_turn(ticket, call_event, payload, source is not None).payload)
        emitting = asyncio.ensure_future(self._emit_in_turn(ticket, call_event, payload, source is not None))
        event = await asyncio.shield(emitting)
        return _raise_or_return(event.payload)

    async def tools_parallel(self, calls: Sequence[tuple[Any, ...]]) -> list[Any]:
        """Run ``(name, arguments[, call_id])`` calls concurrently; results (or the
        exceptions raised) in call order."""
        import asyncio

        outcomes = await asyncio.gather(
            *(self.atool(call[0], call[1], call_id=call[2] if len(call) > 2 else None) for call in calls),
            return_exceptions=True,
        )
        stops = [outcome for outcome in outcomes if isinstance(outcome, StopRun)]
        if stops:  # a replay stop is never a tool result; raise the one that caused it
            raise next((stop for stop in stops if not isinstance(stop, _StoppedEarlier)), stops[0])
        return outcomes

    async def _emit_in_turn(self, ticket: int, call_event: Event, payload: dict[str, Any], from_source: bool) -> Event:
        import asyncio

        loop = asyncio.get_running_loop()
        if self._turn_changed is None or self._turn_loop is not loop:
            self._turn_changed, self._turn_loop = asyncio.Condition(), loop
        condition = self._turn_changed
        async with condition:
            await condition.wait_for(lambda: self._turn == ticket or self._stopped_before(ticket))
            if self._stopped_before(ticket):
                raise _StoppedEarlier("an earlier concurrent tool call stopped the run")
            try:
                return self._write_in_turn(ticket, call_event, payload, from_source)
            finally:
                condition.notify_all()

    def _write_in_turn(self, ticket: int, call_event: Event, payload: dict[str, Any], from_source: bool) -> Event:
        """Write the result of ``ticket``, whose turn it is, and pass the turn on (waking the waiters is the
        caller's: the one call in flight has none)."""
        try:
            return self._emit_tool_result(call_event, payload, from_source=from_source)
        except StopRun:  # the sink stopped the run (a replay divergence): release the rest
            self._stop_ticket = ticket if self._stop_ticket is None else min(self._stop_ticket, ticket)
            raise
        finally:
            self._turn += 1

    def _stopped_before(self, ticket: int) -> bool:
        return self._stop_ticket is not None and ticket > self._stop_ticket

    async def _notify_turn(self) -> None:
        import asyncio

        if self._turn_changed is not None and self._turn_loop is asyncio.get_running_loop():
            async with self._turn_changed:
                self._turn_changed.notify_all()

    def _tool_call(
        self, name: str, arguments: Mapping[str, Any], call_id: str | None, *, registered: bool = True
    ) -> tuple[Event, Any]:
        if registered and TOOL_RESULT not in self.sources and name not in self.tool_specs:
            raise HarnessError(f"unknown tool {name!r}; known: {', '.join(sorted(self.tool_specs)) or 'none'}")
        try:
            frozen = orjson.dumps(arguments)  # the arguments as they are at call time
        except TypeError as error:
            raise HarnessError(f"arguments of tool {name!r} are not JSON: {error}") from None
        recorded = self.redactor.redact(TOOL_CALL, {"tool": name, "arguments": orjson.loads(frozen)})["arguments"]
        payload = {
            "call_id": call_id or f"call-{self.last_seq + 1}",
            "call_key": call_key_of(name, recorded, parsed=True),  # recorded: parsed from ``frozen``
            "tool": name,
            "arguments": recorded,
        }
        parent = self._last_observation_id
        if payload["call_id"] in self._last_response_call_ids:
            parent = self._last_response_id  # the model response that asked for this call
        event = self._emit(TOOL_CALL, payload, step_id=self.step_id, parent=parent, redact=False)
        return event, orjson.loads(frozen)  # the tool gets its own copy: it cannot change the record

    def _emit_tool_result(self, call_event: Event, payload: dict[str, Any], *, from_source: bool) -> Event:
        event = self._emit(
            TOOL_RESULT, payload, step_id=call_event.step_id, parent=call_event.event_id, redact=not from_source
        )
        self._last_observation_id = event.event_id
        return event

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
        self, request: Mapping[str, Any], *, parsed: bool = False
    ) -> tuple[Event, dict[str, Any] | None]:
        """Write the model.request of a call made outside ``model`` (the httpx transport, a recorder).
        Returns the event and the recorded model.response payload in replay, or None: call the model.
        ``parsed``: ``request`` holds JSON types only (parsed from JSON, strings added) and is not changed
        later, so the JSON round trip that copies and checks it is skipped."""
        event, _ = self._emit_model_request(request, parsed=parsed)
        source = self.sources.get(MODEL_RESPONSE)
        if source is None:
            return event, None
        return event, source.observe(MODEL_RESPONSE, event.payload["request_hash"], event.payload)

    def close_model_exchange(self, request_event: Event, payload: dict[str, Any], *, recorded: bool) -> Event:
        """Write the model.response to ``request_event``: ``payload`` is ``{request_hash, response,
        [stream], [error]}``; ``recorded`` when it came from ``open_model_exchange`` (written as is),
        else it is redacted first."""
        event = self._emit(
            MODEL_RESPONSE, payload, step_id=self.step_id, parent=request_event.event_id, redact=not recorded
        )
        self._note_response(event)
        return event

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
        Returns the result as recorded, or raises the recorded error."""
        call_event, copy = self._tool_call(name, arguments, call_id, registered=False)
        source = self.sources.get(TOOL_RESULT)
        if source is not None:
            payload = source.observe(TOOL_RESULT, call_event.payload["call_key"], call_event.payload)
        else:
            payload = self._run_live(call_event, lambda: live(copy))
        event = self._emit_tool_result(call_event, payload, from_source=source is not None)
        return _raise_or_return(event.payload)

    async def arecord_tool_call(
        self,
        name: str,
        arguments: Mapping[str, Any],
        live: Callable[[Any], Awaitable[Any]],
        *,
        call_id: str | None = None,
    ) -> Any:
        """``record_tool_call`` for async tools; concurrent results are written in call order."""
        call_event, copy = self._tool_call(name, arguments, call_id, registered=False)
        return await self._await_tool_result(call_event, lambda: self._run_live_async(call_event, lambda: live(copy)))

    def record_state(self, state: Any, *, cause: Event | None = None) -> Event | None:
        """Make ``state`` (a framework's own state: graph channels, run context) the run state and
        write the state.transition from the previous one, caused by ``cause`` (default: the last
        event), in the current step (else the cause's). None when the state did not change. The
        state is kept as the journal holds it."""
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
        cause = cause or self._last_event
        if cause is None:
            raise HarnessError("record_state needs an event to hang from: start the run first")
        transition = Transition(self.tracker.hash, after_hash, diff(self.tracker.state, after))
        self.tracker.state, self.tracker.hash = after, after_hash
        self._last_framework_state = (given, after_hash)
        return self._emit_transition(cause, transition, self.step_id)

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


def _drop_top_level_nulls(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise HarnessError("a model request is a JSON object")
    return {key: item for key, item in value.items() if item is not None}

"""Helpers for driving the harness from a recorded journal (replay, experiments, resume).

The replay engine owns matching and divergence reports; these only rebuild a
harness the way the recording configured it, and serve recorded observations.
"""

from __future__ import annotations

from collections import deque
from typing import Any, Iterable, Mapping

from ..journal import Event
from ..journal.model import CLOCK_READ, MODEL_RESPONSE, OBSERVATION_KINDS, RANDOM_DRAW, RUN_STARTED, TOOL_RESULT
from .config import ConfigError
from .harness import Harness, HarnessError, RunInfo
from .plugins import ModelClient, ToolSpec
from .redaction import RedactionConfigError, RedactionRules, Redactor
from .seam import EventSink, ObservationMissing, ObservationSource
from .turns import Turns


def observation_key(event: Event) -> str:
    """The key a recorded observation answers: request_hash, call_key or source name."""
    payload = event.payload
    key: str
    if event.kind == MODEL_RESPONSE:
        key = payload["request_hash"]
    elif event.kind == TOOL_RESULT:
        key = payload["call_key"]
    elif event.kind in (CLOCK_READ, RANDOM_DRAW):
        key = payload["source"]
    else:
        raise ValueError(f"{event.kind} is not an observation")
    return key


class RecordedObservations:
    """An ObservationSource over recorded events: for each (kind, key) it serves the
    recorded payloads in recorded order, each once. Keyed, not positional, so it
    also serves experiments whose other events moved."""

    def __init__(self, events: Iterable[Event], kinds: Iterable[str] = OBSERVATION_KINDS) -> None:
        wanted = frozenset(kinds)
        self._queues: dict[tuple[str, str], deque[dict[str, Any]]] = {}
        for event in events:
            if event.kind in wanted:
                self._queues.setdefault((event.kind, observation_key(event)), deque()).append(event.payload)

    def observe(self, kind: str, key: str, request: dict[str, Any]) -> dict[str, Any]:
        queue = self._queues.get((kind, key))
        if not queue:
            raise ObservationMissing(kind, key, "no recorded observation left for this key")
        return queue.popleft()

    def remaining(self) -> int:
        return sum(len(queue) for queue in self._queues.values())


def sources_for(source: ObservationSource, kinds: Iterable[str]) -> dict[str, ObservationSource]:
    """``{kind: source}`` for the kinds to serve from the journal (strict replay: all four)."""
    unknown = set(kinds) - OBSERVATION_KINDS
    if unknown:
        raise ValueError(f"not observation kinds: {sorted(unknown)}")
    return {kind: source for kind in kinds}


def harness_for_recording(
    run_started: Event,
    *,
    sink: EventSink,
    observation_sources: Mapping[str, ObservationSource],
    model: ModelClient | None = None,
    tools: Mapping[str, ToolSpec] | None = None,
    environment: Mapping[str, Any] | None = None,
    turns: Turns | None = None,
) -> Harness:
    """A harness configured as the recorded run was: same run_id (so event ids and
    parents match), snapshot_every, redaction rules (so request hashes match),
    seed and clock options, and run.started info (environment copied unless given). ``turns``: the
    order of writes of a strict replay (the recorded interleaving)."""
    if run_started.kind != RUN_STARTED:
        raise HarnessError(f"seq {run_started.seq} is {run_started.kind}, not run.started")
    payload = run_started.payload
    harness_info = payload["harness"]
    try:
        rules = RedactionRules.from_config(harness_info.get("redaction") or {}, source="run.started harness.redaction")
    except RedactionConfigError as error:
        raise HarnessError(str(error)) from None
    from .builder import harness_options  # a late import: builder imports this package's harness too

    try:
        options = harness_options(harness_info.get("options") or {}, "run.started harness.options")
    except ConfigError as error:
        raise HarnessError(str(error)) from None
    return Harness(
        sink=sink,
        run_id=run_started.run_id,
        observation_sources=observation_sources,
        model=model,
        tools=tools,
        redactor=Redactor(rules),
        snapshot_every=payload["snapshot_every"],
        wall_clock=options.wall_clock,
        monotonic_clock=options.monotonic_clock,
        random_seed=options.random_seed,
        run_info=RunInfo(
            payload["agent"],
            dict(environment if environment is not None else payload["environment"]),
            dict(harness_info),
        ),
        turns=turns,
    )

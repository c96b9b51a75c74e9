"""Run statistics in one streaming pass: kinds, model usage, tool latency, errors, steps.

The same ``RunStats`` feeds `replay-tui stats` and the app's stats screen, so this
module only collects numbers; drawing them lives in ``stats_render``-style helpers
at the bottom (rich renderables, which Textual can show as they are).

Memory stays bounded on any journal size: latencies and sizes keep at most
``Distribution.CAP`` samples each (a fixed-seed reservoir beyond that, so
percentiles become estimates and say so), steps still open are capped at
``OPEN_STEPS_CAP`` (the least recently seen are closed and ranked early), distinct
tool and model names and error labels are capped (the rest count as "(other)"), and
the seq timeline folds its buckets in pairs as the run grows.

From the app (in a worker thread)::

    stats = compute_stats(journal, progress=on_progress, cancelled=lambda: worker.is_cancelled)
    Static(render_stats(stats, width=size.width))        # stats_render; or draw from stats.to_json()
    collector = StatsCollector(path, dialect); collector.add(event); collector.result()  # follow mode
"""

from __future__ import annotations

import heapq
import random
from array import array
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Callable, Iterable

import orjson

from ..journal import Event, Journal, JournalError
from ..journal.describe import is_timeout
from ..journal.levels import request_view
from ..journal.model import (
    INPUT_RECEIVED,
    MODEL_REQUEST,
    MODEL_RESPONSE,
    RUN_ENDED,
    RUN_STARTED,
    TOOL_CALL,
    TOOL_RESULT,
)
from ..journal.progress import CancelCheck, ProgressCallback
from ..journal.skipped import UNREADABLE_EXAMPLES, add_skipped_lines

PROGRESS_EVERY = 4096
OPEN_STEPS_CAP = 8192
TOP_STEPS = 10
TIMELINE_BUCKETS = 64
MAX_NAMES = 1000  # distinct tools or models; later new names are counted under OTHER
MAX_LABELS = 100  # distinct error types per tool, finish reasons
OTHER = "(other)"
_PENDING_REQUESTS_CAP = 1024


# -- building blocks ---------------------------------------------------------
class Distribution:
    """Count, sum, min, max and percentiles of a stream of numbers in bounded memory."""

    CAP = 65536

    def __init__(self) -> None:
        self.count = 0
        self.total = 0.0
        self.min: float | None = None
        self.max: float | None = None
        self._samples = array("d")
        self._sorted: list[float] | None = None  # cache for quantile(); dropped by add()
        self._random = random.Random(0x5EED)  # fixed seed: the same journal gives the same report

    def add(self, value: float) -> None:
        self._sorted = None
        self.count += 1
        self.total += value
        if self.min is None or value < self.min:
            self.min = value
        if self.max is None or value > self.max:
            self.max = value
        if len(self._samples) < self.CAP:
            self._samples.append(value)
        else:  # reservoir sampling (Algorithm R)
            slot = self._random.randrange(self.count)
            if slot < self.CAP:
                self._samples[slot] = value

    @property
    def exact(self) -> bool:
        return self.count <= self.CAP

    def quantile(self, q: float) -> float | None:
        """Nearest-rank percentile (q in 0..1); None when empty."""
        if not self._samples:
            return None
        if self._sorted is None:
            self._sorted = sorted(self._samples)
        ordered = self._sorted
        rank = max(1, -(-int(q * 1000) * len(ordered) // 1000))  # ceil(q * n), integer maths
        return ordered[min(rank, len(ordered)) - 1]

    def histogram(self, bins: int = 16) -> list[int]:
        """Counts of the samples in ``bins`` equal-width bins from min to max (for sparklines)."""
        if not self._samples or self.min is None or self.max is None:
            return []
        low, high = self.min, self.max
        if high == low:
            return [len(self._samples)] + [0] * (bins - 1)
        counts = [0] * bins
        width = (high - low) / bins
        for value in self._samples:
            counts[min(bins - 1, int((value - low) / width))] += 1
        return counts

    def to_json(self) -> dict[str, Any]:
        return {
            "count": self.count,
            "total": self.total,
            "min": self.min,
            "max": self.max,
            "p50": self.quantile(0.50),
            "p95": self.quantile(0.95),
            "exact": self.exact,
        }


class Timeline:
    """Per-seq-range counters with a fixed number of buckets; width doubles as the run grows."""

    def __init__(
        self, buckets: int = TIMELINE_BUCKETS, series: tuple[str, ...] = ("events", "tokens", "errors")
    ) -> None:
        self.buckets = buckets
        self.width = 1
        self.series = {name: [0] * buckets for name in series}

    def add(self, seq: int, name: str, amount: int = 1) -> None:
        index = (seq - 1) // self.width
        while index >= self.buckets:
            self._fold()
            index = (seq - 1) // self.width
        self.series[name][index] += amount

    def _fold(self) -> None:
        self.width *= 2
        for name, values in self.series.items():
            folded = [values[i] + values[i + 1] for i in range(0, self.buckets, 2)]
            self.series[name] = folded + [0] * (self.buckets - len(folded))

    def used(self, last_seq: int | None) -> dict[str, list[int]]:
        """The series cut to the buckets the run has reached."""
        if not last_seq:
            return {name: [] for name in self.series}
        length = min(self.buckets, (last_seq - 1) // self.width + 1)
        return {name: values[:length] for name, values in self.series.items()}


@dataclass
class ToolStats:
    name: str
    calls: int = 0
    results: int = 0
    errors: int = 0
    timeouts: int = 0
    latency_ms: Distribution = field(default_factory=Distribution)
    result_bytes: Distribution = field(default_factory=Distribution)
    error_types: Counter[str] = field(default_factory=Counter)

    def to_json(self) -> dict[str, Any]:
        return {
            "calls": self.calls,
            "results": self.results,
            "errors": self.errors,
            "timeouts": self.timeouts,
            "latency_ms": self.latency_ms.to_json(),
            "result_bytes": self.result_bytes.to_json(),
            "error_types": dict(self.error_types.most_common()),
        }


@dataclass
class ModelStats:
    name: str
    calls: int = 0
    responses: int = 0
    errors: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    responses_with_usage: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "calls": self.calls,
            "responses": self.responses,
            "errors": self.errors,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.total_tokens,
            "responses_with_usage": self.responses_with_usage,
        }


@dataclass(frozen=True, order=True)
class StepSpan:
    """One step: the events that carry its step_id, from the first seq to the last."""

    step_id: str
    first_seq: int
    last_seq: int
    events: int
    started_at: str
    ended_at: str
    span_ms: float | None  # None when recorded_at cannot be read as RFC 3339

    def to_json(self) -> dict[str, Any]:
        return {
            "step_id": self.step_id,
            "first_seq": self.first_seq,
            "last_seq": self.last_seq,
            "events": self.events,
            "started_at": self.started_at,
            "ended_at": self.ended_at,
            "span_ms": self.span_ms,
        }


def parse_timestamp(text: str) -> datetime | None:
    """RFC 3339 (what the harness writes), or epoch seconds/milliseconds (what other harnesses' ``ts`` often is)."""
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00") if text.endswith("Z") else text)
    except (ValueError, AttributeError):
        pass
    try:
        number = float(text)
    except (TypeError, ValueError):
        return None
    try:
        return datetime.fromtimestamp(number / 1000 if number > 1e11 else number, timezone.utc)
    except (OverflowError, OSError, ValueError):
        return None


def _span_ms(start: str, end: str) -> float | None:
    first, last = parse_timestamp(start), parse_timestamp(end)
    if first is None or last is None or (first.tzinfo is None) != (last.tzinfo is None):
        return None
    return (last - first).total_seconds() * 1000.0


@dataclass
class RunStats:
    """Everything the stats CLI prints and the stats screen shows."""

    path: str
    dialect: str
    run_id: str | None = None
    agent: str | None = None
    status: str | None = None
    events: int = 0
    first_seq: int | None = None
    last_seq: int | None = None
    started_at: str | None = None
    ended_at: str | None = None
    unreadable: int = 0
    unreadable_examples: list[str] = field(default_factory=list)
    by_kind: Counter[str] = field(default_factory=Counter)
    inputs: int = 0
    models: dict[str, ModelStats] = field(default_factory=dict)
    model_latency_ms: Distribution = field(default_factory=Distribution)
    finish_reasons: Counter[str] = field(default_factory=Counter)
    tools: dict[str, ToolStats] = field(default_factory=dict)
    longest_steps_by_span: list[StepSpan] = field(default_factory=list)
    longest_steps_by_events: list[StepSpan] = field(default_factory=list)
    steps: int = 0
    steps_approximate: bool = False
    timeline: dict[str, list[int]] = field(default_factory=dict)
    timeline_bucket_width: int = 1
    first_error_seq: int | None = None  # first failed tool call, failed model call, or run.ended with status error
    first_error: str | None = None  # one line: what failed there
    complete: bool = True  # False when the pass was cancelled; the numbers cover what was read

    @property
    def duration_ms(self) -> float | None:
        return _span_ms(self.started_at, self.ended_at) if self.started_at and self.ended_at else None

    @property
    def model_totals(self) -> ModelStats:
        total = ModelStats("all")
        for model in self.models.values():
            for name in (
                "calls",
                "responses",
                "errors",
                "prompt_tokens",
                "completion_tokens",
                "total_tokens",
                "responses_with_usage",
            ):
                setattr(total, name, getattr(total, name) + getattr(model, name))
        return total

    @property
    def tool_totals(self) -> tuple[int, int, int]:
        """(calls, errors, timeouts) over every tool."""
        tools = self.tools.values()
        return sum(t.calls for t in tools), sum(t.errors for t in tools), sum(t.timeouts for t in tools)

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "dialect": self.dialect,
            "run_id": self.run_id,
            "agent": self.agent,
            "status": self.status,
            "complete": self.complete,
            "events": self.events,
            "first_seq": self.first_seq,
            "last_seq": self.last_seq,
            "started_at": self.started_at,
            "ended_at": self.ended_at,
            "duration_ms": self.duration_ms,
            "unreadable": {"count": self.unreadable, "examples": self.unreadable_examples},
            "by_kind": dict(self.by_kind.most_common()),
            "inputs": self.inputs,
            "model": {
                "totals": self.model_totals.to_json(),
                "by_model": {name: m.to_json() for name, m in sorted(self.models.items())},
                "latency_ms": self.model_latency_ms.to_json(),
                "finish_reasons": dict(self.finish_reasons.most_common()),
            },
            "tools": {name: t.to_json() for name, t in sorted(self.tools.items())},
            "steps": {
                "count": self.steps,
                "approximate": self.steps_approximate,
                "longest_by_span": [s.to_json() for s in self.longest_steps_by_span],
                "longest_by_events": [s.to_json() for s in self.longest_steps_by_events],
            },
            "timeline": {"bucket_width_seqs": self.timeline_bucket_width, **self.timeline},
            "first_error": {"seq": self.first_error_seq, "what": self.first_error} if self.first_error_seq else None,
        }


# -- collecting --------------------------------------------------------------
def _bounded(seen: Any, name: str, cap: int) -> str:
    """``name``, or OTHER once ``seen`` already holds ``cap`` distinct names (a journal with a new
    tool name on every line must not grow the stats without bound)."""
    return name if name in seen or len(seen) < cap else OTHER


def _int(value: Any) -> int | None:
    return value if type(value) is int and value >= 0 else None


def _usage_tokens(usage: Any) -> tuple[int, int, int] | None:
    """(prompt, completion, total) from OpenAI- or Anthropic-style usage."""
    if not isinstance(usage, dict):
        return None
    prompt = _int(usage.get("prompt_tokens", usage.get("input_tokens")))
    completion = _int(usage.get("completion_tokens", usage.get("output_tokens")))
    total = _int(usage.get("total_tokens"))
    if prompt is None and completion is None and total is None:
        return None
    if total is None:
        total = (prompt or 0) + (completion or 0)
    return prompt or 0, completion or 0, total


def _size_of(value: Any) -> int:
    try:
        return len(orjson.dumps(value))
    except TypeError:
        return 0


class StatsCollector:
    """Feed events in seq order with ``add``; ``result()`` any time (also mid-run, for follow mode)."""

    def __init__(self, path: str = "", dialect: str = "") -> None:
        self.stats = RunStats(path=path, dialect=dialect)
        self._open_steps: dict[str, list[Any]] = {}  # step_id -> [first_seq, last_seq, events, first_at, last_at]
        self._closed_by_span: list[tuple[float, int, StepSpan]] = []
        self._closed_by_events: list[tuple[int, int, StepSpan]] = []
        self._closed_count = 0
        self._pending: dict[str, tuple[str, str]] = {}  # request_hash -> (model name, recorded_at)
        self._timeline = Timeline()

    # one method per kind keeps ``add`` a table lookup
    def add(self, event: Event) -> None:
        stats = self.stats
        stats.events += 1
        stats.by_kind[event.kind] += 1
        if stats.first_seq is None:
            stats.first_seq, stats.started_at, stats.run_id = event.seq, event.recorded_at, event.run_id
        stats.last_seq, stats.ended_at = event.seq, event.recorded_at
        self._timeline.add(event.seq, "events")
        handler = self._handlers.get(event.kind)
        if handler is not None:
            handler(self, event)
        if event.step_id is not None:
            self._track_step(event)

    def add_error(self, error: JournalError) -> None:
        """A line that could not be read: counted, a few kept as examples, the pass goes on."""
        self.stats.unreadable += 1
        if len(self.stats.unreadable_examples) < UNREADABLE_EXAMPLES:
            self.stats.unreadable_examples.append(str(error))

    def _run_started(self, event: Event) -> None:
        agent = event.payload.get("agent")
        self.stats.agent = agent if isinstance(agent, str) else None

    def _run_ended(self, event: Event) -> None:
        self.stats.status = event.payload.get("status")
        if self.stats.status == "error":
            self._note_error(event, "run ended with status error", event.payload.get("error"))

    def _note_error(self, event: Event, what: str, error: Any) -> None:
        if self.stats.first_error_seq is not None:
            return
        self.stats.first_error_seq = event.seq
        if isinstance(error, dict):
            detail = ": ".join(str(error[name]) for name in ("type", "message") if error.get(name))
        else:
            detail = str(error) if error else ""
        self.stats.first_error = f"{what}: {detail}" if detail else what

    def _input(self, event: Event) -> None:
        self.stats.inputs += 1

    def _model(self, name: str) -> ModelStats:
        name = _bounded(self.stats.models, name, MAX_NAMES)
        model = self.stats.models.get(name)
        if model is None:
            model = self.stats.models[name] = ModelStats(name)
        return model

    def _model_request(self, event: Event) -> None:
        name = request_view(event.payload).get("model")  # (an info journal keeps only its summary)
        name = name if isinstance(name, str) and name else "(unnamed)"
        self._model(name).calls += 1
        if len(self._pending) >= _PENDING_REQUESTS_CAP:
            self._pending.pop(next(iter(self._pending)))
        self._pending[event.payload.get("request_hash", "")] = (name, event.recorded_at)

    def _model_response(self, event: Event) -> None:
        payload = event.payload
        recorded = payload.get("response")
        response: dict[str, Any] = recorded if isinstance(recorded, dict) else {}
        pending = self._pending.pop(payload.get("request_hash", ""), None)
        name = response.get("model") if isinstance(response.get("model"), str) else None
        name = name or (pending[0] if pending else "(unnamed)")
        model = self._model(name)
        model.responses += 1
        if pending is not None:
            latency = _span_ms(pending[1], event.recorded_at)
            if latency is not None and latency >= 0:
                self.stats.model_latency_ms.add(latency)
        if payload.get("error"):
            model.errors += 1
            self._timeline.add(event.seq, "errors")
            self._note_error(event, f"model {name} failed", payload.get("error"))
        if isinstance(response.get("finish_reason"), str):
            self.stats.finish_reasons[_bounded(self.stats.finish_reasons, response["finish_reason"], MAX_LABELS)] += 1
        tokens = _usage_tokens(response.get("usage"))
        if tokens is not None:
            model.responses_with_usage += 1
            model.prompt_tokens += tokens[0]
            model.completion_tokens += tokens[1]
            model.total_tokens += tokens[2]
            self._timeline.add(event.seq, "tokens", tokens[2])

    def _tool(self, name: Any) -> ToolStats:
        name = _bounded(self.stats.tools, name if isinstance(name, str) else "(unnamed)", MAX_NAMES)
        tool = self.stats.tools.get(name)
        if tool is None:
            tool = self.stats.tools[name] = ToolStats(name)
        return tool

    def _tool_call(self, event: Event) -> None:
        self._tool(event.payload.get("tool")).calls += 1

    def _tool_result(self, event: Event) -> None:
        payload = event.payload
        tool = self._tool(payload.get("tool"))
        tool.results += 1
        duration = payload.get("duration_ms")
        if (type(duration) is int or type(duration) is float) and duration >= 0:
            tool.latency_ms.add(float(duration))
        error = payload.get("error")
        if isinstance(error, dict):
            tool.errors += 1
            tool.error_types[_bounded(tool.error_types, str(error.get("type") or "error"), MAX_LABELS)] += 1
            if is_timeout(error):
                tool.timeouts += 1
            self._timeline.add(event.seq, "errors")
            self._note_error(event, f"tool {tool.name} {'timed out' if is_timeout(error) else 'failed'}", error)
        else:
            tool.result_bytes.add(float(_size_of(payload.get("result"))))

    _handlers: dict[str, Callable[["StatsCollector", Event], None]] = {
        RUN_STARTED: _run_started,
        RUN_ENDED: _run_ended,
        INPUT_RECEIVED: _input,
        MODEL_REQUEST: _model_request,
        MODEL_RESPONSE: _model_response,
        TOOL_CALL: _tool_call,
        TOOL_RESULT: _tool_result,
    }

    # -- steps ----------------------------------------------------------------
    def _track_step(self, event: Event) -> None:
        step = self._open_steps.get(event.step_id)  # type: ignore[arg-type]
        if step is None:
            if len(self._open_steps) >= OPEN_STEPS_CAP:
                self._close_oldest_steps()
            self._open_steps[event.step_id] = [event.seq, event.seq, 1, event.recorded_at, event.recorded_at]  # type: ignore[index]
        else:
            step[1], step[4] = event.seq, event.recorded_at
            step[2] += 1

    def _close_oldest_steps(self) -> None:
        """Close the half of the open steps seen least recently (a step seen again later counts twice)."""
        self.stats.steps_approximate = True
        by_recency = sorted(self._open_steps.items(), key=lambda item: item[1][1])
        for step_id, _ in by_recency[: len(by_recency) // 2]:
            self._close_step(step_id, self._open_steps.pop(step_id))

    def _close_step(self, step_id: str, step: list[Any]) -> None:
        self._closed_count += 1
        span = StepSpan(step_id, step[0], step[1], step[2], step[3], step[4], _span_ms(step[3], step[4]))
        # heaps of the TOP_STEPS largest; the seq tiebreak keeps earlier steps first and never compares StepSpans
        self._push(self._closed_by_span, (span.span_ms if span.span_ms is not None else -1.0, -span.first_seq, span))
        self._push(self._closed_by_events, (span.events, -span.first_seq, span))

    @staticmethod
    def _push(heap: list[Any], item: Any) -> None:
        if len(heap) < TOP_STEPS:
            heapq.heappush(heap, item)
        elif item[:2] > heap[0][:2]:
            heapq.heapreplace(heap, item)

    def result(self) -> RunStats:
        """The statistics so far; open steps are ranked without being closed."""
        by_span, by_events = list(self._closed_by_span), list(self._closed_by_events)
        for step_id, step in self._open_steps.items():
            span = StepSpan(step_id, step[0], step[1], step[2], step[3], step[4], _span_ms(step[3], step[4]))
            self._push(by_span, (span.span_ms if span.span_ms is not None else -1.0, -span.first_seq, span))
            self._push(by_events, (span.events, -span.first_seq, span))
        stats = self.stats
        stats.steps = self._closed_count + len(self._open_steps)
        stats.longest_steps_by_span = [
            item[2] for item in sorted(by_span, key=lambda i: i[:2], reverse=True) if item[0] >= 0
        ]
        stats.longest_steps_by_events = [item[2] for item in sorted(by_events, key=lambda i: i[:2], reverse=True)]
        stats.timeline = self._timeline.used(stats.last_seq)
        stats.timeline_bucket_width = self._timeline.width
        return stats


def collect_stats(
    events: Iterable[Event | JournalError],
    *,
    path: str = "",
    dialect: str = "",
    total: int = 0,
    progress: ProgressCallback | None = None,
    cancelled: CancelCheck | None = None,
) -> RunStats:
    """Statistics of an event stream; stops early (``complete=False``) when ``cancelled()``."""
    collector = StatsCollector(path, dialect)
    for done, item in enumerate(events, 1):
        if isinstance(item, JournalError):
            collector.add_error(item)
        else:
            collector.add(item)
        if done % PROGRESS_EVERY == 0:
            if progress is not None:
                progress(done, max(total, done))
            if cancelled is not None and cancelled():
                collector.stats.complete = False
                break
    stats = collector.result()
    if progress is not None and stats.complete:
        progress(stats.events + stats.unreadable, max(total, stats.events + stats.unreadable))
    return stats


def compute_stats(
    journal: Journal,
    *,
    progress: ProgressCallback | None = None,
    cancelled: CancelCheck | None = None,
) -> RunStats:
    """Statistics of the events indexed in ``journal`` (call ``journal.index()`` first)."""
    stats = collect_stats(
        journal.events(),
        path=str(journal.path),
        dialect=journal.dialect,
        total=len(journal),
        progress=progress,
        cancelled=cancelled,
    )
    stats.unreadable += add_skipped_lines(journal, stats.unreadable_examples)
    return stats

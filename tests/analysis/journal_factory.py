"""Journals written with the real JournalWriter, for the analysis and app tests and the benchmark.

``write_incident`` tells a small CRM support story with every event kind, a tool
timeout, a redacted value and state snapshots; ``write_bulk`` repeats a step of
that story to reach any size quickly.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any, Callable

import jsonpatch

from replay_tui.journal import JournalWriter, call_key_of, hash_value

FIXED_TIME = "2026-11-29T12:00:00.000000Z"


def _fixed_now() -> str:
    return FIXED_TIME


class StoryWriter:
    """JournalWriter plus the bookkeeping of state hashes and patches."""

    def __init__(self, path: Path, run_id: str, initial_state: dict[str, Any], snapshot_every: int) -> None:
        self.writer = JournalWriter(path, run_id=run_id, fsync="never", now=_fixed_now)
        self.state = copy.deepcopy(initial_state)
        self.snapshot_every = snapshot_every
        self.since_snapshot = 0
        self.writer.append(
            "run.started",
            {
                "agent": "fixtures.crm_agent:agent",
                "environment": {
                    "code_revision": "4f2c9e1",
                    "runtime": "python 3.11.9",
                    "lockfile_hash": hash_value("lock"),
                    "prompt_bundle_hash": hash_value("prompts"),
                    "tool_schema_hash": hash_value("tools"),
                    "locale": "en_US",
                    "timezone": "UTC",
                    "feature_flags": {"refunds_v2": True},
                },
                "harness": {
                    "version": "0.1.0",
                    "plugins": [{"id": "crm", "type": "tools", "version": "1.0"}],
                    "config_hash": hash_value("cfg"),
                },
                "reducer_version": "1",
                "snapshot_every": snapshot_every,
                "initial_state": initial_state,
            },
        )

    def append(self, kind: str, payload: dict[str, Any], step: str | None = None, parent: str | None = None) -> str:
        event = self.writer.append(kind, payload, step_id=step, parent_event_id=parent)
        return event.event_id

    def transition(self, cause_id: str, cause_seq: int, patch: list[dict[str, Any]], step: str) -> str:
        before = hash_value(self.state)
        self.state = jsonpatch.apply_patch(self.state, patch, in_place=False)
        event_id = self.append(
            "state.transition",
            {
                "cause_seq": cause_seq,
                "before_hash": before,
                "after_hash": hash_value(self.state),
                "reducer_version": "1",
                "patch": patch,
            },
            step,
            cause_id,
        )
        self.since_snapshot += 1
        if self.since_snapshot >= self.snapshot_every:
            self.since_snapshot = 0
            self.append("state.snapshot", {"state_hash": hash_value(self.state), "state": self.state}, step)
        return event_id

    @property
    def last_seq(self) -> int:
        return self.writer.last_seq

    def close(self) -> None:
        self.writer.close()


def _tool_step(
    story: StoryWriter,
    step: str,
    root: str,
    tool: str,
    arguments: dict[str, Any],
    outcome: dict[str, Any],
    patch: list[dict[str, Any]],
) -> None:
    request = {
        "model": "gpt-x",
        "messages": [{"role": "user", "content": f"step {step}"}],
        "tools": ["customer_query", "refund"],
    }
    request_id = story.append("model.request", {"request_hash": hash_value(request), "request": request}, step, root)
    call_id = f"call-{step}"
    response = {
        "content": None,
        "tool_calls": [{"id": call_id, "name": tool, "arguments": arguments}],
        "finish_reason": "tool_calls",
        "usage": {"prompt_tokens": 120, "completion_tokens": 18},
    }
    response_id = story.append(
        "model.response", {"request_hash": hash_value(request), "response": response}, step, request_id
    )
    key = call_key_of(tool, arguments)
    call = story.append(
        "tool.call", {"call_id": call_id, "call_key": key, "tool": tool, "arguments": arguments}, step, response_id
    )
    result_id = story.append(
        "tool.result", {"call_id": call_id, "call_key": key, "tool": tool, "duration_ms": 12, **outcome}, step, call
    )
    story.transition(result_id, story.last_seq, patch, step)


def write_incident(path: Path, snapshot_every: int = 4) -> Path:
    """A small CRM incident: lookup, a timeout, a retry, a redacted card, a wrong refund."""
    story = StoryWriter(path, "run-crm-0001", {"customer": None, "refunds": [], "notes": []}, snapshot_every)
    root = story.append(
        "input.received",
        {"role": "user", "content": "Customer 42 says they were double charged; refund the duplicate."},
        None,
    )
    story.append("clock.read", {"source": "time.time", "value": 1764417600.0}, None, root)
    _tool_step(
        story,
        "step-01",
        root,
        "customer_query",
        {"customer_id": 42},
        {"result": {"id": 42, "name": "Ada", "tier": "gold", "card": "[REDACTED:card_number]"}},
        [{"op": "replace", "path": "/customer", "value": {"id": 42, "tier": "gold"}}],
    )
    _tool_step(
        story,
        "step-02",
        root,
        "charges_query",
        {"customer_id": 42},
        {
            "error": {
                "type": "TimeoutError",
                "message": "charges service did not answer in 5s",
                "code": "ETIMEDOUT",
                "timeout": True,
            }
        },
        [{"op": "add", "path": "/notes/-", "value": "charges lookup timed out"}],
    )
    _tool_step(
        story,
        "step-03",
        root,
        "charges_query",
        {"customer_id": 42, "retry": 1},
        {"result": [{"id": "ch_1", "amount": 4200}, {"id": "ch_2", "amount": 4200}]},
        [{"op": "add", "path": "/customer/charges", "value": 2}],
    )
    story.append("random.draw", {"source": "random.random", "value": 0.137}, "step-04", root)
    _tool_step(
        story,
        "step-04",
        root,
        "refund",
        {"charge_id": "ch_1", "amount": 4200},
        {"result": {"refund_id": "re_9", "status": "succeeded"}},
        [
            {"op": "add", "path": "/refunds/-", "value": {"charge": "ch_1", "amount": 4200}},
            {"op": "replace", "path": "/customer/tier", "value": "silver"},
        ],
    )
    story.append(
        "run.ended",
        {
            "status": "error",
            "output": None,
            "error": {"type": "PolicyViolation", "message": "refunded the original charge, not the duplicate"},
        },
        None,
        root,
    )
    story.close()
    return path


def write_bulk(
    path: Path, events: int, progress: Callable[[int], None] | None = None, run_id: str = "run-bulk-0001"
) -> Path:
    """About ``events`` events: the incident's steps repeated with growing state (under ``run_id``: the same
    story recorded again has other event ids and hashes on every line)."""
    story = StoryWriter(path, run_id, {"customer": None, "refunds": [], "notes": [], "counter": 0}, 64)
    root = story.append("input.received", {"role": "user", "content": "bulk run"}, None)
    step = 0
    while story.last_seq < events - 7:
        step += 1
        name = f"step-{step:07d}"
        if step % 97 == 0:
            outcome: dict[str, Any] = {
                "error": {"type": "TimeoutError", "message": "timed out", "code": "ETIMEDOUT", "timeout": True}
            }
        else:
            outcome = {"result": {"id": step, "tier": "gold" if step % 3 else "silver"}}
        _tool_step(
            story,
            name,
            root,
            "customer_query" if step % 2 else "charges_query",
            {"customer_id": step % 1000},
            outcome,
            [{"op": "replace", "path": "/counter", "value": step}],
        )
        if progress is not None and step % 10_000 == 0:
            progress(story.last_seq)
    story.append("run.ended", {"status": "ok", "output": {"steps": step}}, None, root)
    story.close()
    return path

"""Small realistic journals written through the real JournalWriter, for tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from replay_tui.journal import JournalWriter, call_key_of, hash_value


def _payloads(step: int) -> list[tuple[str, dict[str, Any]]]:
    request = {"model": "scripted-1", "messages": [{"role": "user", "content": f"step {step}"}], "temperature": 0.2}
    arguments = {"region": "east", "limit": step}
    call_key = call_key_of("customer_query", arguments)
    return [
        ("model.request", {"request_hash": hash_value(request), "request": request}),
        (
            "model.response",
            {
                "request_hash": hash_value(request),
                "response": {
                    "content": None,
                    "tool_calls": [{"id": f"call-{step}", "name": "customer_query", "arguments": arguments}],
                    "finish_reason": "tool_calls",
                    "usage": {"prompt_tokens": 120, "completion_tokens": 18},
                },
            },
        ),
        (
            "tool.call",
            {"call_id": f"call-{step}", "call_key": call_key, "tool": "customer_query", "arguments": arguments},
        ),
        (
            "tool.result",
            {
                "call_id": f"call-{step}",
                "call_key": call_key,
                "tool": "customer_query",
                "result": {"rows": step},
                "duration_ms": 12.5,
            },
        ),
    ]


def write_sample_journal(path: Path, steps: int = 3, *, run_id: str = "run-test", **writer_options: Any) -> Path:
    """run.started, ``steps`` model/tool round trips, run.ended: 2 + 4*steps events."""
    with JournalWriter(path, run_id=run_id, **writer_options) as writer:
        writer.append(
            "run.started",
            {
                "agent": "fixtures.agents.crm:agent",
                "environment": {"runtime": "cpython-3.11", "timezone": "UTC"},
                "harness": {"version": "0.1.0", "plugins": [], "config_hash": None},
                "reducer_version": "1",
                "snapshot_every": 50,
                "initial_state": {},
            },
        )
        for step in range(1, steps + 1):
            for kind, payload in _payloads(step):
                writer.append(kind, payload, step_id=f"step-{step:02d}")
        writer.append("run.ended", {"status": "ok", "output": "done"})
    return path

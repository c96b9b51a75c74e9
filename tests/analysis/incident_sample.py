"""A realistic incident journal written through the real JournalWriter.

A CRM support agent refunds an order: the model asks for tools, one tool times
out, one fails, state changes with JSON patches, and an API key that redaction
missed sits in a tool's arguments. Timestamps are fixed so spans are exact.
"""

from __future__ import annotations

import copy
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from replay_tui.journal import JournalWriter, call_key_of, hash_value

PLANTED_SECRET = "sk-proj-Qm9vX2JhcjEyMzQ1Njc4OTBhYmNkZWZnaGlqa2xtbm9w"
START = datetime(2026, 11, 3, 9, 30, 0, tzinfo=timezone.utc)


class _Recorder:
    def __init__(self, writer: JournalWriter) -> None:
        self.writer = writer
        self.clock_ms = 0
        self.state: dict[str, Any] = {"order": None, "refunds": [], "notes": []}

    def at(self) -> str:
        return (START + timedelta(milliseconds=self.clock_ms)).isoformat(timespec="milliseconds").replace("+00:00", "Z")

    def emit(
        self, kind: str, payload: dict[str, Any], *, step: str | None, after_ms: int = 5, parent: str | None = None
    ):
        self.clock_ms += after_ms
        return self.writer.append(kind, payload, step_id=step, parent_event_id=parent, recorded_at=self.at())

    def model(
        self,
        step: str,
        prompt: str,
        *,
        tool_calls: list[dict[str, Any]],
        usage: dict[str, int],
        latency_ms: int,
        parent: str | None = None,
    ):
        request = {"model": "gpt-4o-2024-08-06", "messages": [{"role": "user", "content": prompt}], "temperature": 0}
        request_event = self.emit(
            "model.request", {"request_hash": hash_value(request), "request": request}, step=step, parent=parent
        )
        response = {
            "content": None if tool_calls else "Refund could not be completed; escalated to a human.",
            "tool_calls": tool_calls,
            "finish_reason": "tool_calls" if tool_calls else "stop",
            "usage": usage,
        }
        return self.emit(
            "model.response",
            {"request_hash": hash_value(request), "response": response},
            step=step,
            after_ms=latency_ms,
            parent=request_event.event_id,
        )

    def tool(
        self,
        step: str,
        parent: str,
        call_id: str,
        tool: str,
        arguments: dict[str, Any],
        *,
        duration_ms: int,
        result: Any = None,
        error: dict[str, Any] | None = None,
    ):
        call_key = call_key_of(tool, arguments)
        call = self.emit(
            "tool.call",
            {"call_id": call_id, "call_key": call_key, "tool": tool, "arguments": arguments},
            step=step,
            parent=parent,
        )
        payload: dict[str, Any] = {"call_id": call_id, "call_key": call_key, "tool": tool, "duration_ms": duration_ms}
        if error is not None:
            payload["error"] = error
        else:
            payload["result"] = result
        return self.emit("tool.result", payload, step=step, after_ms=duration_ms, parent=call.event_id)

    def transition(self, step: str, cause_seq: int, patch: list[dict[str, Any]]) -> None:
        before = copy.deepcopy(self.state)
        for operation in patch:  # the few operations this sample uses
            parts = operation["path"].strip("/").split("/")
            target = self.state
            for part in parts[:-1]:
                target = target[part]
            if operation["op"] == "add" and parts[-1] == "-":
                target.append(operation["value"])
            else:
                target[parts[-1]] = operation["value"]
        self.emit(
            "state.transition",
            {
                "cause_seq": cause_seq,
                "before_hash": hash_value(before),
                "after_hash": hash_value(self.state),
                "reducer_version": "crm-1",
                "patch": patch,
            },
            step=step,
            after_ms=1,
        )


def write_incident_journal(path: Path, *, run_id: str = "run-crm-incident", filler_steps: int = 0) -> Path:
    """run.started .. run.ended (status error); ``filler_steps`` adds quick lookup steps before the incident."""
    with JournalWriter(path, run_id=run_id) as writer:
        rec = _Recorder(writer)
        rec.emit(
            "run.started",
            {
                "agent": "fixtures.agents.crm:agent",
                "environment": {
                    "code_revision": "4f2c9e1",
                    "runtime": "cpython-3.11.9",
                    "lockfile_hash": hash_value("uv.lock"),
                    "prompt_bundle_hash": hash_value("prompts"),
                    "tool_schema_hash": hash_value("tools"),
                    "locale": "en_US",
                    "timezone": "UTC",
                    "feature_flags": {"refund_v2": True},
                },
                "harness": {
                    "version": "0.1.0",
                    "plugins": [{"id": "redact", "type": "redaction", "version": "1"}],
                    "config_hash": hash_value("cfg"),
                },
                "reducer_version": "crm-1",
                "snapshot_every": 50,
                "initial_state": rec.state,
            },
            step=None,
        )
        user = rec.emit(
            "input.received", {"role": "user", "content": "Please refund order A-1009, it arrived broken."}, step=None
        )
        for index in range(filler_steps):
            step = f"lookup-{index:03d}"
            response = rec.model(
                step,
                f"look up history {index}",
                tool_calls=[
                    {"id": f"call_l{index}", "name": "history_search", "arguments": {"customer": "C-77", "page": index}}
                ],
                usage={"prompt_tokens": 300, "completion_tokens": 20, "total_tokens": 320},
                latency_ms=400,
                parent=user.event_id,
            )
            rec.tool(
                step,
                response.event_id,
                f"call_l{index}",
                "history_search",
                {"customer": "C-77", "page": index},
                duration_ms=30 + index % 7,
                result={"hits": [f"ticket-{index}"]},
            )
        response = rec.model(
            "step-01",
            "Refund order A-1009",
            tool_calls=[{"id": "call_a1", "name": "order_lookup", "arguments": {"order_id": "A-1009"}}],
            usage={"prompt_tokens": 812, "completion_tokens": 41, "total_tokens": 853},
            latency_ms=1200,
            parent=user.event_id,
        )
        result = rec.tool(
            "step-01",
            response.event_id,
            "call_a1",
            "order_lookup",
            {"order_id": "A-1009"},
            duration_ms=85,
            result={"order_id": "A-1009", "amount": 129.0, "currency": "EUR", "status": "delivered"},
        )
        rec.transition(
            "step-01",
            result.seq,
            [{"op": "replace", "path": "/order", "value": {"id": "A-1009", "amount": 129.0, "status": "delivered"}}],
        )
        response = rec.model(
            "step-02",
            "Issue the refund",
            parent=result.event_id,
            tool_calls=[
                {"id": "call_b2", "name": "payments_refund", "arguments": {"order_id": "A-1009", "amount": 129.0}}
            ],
            usage={"prompt_tokens": 990, "completion_tokens": 37, "total_tokens": 1027},
            latency_ms=900,
        )
        refund_args = {"order_id": "A-1009", "amount": 129.0, "headers": {"x-api-key": PLANTED_SECRET}}
        timeout = rec.tool(
            "step-02",
            response.event_id,
            "call_b2",
            "payments_refund",
            refund_args,
            duration_ms=30000,
            error={
                "type": "TimeoutError",
                "message": "payments API did not answer in 30 s",
                "code": "ETIMEDOUT",
                "timeout": True,
            },
        )
        response = rec.model(
            "step-03",
            "Retry the refund",
            parent=timeout.event_id,
            tool_calls=[
                {"id": "call_c3", "name": "payments_refund", "arguments": {"order_id": "A-1009", "amount": 1290.0}}
            ],
            usage={"prompt_tokens": 1104, "completion_tokens": 39, "total_tokens": 1143},
            latency_ms=950,
        )
        result = rec.tool(
            "step-03",
            response.event_id,
            "call_c3",
            "payments_refund",
            {"order_id": "A-1009", "amount": 1290.0},
            duration_ms=240,
            error={"type": "PaymentRejected", "message": "refund exceeds captured amount", "code": "amount_too_large"},
        )
        rec.transition(
            "step-03",
            result.seq,
            [
                {
                    "op": "add",
                    "path": "/refunds/-",
                    "value": {"order_id": "A-1009", "amount": 1290.0, "status": "rejected"},
                }
            ],
        )
        rec.model(
            "step-04",
            "Explain",
            tool_calls=[],
            usage={"prompt_tokens": 1201, "completion_tokens": 25, "total_tokens": 1226},
            latency_ms=700,
            parent=result.event_id,
        )
        rec.emit(
            "run.ended",
            {
                "status": "error",
                "output": None,
                "error": {"type": "PaymentRejected", "message": "refund exceeds captured amount"},
            },
            step=None,
        )
    return path

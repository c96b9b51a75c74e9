"""One-line summaries of events for the timeline and the tree."""

from __future__ import annotations

from typing import Any

import orjson

from ..journal import Event, JournalError

SUMMARY_LIMIT = 160


def short(value: Any, limit: int = 60) -> str:
    text = value if isinstance(value, str) else orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def short_hash(value: Any) -> str:
    return value[7:19] if isinstance(value, str) and value.startswith("sha256:") else str(value)


def summary_of(event: Event | JournalError) -> str:
    """What happened, in a few words: tool and arguments, model answer, patch paths."""
    if isinstance(event, JournalError):
        return f"unreadable: {event.message}"
    payload = event.payload
    kind = event.kind
    if kind == "run.started":
        return f"agent {payload.get('agent')}"
    if kind == "input.received":
        return f"{payload.get('role')}: {short(payload.get('content'), 100)}"
    if kind == "model.request":
        request = payload.get("request") or {}
        return f"{request.get('model', 'model')} request {short_hash(payload.get('request_hash'))}"
    if kind == "model.response":
        if payload.get("error"):
            return f"error {short(payload.get('error'))}"
        response = payload.get("response") or {}
        calls = response.get("tool_calls") or []
        if calls:
            return "asks " + ", ".join(f"{c.get('name')}({short(c.get('arguments'), 40)})" for c in calls if isinstance(c, dict))
        return f"says {short(response.get('content'), 100)}"
    if kind == "tool.call":
        return f"{payload.get('tool')}({short(payload.get('arguments'), 80)})"
    if kind == "tool.result":
        error = payload.get("error")
        if error:
            message = error.get("message") if isinstance(error, dict) else error
            return f"{payload.get('tool')} ✗ {short(message, 90)}"
        return f"{payload.get('tool')} → {short(payload.get('result'), 90)}"
    if kind in ("clock.read", "random.draw"):
        return f"{payload.get('source')} = {short(payload.get('value'))}"
    if kind == "state.transition":
        patch = payload.get("patch") or []
        paths = ", ".join(f"{op.get('op')} {op.get('path')}" for op in patch[:3] if isinstance(op, dict))
        more = f" +{len(patch) - 3}" if len(patch) > 3 else ""
        return f"{paths}{more}"
    if kind == "state.snapshot":
        return f"snapshot {short_hash(payload.get('state_hash'))}"
    if kind == "run.ended":
        text = f"status {payload.get('status')}"
        if payload.get("error"):
            text += f": {short(payload.get('error'), 90)}"
        return text
    return short(payload, SUMMARY_LIMIT)

"""One-line summaries of events for the timeline and the tree."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

import orjson

from ..analysis.secrets import mask_secrets
from ..journal import Event, JournalError
from ..journal.safe_text import safe_json, safe_line

SUMMARY_LIMIT = 160
_LINE_BREAKS = re.compile(r"[ \t\n]+")  # shown as one space in a one-line summary; CR and the rest are escaped


def short(value: Any, limit: int = 60) -> str:
    """A journal value on one line, escaped (journal text is hostile), at most ``limit`` characters."""
    if isinstance(value, str):
        text = value
    else:
        try:
            text = orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()
        except orjson.JSONEncodeError:  # nested deeper than orjson writes
            text = safe_json(value)
    text = text[: limit * 4]
    if "\n" in text or "\t" in text:
        text = _LINE_BREAKS.sub(" ", text)
    return safe_line(text, limit)


def short_hash(value: Any) -> str:
    return value[7:19] if isinstance(value, str) and value.startswith("sha256:") else safe_line(str(value), 40)


def summary_of(event: Event | JournalError) -> str:
    """What happened, in a few words: tool and arguments, model answer, patch paths; one escaped line.
    A value the secret scan flags reads as its masked preview, as in the panes."""
    if not isinstance(event, Event):
        return safe_line(_summary(event))
    cached = _MASKED_SUMMARIES.get(event.event_hash) if event.event_hash else None
    if cached is None:
        masked, count = mask_secrets(event.payload)
        cached = safe_line(_summary(replace(event, payload=masked) if count else event))
        if event.event_hash:
            if len(_MASKED_SUMMARIES) >= 8192:
                _MASKED_SUMMARIES.clear()
            _MASKED_SUMMARIES[event.event_hash] = cached
    return cached


_MASKED_SUMMARIES: dict[str, str] = {}  # by event hash: a row is drawn many times, masked once


def _summary(event: Event | JournalError) -> str:
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
    if kind == "note":  # what an imported trace said that has no other kind
        return short(payload.get("text"), SUMMARY_LIMIT)
    if kind == "run.ended":
        text = f"status {payload.get('status')}"
        if payload.get("error"):
            text += f": {short(payload.get('error'), 90)}"
        return text
    return short(payload, SUMMARY_LIMIT)

"""The one event describer: what an event is about, in a few words, for every layer.

Two styles: ``short`` for the timeline, the tree and the presenter (terse, one line), and
``report`` for the incident report (whole words: "model asks for", "returned after 85 ms").
Journal text is hostile, so everything is rendered through ``safe_text``: controls, escape
sequences, bidi and invisible characters come out escaped, and each value is cut to a limit
(``compact``, the one truncation helper for journal values on one line).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, Literal

import orjson

from .errors import JournalError
from .levels import request_view
from .model import (
    CLOCK_READ,
    INPUT_RECEIVED,
    MODEL_REQUEST,
    MODEL_RESPONSE,
    NOTE,
    RANDOM_DRAW,
    RUN_ENDED,
    RUN_STARTED,
    STATE_SNAPSHOT,
    STATE_TRANSITION,
    TOOL_CALL,
    TOOL_RESULT,
    Event,
)
from .safe_text import safe_json, safe_line

Style = Literal["short", "report"]
SUMMARY_LIMIT = 160
_LINE_BREAKS = re.compile(r"[ \t\n]+")  # one space in a one-line text; CR and the rest are escaped


def compact(value: Any, limit: int = 60) -> str:
    """A journal value on one line: a string as itself, anything else as compact JSON; escaped, at most
    ``limit`` characters (ending in "…" when cut)."""
    if isinstance(value, str):
        text = value
    else:
        try:
            text = orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()
        except (orjson.JSONEncodeError, TypeError):  # nested deeper than orjson writes, or not JSON
            text = safe_json(value)
    text = text[: limit * 4]
    if "\n" in text or "\t" in text:
        text = _LINE_BREAKS.sub(" ", text)
    return safe_line(text, limit)


def short_hash(value: Any) -> str:
    """``sha256:0123456789ab…`` as its first 12 hex digits."""
    return value[7:19] if isinstance(value, str) and value.startswith("sha256:") else safe_line(str(value), 40)


def is_timeout(error: dict[str, Any]) -> bool:
    """A tool or model error that is a timeout (flagged, or named so in its type or code)."""
    if error.get("timeout") is True:
        return True
    text = f"{error.get('type', '')} {error.get('code', '')}".lower()
    return "timeout" in text or "timedout" in text or "etimedout" in text


def error_text(error: Any) -> str:
    """``type: message`` of an error object, else the value itself, on one line."""
    if isinstance(error, dict):
        text = ": ".join(compact(error[name], 90) for name in ("type", "message") if error.get(name))
        return text or compact(error, 90)
    return compact(error, 90)


def arguments_text(arguments: Any) -> str:
    if isinstance(arguments, dict):
        return ", ".join(f"{safe_line(str(key), 40)}={compact(value, 40)}" for key, value in arguments.items())
    return compact(arguments, 60)


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _name(value: Any) -> str:
    return safe_line(str(value), 80)


def _patch_text(patch: list[Any], shown: int) -> str:
    return ", ".join(f"{_name(op.get('op'))} {_name(op.get('path'))}" for op in patch[:shown] if isinstance(op, dict))


# -- short: the timeline, the tree, the presenter ----------------------------------------------


def _short(kind: str, payload: dict[str, Any]) -> str:
    if kind == RUN_STARTED:
        return f"agent {_name(payload.get('agent'))}"
    if kind == INPUT_RECEIVED:
        return f"{_name(payload.get('role'))}: {compact(payload.get('content'), 100)}"
    if kind == MODEL_REQUEST:
        request = request_view(payload)
        return f"{_name(request.get('model', 'model'))} request {short_hash(payload.get('request_hash'))}"
    if kind == MODEL_RESPONSE:
        if payload.get("error"):
            return f"error {compact(payload.get('error'))}"
        response = _dict(payload.get("response"))
        calls = [call for call in _list(response.get("tool_calls")) if isinstance(call, dict)]
        if calls:
            return "asks " + ", ".join(f"{_name(c.get('name'))}({compact(c.get('arguments'), 40)})" for c in calls)
        return f"says {compact(response.get('content'), 100)}"
    if kind == TOOL_CALL:
        return f"{_name(payload.get('tool'))}({compact(payload.get('arguments'), 80)})"
    if kind == TOOL_RESULT:
        error = payload.get("error")
        if error:
            message = error.get("message") if isinstance(error, dict) else error
            return f"{_name(payload.get('tool'))} ✗ {compact(message, 90)}"
        return f"{_name(payload.get('tool'))} → {compact(payload.get('result'), 90)}"
    if kind in (CLOCK_READ, RANDOM_DRAW):
        return f"{_name(payload.get('source'))} = {compact(payload.get('value'))}"
    if kind == STATE_TRANSITION:
        patch = _list(payload.get("patch"))
        more = f" +{len(patch) - 3}" if len(patch) > 3 else ""
        return f"{_patch_text(patch, 3)}{more}"
    if kind == STATE_SNAPSHOT:
        return f"snapshot {short_hash(payload.get('state_hash'))}"
    if kind == NOTE:  # what an imported trace said that has no other kind
        return compact(payload.get("text"), SUMMARY_LIMIT)
    if kind == RUN_ENDED:
        text = f"status {_name(payload.get('status'))}"
        if payload.get("error"):
            text += f": {compact(payload.get('error'), 90)}"
        return text
    return compact(payload, SUMMARY_LIMIT)


# -- report: the incident report ------------------------------------------------------------------


def _report(kind: str, payload: dict[str, Any]) -> str:
    if kind == RUN_STARTED:
        return f"run started: agent {_name(payload.get('agent'))}"
    if kind == INPUT_RECEIVED:
        return f"{_name(payload.get('role'))}: {compact(payload.get('content'), 90)}"
    if kind == MODEL_REQUEST:
        request = request_view(payload)
        summary = _dict(payload.get("summary"))
        if summary and not payload.get("request"):  # an info journal: the summary (journal/levels.py)
            users = _list(summary.get("user_messages"))
            said = compact(users[-1], 70) if users else f"{summary.get('messages')} messages"
            return f"model request to {_name(request.get('model', '?'))}: {said}"
        messages = _list(request.get("messages"))
        last = _dict(messages[-1]).get("content") if messages else None
        return f"model request to {_name(request.get('model', '?'))}: {compact(last, 70)}"
    if kind == MODEL_RESPONSE:
        if payload.get("error"):
            return f"model error: {error_text(payload['error'])}"
        response = _dict(payload.get("response"))
        calls = [call for call in _list(response.get("tool_calls")) if isinstance(call, dict)]
        if calls:
            return "model asks for " + "; ".join(
                f"{_name(call.get('name'))}({arguments_text(call.get('arguments'))})" for call in calls
            )
        finish = _name(response.get("finish_reason"))
        return f"model answers ({finish}): {compact(response.get('content'), 70)}"
    if kind == TOOL_CALL:
        return f"call {_name(payload.get('tool'))}({arguments_text(payload.get('arguments'))})"
    if kind == TOOL_RESULT:
        duration = payload.get("duration_ms")
        took = (
            f" after {duration:g} ms" if isinstance(duration, (int, float)) and not isinstance(duration, bool) else ""
        )
        error = payload.get("error")
        if isinstance(error, dict):
            verb = "timed out" if is_timeout(error) else "failed"
            return f"{_name(payload.get('tool'))} {verb}{took}: {error_text(error)}"
        return f"{_name(payload.get('tool'))} returned{took}: {compact(payload.get('result'), 70)}"
    if kind == STATE_TRANSITION:
        patch = _list(payload.get("patch"))
        more = f" (+{len(patch) - 4} more)" if len(patch) > 4 else ""
        return f"state change caused by seq {_name(payload.get('cause_seq'))}: {_patch_text(patch, 4)}{more}"
    if kind == STATE_SNAPSHOT:
        return f"state snapshot {safe_line(str(payload.get('state_hash')), 23)}…"
    if kind in (CLOCK_READ, RANDOM_DRAW):
        return f"{_name(payload.get('source'))} = {compact(payload.get('value'), 60)}"
    if kind == RUN_ENDED:
        error = f": {error_text(payload['error'])}" if payload.get("error") else ""
        return f"run ended, status {_name(payload.get('status'))}{error}"
    if kind == NOTE:
        return compact(payload.get("text"), 90)
    return safe_line(kind, 80)


_STYLES: dict[str, Callable[[str, dict[str, Any]], str]] = {"short": _short, "report": _report}


def describe(kind: str, payload: Any, style: Style = "short") -> str:
    """What an event of ``kind`` with ``payload`` is about, on one escaped line."""
    return safe_line(_STYLES[style](kind, _dict(payload)))


def describe_event(event: Event | JournalError, style: Style = "short") -> str:
    """``describe`` for a read event; an unreadable line says so."""
    if isinstance(event, JournalError):
        return safe_line(f"unreadable: {event.message}")
    return describe(event.kind, event.payload, style)


def label(event: Event | JournalError) -> str:
    """A tree node's label: seq, kind and the most telling payload field."""
    if isinstance(event, JournalError):
        return safe_line(f"unreadable line: {event.message}")
    payload = event.payload
    detail = payload.get("tool") or payload.get("role") or payload.get("source") or payload.get("status") or ""
    return safe_line(f"{event.seq} {event.kind}" + (f" {detail}" if isinstance(detail, str) and detail else ""))


__all__ = [
    "SUMMARY_LIMIT",
    "Style",
    "arguments_text",
    "compact",
    "describe",
    "describe_event",
    "error_text",
    "is_timeout",
    "label",
    "short_hash",
]

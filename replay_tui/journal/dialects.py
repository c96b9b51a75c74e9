"""Journal dialects: schema v1 (with migrations) and the common type/data style.

A dialect turns one parsed line into one or more v1 event objects. The other
harness style stores a tool's input and output in one ``tool_invocation`` line,
so it can expand to two events; it has no hash chain.
"""

from __future__ import annotations

from typing import Any

from .errors import SchemaError, UnknownKindError, missing
from .migrations import upgrade
from .model import SCHEMA_VERSION

V1 = "replay-tui/v1"
TYPE_DATA = "type-data"


def detect(obj: Any) -> str:
    """The dialect a first line belongs to (v1 when in doubt, so errors name v1 fields)."""
    if isinstance(obj, dict) and "kind" not in obj and "type" in obj and "data" in obj:
        return TYPE_DATA
    return V1


def to_v1(obj: Any) -> dict[str, Any]:
    """A v1 line, upgraded through registered migrations when it is older."""
    if isinstance(obj, dict) and obj.get("schema_version") != SCHEMA_VERSION:
        return upgrade(obj)
    v1: dict[str, Any] = obj
    return v1


_TYPE_DATA_KINDS = (
    "session_started",
    "user_message",
    "model_request",
    "model_response",
    "tool_invocation",
    "session_ended",
)


# The fields each line type maps onto v1; anything else is kept under ``payload.extra``.
_LINE_FIELDS = frozenset({"type", "event_id", "session_id", "seq", "ts", "data", "parent_event_id", "parent_id"})
_DATA_FIELDS = {
    "session_started": {"agent", "name", "environment", "state"},
    "user_message": {"role", "content", "text"},
    "model_request": None,  # the whole data is the request
    "model_response": {"content", "tool_calls", "finish_reason", "usage", "request"},
    "tool_invocation": {
        "tool",
        "name",
        "input",
        "arguments",
        "call_id",
        "id",
        "error",
        "output",
        "result",
        "duration_ms",
    },
    "session_ended": {"status", "output", "error"},
}
_ALWAYS_MAPPED = frozenset({"step_id", "parent_event_id", "parent_id"})


def _parent_id(obj: dict[str, Any], data: dict[str, Any]) -> str | None:
    """The cause this line names, on the line or in its data (either spelling)."""
    for holder in (obj, data):
        for name in ("parent_event_id", "parent_id"):
            value = holder.get(name)
            if isinstance(value, (str, int)) and not isinstance(value, bool) and value != "":
                return str(value)
    return None


def _unmapped(obj: dict[str, Any], data: dict[str, Any], line_type: Any) -> dict[str, Any]:
    """Every field of the line and of its data that the v1 mapping does not carry."""
    extra: dict[str, Any] = {name: value for name, value in obj.items() if name not in _LINE_FIELDS}
    mapped = _DATA_FIELDS.get(line_type) if isinstance(line_type, str) else None
    if mapped is not None:
        unmapped_data = {
            name: value for name, value in data.items() if name not in mapped and name not in _ALWAYS_MAPPED
        }
        if unmapped_data:
            extra["data"] = unmapped_data
    return extra


def type_data_event_count(obj: Any) -> int:
    return 2 if isinstance(obj, dict) and obj.get("type") == "tool_invocation" else 1


def type_data_to_v1(obj: Any, first_seq: int) -> list[dict[str, Any]]:
    """Map one type/data line onto v1 event objects numbered from ``first_seq``."""
    from .hashing import call_key_of, hash_value  # with hashlib (11 M instructions): a v1 journal needs neither

    if not isinstance(obj, dict):
        raise SchemaError("(line)", "a JSON object", obj)
    for field in ("type", "data"):
        if field not in obj:
            raise SchemaError(field, "present in a type/data journal line", missing(), seq=first_seq)
    data = obj["data"]
    if not isinstance(data, dict):
        raise SchemaError("data", "an object", data, seq=first_seq)
    line_type = obj["type"]
    session = str(obj.get("session_id", "unknown-session"))
    source_id = str(obj.get("event_id", first_seq))
    step_id = data.get("step_id") if isinstance(data.get("step_id"), str) else None
    line_parent = _parent_id(obj, data)
    extra = _unmapped(obj, data, line_type)

    def event(kind: str, payload: dict[str, Any], offset: int = 0, parent: str | None = None) -> dict[str, Any]:
        if offset == 0 and extra:
            # Fields this mapping has no place for stay in the payload: shown, searchable and scanned.
            payload = {**payload, "extra": extra}
        return {
            "schema_version": SCHEMA_VERSION,
            "run_id": session,
            "seq": first_seq + offset,
            "event_id": source_id if offset == 0 else f"{source_id}#result",
            "kind": kind,
            "step_id": step_id,
            "parent_event_id": line_parent if offset == 0 else parent,
            "recorded_at": str(obj.get("ts", "")),
            "payload": payload,
            "prev_event_hash": None,
            "diagnostics": {"source_type": line_type, "source_seq": obj.get("seq")},
        }

    if line_type == "session_started":
        return [
            event(
                "run.started",
                {
                    "agent": str(data.get("agent", data.get("name", "unknown"))),
                    "environment": data.get("environment", {}) if isinstance(data.get("environment"), dict) else {},
                    "harness": {"version": "type-data", "plugins": [], "config_hash": None},
                    "reducer_version": "none",
                    "snapshot_every": 0,
                    "initial_state": data.get("state", {}),
                },
            )
        ]
    if line_type == "user_message":
        return [
            event(
                "input.received",
                {"role": str(data.get("role", "user")), "content": data.get("content", data.get("text"))},
            )
        ]
    if line_type == "model_request":
        return [event("model.request", {"request_hash": hash_value(data), "request": data})]
    if line_type == "model_response":
        response = {
            "content": data.get("content"),
            "tool_calls": data.get("tool_calls", []),
            "finish_reason": data.get("finish_reason"),
            "usage": data.get("usage"),
        }
        # Responses in this style do not name their request; the hash of the
        # request the line carries (or none) keeps the v1 shape honest.
        return [event("model.response", {"request_hash": hash_value(data.get("request")), "response": response})]
    if line_type == "tool_invocation":
        tool = str(data.get("tool", data.get("name", "unknown")))
        arguments = data.get("input", data.get("arguments", {}))
        if not isinstance(arguments, dict):
            arguments = {"value": arguments}
        call_id = str(data.get("call_id", data.get("id", source_id)))
        call_key = call_key_of(tool, arguments)
        call = event("tool.call", {"call_id": call_id, "call_key": call_key, "tool": tool, "arguments": arguments})
        result_payload: dict[str, Any] = {"call_id": call_id, "call_key": call_key, "tool": tool}
        if data.get("error") is not None:
            error = data["error"]
            result_payload["error"] = error if isinstance(error, dict) else {"type": "Error", "message": str(error)}
        else:
            result_payload["result"] = data.get("output", data.get("result"))
        if isinstance(data.get("duration_ms"), (int, float)):
            result_payload["duration_ms"] = data["duration_ms"]
        return [call, event("tool.result", result_payload, 1, parent=source_id)]
    if line_type == "session_ended":
        status = data.get("status", "ok")
        return [
            event(
                "run.ended",
                {
                    "status": status if status in ("ok", "error", "cancelled") else "error",
                    "output": data.get("output"),
                    "error": data.get("error"),
                },
            )
        ]
    raise UnknownKindError("type", "one of " + ", ".join(_TYPE_DATA_KINDS), line_type, seq=first_seq)

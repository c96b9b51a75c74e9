"""Upgrades of older event versions to schema v1.

An event is hashed in the form it was written, so migrations only change the
logical view: the reader verifies the chain on the raw object, then migrates.
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

from .errors import UnsupportedVersionError
from .model import SCHEMA_VERSION


class Migration(NamedTuple):
    """How events of one older schema version are read: a NamedTuple, not a frozen dataclass (3 M instructions
    at import, on the path of every journal opened)."""

    from_version: int
    to_version: int
    description: str
    apply: Callable[[dict[str, Any]], dict[str, Any]]


_MIGRATIONS: dict[int, Migration] = {}


def register_migration(migration: Migration) -> None:
    """Make events of ``migration.from_version`` readable. One migration per version."""
    if migration.from_version in _MIGRATIONS:
        raise ValueError(f"a migration from schema_version {migration.from_version} is already registered")
    _MIGRATIONS[migration.from_version] = migration


def upgrade(obj: dict[str, Any]) -> dict[str, Any]:
    """Bring an event object to the current schema_version, or explain why not."""
    version = obj.get("schema_version")
    seen: set[Any] = set()
    while version != SCHEMA_VERSION:
        migration = _MIGRATIONS.get(version) if type(version) is int else None
        if migration is None or version in seen:
            known = ", ".join(str(v) for v in sorted([SCHEMA_VERSION, *_MIGRATIONS]))
            raise UnsupportedVersionError(
                "schema_version", f"a supported version ({known})", version, seq=obj.get("seq")
            )
        seen.add(version)
        obj = migration.apply(obj)
        version = obj.get("schema_version")
    return obj


# schema_version 0 was the pre-release format: snake_case kinds, the timestamp in
# "ts", and tool failures as a separate "tool_error" kind.
_V0_KINDS = {
    "run_started": "run.started",
    "input_received": "input.received",
    "model_request": "model.request",
    "model_response": "model.response",
    "tool_call": "tool.call",
    "tool_result": "tool.result",
    "tool_error": "tool.result",
    "clock_read": "clock.read",
    "random_draw": "random.draw",
    "state_transition": "state.transition",
    "state_snapshot": "state.snapshot",
    "run_ended": "run.ended",
}


def _v0_to_v1(obj: dict[str, Any]) -> dict[str, Any]:
    upgraded = {key: value for key, value in obj.items() if key != "ts"}
    upgraded["schema_version"] = 1
    upgraded["recorded_at"] = obj.get("ts", obj.get("recorded_at"))
    old_kind = obj.get("kind")
    upgraded["kind"] = _V0_KINDS.get(old_kind, old_kind) if isinstance(old_kind, str) else old_kind
    if old_kind == "tool_error" and isinstance(obj.get("payload"), dict):
        payload = dict(obj["payload"])
        payload["error"] = {
            "type": payload.pop("error_type", "Error"),
            "message": payload.pop("message", ""),
            "code": payload.pop("code", None),
            "timeout": bool(payload.pop("timeout", False)),
        }
        upgraded["payload"] = payload
    return upgraded


register_migration(Migration(0, 1, "pre-release v0: snake_case kinds, ts, tool_error", _v0_to_v1))

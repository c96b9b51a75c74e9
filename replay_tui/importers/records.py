"""What an importer produces: source-neutral records, before they become journal events.

Every importer turns its format into these records in run order; ``JournalBuilder``
alone turns them into events (step ids, parents, hashes), so all formats share one
mapping onto the journal's kinds. ``source`` is the pointer back to the foreign
record (span id, line, interaction index), kept under the events' ``diagnostics``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

Source = dict[str, Any]


@dataclass
class InputRecord:
    """A run's (or a sub-agent's) input: becomes ``input.received``; ``scope`` names the agent
    whose later records hang from it."""

    content: Any
    source: Source
    role: str = "user"
    context: Any = None
    scope: str | None = None
    at: str | None = None


@dataclass
class ModelRecord:
    """One model call: ``model.request`` then ``model.response``."""

    request: dict[str, Any]
    response: dict[str, Any] | None
    source: Source
    error: dict[str, Any] | None = None
    stream: dict[str, Any] | None = None
    scope: str | None = None
    at: str | None = None
    #: False when the trace did not capture the call's content (the request or the answer).
    content_complete: bool = True
    missing: str = ""


@dataclass
class ToolRecord:
    """One tool call: ``tool.call`` then ``tool.result``."""

    call_id: str
    name: str
    arguments: dict[str, Any]
    source: Source
    result: Any = None
    error: dict[str, Any] | None = None
    duration_ms: float | None = None
    scope: str | None = None
    at: str | None = None
    content_complete: bool = True


@dataclass
class StateRecord:
    """A JSON Patch against the run's state (Inspect ``state`` and ``store`` events)."""

    patch: list[dict[str, Any]]
    source: Source
    at: str | None = None


@dataclass
class NoteRecord:
    """Anything else the trace says (a handoff, a guardrail, a score, a log line): a ``note``."""

    text: str
    source: Source
    data: Any = None
    scope: str | None = None
    at: str | None = None


@dataclass
class EndRecord:
    status: str = "ok"
    output: Any = None
    error: Any = None
    at: str | None = None


Record = InputRecord | ModelRecord | ToolRecord | StateRecord | NoteRecord | EndRecord


@dataclass
class Fidelity:
    """How much of the run the import kept: replayable (model-only, or model and tools) or
    view-only with the reason."""

    model_calls: int = 0
    tool_calls: int = 0
    incomplete: list[str] = field(default_factory=list)  # what model calls lack (the first few)
    tools_incomplete: bool = False

    def see(self, record: Record) -> None:
        if isinstance(record, ModelRecord):
            self.see_model("" if record.content_complete else record.missing or "no message content captured")
        elif isinstance(record, ToolRecord):
            self.see_tool(record.content_complete)

    def see_model(self, missing: str) -> None:
        """One model call; ``missing`` says what it lacks ("" when complete)."""
        self.model_calls += 1
        if missing and len(self.incomplete) < 5:
            self.incomplete.append(missing)

    def see_tool(self, complete: bool) -> None:
        self.tool_calls += 1
        if not complete:
            self.tools_incomplete = True

    def label(self) -> dict[str, Any]:
        if self.incomplete or self.tools_incomplete:
            reason = self.incomplete[0] if self.incomplete else "a tool call without its arguments or result"
            return {"replayable": False, "label": "view-only", "reason": reason}
        if not self.model_calls:
            return {"replayable": False, "label": "view-only", "reason": "no model calls in the trace"}
        scope = "model and tools" if self.tool_calls else "model-only"
        return {"replayable": True, "label": f"replayable ({scope})", "reason": None}


def with_leading_input(records: Iterator[Record], fidelity: Fidelity) -> Iterator[Record]:
    """The records, counted into ``fidelity``, with an ``input.received`` first when the trace has
    none before its first call: the last user message of the first model request (a journal's
    run starts from an input, and a replay hands it to the agent)."""
    seen_input = False
    for record in records:
        if isinstance(record, InputRecord):
            seen_input = True
        elif not seen_input and isinstance(record, (ModelRecord, ToolRecord)):
            seen_input = True
            yield leading_input(record.request if isinstance(record, ModelRecord) else None, record.source, record.at)
        fidelity.see(record)
        yield record


def leading_input(request: dict[str, Any] | None, source: Source, at: str | None) -> InputRecord:
    """The input a trace without one starts from: the last user message of its first model request."""
    content = None
    for item in reversed((request or {}).get("messages") or ()):
        if isinstance(item, dict) and item.get("role") == "user":
            content = item.get("content")
            break
    return InputRecord(content, {"derived_from": source, "why": "the trace records no input of its own"}, at=at)

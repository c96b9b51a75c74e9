"""The six extension points of the harness, and the lifecycle every plugin shares.

Each extension point is a small protocol; a plugin implements exactly one of them
(its ``extension`` attribute says which) and inherits from no other plugin.
Plugins never see the event sink: only the harness bus writes the journal.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Awaitable, Callable, Iterable, Literal, Mapping, Protocol, runtime_checkable

from ..journal import Event
from .seam import EventSink

Extension = Literal["model", "tools", "memory", "session_store", "transport", "hook"]
EXTENSIONS: tuple[Extension, ...] = ("model", "tools", "memory", "session_store", "transport", "hook")


@dataclass(frozen=True)
class PluginContext:
    """What a plugin may know at ``init``: its own id and options, where the config lives,
    and the plugins it declared in ``depends_on`` (already started)."""

    plugin_id: str
    options: Mapping[str, Any]
    base_dir: Path
    dependencies: Mapping[str, "Plugin"] = field(default_factory=dict)


@runtime_checkable
class Plugin(Protocol):
    """Lifecycle: ``init`` (once, with context) -> ``start`` -> ``stop`` (reverse order)."""

    extension: Extension
    version: str

    def init(self, context: PluginContext) -> None: ...

    def start(self) -> None: ...

    def stop(self) -> None: ...


class PluginBase:
    """Optional convenience: no-op lifecycle methods. Not a plugin by itself."""

    extension: Extension
    version = "0"
    context: PluginContext

    def init(self, context: PluginContext) -> None:
        self.context = context

    def start(self) -> None:
        pass

    def stop(self) -> None:
        pass


ModelOutput = Mapping[str, Any] | Iterable[Mapping[str, Any]]


@runtime_checkable
class ModelClient(Plugin, Protocol):
    """Answers a normalized request with a response dict ``{content, tool_calls,
    finish_reason, usage}``, or with an iterable of stream chunks (each a dict with
    optional ``content`` delta, ``tool_calls`` deltas, ``finish_reason``, ``usage``)."""

    def complete(self, request: Mapping[str, Any]) -> ModelOutput: ...


@dataclass(frozen=True)
class ToolSpec:
    """One tool: its callable (sync or async), JSON schema and timeout in seconds."""

    name: str
    function: Callable[..., Any] | Callable[..., Awaitable[Any]]
    schema: Mapping[str, Any] = field(default_factory=dict)
    timeout_s: float | None = None


@runtime_checkable
class ToolProvider(Plugin, Protocol):
    def tools(self) -> Mapping[str, ToolSpec]: ...


@runtime_checkable
class MemoryAdapter(Plugin, Protocol):
    """Agent memory outside the reducer state. The harness routes every call through
    the tool path (tool name ``<plugin id>.<op>``), so reads are observations."""

    def get(self, key: str) -> Any: ...

    def put(self, key: str, value: Any) -> None: ...

    def search(self, prefix: str) -> list[dict[str, Any]]: ...


@runtime_checkable
class SessionStore(Plugin, Protocol):
    """Keeps the list of recorded runs (run id, journal path, agent, status)."""

    def session_started(self, run_id: str, journal: str, agent: str) -> None: ...

    def session_ended(self, run_id: str, status: str) -> None: ...


@runtime_checkable
class Transport(Plugin, Protocol):
    """Opens the event sink for a run. The harness alone holds the sink it returns."""

    def open(self, run_id: str, path: str | None = None) -> EventSink: ...


@runtime_checkable
class HookPoint(Plugin, Protocol):
    """Sees every event after it is written; read-only (it gets no sink)."""

    def on_event(self, event: Event) -> None: ...


PROTOCOL_OF: Mapping[str, type] = {
    "model": ModelClient,
    "tools": ToolProvider,
    "memory": MemoryAdapter,
    "session_store": SessionStore,
    "transport": Transport,
    "hook": HookPoint,
}

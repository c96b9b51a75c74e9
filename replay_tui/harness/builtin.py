"""Built-in plugins: a scripted (deterministic, local) model, Python tools, SQLite
memory, a JSONL session store and a callback hook. Each is one extension point."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping

import orjson

from ..journal import Event
from .config import resolve_attr
from .plugins import PluginBase, PluginContext, ToolSpec

if TYPE_CHECKING:  # imported when a store starts: a replay child, which starts no plugin, never needs it
    import sqlite3


def _path_option(context: PluginContext, name: str) -> Path:
    value = context.options.get(name)
    if not isinstance(value, str) or not value:
        raise ValueError(f"plugin {context.plugin_id!r}: options.{name} must be a path")
    path = Path(value).expanduser()
    return path if path.is_absolute() else context.base_dir / path


class ScriptedModel(PluginBase):
    """A model that is a pure function of the request: ``policy(request) -> response``.

    Options: ``policy`` ("module:attr", required), ``model`` (name reported in usage),
    ``version``, ``stream`` (true: the answer is delivered as word chunks, to
    exercise streaming). No network: this is how fixtures and tests get a model."""

    extension = "model"

    def init(self, context: PluginContext) -> None:
        super().init(context)
        policy = context.options.get("policy")
        if not isinstance(policy, str):
            raise ValueError(f"plugin {context.plugin_id!r}: options.policy must be 'module:attr'")
        self.policy: Callable[[Mapping[str, Any]], Mapping[str, Any]] = resolve_attr(policy, what="model policy")
        self.version = str(context.options.get("version", getattr(self.policy, "version", "1")))
        self.stream = bool(context.options.get("stream", False))

    def complete(self, request: Mapping[str, Any]) -> Any:
        response = dict(self.policy(request))
        response.setdefault("tool_calls", [])
        response.setdefault("finish_reason", "tool_calls" if response["tool_calls"] else "stop")
        response.setdefault("usage", _usage(request, response))
        if not self.stream:
            return response
        return _as_chunks(response)


def _usage(request: Mapping[str, Any], response: Mapping[str, Any]) -> dict[str, int]:
    # Deterministic stand-in for token counts: whitespace words in and out.
    prompt = sum(len(str(message.get("content") or "").split()) for message in request.get("messages", ()))
    completion = len(str(response.get("content") or "").split())
    return {"prompt_tokens": prompt, "completion_tokens": completion}


def _as_chunks(response: Mapping[str, Any]) -> Iterable[dict[str, Any]]:
    words = (response.get("content") or "").split(" ")
    for position, word in enumerate(words):
        yield {"content": word if position == 0 else " " + word}
    for index, call in enumerate(response.get("tool_calls") or ()):
        text = orjson.dumps(call.get("arguments", {})).decode()
        middle = len(text) // 2
        yield {"tool_calls": [{"index": index, "id": call.get("id"), "name": call["name"], "arguments": text[:middle]}]}
        yield {"tool_calls": [{"index": index, "arguments": text[middle:]}]}
    yield {"finish_reason": response.get("finish_reason"), "usage": response.get("usage")}


class PythonTools(PluginBase):
    """Tools from Python: ``provider`` ("module:attr") is a mapping of name -> ToolSpec,
    or a callable taking the options and returning one (or an iterable of ToolSpec).
    ``timeouts`` overrides per-tool timeouts in seconds."""

    extension = "tools"

    def init(self, context: PluginContext) -> None:
        super().init(context)
        provider = resolve_attr(str(context.options.get("provider", "")), what="tool provider")
        specs = provider(dict(context.options)) if callable(provider) else provider
        if isinstance(specs, Mapping):
            specs = specs.values()
        timeouts = context.options.get("timeouts", {})
        self._tools: dict[str, ToolSpec] = {}
        for spec in specs:
            if not isinstance(spec, ToolSpec):
                raise ValueError(f"plugin {context.plugin_id!r}: the provider gave {spec!r}, not a ToolSpec")
            if spec.name in timeouts:
                spec = ToolSpec(spec.name, spec.function, spec.schema, float(timeouts[spec.name]))
            self._tools[spec.name] = spec
        self.version = str(context.options.get("version", getattr(provider, "version", "1")))

    def tools(self) -> Mapping[str, ToolSpec]:
        return self._tools


class SqliteMemory(PluginBase):
    """Key-value memory in a real SQLite file (``options.path``). Values are JSON."""

    extension = "memory"
    version = "1"

    def init(self, context: PluginContext) -> None:
        super().init(context)
        self.path = _path_option(context, "path")
        self._db: sqlite3.Connection | None = None

    def start(self) -> None:
        import sqlite3

        self.path.parent.mkdir(parents=True, exist_ok=True)
        # check_same_thread=False: tools may run in the harness's worker threads
        self._db = sqlite3.connect(self.path, check_same_thread=False)
        self._db.execute("CREATE TABLE IF NOT EXISTS memory (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        self._db.commit()

    def stop(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

    def _conn(self) -> sqlite3.Connection:
        if self._db is None:
            raise RuntimeError(f"memory {self.context.plugin_id!r} is not started")
        return self._db

    def get(self, key: str) -> Any:
        row = self._conn().execute("SELECT value FROM memory WHERE key = ?", (key,)).fetchone()
        return orjson.loads(row[0]) if row else None

    def put(self, key: str, value: Any) -> None:
        self._conn().execute(
            "INSERT OR REPLACE INTO memory (key, value) VALUES (?, ?)", (key, orjson.dumps(value).decode())
        )
        self._conn().commit()

    def search(self, prefix: str) -> list[dict[str, Any]]:
        escaped = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        rows = (
            self._conn()
            .execute("SELECT key, value FROM memory WHERE key LIKE ? ESCAPE '\\' ORDER BY key", (escaped + "%",))
            .fetchall()
        )
        return [{"key": key, "value": orjson.loads(value)} for key, value in rows]


def memory_tools(plugin_id: str, memory: Any) -> dict[str, ToolSpec]:
    """The tool names through which the harness records a memory plugin's calls."""
    return {
        f"{plugin_id}.get": ToolSpec(f"{plugin_id}.get", memory.get, {"key": "string"}),
        f"{plugin_id}.put": ToolSpec(f"{plugin_id}.put", memory.put, {"key": "string", "value": "any"}),
        f"{plugin_id}.search": ToolSpec(f"{plugin_id}.search", memory.search, {"prefix": "string"}),
    }


class JsonlSessionStore(PluginBase):
    """Appends one line per session start and end to ``options.path`` (a run index)."""

    extension = "session_store"
    version = "1"

    def init(self, context: PluginContext) -> None:
        super().init(context)
        self.path = _path_option(context, "path")

    def _append(self, record: dict[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "ab") as index:
            index.write(orjson.dumps(record) + b"\n")

    def session_started(self, run_id: str, journal: str, agent: str) -> None:
        self._append({"event": "started", "run_id": run_id, "journal": journal, "agent": agent})

    def session_ended(self, run_id: str, status: str) -> None:
        self._append({"event": "ended", "run_id": run_id, "status": status})


class CallbackHook(PluginBase):
    """Calls ``options.callback`` ("module:attr") with every event written; read-only."""

    extension = "hook"
    version = "1"

    def init(self, context: PluginContext) -> None:
        super().init(context)
        self.callback: Callable[[Event], None] = resolve_attr(
            str(context.options.get("callback", "")), what="hook callback"
        )

    def on_event(self, event: Event) -> None:
        self.callback(event)

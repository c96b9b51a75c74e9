"""Harness config: plugin entries from TOML (or YAML), dependency order, lifecycle.

A config file has up to three tables: ``[harness]`` (snapshot_every, clock,
random_seed, feature_flags, prompt_bundle), ``[redaction]`` (see redaction.py) and
``[[plugins]]`` entries with ``id``, ``type``, ``enabled``, ``options`` and
``depends_on``. ``type`` is a built-in name (see ``BUILTIN_TYPES``) or a
``"module:attr"`` factory.
"""

from __future__ import annotations

import importlib
import tomllib
from dataclasses import dataclass, field
from graphlib import CycleError, TopologicalSorter
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

from ..journal import hash_value
from .plugins import EXTENSIONS, PROTOCOL_OF, Plugin, PluginContext

#: Built-in plugin types; each maps to a ``module:attr`` factory.
BUILTIN_TYPES: Mapping[str, str] = {
    "scripted-model": "replay_tui.harness.builtin:ScriptedModel",
    "python-tools": "replay_tui.harness.builtin:PythonTools",
    "sqlite-memory": "replay_tui.harness.builtin:SqliteMemory",
    "jsonl-session-store": "replay_tui.harness.builtin:JsonlSessionStore",
    "jsonl": "replay_tui.harness.transport:JsonlTransport",
    "hook": "replay_tui.harness.builtin:CallbackHook",
    "openai-compatible": "replay_tui.harness.openai_compat:OpenAICompatModel",
}

_ENTRY_KEYS = {"id", "type", "enabled", "options", "depends_on"}


class ConfigError(ValueError):
    """A config problem, naming the file and the entry."""

    def __init__(self, source: str, message: str) -> None:
        self.source = source
        super().__init__(f"{source}: {message}")


@dataclass(frozen=True)
class PluginEntry:
    id: str
    type: str
    enabled: bool = True
    options: Mapping[str, Any] = field(default_factory=dict)
    depends_on: tuple[str, ...] = ()


@dataclass(frozen=True)
class HarnessConfig:
    source: str
    base_dir: Path
    harness: Mapping[str, Any]
    redaction: Mapping[str, Any]
    plugins: tuple[PluginEntry, ...]
    raw: Mapping[str, Any]

    @property
    def config_hash(self) -> str:
        return hash_value(self.raw)


def load_config(path: str | Path) -> HarnessConfig:
    """Read a ``.toml`` (or ``.yaml``/``.yml`` when PyYAML is installed) harness config."""
    path = Path(path)
    try:
        text = path.read_bytes()
    except OSError as error:
        raise ConfigError(str(path), f"cannot read config: {error.strerror or error}") from None
    if path.suffix in (".yaml", ".yml"):
        try:
            import yaml
        except ImportError:
            raise ConfigError(str(path), "YAML configs need PyYAML (pip install pyyaml); or use TOML") from None
        try:
            raw = yaml.safe_load(text) or {}
        except yaml.YAMLError as error:
            raise ConfigError(str(path), f"invalid YAML: {error}") from None
    else:
        try:
            raw = tomllib.loads(text.decode("utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
            raise ConfigError(str(path), f"invalid TOML: {error}") from None
    return config_from_mapping(raw, source=str(path), base_dir=path.resolve().parent)


def config_from_mapping(raw: Any, *, source: str = "<config>", base_dir: Path | None = None) -> HarnessConfig:
    if not isinstance(raw, dict):
        raise ConfigError(source, "expected a table at the top level")
    unknown = set(raw) - {"harness", "redaction", "plugins"}
    if unknown:
        raise ConfigError(source, f"unknown top-level key(s) {sorted(unknown)}; expected harness, redaction, plugins")
    harness = raw.get("harness", {})
    redaction = raw.get("redaction", {})
    for name, table in (("harness", harness), ("redaction", redaction)):
        if not isinstance(table, dict):
            raise ConfigError(source, f"[{name}] must be a table")
    entries = raw.get("plugins", [])
    if not isinstance(entries, list):
        raise ConfigError(source, "[[plugins]] must be an array of tables")
    plugins = tuple(_entry(source, position, item) for position, item in enumerate(entries, 1))
    seen: set[str] = set()
    for entry in plugins:
        if entry.id in seen:
            raise ConfigError(source, f"plugin id {entry.id!r} is used twice")
        seen.add(entry.id)
    return HarnessConfig(source, base_dir or Path.cwd(), harness, redaction, plugins, raw)


def _entry(source: str, position: int, item: Any) -> PluginEntry:
    where = f"plugins[{position}]"
    if not isinstance(item, dict):
        raise ConfigError(source, f"{where} must be a table")
    unknown = set(item) - _ENTRY_KEYS
    if unknown:
        raise ConfigError(source, f"{where}: unknown key(s) {sorted(unknown)}; expected {sorted(_ENTRY_KEYS)}")
    for key, kind in (("id", str), ("type", str)):
        if not isinstance(item.get(key), kind) or not item[key]:
            raise ConfigError(source, f"{where}: '{key}' must be a non-empty string")
    enabled = item.get("enabled", True)
    options = item.get("options", {})
    depends_on = item.get("depends_on", [])
    if not isinstance(enabled, bool):
        raise ConfigError(source, f"{where} ({item['id']}): 'enabled' must be true or false")
    if not isinstance(options, dict):
        raise ConfigError(source, f"{where} ({item['id']}): 'options' must be a table")
    if not isinstance(depends_on, list) or not all(isinstance(dep, str) for dep in depends_on):
        raise ConfigError(source, f"{where} ({item['id']}): 'depends_on' must be a list of plugin ids")
    return PluginEntry(item["id"], item["type"], enabled, options, tuple(depends_on))


def start_order(config: HarnessConfig) -> list[PluginEntry]:
    """Enabled entries in dependency order; an unknown id, a disabled dependency or a cycle is an error."""
    enabled = {entry.id: entry for entry in config.plugins if entry.enabled}
    disabled = {entry.id for entry in config.plugins if not entry.enabled}
    sorter: TopologicalSorter[str] = TopologicalSorter()
    for entry in config.plugins:
        if not entry.enabled:
            continue
        for dep in entry.depends_on:
            if dep in disabled:
                raise ConfigError(config.source, f"plugin {entry.id!r} depends on {dep!r}, which is disabled")
            if dep not in enabled:
                raise ConfigError(config.source, f"plugin {entry.id!r} depends on unknown plugin id {dep!r}")
        sorter.add(entry.id, *entry.depends_on)
    try:
        order = list(sorter.static_order())
    except CycleError as error:
        cycle = " -> ".join(error.args[1])
        raise ConfigError(config.source, f"plugin dependency cycle: {cycle}") from None
    # static_order is deterministic for a given insertion order, so the config order breaks ties
    return [enabled[plugin_id] for plugin_id in order]


def resolve_attr(reference: str, *, what: str = "object") -> Any:
    """Import ``"module:attr"`` (attr may be dotted)."""
    module_name, _, attr = reference.partition(":")
    if not module_name or not attr:
        raise ValueError(f"{what} {reference!r} must look like 'module:attr'")
    try:
        target: Any = importlib.import_module(module_name)
    except ImportError as error:
        raise ValueError(f"cannot import module {module_name!r} for {what} {reference!r}: {error}") from None
    for part in attr.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            raise ValueError(f"{what} {reference!r}: module {module_name!r} has no attribute {attr!r}") from None
    return target


class PluginSet:
    """Plugins built from a config, started in dependency order, stopped in reverse."""

    def __init__(self, config: HarnessConfig, factories: Mapping[str, Callable[[], Plugin]] | None = None) -> None:
        self.config = config
        self.entries = start_order(config)
        self._factories = dict(factories or {})
        self.plugins: dict[str, Plugin] = {}
        self.started: list[str] = []

    def build(self) -> "PluginSet":
        for entry in self.entries:
            factory = self._factories.get(entry.type)
            if factory is None:
                reference = BUILTIN_TYPES.get(entry.type, entry.type)
                if ":" not in reference:
                    known = ", ".join(sorted(BUILTIN_TYPES))
                    raise ConfigError(
                        self.config.source,
                        f"plugin {entry.id!r}: unknown type {entry.type!r} (built-in: {known}; or 'module:attr')",
                    )
                try:
                    factory = resolve_attr(reference, what="plugin type")
                except ValueError as error:
                    raise ConfigError(self.config.source, f"plugin {entry.id!r}: {error}") from None
            plugin = factory()
            extension = getattr(plugin, "extension", None)
            implements = extension in EXTENSIONS and isinstance(plugin, PROTOCOL_OF[extension])
            # every extension protocol extends Plugin: this test only narrows the type
            if not implements or not isinstance(plugin, Plugin):
                raise ConfigError(
                    self.config.source,
                    f"plugin {entry.id!r} ({entry.type}) does not implement an extension point "
                    f"(extension={extension!r}; expected one of {', '.join(EXTENSIONS)} with its methods)",
                )
            self.plugins[entry.id] = plugin
        return self

    def start(self) -> "PluginSet":
        """init + start each plugin in order; if one fails, stop the started ones (reverse) and re-raise."""
        try:
            for entry in self.entries:
                plugin = self.plugins[entry.id]
                deps = {dep: self.plugins[dep] for dep in entry.depends_on}
                plugin.init(PluginContext(entry.id, entry.options, self.config.base_dir, deps))
                plugin.start()
                self.started.append(entry.id)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> list[tuple[str, BaseException]]:
        """Stop started plugins in reverse order; every one is stopped even if another fails."""
        failures: list[tuple[str, BaseException]] = []
        while self.started:
            plugin_id = self.started.pop()
            try:
                self.plugins[plugin_id].stop()
            except Exception as error:
                failures.append((plugin_id, error))
        return failures

    def of(self, extension: str) -> Iterator[tuple[str, Plugin]]:
        for entry in self.entries:
            plugin = self.plugins.get(entry.id)
            if plugin is not None and plugin.extension == extension:
                yield entry.id, plugin

    def describe(self) -> list[dict[str, str]]:
        """``[{id, type, version}]`` for run.started."""
        return [
            {"id": entry.id, "type": entry.type, "version": str(getattr(self.plugins.get(entry.id), "version", "0"))}
            for entry in self.entries
        ]

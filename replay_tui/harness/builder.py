"""Assemble a Harness from a config: plugins started in order, the sink opened by the
transport plugin (or given), tools and memory registered, run.started info filled."""

from __future__ import annotations

import os
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping

from .. import __version__
from ..journal.levels import LEVELS, TRACE
from .builtin import memory_tools
from .config import ConfigError, HarnessConfig, PluginSet, load_config
from .environment import fingerprint
from .harness import DEFAULT_SNAPSHOT_EVERY, Harness, HarnessError, RunInfo
from .plugins import HookPoint, ModelClient, SessionStore, ToolProvider, ToolSpec, Transport
from .redaction import RedactionConfigError, RedactionRules, Redactor
from .seam import EventSink, ObservationSource
from .transport import JsonlSink
from .unrecorded import JOURNAL_ERROR_POLICIES, LOG, RecordingFailed, UnrecordedSink

if TYPE_CHECKING:
    from ..journal.seal import Signer

_HARNESS_KEYS = {
    "snapshot_every",
    "clock",
    "random_seed",
    "feature_flags",
    "prompt_bundle",
    "signing_key",
    "checkpoint_every",
    "on_journal_error",
    "level",
    "trace_flag",
}


@dataclass(frozen=True)
class HarnessOptions:
    snapshot_every: int = DEFAULT_SNAPSHOT_EVERY
    wall_clock: Callable[[], float] = time.time
    monotonic_clock: Callable[[], float] = time.monotonic
    random_seed: int | None = None
    feature_flags: Mapping[str, Any] = field(default_factory=dict)
    prompt_bundle: tuple[str, ...] = ()
    signing_key: str | None = None  # private key file ('replay-tui keygen'): the journal is sealed on close
    checkpoint_every: int | None = None  # with signing_key: a signed chain.checkpoint every N events
    on_journal_error: str = "fail"  # a journal that cannot be written: fail the run, or "continue" unrecorded
    level: str | None = None  # "info" or "trace" (journal/levels.py); None: the caller's default
    trace_flag: str | None = None  # a file whose existence turns trace on for the run, from its next model call


def harness_options(table: Mapping[str, Any], source: str = "[harness]") -> HarnessOptions:
    """Parse ``[harness]``. ``clock = {frozen_at = "2026-11-03T09:14:05Z", tick_ms = 0}``
    freezes the wall clock (each read advances it by ``tick_ms``)."""
    unknown = set(table) - _HARNESS_KEYS
    if unknown:
        raise ConfigError(source, f"[harness]: unknown key(s) {sorted(unknown)}; expected {sorted(_HARNESS_KEYS)}")
    snapshot_every = table.get("snapshot_every", DEFAULT_SNAPSHOT_EVERY)
    if type(snapshot_every) is not int or snapshot_every < 1:
        raise ConfigError(source, "[harness]: snapshot_every must be a positive integer")
    seed = table.get("random_seed")
    if seed is not None and type(seed) is not int:
        raise ConfigError(source, "[harness]: random_seed must be an integer")
    flags = table.get("feature_flags", {})
    if not isinstance(flags, dict):
        raise ConfigError(source, "[harness]: feature_flags must be a table")
    bundle = table.get("prompt_bundle", [])
    if isinstance(bundle, str):
        bundle = [bundle]
    if not isinstance(bundle, list) or not all(isinstance(item, str) for item in bundle):
        raise ConfigError(source, "[harness]: prompt_bundle must be a path or a list of paths")
    wall, monotonic = time.time, time.monotonic
    clock = table.get("clock")
    if clock is not None:
        if not isinstance(clock, dict) or not isinstance(clock.get("frozen_at"), str):
            raise ConfigError(
                source, '[harness]: clock must be a table like {frozen_at = "2026-11-03T09:14:05Z", tick_ms = 0}'
            )
        try:
            start = datetime.fromisoformat(clock["frozen_at"].replace("Z", "+00:00")).timestamp()
        except ValueError:
            raise ConfigError(
                source, f"[harness]: clock.frozen_at {clock['frozen_at']!r} is not an RFC 3339 time"
            ) from None
        wall, monotonic = _frozen_clock(start, float(clock.get("tick_ms", 0)) / 1000)
    signing_key = table.get("signing_key")
    if signing_key is not None and (not isinstance(signing_key, str) or not signing_key):
        raise ConfigError(source, "[harness]: signing_key must be the path of a private key file ('replay-tui keygen')")
    checkpoint_every = table.get("checkpoint_every")
    if checkpoint_every is not None:
        if type(checkpoint_every) is not int or checkpoint_every < 1:
            raise ConfigError(source, "[harness]: checkpoint_every must be a positive integer (events between seals)")
        if signing_key is None:
            raise ConfigError(source, "[harness]: checkpoint_every needs signing_key (a checkpoint is a signed seal)")
    on_journal_error = table.get("on_journal_error", "fail")
    if on_journal_error not in JOURNAL_ERROR_POLICIES:
        raise ConfigError(
            source,
            f'[harness]: on_journal_error must be "fail" (the run stops) or "continue" (it goes on unrecorded), '
            f"not {on_journal_error!r}",
        )
    level = table.get("level")
    if level is not None and level not in LEVELS:
        raise ConfigError(
            source, f'[harness]: level must be "info" (what a replay needs) or "trace" (everything), not {level!r}'
        )
    trace_flag = table.get("trace_flag")
    if trace_flag is not None and (not isinstance(trace_flag, str) or not trace_flag):
        raise ConfigError(source, "[harness]: trace_flag must be the path of a file (its existence turns trace on)")
    return HarnessOptions(
        snapshot_every,
        wall,
        monotonic,
        seed,
        flags,
        tuple(bundle),
        signing_key,
        checkpoint_every,
        on_journal_error,
        level,
        trace_flag,
    )


def env_level() -> str | None:
    """``REPLAY_TUI_LEVEL`` (info or trace): the level of every run a process records when its config names
    none (a service started with it set records in trace); anything else is ignored."""
    value = os.environ.get("REPLAY_TUI_LEVEL")
    return value if value in LEVELS else None


def _signer_for(options: HarnessOptions, config: HarnessConfig) -> Signer | None:
    """The seal signer of ``[harness] signing_key`` (relative to the config's directory), if any."""
    if options.signing_key is None:
        return None
    from ..journal.errors import JournalError
    from ..journal.seal import load_private_key  # cryptography only when a key is configured

    try:
        return load_private_key(config.base_dir / options.signing_key)
    except JournalError as error:
        raise ConfigError(config.source, f"[harness]: signing_key: {error}") from None


def _frozen_clock(start: float, tick: float) -> tuple[Callable[[], float], Callable[[], float]]:
    reads = [0]

    def read(base: float) -> float:
        value = base + reads[0] * tick
        reads[0] += 1
        return value

    return (lambda: read(start)), (lambda: read(0.0))


def redactor_for(config: HarnessConfig) -> Redactor:
    try:
        return Redactor(RedactionRules.from_config(config.redaction, source=f"{config.source}: [redaction]"))
    except RedactionConfigError as error:
        raise ConfigError(config.source, str(error)) from None


class Recording:
    """A harness with its plugins; use as a context manager so plugins always stop."""

    def __init__(self, harness: Harness, plugins: PluginSet, journal: str | None) -> None:
        self.harness = harness
        self.plugins = plugins
        self.journal = journal
        # PluginSet.build checked each plugin against its extension's protocol: the filters narrow, never drop
        self._stores = [store for _, store in plugins.of("session_store") if isinstance(store, SessionStore)]

    def __enter__(self) -> "Recording":
        return self

    def __exit__(self, exc_type: object, *exc: object) -> None:
        failures = self.close()
        if failures and exc_type is None:  # never mask the exception already on its way out
            details = "; ".join(f"{plugin_id}: {type(error).__name__}: {error}" for plugin_id, error in failures)
            raise HarnessError(f"plugins failed to stop: {details}")

    def started(self, agent: str) -> None:
        for store in self._stores:
            store.session_started(self.harness.run_id, self.journal or "", agent)

    def close(self) -> list[tuple[str, BaseException]]:
        """End the session, close the sink if the run did not, stop every plugin
        (reverse order); returns the plugins whose stop failed."""
        status = "ok" if self.harness.ended else "cancelled"
        try:
            for store in self._stores:
                store.session_ended(self.harness.run_id, status)
            if not self.harness.ended:
                self.harness.sink.close()
        finally:
            failures = self.plugins.stop()
        return failures


def build_harness(
    config: HarnessConfig | str | Path,
    *,
    journal: str | Path | None = None,
    sink: EventSink | None = None,
    run_id: str | None = None,
    agent: str = "",
    observation_sources: Mapping[str, ObservationSource] | None = None,
    extensions: Iterable[str] | None = None,
    environment: Mapping[str, Any] | None = None,
    level: str | None = None,
    default_level: str = TRACE,
    trace_flag: str | Path | None = None,
) -> Recording:
    """Start the plugins of ``config`` and build a harness over them.

    Record: give ``journal`` (the transport plugin opens it; with no transport
    plugin a JSONL sink is used). Replay or experiments: give ``sink`` and
    ``observation_sources``, and ``extensions`` to start only some plugin kinds
    (``{"model"}`` for model-live). ``environment`` replaces the fingerprint. ``level``: the recording
    level (journal/levels.py), else the config's ``[harness] level``, else ``$REPLAY_TUI_LEVEL``, else
    ``default_level``; ``trace_flag``: a file that turns ``trace`` on (the config's ``trace_flag`` wins).
    """
    if not isinstance(config, HarnessConfig):
        config = load_config(config)
    options = harness_options(config.harness, config.source)
    signer = _signer_for(options, config) if sink is None else None  # replays and experiments never seal
    redactor = redactor_for(config)
    plugins = PluginSet(_only(config, extensions)).build().start()
    try:
        run_id = run_id or f"run-{uuid.uuid4().hex[:12]}"
        # PluginSet.build checked each plugin against its extension's protocol: the filters narrow, never drop
        models = [plugin for _, plugin in plugins.of("model") if isinstance(plugin, ModelClient)]
        if len(models) > 1:
            raise ConfigError(config.source, "more than one enabled model plugin; enable exactly one")
        tools: dict[str, ToolSpec] = {}
        providers = [
            (plugin_id, plugin) for plugin_id, plugin in plugins.of("tools") if isinstance(plugin, ToolProvider)
        ]
        for plugin_id, provider in providers:
            for name, spec in provider.tools().items():
                if name in tools:
                    raise ConfigError(config.source, f"tool {name!r} is provided twice (again by {plugin_id!r})")
                tools[name] = spec
        for plugin_id, memory in plugins.of("memory"):
            tools.update(memory_tools(plugin_id, memory))
        if sink is None:
            sink = _open_sink(config, plugins, run_id, journal, options.on_journal_error)
            if signer is not None and not isinstance(sink, UnrecordedSink):
                if not isinstance(sink, JsonlSink):
                    raise ConfigError(
                        config.source, "[harness]: signing_key needs the jsonl transport (it seals the journal)"
                    )
                sink.writer.seal_with(signer, options.checkpoint_every)
        described = plugins.describe()
        if environment is None:
            environment = fingerprint(
                base_dir=config.base_dir,
                tool_schemas={name: dict(spec.schema) for name, spec in sorted(tools.items())},
                prompt_bundle=options.prompt_bundle,
                feature_flags=options.feature_flags,
                plugins=described,
            )
        if level is not None and level not in LEVELS:
            raise ConfigError(config.source, f'level must be "info" or "trace", not {level!r}')
        run_level = level or options.level or env_level() or default_level
        flag = options.trace_flag and str(config.base_dir / options.trace_flag) or (trace_flag and str(trace_flag))
        info = RunInfo(
            agent=agent,
            environment=environment,
            harness={
                "version": __version__,
                "plugins": described,
                "config_hash": config.config_hash,
                "options": dict(config.harness),
                "redaction": dict(config.redaction),
                "level": run_level,
            },
        )
        harness = Harness(
            sink=sink,
            run_id=run_id,
            observation_sources=observation_sources,
            model=models[0] if models else None,
            tools=tools,
            hooks=[hook for _, hook in plugins.of("hook") if isinstance(hook, HookPoint)],
            redactor=redactor,
            snapshot_every=options.snapshot_every,
            wall_clock=options.wall_clock,
            monotonic_clock=options.monotonic_clock,
            random_seed=options.random_seed,
            run_info=info,
            on_journal_error=options.on_journal_error,
            level=run_level,
            trace_flag=flag or None,
        )
        if isinstance(sink, UnrecordedSink):
            harness.unrecorded = sink.reason
    except BaseException:
        plugins.stop()
        raise
    return Recording(harness, plugins, str(journal) if journal else None)


def _open_sink(
    config: HarnessConfig, plugins: PluginSet, run_id: str, journal: str | Path | None, on_error: str
) -> EventSink:
    """The run's journal, opened by the transport plugin (or a JSONL sink). One that cannot be created fails the
    run, or with ``on_journal_error = "continue"`` the run goes on unrecorded (said in the recording log)."""
    transports = [plugin for _, plugin in plugins.of("transport") if isinstance(plugin, Transport)]
    if not transports and journal is None:
        raise ConfigError(config.source, "no journal path and no transport plugin: nowhere to record")
    try:
        if transports:
            return transports[0].open(run_id, str(journal) if journal else None)
        return JsonlSink(journal, run_id=run_id)  # type: ignore[arg-type]  # (not None: checked above)
    except FileExistsError:
        raise  # a journal is never overwritten: that is a mistake of the caller's, not of the disk
    except OSError as error:
        if on_error != "continue":
            raise RecordingFailed(
                f"run {run_id}: the journal {journal} cannot be created ({error}); the run is not started "
                '(on_journal_error = "fail"; "continue" lets it go on unrecorded)'
            ) from error
        LOG.error(
            'run %s goes on UNRECORDED: the journal %s cannot be created (%s); on_journal_error = "continue"',
            run_id,
            journal,
            error,
        )
        unrecorded = UnrecordedSink(run_id)
        unrecorded.reason = error
        return unrecorded


def _only(config: HarnessConfig, extensions: Iterable[str] | None) -> HarnessConfig:
    if extensions is None:
        return config
    wanted = set(extensions)
    # plugin kinds are known only once built, so filter by building a throwaway set
    probe = PluginSet(config).build()
    keep = {plugin_id for plugin_id, plugin in probe.plugins.items() if plugin.extension in wanted}
    grew = True
    while grew:  # dependencies of kept plugins are kept too
        before = len(keep)
        for entry in config.plugins:
            if entry.id in keep:
                keep.update(entry.depends_on)
        grew = len(keep) > before
    plugins = tuple(entry for entry in config.plugins if entry.id in keep)
    return HarnessConfig(config.source, config.base_dir, config.harness, config.redaction, plugins, config.raw)

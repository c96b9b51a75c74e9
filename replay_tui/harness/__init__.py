"""The harness: the SDK an agent runs on. It records every boundary of
non-determinism and every state transition through one event bus.

Record: ``record_run(config, "pkg.mod:agent", inputs, journal="run.jsonl")``.
Replay (the replay engine): ``Harness(sink=..., observation_sources=...)`` or
``build_harness(config, sink=..., observation_sources=...)``, then ``run_agent``.
"""

from ..journal.hashing import state_hash  # the journal contract's state hash, as agents and tests compute it
from .agents import Done, RunOutcome, StepAgent, agent_reducer, load_agent, run_agent
from .builder import Recording, build_harness, harness_options
from .config import ConfigError, HarnessConfig, PluginEntry, PluginSet, load_config
from .harness import Harness, HarnessError, RunInfo, current_harness
from .plugins import (
    HookPoint,
    MemoryAdapter,
    ModelClient,
    PluginBase,
    PluginContext,
    SessionStore,
    ToolProvider,
    ToolSpec,
    Transport,
)
from .record import record_run
from .redaction import RedactionRules, Redactor
from .seam import (
    EventSink,
    ObservationMissing,
    ObservationSource,
    RecordedToolError,
    RecordedToolTimeout,
    StopRun,
    UnusableJournal,
    error_from_payload,
    error_to_payload,
)
from .session import Session, record_session, record_session_sync
from .state import StateTracker, apply_patch
from .transport import JsonlSink, JsonlTransport

__all__ = [
    "ConfigError",
    "Done",
    "EventSink",
    "Harness",
    "HarnessConfig",
    "HarnessError",
    "HookPoint",
    "JsonlSink",
    "JsonlTransport",
    "MemoryAdapter",
    "ModelClient",
    "ObservationMissing",
    "ObservationSource",
    "PluginBase",
    "PluginContext",
    "PluginEntry",
    "PluginSet",
    "Recording",
    "Session",
    "RecordedToolError",
    "RecordedToolTimeout",
    "RedactionRules",
    "Redactor",
    "RunInfo",
    "RunOutcome",
    "SessionStore",
    "StateTracker",
    "StepAgent",
    "StopRun",
    "UnusableJournal",
    "ToolProvider",
    "ToolSpec",
    "Transport",
    "agent_reducer",
    "apply_patch",
    "build_harness",
    "current_harness",
    "error_from_payload",
    "error_to_payload",
    "harness_options",
    "load_agent",
    "load_config",
    "record_run",
    "record_session",
    "record_session_sync",
    "run_agent",
    "state_hash",
]

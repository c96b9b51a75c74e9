"""The journal contract: event model, canonical JSON, hashing, reader, writer, verify.

Nothing here imports Textual or agent code; every other package builds on this.
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .canonical import CanonicalizationError, canonical_json, canonical_json_of_parsed
    from .errors import (
        JournalError,
        JournalOpenError,
        MalformedLineError,
        SchemaError,
        UnknownKindError,
        UnsupportedVersionError,
    )
    from .hashing import call_key_of, event_hash_of, hash_value
    from .migrations import Migration, register_migration
    from .model import KINDS, OBSERVATION_KINDS, SCHEMA_VERSION, Event, validate_event
    from .reader import Journal, RefreshResult, open_journal
    from .verify import Fault, VerifyReport, verify_journal
    from .writer import JournalWriter

#: Where each name lives. Loaded on first use (PEP 562): the replay child and the app's first frame need
#: the reader and the model, not verify or the writer, and every import here is start-up time for both.
_HOMES = {
    "canonical": ("CanonicalizationError", "canonical_json", "canonical_json_of_parsed"),
    "errors": (
        "JournalError",
        "JournalOpenError",
        "MalformedLineError",
        "SchemaError",
        "UnknownKindError",
        "UnsupportedVersionError",
    ),
    "hashing": ("call_key_of", "event_hash_of", "hash_value"),
    "migrations": ("Migration", "register_migration"),
    "model": ("KINDS", "OBSERVATION_KINDS", "SCHEMA_VERSION", "Event", "validate_event"),
    "reader": ("Journal", "RefreshResult", "open_journal"),
    "verify": ("Fault", "VerifyReport", "verify_journal"),
    "writer": ("JournalWriter",),
}
_HOME_OF = {name: module for module, names in _HOMES.items() for name in names}


def __getattr__(name: str) -> Any:
    module = _HOME_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value  # once: later lookups (and monkeypatching) see a plain attribute
    return value


__all__ = [
    "CanonicalizationError",
    "Event",
    "Fault",
    "Journal",
    "JournalError",
    "JournalOpenError",
    "JournalWriter",
    "KINDS",
    "MalformedLineError",
    "Migration",
    "OBSERVATION_KINDS",
    "RefreshResult",
    "SCHEMA_VERSION",
    "SchemaError",
    "UnknownKindError",
    "UnsupportedVersionError",
    "VerifyReport",
    "call_key_of",
    "canonical_json",
    "canonical_json_of_parsed",
    "event_hash_of",
    "hash_value",
    "open_journal",
    "register_migration",
    "validate_event",
    "verify_journal",
]


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))

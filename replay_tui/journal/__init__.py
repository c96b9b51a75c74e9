"""The journal contract: event model, canonical JSON, hashing, reader, writer, verify.

Nothing here imports Textual or agent code; every other package builds on this.
"""

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

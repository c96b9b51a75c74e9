"""The environment fingerprint: it lives in ``journal/environment.py`` (the app compares it too)."""

from __future__ import annotations

from ..journal.environment import (
    LOCKFILES,
    code_revision,
    current_locale,
    current_timezone,
    fingerprint,
    lockfile_hash,
    prompt_bundle_hash,
    runtime,
)

__all__ = [
    "LOCKFILES",
    "code_revision",
    "current_locale",
    "current_timezone",
    "fingerprint",
    "lockfile_hash",
    "prompt_bundle_hash",
    "runtime",
]

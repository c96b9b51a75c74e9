"""Replay outcome statuses: plain strings with a home of their own.

The app's first frame shows replay results without importing the runner (and
with it the broker, sandbox and isolation), so the names live here and
``runner.py`` re-exports them.
"""

from __future__ import annotations

MATCH = "match"
DIVERGED = "diverged"
VERIFICATION_FAILED = "verification_failed"
UNUSED_EVENTS = "unused_events"
TIMEOUT = "timeout"
CANCELLED = "cancelled"
CRASHED = "crashed"
UNRECORDED_CALL = "unrecorded_call"  # an experiment asked for an observation the journal never saw
FAILED = "error"  # the child reported an error (agent import, journal, usage, internal)

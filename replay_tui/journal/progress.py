"""The two callback types every long computation takes: one definition each, for every layer."""

from __future__ import annotations

from collections.abc import Callable

#: Asked now and then by a long loop: True means stop as soon as it is safe.
CancelCheck = Callable[[], bool]
#: ``progress(done, total)``: how far a long loop is, in its own unit (events, bytes, lines).
ProgressCallback = Callable[[int, int], None]

__all__ = ["CancelCheck", "ProgressCallback"]

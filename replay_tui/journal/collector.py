"""Pausing Python's cyclic garbage collector around bulk work on parsed journals and traces.

Parsing and aligning make small dicts by the hundred thousand; every few hundred of them start a
collection that walks every object still alive. Parsed JSON holds no cycles, so reference counting
still frees each value as soon as it is dropped: memory stays bounded with the collector off.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """The collector off for the block, then back on only if it was on before (nesting is safe)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()

"""Room on the stack for values nested as deep as the journal allows.

The reader accepts lines nested up to 1,024 levels; comparing such values (``==``) and the standard
library's JSON codec recurse once per level, past Python's default limit of 1,000. Every layer that
handles a whole payload (the replay's referee and protocol, the jobs' pipe) raises the limit here.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator

#: Journals nest up to 1,024 levels; comparing (==) and the stdlib JSON codec recurse once per level.
DEEP_RECURSION_LIMIT = 4000


@contextlib.contextmanager
def deep_enough() -> Iterator[None]:
    """Room for a payload nested to the reader's limit (the previous recursion limit comes back after)."""
    previous = sys.getrecursionlimit()
    if previous < DEEP_RECURSION_LIMIT:
        sys.setrecursionlimit(DEEP_RECURSION_LIMIT)
    try:
        yield
    finally:
        if previous < DEEP_RECURSION_LIMIT:
            sys.setrecursionlimit(previous)

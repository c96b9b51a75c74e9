"""Room on the stack for values nested as deep as the journal allows.

The reader accepts lines nested up to 1,024 levels; comparing such values (``==``) and the standard
library's JSON codec recurse once per level, past Python's default limit of 1,000. Every layer that
handles a whole payload (the replay's referee and protocol, the jobs' pipe) raises the limit here.
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Iterator
from typing import Any

import orjson

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


def json_text(value: Any) -> str:
    """Compact JSON text of a JSON value at any depth a journal holds: orjson writes 255 levels and the reader
    reads 1,024, so a deeper value goes through the standard library's encoder, with room on the stack."""
    try:
        return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode("utf-8")
    except orjson.JSONEncodeError:
        with deep_enough():
            return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)

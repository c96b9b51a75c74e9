"""Find a key that appears twice in one JSON object of a line.

JSON parsers keep the last of two equal keys, so ``{"content":"A","content":"B"}``
hashes and shows as ``B`` while its bytes also say ``A``: a journal must not hide
bytes from whoever reads it. Only a line that is not the serialisation of what it
parses to can hold a duplicate, so callers run this on that slow path only. The
scan is iterative (any depth the parser accepts) and compares keys after unescaping
(``"a"`` and ``"\\u0061"`` are the same key).
"""

from __future__ import annotations

import json
import re
from typing import Any

import orjson

# On a line that already parsed as JSON, strings and structural characters are
# all we need; numbers and literals are skipped by finditer.
_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*"|[{}\[\]:]')


class _Repeated(Exception):
    def __init__(self, key: str) -> None:
        self.key = key


def _refuse_repeats(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _Repeated(key)
            seen.add(key)
    return obj


def find_duplicate_key(data: bytes) -> str | None:
    """The first key that repeats within one object of the JSON text ``data``, or None.

    The C parser of the standard library with a hook does it fastest (~10 us for a
    600-byte event); a line nested beyond its recursion limit goes to the scanner.
    """
    try:
        json.loads(data, object_pairs_hook=_refuse_repeats)
    except _Repeated as repeated:
        return repeated.key
    except (RecursionError, ValueError):
        return _scan(data)
    return None


def _scan(data: bytes) -> str | None:
    """The same answer as find_duplicate_key, iteratively (any depth)."""
    stack: list[set[str] | None] = []  # one set of keys per open object, None for an array
    pending: bytes | None = None  # the last string token, a key if ':' follows
    for match in _TOKEN.finditer(data):
        token = match.group()
        first = token[0]
        if first == 0x22:  # '"'
            pending = token
            continue
        if first == 0x3A:  # ':'
            if pending is not None and stack and stack[-1] is not None:
                key = _decode(pending)
                keys = stack[-1]
                if key in keys:
                    return key
                keys.add(key)
        elif first == 0x7B:  # '{'
            stack.append(set())
        elif first == 0x5B:  # '['
            stack.append(None)
        elif stack:  # '}' or ']'
            stack.pop()
        pending = None
    return None


def _decode(token: bytes) -> str:
    if b"\\" not in token:
        return token[1:-1].decode("utf-8", "surrogateescape")
    try:
        value = orjson.loads(token)
    except orjson.JSONDecodeError:
        return token[1:-1].decode("utf-8", "surrogateescape")
    return value if isinstance(value, str) else str(value)

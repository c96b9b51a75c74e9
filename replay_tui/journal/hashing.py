"""Hashes that the journal contract defines: event hash, state hash, keys."""

from __future__ import annotations

import hashlib
import os
import threading
from pathlib import Path
from typing import Any

from .canonical import canonical_json, canonical_json_of_parsed
from .files import open_regular

HASH_PREFIX = "sha256:"


def sha256_hex(data: bytes) -> str:
    return HASH_PREFIX + hashlib.sha256(data).hexdigest()


def hash_value(value: Any, *, parsed: bool = False) -> str:
    """``sha256:`` + hex of the JCS form of any JSON value (state, request, call key). ``parsed=True``: the value
    came out of a JSON parse (or is as plain: dicts, lists, strings, numbers), so the fast canonical path is exact."""
    return sha256_hex(canonical_json_of_parsed(value) if parsed else canonical_json(value))


def state_hash(state: Any) -> str:
    """The journal contract's state hash: sha256 of JCS(state), for a state that came out of a JSON round trip."""
    return hash_value(state, parsed=True)


def event_hash_of(event: dict[str, Any], *, parsed: bool = False) -> str:
    """Hash of an event object, ignoring any ``event_hash`` field it carries.

    ``parsed=True`` takes the fast canonical path, valid only for objects decoded
    from JSON text.
    """
    if "event_hash" in event:
        event = {key: value for key, value in event.items() if key != "event_hash"}
    canonical = canonical_json_of_parsed(event) if parsed else canonical_json(event)
    return sha256_hex(canonical)


def call_key_of(tool: str, arguments: Any, *, parsed: bool = False) -> str:
    """``call_key`` = hash of JCS({name, args}), as DESIGN.md defines it. ``parsed=True``: ``arguments``
    came out of a JSON parse (the harness's copy), so the fast canonical path is exact."""
    key = {"name": tool, "args": arguments}
    return sha256_hex(canonical_json_of_parsed(key) if parsed else canonical_json(key))


def file_sha256(path: str | os.PathLike[str], stop: threading.Event | None = None) -> str:
    """The sha256 (hex) of a file's bytes, or of every file of a directory in name order (a sharded journal):
    an imported source, a cached import, a journal re-recorded beside. With ``stop`` set midway, the digest
    of what was read by then."""
    digest = hashlib.sha256()
    block = bytearray(1 << 20)
    view = memoryview(block)
    path = Path(path)
    for part in sorted(path.iterdir()) if path.is_dir() else [path]:
        descriptor = open_regular(part)  # a FIFO or a device is refused, never read for ever
        try:
            while (size := os.readv(descriptor, [block])) and not (stop and stop.is_set()):
                digest.update(view[:size])  # a megabyte: hashed without the GIL
        finally:
            os.close(descriptor)
    return digest.hexdigest()

"""journal/pointer.py: RFC 6901 pointers through the jsonpointer package."""

from __future__ import annotations

import pytest

from replay_tui.journal.pointer import child, escape, parts_of, pointer_of, resolve


def test_round_trip_of_awkward_keys() -> None:
    parts = ["a/b", "~x", "3", ""]
    pointer = pointer_of(parts)
    assert pointer == "/a~1b/~0x/3/"
    assert parts_of(pointer) == parts
    assert child("", "a/b") == "/a~1b" and escape("~/") == "~0~1"
    assert pointer_of([]) == "" and parts_of("") == []


def test_resolve_and_bad_pointers() -> None:
    document = {"a/b": [10, {"~x": None}]}
    assert resolve(document, "/a~1b/1/~0x") is None
    assert resolve(document, "") is document
    for missing in ("/nope", "/a~1b/2", "/a~1b/x", "/a~1b/0/deeper"):
        with pytest.raises(KeyError):
            resolve(document, missing)
    with pytest.raises(ValueError, match="'abc'"):
        parts_of("abc")

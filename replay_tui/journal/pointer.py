"""RFC 6901 JSON Pointers, the one home for them (state panes, diffs, patches, exports), built on
the ``jsonpointer`` package that jsonpatch already brings."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from jsonpointer import JsonPointer, JsonPointerException
from jsonpointer import escape as _escape


def escape(token: str | int) -> str:
    """One reference token: ``~`` becomes ``~0`` and ``/`` becomes ``~1``."""
    escaped: str = _escape(str(token))
    return escaped


def child(pointer: str, token: str | int) -> str:
    """The pointer to ``token`` under ``pointer``."""
    return f"{pointer}/{escape(token)}"


def pointer_of(parts: Iterable[Any]) -> str:
    """The pointer for a list of keys and indexes ([] -> "", the whole document)."""
    path: str = JsonPointer.from_parts([str(part) for part in parts]).path
    return path


def parts_of(pointer: str) -> list[str]:
    """The reference tokens of a pointer ("" -> []); ValueError for text that is not a pointer."""
    try:
        parts: list[str] = JsonPointer(pointer).parts
    except JsonPointerException as error:
        raise ValueError(f"JSON pointer {pointer!r}: {error}") from None
    return parts


def resolve(value: Any, pointer: str) -> Any:
    """The value at ``pointer``; KeyError (naming the pointer) when it does not exist."""
    for token in parts_of(pointer):
        if isinstance(value, dict):
            if token not in value:
                raise KeyError(pointer)
            value = value[token]
        elif isinstance(value, list):
            if not token.isdigit() or int(token) >= len(value):
                raise KeyError(pointer)
            value = value[int(token)]
        else:
            raise KeyError(pointer)
    return value


__all__ = ["child", "escape", "parts_of", "pointer_of", "resolve"]

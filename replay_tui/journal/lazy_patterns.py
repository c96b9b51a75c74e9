"""Regular expressions compiled on first use: each a ``cached_property`` of a small class, so the viewer's first
frame compiles only what its first rows need (compiling Python's regular expressions is pure Python, and a
module's patterns compiled at import were millions of instructions of that frame)."""

from __future__ import annotations

from functools import cached_property


def compile_every(patterns: object) -> None:
    """Every pattern of ``patterns`` compiled now: a process that forks workers (the corpus fork server) does it
    once, before the first fork, so no worker compiles them again."""
    for name, member in vars(type(patterns)).items():
        if isinstance(member, cached_property):
            getattr(patterns, name)

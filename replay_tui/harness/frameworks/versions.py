"""The framework versions each recorder was tested with, and the check that says so when the
installed one is outside (the recorders hook framework internals that move between releases)."""

from __future__ import annotations

import functools
import re
import warnings
from importlib import metadata

#: distribution -> (lowest tested, first untested), as the tests of tests/frameworks ran them.
TESTED_RANGES: dict[str, tuple[str, str]] = {
    "openai-agents": ("0.24.0", "0.25"),
    "langgraph": ("1.2.0", "1.3"),
    "langgraph-checkpoint-sqlite": ("3.1.0", "3.2"),
    "langchain-openai": ("1.7.0", "1.9"),
    "langchain-anthropic": ("1.7.0", "1.8"),
    "langchain-core": ("1.8.0", "1.9"),
    "pydantic-ai-slim": ("2.68.0", "2.69"),
    "mcp": ("1.30.0", "1.31"),
    "fastmcp-slim": ("3.4.11", "3.5"),
    "langchain-mcp-adapters": ("0.3.2", "0.4"),
}


class FrameworkVersionWarning(UserWarning):
    """The installed framework is outside the range its recorder was tested with."""


@functools.cache  # reading installed metadata scans sys.path (~5 ms): once per process
def version_problem(distribution: str) -> str | None:
    """Why ``distribution`` as installed is not a tested version, or None when it is."""
    low, high = TESTED_RANGES[distribution]
    try:
        installed = metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return f"{distribution} is not installed: pip install 'replay-tui[{_extra_of(distribution)}]'"
    parsed = _release(installed)
    if parsed is None:
        return f"{distribution} {installed!r} is not a version replay-tui can read (tested: >={low},<{high})"
    if _release(low) <= parsed < _release(high):  # type: ignore[operator]
        return None
    return (
        f"{distribution} {installed} is outside the range the replay-tui recorder was tested with "
        f"(>={low},<{high}): recording may miss events and replays may diverge"
    )


def check_versions(*distributions: str) -> list[str]:
    """Warn (``FrameworkVersionWarning``, once per distribution) for each untested version."""
    problems = [problem for name in distributions if (problem := version_problem(name)) is not None]
    for problem in problems:
        if problem not in _warned:
            _warned.add(problem)
            warnings.warn(problem, FrameworkVersionWarning, stacklevel=3)
    return problems


_warned: set[str] = set()


def _release(version: str) -> tuple[int, ...] | None:
    """The release numbers of a version (``1.2.24rc1`` -> (1, 2, 24)); pre-releases count as their release."""
    found = re.match(r"\d+(?:\.\d+)*", version.strip())
    return tuple(int(part) for part in found.group(0).split(".")) if found else None


def _extra_of(distribution: str) -> str:
    extras = {"openai-agents": "agents-sdk", "pydantic-ai-slim": "pydantic-ai"}
    return extras.get(distribution, "mcp" if "mcp" in distribution else "langgraph")

"""Helpers every subcommand shares: exit codes and JSON output."""

from __future__ import annotations

import sys
from typing import Any, Protocol

import orjson

from ..journal.safe_text import safe, safe_json, safe_json_text

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def incomplete_exit(unreadable: int, consequence: str, *, quiet: bool) -> int:
    """EXIT_USAGE when ``unreadable`` lines (or a shard the reader gave up on) kept part of the journal out of
    a report, saying so ("... could not be read, so ``consequence``") on stderr unless ``quiet`` (--json says
    it in the report); else EXIT_OK."""
    if not unreadable:
        return EXIT_OK
    if not quiet:
        print(f"replay-tui: {unreadable} line(s) could not be read, so {consequence}", file=sys.stderr)
    return EXIT_USAGE


def print_text(text: str, *, error: bool = False) -> None:
    """A report or message that may hold journal text, on stdout (stderr with ``error``): escaped, never raw."""
    print(safe(text, multiline=True), file=sys.stderr if error else sys.stdout)


class Reportable(Protocol):
    """A result with a text report, a JSON form and the exit code it stands for."""

    @property
    def exit_code(self) -> int: ...

    def to_json(self) -> Any: ...

    def to_text(self) -> str: ...


def print_result(result: Reportable, *, as_json: bool) -> int:
    """Print ``result`` as JSON (``--json``) or as its text report; its exit code."""
    if as_json:
        print_json(result.to_json())
    else:
        print_text(result.to_text())
    return result.exit_code


def print_json(data: object) -> None:
    """One JSON object on stdout (pretty, so a person can read it too); journal text in it is escaped."""
    try:
        text = orjson.dumps(data, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS).decode()
    except orjson.JSONEncodeError:  # nested deeper than orjson writes (the reader accepts 1,024 levels)
        text = safe_json(data, indent=2)
    sys.stdout.write(safe_json_text(text) + "\n")

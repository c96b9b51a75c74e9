"""Helpers every subcommand shares: exit codes and JSON output."""

from __future__ import annotations

import sys

import orjson

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def print_json(data: object) -> None:
    """One JSON object on stdout (pretty, so a person can read it too)."""
    sys.stdout.write(orjson.dumps(data, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS).decode() + "\n")

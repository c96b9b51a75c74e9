"""`replay-tui query corpus.duckdb "SQL"` (or a canned question): answers across a corpus index."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from .common import EXIT_OK, EXIT_USAGE, print_json

CANNED_FLAGS = ("failing-tools", "slowest-steps", "by-signature")
MAX_CELL = 60


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("database", metavar="INDEX", help="DuckDB file written by 'replay-tui index'")
    parser.add_argument("sql", nargs="?", help="one SQL statement over the tables runs, tool_calls, model_calls, steps")
    group = parser.add_mutually_exclusive_group()
    for flag in CANNED_FLAGS:
        group.add_argument(f"--{flag}", action="store_const", const=flag, dest="canned", help=_canned_help(flag))
    parser.add_argument("--limit", type=int, default=10_000, metavar="N", help="fetch at most N rows (default 10000)")
    parser.add_argument("--json", action="store_true", help="print columns and rows as one JSON object")


def _canned_help(flag: str) -> str:
    from ..analysis.corpus_index import CANNED

    return CANNED[flag][0]


def run(args: argparse.Namespace) -> int:
    from ..analysis.corpus_index import CANNED, CorpusIndexError, run_query

    if bool(args.sql) == bool(args.canned):
        print("replay-tui query: give one SQL statement or one of --" + ", --".join(CANNED_FLAGS), file=sys.stderr)
        return EXIT_USAGE
    if args.limit < 1:
        print("replay-tui query: --limit must be at least 1", file=sys.stderr)
        return EXIT_USAGE
    sql = CANNED[args.canned][1] if args.canned else args.sql
    try:
        result = run_query(args.database, sql, limit=args.limit)
    except CorpusIndexError as error:
        print(f"replay-tui query: {error}", file=sys.stderr)
        return EXIT_USAGE
    if args.json:
        print_json(result.to_json())
    else:
        print(render_table(result.columns, result.rows))
        print(f"({len(result.rows)} row(s), {result.elapsed_s * 1000:.0f} ms)")
    return EXIT_OK


def render_table(columns: list[str], rows: list[tuple[Any, ...]]) -> str:
    """A plain aligned table; every cell goes through safe_text (index cells hold journal text)."""
    from ..journal.safe_text import safe_line

    def cell(value: Any) -> str:
        return "" if value is None else safe_line(str(value), MAX_CELL)

    table = [[cell(name) for name in columns]] + [[cell(value) for value in row] for row in rows]
    widths = [max(len(line[column]) for line in table) for column in range(len(columns))]
    lines = ["  ".join(text.ljust(width) for text, width in zip(line, widths)).rstrip() for line in table]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(lines)

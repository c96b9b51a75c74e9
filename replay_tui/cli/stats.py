"""`replay-tui stats JOURNAL [--json]`: events, model usage, tool latency, errors, longest steps."""

from __future__ import annotations

import argparse
import sys

from rich.console import Console

from ..analysis.stats import compute_stats
from ..analysis.stats_render import render_stats
from ..journal import open_journal
from .common import EXIT_OK, print_json


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", help="journal file (.jsonl, .jsonl.gz) or directory of shards")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of tables and charts")


def run(args: argparse.Namespace) -> int:
    journal = open_journal(args.path)
    try:
        stats = compute_stats(journal)
    finally:
        journal.close()
    if args.json:
        print_json(stats.to_json())
    else:
        width = None if sys.stdout.isatty() else 120
        Console(width=width, highlight=False, soft_wrap=False).print(render_stats(stats))
    return EXIT_OK

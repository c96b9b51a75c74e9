"""`replay-tui stats JOURNAL [--json]`: events, model usage, tool latency, errors, longest steps."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable

from rich.console import Console

from ..analysis.stats import compute_stats
from ..analysis.stats_render import render_stats
from ..journal import open_journal
from .common import incomplete_exit, print_json


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", help="journal file (.jsonl, .jsonl.gz) or directory of shards")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of tables and charts")


def stderr_progress(label: str) -> tuple[Callable[[int, int], None] | None, Callable[[], None]]:
    """(progress callback, finish) drawing one updating line on stderr when it is a terminal;
    shared by stats, scan and export so a long pass over a big journal is not silent."""
    if not sys.stderr.isatty():
        return None, lambda: None
    started = time.monotonic()
    shown = [0.0]

    def progress(done: int, total: int) -> None:
        now = time.monotonic()
        if now - shown[0] >= 0.2:
            shown[0] = now
            rate = done / max(now - started, 1e-6)
            sys.stderr.write(f"\r{label}: {done:,} of {total:,} events ({done / max(total, 1):.0%}, {rate:,.0f}/s)   ")
            sys.stderr.flush()

    def finish() -> None:
        if shown[0]:
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()

    return progress, finish


def run(args: argparse.Namespace) -> int:
    journal = open_journal(args.path)
    progress, finish = stderr_progress("stats")
    try:
        stats = compute_stats(journal, progress=progress)
    finally:
        finish()
        journal.close()
    if args.json:
        print_json(stats.to_json())
    else:
        console = Console(width=None if sys.stdout.isatty() else 120, highlight=False, soft_wrap=False)
        console.print(render_stats(stats, width=console.width))
    # a journal read only in part (blank or broken lines, a shard given up on) is no full account of it
    return incomplete_exit(stats.unreadable, "the statistics cover part of it", quiet=args.json)

"""`replay-tui scan JOURNAL [--json]`: secrets that redaction missed, with values masked.

Exit 0 clean, 1 anything found, 2 the journal (or a line of it) could not be read
and nothing was found in the rest.
"""

from __future__ import annotations

import argparse
import time

from ..analysis.secrets import scan_journal
from ..journal import open_journal
from .common import EXIT_FAILED, incomplete_exit, print_json, print_text
from .stats import stderr_progress


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", help="journal file (.jsonl, .jsonl.gz) or directory of shards")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of one line per finding")
    parser.add_argument(
        "--ignore",
        action="append",
        default=[],
        metavar="PATH",
        help="leave out findings at this JSON path (repeatable; * is one segment or index, ** any number), "
        "e.g. 'payload.result.rows[*].signature' or '**.public_key'",
    )


def run(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    journal = open_journal(args.path)
    progress, finish = stderr_progress("scanning")
    try:
        report = scan_journal(journal, ignore=args.ignore, progress=progress)
    finally:
        finish()
        journal.close()
    if args.json:
        data = report.to_json()
        data["seconds"] = round(time.perf_counter() - started, 3)
        print_json(data)
    else:
        print_text(report.to_text())
    if not report.clean:
        return EXIT_FAILED
    return incomplete_exit(report.unreadable, "the scan is incomplete", quiet=args.json)

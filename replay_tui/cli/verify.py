"""`replay-tui verify PATH [--json]`: schema and hash chain check."""

from __future__ import annotations

import argparse

from ..journal import verify_journal
from .common import EXIT_FAILED, EXIT_OK, print_json


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", help="journal file (.jsonl, .jsonl.gz) or directory of shards")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a paragraph")


def run(args: argparse.Namespace) -> int:
    report = verify_journal(args.path)
    if args.json:
        print_json(report.to_json())
    else:
        print(report.to_text())
    return EXIT_OK if report.ok else EXIT_FAILED

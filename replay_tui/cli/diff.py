"""`replay-tui diff A.jsonl B.jsonl [--json]`: where two runs of an agent part ways."""

from __future__ import annotations

import argparse

from ..journal import open_journal
from ..replay.parent.journal_diff import diff_journals
from .common import EXIT_FAILED, EXIT_OK, print_json, print_text


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("a", metavar="A", help="first journal (.jsonl, .jsonl.gz or shard directory)")
    parser.add_argument("b", metavar="B", help="second journal")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")


def run(args: argparse.Namespace) -> int:
    with open_journal(args.a) as a, open_journal(args.b) as b:
        alignment = diff_journals(a, b)  # streams: memory is what differs, not the journals
    if args.json:
        print_json(alignment.to_json())
    else:
        print_text(alignment.to_text())
    return EXIT_OK if alignment.identical else EXIT_FAILED

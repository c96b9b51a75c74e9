"""`replay-tui prune DIR|URL --older-than 15d [--dry-run] [--json]`: remove expired journals, keep tagged ones.

A shard directory goes whole or not at all, with the copies replay-tui made of it (caches, annotations,
experiment outputs, corpus index rows). The default age is `[retention] older_than` in the settings,
else 15 days (replay_tui/store/LIFECYCLE.md)."""

from __future__ import annotations

import argparse

from .common import print_result


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("place", metavar="DIR|URL", help="directory or storage prefix of journals")
    parser.add_argument(
        "--older-than",
        metavar="AGE",
        help="remove journals unchanged for longer than AGE (15d, 36h, 2w; default: [retention] older_than, else 15d)",
    )
    parser.add_argument("--dry-run", action="store_true", help="say what would be removed; remove nothing")
    parser.add_argument("--json", action="store_true", help="print the report as one JSON object")


def run(args: argparse.Namespace) -> int:
    from ..store.retention import prune

    return print_result(prune(args.place, args.older_than, dry_run=args.dry_run), as_json=args.json)

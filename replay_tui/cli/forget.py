"""`replay-tui forget JOURNAL|RUN_ID...`: remove a journal and every copy replay-tui made of it.

The copies: import and object caches, storage mirrors, annotations, experiment outputs, replay scratch
copies, corpus index rows, tags, and what it was shipped as. Prints each thing removed
(replay_tui/store/LIFECYCLE.md)."""

from __future__ import annotations

import argparse

from .common import print_result


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "targets",
        metavar="JOURNAL|RUN_ID",
        nargs="+",
        help="a journal (file, shard directory, URL), a trace that was opened, or a run id",
    )
    parser.add_argument(
        "--in",
        dest="search",
        action="append",
        default=[],
        metavar="DIR|URL",
        help="also remove the journals of a RUN_ID found here (repeatable)",
    )
    parser.add_argument(
        "--index",
        action="append",
        default=[],
        metavar="FILE",
        help="a corpus index to remove the runs' rows from, besides those replay-tui built (repeatable)",
    )
    parser.add_argument("--dry-run", action="store_true", help="say what would be removed; remove nothing")
    parser.add_argument("--json", action="store_true", help="print the report as one JSON object")


def run(args: argparse.Namespace) -> int:
    from ..store.forget import forget

    report = forget(args.targets, search=args.search, indexes=args.index, dry_run=args.dry_run)
    return print_result(report, as_json=args.json)

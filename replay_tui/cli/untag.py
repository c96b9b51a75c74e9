"""`replay-tui untag JOURNAL TAG` (or `--all`): remove a tag from the manifest beside a journal."""

from __future__ import annotations

import argparse

from .common import EXIT_USAGE, print_text
from .tag import add_journal_argument, print_change


def configure(parser: argparse.ArgumentParser) -> None:
    add_journal_argument(parser)
    parser.add_argument("tag", metavar="TAG", nargs="?", help="the tag to remove")
    parser.add_argument("--all", action="store_true", help="remove every tag of the journal")


def run(args: argparse.Namespace) -> int:
    from ..store.tags import untag

    if (args.tag is None) == (not args.all):
        print_text("replay-tui untag: give the TAG to remove, or --all (not both)", error=True)
        return EXIT_USAGE
    change = untag(args.journal, None if args.all else args.tag)
    what = "every tag" if args.all else args.tag
    return print_change(change, f"removed {what}" if change.changed else f"had no tag {what}", as_json=args.json)

"""`replay-tui tag JOURNAL incident [--note TEXT]`: tag a journal, in the manifest beside it (never in it).

A tagged journal is kept by `replay-tui prune` whatever its age (replay_tui/store/LIFECYCLE.md)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from .common import EXIT_OK, print_json, print_text

if TYPE_CHECKING:
    from ..store.tags import TagChange


def add_journal_argument(parser: argparse.ArgumentParser) -> None:
    """The JOURNAL argument of tag and untag (not resolved like other commands' journals: a tag is about
    the file where it is, never an imported or downloaded copy)."""
    parser.add_argument(
        "journal", metavar="JOURNAL", help="journal file, shard directory, or its URL (s3://bucket/prefix/run.jsonl)"
    )
    parser.add_argument("--json", action="store_true", help="print the journal's tags as one JSON object")


def configure(parser: argparse.ArgumentParser) -> None:
    add_journal_argument(parser)
    parser.add_argument("tag", metavar="TAG", help="the tag, e.g. incident (letters, digits, '.', '_', '-')")
    parser.add_argument("--note", metavar="TEXT", help="why (an incident number, a ticket)")


def print_change(change: TagChange, text: str, *, as_json: bool) -> int:
    if as_json:
        print_json(change.to_json())
    else:
        tags = ", ".join(sorted(change.tags)) or "none"
        print_text(f"{change.journal}: {text}; its tags now: {tags} (in {change.manifest})")
    return EXIT_OK


def run(args: argparse.Namespace) -> int:
    from ..store.tags import tag

    change = tag(args.journal, args.tag, args.note)
    return print_change(change, f"tagged {args.tag}", as_json=args.json)

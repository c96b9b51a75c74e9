"""`replay-tui verify PATH [--json] [--all] [--require-closed] [--key PUB]`: schema, hash chain, run
boundaries and seals."""

from __future__ import annotations

import argparse

from ..journal import JournalError, verify_journal
from .common import EXIT_FAILED, EXIT_OK, EXIT_USAGE, print_json


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", help="journal file (.jsonl, .jsonl.gz) or directory of shards")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a paragraph")
    parser.add_argument(
        "--all", action="store_true", help="list every fault (up to 10,000) instead of stopping at the first"
    )
    parser.add_argument(
        "--require-closed",
        action="store_true",
        help="fail (exit 1) when the journal has no run.ended: the run is still going, or the file was cut",
    )
    parser.add_argument(
        "--key",
        metavar="PUB",
        help="public key (from 'replay-tui keygen') to check every seal with; an unsealed tail, a seal by "
        "another key or a bad signature fails",
    )


def run(args: argparse.Namespace) -> int:
    public_key = None
    if args.key:
        from ..journal.seal import load_public_key  # cryptography only when a key is given

        public_key = load_public_key(args.key)
    try:
        report = verify_journal(args.path, all_faults=args.all, public_key=public_key)
    except JournalError as error:
        if not args.json:
            raise  # the entry point prints it as one line and exits 2
        # --json promises JSON on stdout whatever happened: a missing or unreadable journal too.
        print_json({"ok": False, "path": str(args.path), "error": str(error), "error_type": type(error).__name__})
        return EXIT_USAGE
    failed = not report.ok or (args.require_closed and report.closed is not True)
    if args.json:
        data = report.to_json()
        data["require_closed"] = bool(args.require_closed)
        data["ok"] = not failed
        print_json(data)
    else:
        text = report.to_text()
        if report.ok and failed:
            text += " FAILED: --require-closed, and the journal has no run.ended."
        print(text)
    return EXIT_FAILED if failed else EXIT_OK

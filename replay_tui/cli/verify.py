"""`replay-tui verify PATH [--json] [--all] [--require-closed] [--key PUB] [--state]`: schema, hash chain,
run boundaries and seals; with ``--state``, every recorded state hash against the state its patches build."""

from __future__ import annotations

import argparse
import gzip
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import orjson

from ..journal import JournalError, verify_journal
from ..journal.files import open_regular_binary
from ..journal.safe_text import safe_line
from .common import EXIT_FAILED, EXIT_OK, EXIT_USAGE, print_json, print_text

if TYPE_CHECKING:
    from ..analysis.state import StateReport


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
        "--state",
        action="store_true",
        help="also rebuild the state from run.started through every snapshot and patch and check every recorded "
        "state hash against it (reads every state event: slower on a long journal)",
    )
    parser.add_argument(
        "--key",
        metavar="PUB",
        help="public key (from 'replay-tui keygen') to check every seal with; an unsealed tail, a seal by "
        "another key or a bad signature fails",
    )


def first_run_id(path: Path) -> str | None:
    """The run_id on the first line of a journal file (None when it has none or cannot be read)."""
    try:
        with (
            open_regular_binary(path) as raw,
            gzip.GzipFile(fileobj=raw) if path.name.endswith(".gz") else raw as handle,
        ):
            first = orjson.loads(handle.readline(1 << 20))
    except (OSError, EOFError, orjson.JSONDecodeError, JournalError):
        return None
    if not isinstance(first, dict):
        return None
    run_id = first.get("run_id", first.get("session_id"))
    return run_id if isinstance(run_id, str) else None


def corpus_problem(path: Path) -> str | None:
    """A directory whose journals start different runs is a corpus, not the shards of one journal."""
    if not path.is_dir():
        return None
    files = sorted(p for p in path.iterdir() if p.is_file() and p.name.endswith((".jsonl", ".jsonl.gz")))
    runs = {run_id for run_id in map(first_run_id, files) if run_id is not None}
    if len(runs) < 2:
        return None
    return (
        f"{path}: a corpus of {len(files)} independent journals ({len(runs)} runs), not the shards of one journal; "
        f"verify each file (replay-tui verify {path / files[0].name}), or replay them all: replay-tui replay {path}"
    )


def run(args: argparse.Namespace) -> int:
    corpus = corpus_problem(Path(args.path))
    if corpus is not None:
        if args.json:
            print_json({"ok": False, "path": str(args.path), "error": corpus, "error_type": "CorpusDirectory"})
        else:
            print(f"replay-tui verify: {safe_line(corpus)}", file=sys.stderr)
        return EXIT_USAGE
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
    states = check_states(args.path, all_faults=args.all) if args.state and report.ok else None
    failed = (
        not report.ok or (args.require_closed and report.closed is not True) or (states is not None and not states.ok)
    )
    if args.json:
        data = report.to_json()
        data["require_closed"] = bool(args.require_closed)
        if states is not None:
            data["state"] = states.to_json()
        data["ok"] = not failed
        print_json(data)
    else:
        text = report.to_text()
        if report.ok and args.require_closed and report.closed is not True:
            text += " FAILED: --require-closed, and the journal has no run.ended."
        if states is not None:
            text += "\n" + describe_states(states)
        print_text(text)  # the path and fault messages may hold hostile text
    return EXIT_FAILED if failed else EXIT_OK


def check_states(path: str, *, all_faults: bool) -> StateReport:
    """``verify_states`` of the journal at ``path`` (its chain verified already, so every line reads)."""
    from ..analysis.state import verify_states
    from ..journal import open_journal

    with open_journal(path) as journal:
        states = verify_states(journal, all_faults=all_faults)
    assert states is not None  # not cancellable here
    return states


def describe_states(states: StateReport) -> str:
    if states.ok:
        return f"state: {states.checked} recorded state hashes match the state rebuilt from the patches."
    shown = "; ".join(states.faults[:20]) + (f"; and {len(states.faults) - 20} more" if len(states.faults) > 20 else "")
    return f"state FAILED ({states.checked} recorded hashes checked): {shown}"

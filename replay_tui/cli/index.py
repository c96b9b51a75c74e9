"""`replay-tui index DIR -o corpus.duckdb`: facts about every journal of a corpus, for SQL questions."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .common import EXIT_FAILED, EXIT_OK, EXIT_USAGE, print_json


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "corpus", metavar="DIR|URL", help="directory or storage prefix of journals (a shard directory is one journal)"
    )
    parser.add_argument("-o", "--out", required=True, metavar="FILE", help="DuckDB file to write (must not exist)")
    parser.add_argument(
        "--glob", default="*.jsonl", metavar="PATTERN", help="file names of the journals (default *.jsonl)"
    )
    parser.add_argument(
        "--replay-report",
        metavar="FILE",
        help="output of 'replay-tui replay DIR --json': adds each journal's verdict and divergence signature",
    )
    parser.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    parser.add_argument("--quiet", action="store_true", help="no progress line on stderr")


def run(args: argparse.Namespace) -> int:
    from ..analysis.corpus_index import CorpusIndexError, build_index, iter_journal_sources, load_replay_results
    from ..replay.corpus.runs import CorpusError, find_journals
    from ..store.storage import fetch, is_url

    try:
        root = fetch(args.corpus).local if is_url(args.corpus) else Path(args.corpus)
        journals = list(iter_journal_sources(find_journals(root, args.glob), root))
        if not journals:
            print(f"replay-tui index: {root}: no journal matches {args.glob}", file=sys.stderr)
            return EXIT_USAGE
        results = load_replay_results(args.replay_report) if args.replay_report else None
        show = not args.quiet and not args.json and sys.stderr.isatty()

        def progress(done: int, total: int) -> None:
            if show and (done == total or done % 100 == 0):
                print(f"\rindexing {done}/{total}", end="", file=sys.stderr, flush=True)

        summary = build_index(journals, args.out, replay_results=results, progress=progress)
        if show:
            print(file=sys.stderr)
    except (CorpusError, CorpusIndexError) as error:
        print(f"replay-tui index: {error}", file=sys.stderr)
        return EXIT_USAGE
    if args.json:
        print_json(summary.to_json())
    else:
        print(summary.to_text())
    return EXIT_FAILED if summary.unreadable else EXIT_OK

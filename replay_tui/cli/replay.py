"""`replay-tui replay JOURNAL`: strict replay (or an experiment) in an isolated child process."""

from __future__ import annotations

import argparse
import os
import sys

from ..replay.protocol import MODES, STRICT, ReplaySpec
from ..replay.runner import Progress, ReplayRunner
from .common import EXIT_USAGE, print_json

DEFAULT_TIMEOUT_S = 600.0


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("journal_path", nargs="?", metavar="JOURNAL", help="journal file (.jsonl, .jsonl.gz) or shard directory")
    parser.add_argument("--journal", dest="journal_option", metavar="JOURNAL", help="the journal, as an option")
    parser.add_argument(
        "--strict",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="every recorded event must be consumed (default); --no-strict reports unused events without failing",
    )
    parser.add_argument("--verify-hash-chain", action="store_true", help="verify schema and hash chain before replaying")
    parser.add_argument("--fail-on-unused-events", action="store_true", help="fail when recorded events are left unused (also with --no-strict)")
    parser.add_argument("--agent", metavar="MODULE:ATTR", help="entry point to run (default: the one run.started recorded)")
    parser.add_argument(
        "--agent-path", action="append", default=[], metavar="DIR", help="prepend DIR to the child's sys.path (repeatable)"
    )
    parser.add_argument(
        "--from-seq",
        type=int,
        metavar="N",
        help="fast-forward to seq N without reporting; a step-loop agent resumes from the nearest state.snapshot",
    )
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, metavar="S", help=f"kill the child after S seconds (default {DEFAULT_TIMEOUT_S:g})")
    parser.add_argument("--mode", choices=MODES, default=STRICT, help="strict/new-code replay, or an experiment with one live dependency group")
    parser.add_argument("--out", metavar="PATH", help="journal the run writes (required for model-live and tools-live)")
    parser.add_argument("--model-config", metavar="FILE", help="harness config whose model plugin answers (model-live)")
    parser.add_argument("--tools-config", metavar="FILE", help="harness config whose tool plugins run (tools-live)")
    parser.add_argument("--allow-host", action="append", default=[], metavar="HOST[:PORT]", help="also let the child reach this host (experiments)")
    parser.add_argument("--json", action="store_true", help="print the outcome as one JSON object")
    parser.add_argument("--quiet", action="store_true", help="no progress line on stderr")


def run(args: argparse.Namespace) -> int:
    journal = args.journal_option or args.journal_path
    if not journal:
        print("replay-tui replay: give a journal (JOURNAL or --journal JOURNAL)", file=sys.stderr)
        return EXIT_USAGE
    if args.journal_option and args.journal_path and args.journal_option != args.journal_path:
        print("replay-tui replay: two different journals given (positional and --journal)", file=sys.stderr)
        return EXIT_USAGE
    if not os.path.exists(journal):
        print(f"replay-tui replay: {journal}: no such file or directory", file=sys.stderr)
        return EXIT_USAGE
    if args.timeout is not None and args.timeout <= 0:
        print("replay-tui replay: --timeout must be a positive number of seconds", file=sys.stderr)
        return EXIT_USAGE
    spec = ReplaySpec(
        journal=os.path.abspath(journal),
        agent=args.agent,
        mode=args.mode,
        from_seq=args.from_seq,
        strict=args.strict,
        verify_hash_chain=args.verify_hash_chain,
        fail_on_unused_events=args.fail_on_unused_events,
        out=os.path.abspath(args.out) if args.out else None,
        model_config=os.path.abspath(args.model_config) if args.model_config else None,
        tools_config=os.path.abspath(args.tools_config) if args.tools_config else None,
        allow_hosts=list(args.allow_host),
        sys_path=[os.path.abspath(path) for path in args.agent_path] + [os.getcwd()],
    )
    show_progress = not args.quiet and not args.json and sys.stderr.isatty()
    runner = ReplayRunner(spec, timeout_s=args.timeout, on_progress=_progress_line if show_progress else None)
    try:
        outcome = runner.run()
    except KeyboardInterrupt:
        runner.cancel()
        raise
    if show_progress:
        sys.stderr.write("\r\033[K")
    if args.json:
        print_json(outcome.to_json())
    else:
        print(outcome.to_text())
    return outcome.exit_code


def _progress_line(progress: Progress) -> None:
    if progress.phase == "load":
        text = f"indexing journal {progress.fraction:5.1%}"
    else:
        text = f"{progress.phase}: {progress.consumed}/{progress.total} events (seq {progress.seq})"
    sys.stderr.write(f"\r\033[K{text}")
    sys.stderr.flush()

"""`replay-tui replay JOURNAL`: strict replay (or an experiment) in an isolated child process;
`replay DIR --jobs N` replays a corpus, `--rerecord-from-divergence` re-records from the first divergence."""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

from ..journal.safe_text import safe_line
from ..replay.corpus.runs import is_shard_directory
from ..replay.modes import MODES, NEW_CODE, SHUFFLE, STRICT
from ..replay.parent.runner import Progress, ReplayRunner
from ..replay.protocol import ISOLATIONS, ReplaySpec
from ..replay.sandbox import pass_env_default
from .common import EXIT_USAGE, print_result, print_text

DEFAULT_TIMEOUT_S = 600.0


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "journal_path", nargs="?", metavar="JOURNAL", help="journal file (.jsonl, .jsonl.gz) or shard directory"
    )
    parser.add_argument("--journal", dest="journal_option", metavar="JOURNAL", help="the journal, as an option")
    parser.add_argument(
        "--strict",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="every recorded event must be consumed (default); --no-strict reports unused events without failing",
    )
    parser.add_argument(
        "--verify-hash-chain",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="verify schema and hash chain before replaying (default); --no-verify-hash-chain skips it (the report says so)",
    )
    parser.add_argument(
        "--fail-on-unused-events",
        action="store_true",
        help="fail when recorded events are left unused (also with --no-strict)",
    )
    parser.add_argument(
        "--agent", metavar="MODULE:ATTR", help="entry point to run (default: the one run.started recorded)"
    )
    parser.add_argument(
        "--agent-path",
        action="append",
        default=[],
        metavar="DIR",
        help="prepend DIR to the child's sys.path (repeatable)",
    )
    parser.add_argument(
        "--from-seq",
        type=int,
        metavar="N",
        help="fast-forward to seq N without reporting; a step-loop agent resumes from the nearest state.snapshot",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT_S,
        metavar="S",
        help=f"kill the child after S seconds (default {DEFAULT_TIMEOUT_S:g})",
    )
    parser.add_argument(
        "--mode",
        # shuffle is a mode of the child protocol, not of this command: --shuffle-completions runs it
        choices=[mode for mode in MODES if mode != SHUFFLE],
        default=STRICT,
        help="strict/new-code replay, or an experiment with one live dependency group",
    )
    parser.add_argument("--out", metavar="PATH", help="journal the run writes (required for model-live and tools-live)")
    parser.add_argument("--model-config", metavar="FILE", help="harness config whose model plugin answers (model-live)")
    parser.add_argument("--tools-config", metavar="FILE", help="harness config whose tool plugins run (tools-live)")
    parser.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="HOST[:PORT]",
        help="also let the child reach this host (experiments)",
    )
    _configure_sandbox(parser)
    parser.add_argument("--json", action="store_true", help="print the outcome as one JSON object")
    parser.add_argument("--quiet", action="store_true", help="no progress line on stderr")
    parser.add_argument(
        "--jobs", type=int, metavar="N", help="JOURNAL is a corpus directory: replay its journals, N at a time"
    )
    parser.add_argument(
        "--glob", default=None, metavar="PATTERN", help="file names of a corpus's journals (default *.jsonl)"
    )
    parser.add_argument(
        "--executor",
        choices=("local", "ray"),
        default="local",
        help="where a corpus's journals replay: local children (default) or one Ray task each",
    )
    parser.add_argument(
        "--address",
        metavar="auto|ray://HOST:PORT",
        help="the Ray cluster for --executor ray (default: $RAY_ADDRESS, else a new local cluster)",
    )
    parser.add_argument(
        "--no-fork-server",
        action="store_true",
        help="a local corpus: start each child as a new interpreter (bubblewrap when installed) instead of "
        "forking it from a warm fork server (in-process namespaces)",
    )
    shuffle = parser.add_argument_group("shuffle")
    shuffle.add_argument(
        "--shuffle-completions",
        action="store_true",
        help="replay with the completion order of calls that were in flight together permuted (everything else "
        "from the journal, nothing live): says per seed whether the trajectory changed",
    )
    shuffle.add_argument("--seed", type=int, default=1, metavar="N", help="the first seed (default 1)")
    shuffle.add_argument("--runs", type=int, default=None, metavar="K", help="how many seeds, N to N+K-1 (default 20)")
    parser.add_argument(
        "--rerecord-from-divergence",
        action="store_true",
        help="replay up to the first divergence, then continue live (plugins of --config) into --out; the journal is untouched",
    )
    parser.add_argument(
        "--config", metavar="FILE", help="harness config whose plugins run live after the divergence (re-record)"
    )


def _configure_sandbox(parser: argparse.ArgumentParser) -> None:
    """The child's sandbox (replay_tui/replay/SANDBOX.md)."""
    group = parser.add_argument_group("sandbox")
    group.add_argument(
        "--isolation",
        choices=ISOLATIONS,
        default="auto",
        help="auto: bubblewrap when installed, else the child's own namespaces; guard-only: the socket guard alone (reported)",
    )
    group.add_argument(
        "--require-isolation", action="store_true", help="exit 2 when any sandbox layer is missing on this system"
    )
    group.add_argument(
        "--pass-env",
        action="append",
        default=pass_env_default(),
        metavar="NAME",
        help="let the child see this environment variable (repeatable; default: the names in $REPLAY_TUI_PASS_ENV)",
    )


def run(args: argparse.Namespace) -> int:
    with _terminated_as_exit():
        return _run(args)


@contextlib.contextmanager
def _terminated_as_exit() -> Iterator[None]:
    """SIGTERM and SIGHUP (``timeout``, a closed terminal) end the command as Ctrl-C does: the child's
    process group is killed and its scratch dir (the journal's copy) removed on the way out. By default
    they end the process where it stands, leaving both behind."""

    def stop(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    saved = {number: signal.signal(number, stop) for number in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for number, handler in saved.items():
            signal.signal(number, handler)


def _run(args: argparse.Namespace) -> int:
    journal = args.journal_option or args.journal_path
    if not journal:
        print("replay-tui replay: give a journal (JOURNAL or --journal JOURNAL)", file=sys.stderr)
        return EXIT_USAGE
    if args.journal_option and args.journal_path and args.journal_option != args.journal_path:
        print("replay-tui replay: two different journals given (positional and --journal)", file=sys.stderr)
        return EXIT_USAGE
    if not os.path.exists(journal):
        print_text(f"replay-tui replay: {journal}: no such file or directory", error=True)
        return EXIT_USAGE
    if args.timeout is not None and args.timeout <= 0:
        print("replay-tui replay: --timeout must be a positive number of seconds", file=sys.stderr)
        return EXIT_USAGE
    if args.config and not args.rerecord_from_divergence:
        print(
            "replay-tui replay: --config is for --rerecord-from-divergence (experiments take --model-config / --tools-config)",
            file=sys.stderr,
        )
        return EXIT_USAGE
    if (
        args.jobs is not None
        or args.executor == "ray"
        or (os.path.isdir(journal) and not is_shard_directory(Path(journal)))
    ):
        return _run_corpus(args, journal)
    if args.rerecord_from_divergence:
        return _run_rerecord(args, journal)
    if args.shuffle_completions:
        return _run_shuffle(args, journal)
    spec = _spec(args, journal)
    show_progress = not args.quiet and not args.json and sys.stderr.isatty()
    runner = ReplayRunner(spec, timeout_s=args.timeout, on_progress=_progress_line if show_progress else None)
    try:
        outcome = runner.run()
    except KeyboardInterrupt:
        runner.cancel()
        raise
    if show_progress:
        sys.stderr.write("\r\033[K")
    return print_result(outcome, as_json=args.json)


def _spec(args: argparse.Namespace, journal: str) -> ReplaySpec:
    return ReplaySpec(
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
        isolation=args.isolation,
        require_isolation=args.require_isolation,
        pass_env=list(args.pass_env),
        sys_path=[os.path.abspath(path) for path in args.agent_path] + [os.getcwd()],
    )


def _run_corpus(args: argparse.Namespace, root: str) -> int:
    """`replay DIR --jobs N`: every journal of a corpus, grouped by divergence signature."""
    from ..replay.corpus.runs import DEFAULT_GLOB, CorpusError, find_journals, replay_corpus

    if args.mode not in (STRICT, NEW_CODE) or args.out or args.rerecord_from_divergence or args.from_seq:
        print(
            "replay-tui replay: a corpus directory is replayed strictly (no --mode experiment, --out, --from-seq or re-record)",
            file=sys.stderr,
        )
        return EXIT_USAGE
    from ..replay.corpus.executors import ExecutorError, make_executor

    jobs = args.jobs if args.jobs is not None else ((os.cpu_count() or 1) if args.executor == "ray" else 1)
    if jobs < 1:
        print("replay-tui replay: --jobs must be at least 1", file=sys.stderr)
        return EXIT_USAGE
    executor = None
    try:
        journals = find_journals(root, args.glob or DEFAULT_GLOB)
        if not journals:
            raise CorpusError(f"{root}: no journal matches {args.glob or DEFAULT_GLOB!r}")
        show_progress = not args.quiet and not args.json and sys.stderr.isatty()
        executor = make_executor(args.executor, jobs=jobs, address=args.address, fork_server=not args.no_fork_server)
        result = replay_corpus(
            journals,
            root=root,
            spec_for=lambda journal: _spec(args, journal),
            timeout_s=args.timeout,
            on_done=_corpus_progress if show_progress else None,
            executor=executor,
        )
    except (CorpusError, ExecutorError) as error:
        print_text(f"replay-tui replay: {error}", error=True)
        return EXIT_USAGE
    finally:
        if executor is not None and hasattr(executor, "shutdown"):
            executor.shutdown()
    if show_progress:
        sys.stderr.write("\r\033[K")
    return print_result(result, as_json=args.json)


def _run_shuffle(args: argparse.Namespace, journal: str) -> int:
    """`replay JOURNAL --shuffle-completions [--seed N] [--runs K]` (replay/parent/shuffle_runs.py)."""
    from ..replay.parent.shuffle_runs import DEFAULT_RUNS, shuffle_runs

    if args.mode not in (STRICT, NEW_CODE) or args.out or args.from_seq:
        print(
            "replay-tui replay: --shuffle-completions replays from the journal alone (no --mode experiment, --out or "
            "--from-seq)",
            file=sys.stderr,
        )
        return EXIT_USAGE
    runs = args.runs if args.runs is not None else DEFAULT_RUNS
    if runs < 1:
        print("replay-tui replay: --runs must be at least 1", file=sys.stderr)
        return EXIT_USAGE
    show_progress = not args.quiet and not args.json and sys.stderr.isatty()
    extra = ["--agent", args.agent] if args.agent else []
    for path in args.agent_path:
        extra += ["--agent-path", path]
    result = shuffle_runs(
        _spec(args, journal),
        seed=args.seed,
        runs=runs,
        timeout_s=args.timeout,
        extra_args=extra,
        on_run=_shuffle_progress(runs) if show_progress else None,
    )
    if show_progress:
        sys.stderr.write("\r\033[K")
    return print_result(result, as_json=args.json)


def _shuffle_progress(runs: int) -> Callable[[int, object], None]:
    done = [0]

    def shown(seed: int, outcome: object) -> None:
        done[0] += 1
        sys.stderr.write(f"\r\033[Kshuffled {done[0]}/{runs} seeds")
        sys.stderr.flush()

    return shown


def _corpus_progress(entry: object, done: int, total: int) -> None:
    sys.stderr.write(f"\r\033[Kreplayed {done}/{total} journals")
    sys.stderr.flush()


def _run_rerecord(args: argparse.Namespace, journal: str) -> int:
    """`replay JOURNAL --rerecord-from-divergence --config FILE --out NEW`."""
    from ..replay.parent.rerecord import RerecordError, rerecord

    if not args.out or not args.config:
        print(
            "replay-tui replay: --rerecord-from-divergence needs --config FILE (the live plugins) and --out NEW",
            file=sys.stderr,
        )
        return EXIT_USAGE
    if args.mode not in (STRICT, NEW_CODE):
        print("replay-tui replay: --rerecord-from-divergence starts from a strict replay; drop --mode", file=sys.stderr)
        return EXIT_USAGE
    try:
        result = rerecord(
            os.path.abspath(journal),
            config=os.path.abspath(args.config),
            out=os.path.abspath(args.out),
            agent=args.agent,
            agent_path=[os.path.abspath(path) for path in args.agent_path] + [os.getcwd()],
            timeout_s=args.timeout,
        )
    except RerecordError as error:
        print_text(f"replay-tui replay: {error}", error=True)
        return EXIT_USAGE
    return print_result(result, as_json=args.json)


def _progress_line(progress: Progress) -> None:
    if progress.phase == "load":
        text = f"indexing journal {progress.fraction:5.1%}"
    else:
        text = f"{progress.phase}: {progress.consumed}/{progress.total} events (seq {progress.seq})"
    sys.stderr.write(f"\r\033[K{safe_line(text, 200)}")  # from the child: escaped like every text it sends
    sys.stderr.flush()

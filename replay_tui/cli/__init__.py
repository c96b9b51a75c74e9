"""`replay-tui` entry point: open the app, or run one of the subcommands.

Each subcommand lives in its own module in this package, exposing ``HELP``,
``configure(parser)`` and ``run(args) -> int``; it is imported only when used,
so `replay-tui verify` never pays for Textual. Exit codes are shared by every
subcommand: 0 success, 1 the check failed (a fault, a divergence, a secret),
2 bad usage or unreadable input.
"""

from __future__ import annotations

import importlib
import os
import sys
from types import ModuleType, SimpleNamespace
from typing import TYPE_CHECKING, Any, Sequence

from .. import __version__
from ..journal import JournalError
from ..journal.safe_text import safe
from .common import EXIT_USAGE

if TYPE_CHECKING:  # argparse loads when a command line needs parsing (see _plain_open)
    import argparse

# name -> (module, one-line help). Add a subcommand by adding a line here.
COMMANDS: dict[str, tuple[str, str]] = {
    "verify": ("replay_tui.cli.verify", "check the schema and the hash chain of a journal"),
    "serve": (
        "replay_tui.cli.serve",
        "serve the app in a browser through textual-serve (loopback, a random token in the URL)",
    ),
    "record": (
        "replay_tui.cli.record",
        "run an agent on a harness config and record its journal (--follow-in-app to watch it)",
    ),
    "keygen": ("replay_tui.cli.keygen", "write an Ed25519 key pair for signed journal seals (PATH and PATH.pub)"),
    "stats": ("replay_tui.cli.stats", "events, model usage, tool latency, errors and longest steps of a journal"),
    "scan": ("replay_tui.cli.scan", "find secrets that redaction missed (values masked); exit 1 when any is found"),
    "export": ("replay_tui.cli.export", "write a self-contained incident report (html or md)"),
    "replay": (
        "replay_tui.cli.replay",
        "re-run the agent against a journal in a network-isolated child; stop at the first divergence",
    ),
    "diff": (
        "replay_tui.cli.diff",
        "align two journals by step and call keys; show the first difference and a summary",
    ),
    "compare": ("replay_tui.cli.compare", "open two journals side by side in the app, aligned by step and call keys"),
    "redact-check": (
        "replay_tui.cli.redact_check",
        "push canary secrets through a config's redaction rules; exit 1 naming the path of any survivor",
    ),
    "import": (
        "replay_tui.cli.import_",
        "convert an OTLP, OpenAI Agents SDK, Inspect AI or vcrpy trace into a journal",
    ),
    "index": (
        "replay_tui.cli.index",
        "index a corpus of journals into a DuckDB file (runs, tool calls, model calls, steps)",
    ),
    "query": (
        "replay_tui.cli.query",
        "answer SQL or canned questions (--failing-tools, --slowest-steps, --by-signature) from an index",
    ),
    "tag": ("replay_tui.cli.tag", "tag a journal (incident) in the manifest beside it; prune keeps tagged journals"),
    "untag": ("replay_tui.cli.untag", "remove a tag from the manifest beside a journal"),
    "prune": (
        "replay_tui.cli.prune",
        "remove journals older than an age (--older-than 15d) and their copies; keep tagged ones",
    ),
    "forget": (
        "replay_tui.cli.forget",
        "remove a journal (or a run id) and every copy replay-tui made of it; print what was removed",
    ),
}


def _load(name: str) -> ModuleType:
    return importlib.import_module(COMMANDS[name][0])


#: Subcommand arguments that name a journal (or a corpus of them): a foreign trace given there is imported
#: first, a URL fetched, and the open goes to the read audit.
JOURNAL_ARGUMENTS = ("path", "a", "b", "journal_path", "journal_option", "corpus")


def _resolve_sources(args: argparse.Namespace) -> argparse.Namespace:
    """Each journal argument through ``resolve_source`` (an OTLP, Agents SDK, Inspect or vcrpy
    file becomes its imported journal; a journal is left as it is)."""
    from ..store.sources import resolve_source

    for name in JOURNAL_ARGUMENTS:
        value = getattr(args, name, None)
        if isinstance(value, str):
            source = resolve_source(value)
            setattr(args, name, str(source.path))
            if source.url:
                _name_urls(str(source.path), source.url)
    return args


class _UrlNaming:
    """A text stream that writes the URL wherever the local cache path of a fetched journal appears,
    so every report and message about an ``s3://…`` journal names what the user typed."""

    def __init__(self, stream: Any, local: str, url: str) -> None:
        self._stream, self._local, self._url = stream, local, url.rstrip("/")

    def write(self, text: str) -> int:
        written: int = self._stream.write(text.replace(self._local, self._url))
        return written

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _name_urls(local: str, url: str) -> None:
    sys.stdout = _UrlNaming(sys.stdout, local, url)
    sys.stderr = _UrlNaming(sys.stderr, local, url)


def _app_parser() -> argparse.ArgumentParser:
    import argparse

    parser = argparse.ArgumentParser(
        prog="replay-tui",
        description="Replay debugger for AI agents. Opens a journal in the terminal app; "
        "with no journal, opens the bundled incident demo.",
        epilog="subcommands: "
        + "; ".join(f"{name}: {help_text}" for name, (_, help_text) in COMMANDS.items())
        + ". Run 'replay-tui SUBCOMMAND --help' for each.",
    )
    parser.add_argument("journal", nargs="?", help="journal file or shard directory (default: bundled demo)")
    parser.add_argument("--seq", type=int, help="select this seq when the app opens")
    parser.add_argument("--theme", help="theme name (see themes/)")
    parser.add_argument("--follow", action="store_true", help="live-tail the journal as it grows")
    parser.add_argument(
        "--agent", metavar="MODULE:ATTR", help="entry point `r` replays (default: the one run.started recorded)"
    )
    parser.add_argument("--version", action="version", version=f"replay-tui {__version__}")
    return parser


def _plain_open(argv: list[str]) -> SimpleNamespace | None:
    """What the app's parser gives for ``replay-tui`` and ``replay-tui JOURNAL`` (a lone argument that is no
    option), the usual starts, without argparse: importing it and building the parser were about 15 M
    instructions of the first frame. None for any other command line, which the parser reads."""
    if len(argv) > 1 or (argv and argv[0].startswith("-")):
        return None
    return SimpleNamespace(journal=argv[0] if argv else None, seq=None, theme=None, follow=False, agent=None)


def _run_app(args: argparse.Namespace | SimpleNamespace) -> int:
    from ..tui.launch import launch_app  # Textual is imported only when the app runs

    return launch_app(args)


def main(argv: Sequence[str] | None = None) -> int:
    streams = sys.stdout, sys.stderr
    try:
        return _main(argv)
    finally:
        sys.stdout, sys.stderr = streams  # _name_urls may have wrapped them


def _main(argv: Sequence[str] | None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    from ..store.audit import command_scope

    with command_scope(argv[0] if argv and argv[0] in COMMANDS else "app"):
        return _run(argv)


def _run(argv: list[str]) -> int:
    try:
        if argv and argv[0] in COMMANDS:
            module = _load(argv[0])
            import argparse

            parser = argparse.ArgumentParser(prog=f"replay-tui {argv[0]}", description=COMMANDS[argv[0]][1])
            module.configure(parser)
            code: int = module.run(_resolve_sources(parser.parse_args(argv[1:])))
            return code
        return _run_app(_plain_open(argv) or _app_parser().parse_args(argv))
    except SystemExit as exit_:
        return exit_.code if isinstance(exit_.code, int) else EXIT_USAGE
    except JournalError as error:
        print(f"replay-tui: {safe(str(error), multiline=True)}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader went away (`replay-tui stats J | head`): stop quietly, as cat does.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141
    except Exception as error:  # the user gets one line, never a traceback
        if os.environ.get("REPLAY_TUI_DEBUG"):
            raise
        print(
            f"replay-tui: internal error: {type(error).__name__}: {safe(str(error))} (set REPLAY_TUI_DEBUG=1 for a traceback)",
            file=sys.stderr,
        )
        return 70


def entry_point() -> None:
    sys.exit(main())

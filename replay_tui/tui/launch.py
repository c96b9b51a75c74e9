"""Start the app from the command line: find the journal, check it, run the UI.

Everything that can fail on bad input (missing path, unreadable or empty file,
unknown theme) is checked here, before the UI takes over the terminal.
"""

from __future__ import annotations

import gc
import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING

import replay_tui

from ..journal import Journal, JournalError
from ..journal.files import open_regular_binary

if TYPE_CHECKING:
    import argparse

    from ..store.storage import ObjectFollower
    from .app import ReplayApp

DEMO_JOURNAL = "crm-incident.jsonl"
DEMO_AGENT = "replay_tui._demo.crm_incident:agent"  # the demo's agent as shipped in the package (replay_tui/_demo)
EXIT_USAGE = 2


def demo_journal_path() -> Path | None:
    """The bundled demo: in an installed wheel, else in the checkout's fixtures."""
    package = Path(replay_tui.__file__).parent
    for candidate in (
        package / "_bundled" / "journals" / DEMO_JOURNAL,
        package.parent / "fixtures" / "journals" / DEMO_JOURNAL,
    ):
        if candidate.is_file():
            return candidate
    return None


def resolve_journal(argument: str | None) -> Path:
    """The journal to open; raises ValueError with a message for the user."""
    if argument is None:
        demo = demo_journal_path()
        if demo is None:
            raise ValueError(
                f"no journal given and the bundled demo {DEMO_JOURNAL} is not installed; pass a journal path"
            )
        return demo
    from ..journal.urls import is_url

    if is_url(argument):  # object storage: fetched into the local cache (a StorageError names the URL)
        from ..store.sources import resolve_source

        return resolve_source(argument).path
    path = Path(argument).expanduser()
    if not path.exists():
        raise ValueError(f"{argument}: no such file or directory")
    if path.is_file():
        try:
            with open_regular_binary(path) as handle:
                handle.read(1)
        except OSError as error:
            raise ValueError(f"{argument}: cannot be read ({error.strerror})") from None
    from ..store.sources import resolve_source  # a foreign trace opens as its imported journal

    return resolve_source(str(path)).path


TAIL_BYTES = 1 << 20  # the last line of a journal is looked for in its last MiB


def last_seq_of(path: Path) -> int | None:
    """The seq on the last complete line of a plain journal file; None when it cannot be read cheaply
    (gzip, shard directory, a last line longer than TAIL_BYTES or unreadable): the app then checks."""
    if not path.is_file() or path.suffix == ".gz":
        return None
    with open_regular_binary(path) as handle:
        size = handle.seek(0, os.SEEK_END)
        handle.seek(max(0, size - TAIL_BYTES))
        tail = handle.read()
    lines = [line for line in tail.split(b"\n")[:-1] if line.strip()]  # the part after the last newline is partial
    if not lines or (len(lines) == 1 and size > TAIL_BYTES):
        return None
    try:
        seq = json.loads(lines[-1]).get("seq")
    except (ValueError, AttributeError):
        return None
    return seq if isinstance(seq, int) and not isinstance(seq, bool) else None


def check_start_seq(path: Path, seq: int, follow: bool) -> str | None:
    """None if ``--seq`` can be shown, else why not (a journal being followed may still grow to it)."""
    last = None if follow else last_seq_of(path)
    if last is not None and seq > last:
        return f"--seq {seq}: {path.name} ends at seq {last}"
    return None


class StartUpCollection:
    """The collector paused from the launcher's imports until the app's first frame is drawn.

    Start-up (imports, the app's construction, its first compose, CSS and layout) makes almost no
    garbage, and the collector walked every object it made, again and again: about 120 young
    collections before the first frame (paused through the imports and the app's construction only,
    it was on for the first frame's compose, CSS and layout: ending the pause at the first frame
    instead saved about 7 ms). At ``end`` (the first frame drawn, or the launch over without one)
    what start-up built (modules, classes, the app, the first screen's widgets) is frozen out of the
    collector's generations, since it lives as long as the process: the collections that follow walk
    only what the app makes from then on (a full one cost 30-70 ms)."""

    def __init__(self) -> None:
        self._was_enabled = gc.isenabled()
        self._ended = False
        gc.disable()

    def end(self) -> None:
        """Freeze what start-up built and collect again (once; later calls do nothing)."""
        if self._ended:
            return
        self._ended = True
        gc.freeze()
        if self._was_enabled:
            gc.enable()


@contextmanager
def start_up_collection() -> Iterator[StartUpCollection]:
    """``StartUpCollection`` for a block: ended when the block ends, however it ends, if not before."""
    pause = StartUpCollection()
    try:
        yield pause
    finally:
        pause.end()


def launch_app(args: argparse.Namespace | SimpleNamespace) -> int:
    """Run the app for the app's command line (``cli._app_parser``'s namespace, or ``cli._plain_open``'s)."""
    with start_up_collection() as collection:
        built = _build_app(args)
        if isinstance(built, int):
            return built
        app, journal, follower = built
        app.after_first_frame = collection.end
        try:
            app.run()
        finally:
            app.keep_stylesheets(now=True)  # the sheets first shown after the first frame (dialogs, help)
            journal.close()
            if follower is not None:
                follower.stop()
    return app.return_code or 0  # a crash inside the app is not a success


def _build_app(args: argparse.Namespace | SimpleNamespace) -> "tuple[ReplayApp, Journal, ObjectFollower | None] | int":
    """The app for ``args``, or the exit code after saying what is wrong."""
    from .themes import DEFAULT_THEME, check_theme_name

    theme = args.theme or DEFAULT_THEME
    problem = check_theme_name(theme)
    if problem:
        print(f"replay-tui: {problem}", file=sys.stderr)
        return EXIT_USAGE
    if args.seq is not None and args.seq < 1:
        print(f"replay-tui: --seq {args.seq}: a seq is a whole number from 1", file=sys.stderr)
        return EXIT_USAGE
    follower = None
    try:
        follower = _object_follower(args)
        path = _follow_start(follower, args.journal) if follower is not None else resolve_journal(args.journal)
        journal = Journal(path)
    except ValueError as error:
        print(f"replay-tui: {error}", file=sys.stderr)
        return EXIT_USAGE
    except JournalError as error:
        print(f"replay-tui: {error}", file=sys.stderr)
        return EXIT_USAGE
    if args.seq is not None:
        problem = check_start_seq(path, args.seq, bool(getattr(args, "follow", False)))
        if problem:
            journal.close()
            print(f"replay-tui: {problem}", file=sys.stderr)
            return EXIT_USAGE

    from .actions import KeymapError, default_keymap_path, load_keymap
    from .app import ReplayApp

    try:
        keymap = load_keymap(default_keymap_path())
    except KeymapError as error:
        journal.close()
        print(f"replay-tui: {error}", file=sys.stderr)
        return EXIT_USAGE
    agent = getattr(args, "agent", None)
    if agent is None and args.journal is None:
        agent = DEMO_AGENT  # the recorded fixtures.agents module exists only in a checkout
    app = ReplayApp(
        journal,
        start_seq=args.seq,
        theme=theme,
        follow=bool(getattr(args, "follow", False)),
        replay_agent=agent,
        keymap=keymap,
    )
    return app, journal, follower


def _follow_start(follower: "ObjectFollower", url: str) -> Path:
    """The local copy a followed URL is tailed in; the open goes to the read audit like any other."""
    from ..store.audit import record_read
    from ..store.sources import ResolvedSource
    from ..store.storage import shown

    path = follower.start()
    record_read(ResolvedSource(url, path, (path,), url=shown(url)))
    return path


def _object_follower(args: argparse.Namespace | SimpleNamespace) -> "ObjectFollower | None":
    """``--follow s3://…``: a poller that appends the object's new bytes to a local copy the app tails."""
    from ..journal.urls import is_url

    if not getattr(args, "follow", False) or not args.journal or not is_url(args.journal):
        return None
    from ..store.storage import ObjectFollower  # the object store loads for a URL only, not to open a file

    return ObjectFollower(args.journal, interval_s=1.0)

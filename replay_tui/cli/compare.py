"""`replay-tui compare A B`: open the comparison screen on two journals.

The same screen an experiment opens: both trajectories aligned by step and call
keys, the first differing decision focused, the rest summarised. For text or
JSON output use `replay-tui diff`.
"""

from __future__ import annotations

import argparse
import sys

from ..journal import Journal, JournalError
from .common import EXIT_OK, EXIT_USAGE, print_text

HELP = "open two journals side by side in the app, aligned by step and call keys"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("a", metavar="A", help="first journal (.jsonl, .jsonl.gz or shard directory)")
    parser.add_argument("b", metavar="B", help="second journal")
    parser.add_argument("--theme", help="theme name (see themes/)")


def run(args: argparse.Namespace) -> int:
    from ..tui.launch import resolve_journal
    from ..tui.themes import DEFAULT_THEME, check_theme_name

    theme = args.theme or DEFAULT_THEME
    problem = check_theme_name(theme)
    if problem:
        print(f"replay-tui compare: {problem}", file=sys.stderr)
        return EXIT_USAGE
    paths = []
    for argument in (args.a, args.b):
        try:
            path = resolve_journal(argument)
            Journal(path).close()  # opens and reads the first line: an empty or unknown file fails here
        except ValueError as error:
            print_text(f"replay-tui compare: {error}", error=True)
            return EXIT_USAGE
        except JournalError as error:
            print_text(f"replay-tui compare: {error}", error=True)
            return EXIT_USAGE
        paths.append(path)

    from ..tui.screens.compare_app import CompareApp

    CompareApp(paths[0], paths[1], theme=theme).run()
    return EXIT_OK

"""`replay-tui export JOURNAL --format html|md -o FILE [--replay-result FILE.json]`: an incident report.

The report is one self-contained file (HTML loads nothing from the network).
Exit 0 written, 2 unreadable journal or replay result, or an output that cannot be written.
"""

from __future__ import annotations

import argparse
import sys

from ..analysis.export import ExportError, build_report, render, summary_line, write_report
from ..journal import open_journal
from ..replay.parent.results import load_replay_result
from .common import EXIT_OK, EXIT_USAGE, print_text

_SUFFIXES = {".html": "html", ".htm": "html", ".md": "md", ".markdown": "md"}


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", help="journal file (.jsonl, .jsonl.gz) or directory of shards")
    parser.add_argument(
        "--format",
        choices=("html", "md", "otlp"),
        help="report format (default: from the -o suffix); otlp writes OTLP/JSON traces with GenAI conventions",
    )
    parser.add_argument("-o", "--output", required=True, help="file to write, or - for standard output")
    parser.add_argument(
        "--replay-result",
        metavar="FILE.json",
        help="output of 'replay-tui replay JOURNAL --json', for the divergence report",
    )


def run(args: argparse.Namespace) -> int:
    fmt = args.format
    if fmt == "otlp":
        return _export_otlp(args)
    if fmt is None:
        suffix = "." + args.output.rsplit(".", 1)[-1].lower() if "." in args.output else ""
        fmt = _SUFFIXES.get(suffix)
        if fmt is None:
            print(
                f"replay-tui export: cannot tell the format from {args.output!r}; pass --format html or --format md",
                file=sys.stderr,
            )
            return EXIT_USAGE
    journal = open_journal(args.path)
    try:
        replay = load_replay_result(args.replay_result, args.path) if args.replay_result else None
        report = build_report(journal, replay=replay, progress=_stage_line if sys.stderr.isatty() else None)
        if args.output == "-":
            sys.stdout.write(render(report, fmt))
            return EXIT_OK
        size = write_report(report, args.output, fmt)
    except ExportError as error:
        print_text(f"replay-tui export: {error}", error=True)
        return EXIT_USAGE
    finally:
        if sys.stderr.isatty():
            sys.stderr.write("\r\x1b[K")
        journal.close()
    print_text(summary_line(report, args.output, size, fmt))
    return EXIT_OK


def _export_otlp(args: argparse.Namespace) -> int:
    """`export JOURNAL --format otlp -o FILE`: the run as OTLP/JSON (see analysis/export_otlp.py)."""
    from ..analysis.export_otlp import export_otlp

    journal = open_journal(args.path)
    try:
        if args.output == "-":
            result = export_otlp(journal, sys.stdout.buffer)
        else:
            with open(args.output, "xb") as out:
                result = export_otlp(journal, out)
    except FileExistsError:
        print_text(f"replay-tui export: {args.output} exists already", error=True)
        return EXIT_USAGE
    finally:
        journal.close()
    if args.output != "-":
        print_text(f"wrote {args.output} ({result.spans} spans in {result.requests} OTLP/JSON request(s))")
    return EXIT_OK


def _stage_line(stage: str, fraction: float) -> None:
    sys.stderr.write(f"\r\x1b[Kexport: {stage} ({fraction:.0%})")
    sys.stderr.flush()

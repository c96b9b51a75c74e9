"""`replay-tui import SRC [SRC ...] -o OUT.jsonl [--format ...]`: a foreign trace as a schema-v1 journal.

Several sources of one trace are joined into one journal: OTLP/JSON spans and the logs that carry their
content, as the OpenTelemetry SDK's span and log exporters write them to two files (importers/join.py).
Exit 0 written, 2 bad input (the message names the file and the record) or an output that exists already.
"""

from __future__ import annotations

import argparse
import os

from ..importers import FORMATS, TraceImportError, import_trace
from .common import EXIT_OK, EXIT_USAGE, print_json, print_text


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "src",
        metavar="SRC",
        nargs="+",
        help="OTLP/JSON file, Agents SDK trace export, Inspect .eval/.json log or vcrpy cassette; several OTLP/JSON "
        "or Agents SDK files of one trace (spans in one, the logs with their content in another) become one journal",
    )
    parser.add_argument(
        "-o",
        "--out",
        required=True,
        metavar="OUT.jsonl",
        help="the journal to write (a directory of journals when SRC holds several runs)",
    )
    parser.add_argument(
        "--format", choices=("auto", *FORMATS), default="auto", help="the source format (default: detect by content)"
    )
    parser.add_argument("--json", action="store_true", help="print what was written as one JSON object")


def run(args: argparse.Namespace) -> int:
    if os.path.exists(args.out):
        print_text(f"replay-tui import: {args.out} exists already; an import never overwrites", error=True)
        return EXIT_USAGE
    try:
        results = import_trace(args.src, args.out, format=args.format)
    except TraceImportError as error:
        print_text(f"replay-tui import: {error}", error=True)  # names what the trace holds: escaped
        return EXIT_USAGE
    if args.json:
        print_json(
            {
                "journals": [
                    {
                        "path": str(result.path),
                        "events": result.events,
                        "fidelity": result.fidelity,
                        "detail": result.detail,
                    }
                    for result in results
                ]
            }
        )
        return EXIT_OK
    for result in results:
        fidelity = result.fidelity["label"] + (
            f": {result.fidelity['reason']}" if result.fidelity.get("reason") else ""
        )
        print_text(f"wrote {result.path} ({result.events} events; {fidelity})")
    return EXIT_OK

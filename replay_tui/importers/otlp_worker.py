"""A worker process of the OTLP import's pass one: ``python -m replay_tui.importers.otlp_worker``.

It reads one run of whole lines (byte range and first line number in argv), spools its entries to
the file it is given, and writes what it found, pickled, to stdout. A plain module run in a fresh
interpreter, not ``multiprocessing``: that would import the parent's main module again in the child.
"""

from __future__ import annotations

import pickle
import sys


def main(argv: list[str]) -> int:
    from .otlp import read_chunk

    path, start, end, first_line, spool_path = argv
    found = read_chunk(path, int(start), int(end), int(first_line), spool_path)
    sys.stdout.buffer.write(pickle.dumps(found, protocol=pickle.HIGHEST_PROTOCOL))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""A worker process of the OTLP import's pass one: ``python -m replay_tui.importers.otlp.worker``.

It reads the runs of whole lines it claims (``parallel.read_chunks``; argv: the file, the claims folder, its
spool; stdin: every run, one line of JSON), spools their entries to its file, and writes what it found, pickled,
to stdout (a ``writer_process`` frame). Then it is the journal's writer, if the import sends it pass two
(``writer_process.serve``), or it ends with its input. A plain module run in a fresh interpreter, not
``multiprocessing``: that would import the parent's main module again in the child.
"""

from __future__ import annotations

import gc
import pickle
import sys


def main(argv: list[str]) -> int:
    import orjson

    from .parallel import read_chunks
    from .trace import SPOOL_BUFFER
    from .writer_process import send_frame, serve

    path, claims, spool_path = argv
    chunks = [tuple(run) for run in orjson.loads(sys.stdin.buffer.readline())]
    gc.disable()  # as import_trace does: parsed JSON holds no cycles
    with open(spool_path, "xb", buffering=SPOOL_BUFFER) as spool:
        found = read_chunks(path, chunks, claims, spool, pickled=True)
    send_frame(sys.stdout.buffer, b"A", pickle.dumps(found, protocol=pickle.HIGHEST_PROTOCOL))
    del found
    return serve(sys.stdin.buffer, sys.stdout.buffer)  # pass two's writer, if the import asks


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

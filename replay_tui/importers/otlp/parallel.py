"""Pass one shared between processes: a big file of one request per line is cut into runs of whole lines,
which this process and worker processes (``worker``) claim one at a time, each spooling its spans to its own
file; what each found is joined in file order. Here too the heuristics of when that pays: the file's size
(``PARALLEL_BYTES``), the CPUs this process may use, and whether one is free for pass two's writer process.
"""

from __future__ import annotations

import os
import pickle
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

import orjson

from ..errors import TraceImportError
from .lines import Counted, line_requests, lines_between, newlines, one_request_per_line
from .writer_process import receive_frame

if TYPE_CHECKING:
    from .trace import OtlpTrace

#: From this size on, pass one is shared between worker processes (below it, starting them costs more).
PARALLEL_BYTES = 16 * 1024 * 1024
#: The size of the runs of lines the readers of pass one claim one at a time: small enough that the last
#: one to finish keeps the others waiting briefly, big enough that a run's own cost is nothing beside it.
CHUNK_BYTES = 4 * 1024 * 1024
MAX_WORKERS = 4
_PACKAGE_ROOT = str(Path(__file__).resolve().parents[3])


def _worker_environment() -> dict[str, str]:
    """This environment, with the directory holding replay_tui first on the path (as this process found it)."""
    paths = [_PACKAGE_ROOT, *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}


def worker_count(path: Path) -> int:
    """How many readers pass one over ``path`` is worth (one below ``PARALLEL_BYTES``)."""
    if path.stat().st_size < PARALLEL_BYTES:
        return 1
    return max(1, min(MAX_WORKERS, usable_cpus()))


def cpu_free() -> bool:
    """Whether a CPU is likely idle (the 1-minute load average under the CPUs less a half): only then does
    pass two in two processes pay (it takes as long as its slower half, ~0.4 CPU-s for 100k spans, not ~0.65);
    on a busy machine it costs its handoffs (~10 % more CPU, and each half waits for the other's turn on a CPU)."""
    try:
        return os.getloadavg()[0] < usable_cpus() - 0.5
    except OSError:  # no load average here
        return True


def usable_cpus() -> int:
    """The CPUs this process may run on (all of them where the OS cannot say)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def _chunks(path: Path, count: int, *, finer_tail: int = 0, numbered: bool = True) -> list[tuple[int, int, int]]:
    """``count`` runs of whole lines of about the same size: (first byte, end byte, first line number).
    ``finer_tail``: the last so many are cut in four each, so the readers end their last runs about together.
    ``numbered=False``: line numbers 0 (``read_chunks`` counts them: not the whole file first, here, alone)."""
    size = path.stat().st_size
    cuts = {size * part // count for part in range(1, count)}
    cuts.update(size * quarter // (4 * count) for quarter in range(4 * (count - finer_tail), 4 * count) if quarter % 4)
    starts = [0]
    with open(path, "rb") as handle:
        for cut in sorted(cuts):
            handle.seek(max(cut, starts[-1]))
            handle.readline()  # on to the start of the next line
            starts.append(min(handle.tell(), size))
        starts.append(size)
        numbers = [1] if numbered else [0] * len(starts)
        for begin, end in zip(starts, starts[1:-1]) if numbered else ():  # the newlines before each start
            numbers.append(numbers[-1] + newlines(handle, begin, end))
    return [(begin, end, number) for begin, end, number in zip(starts, starts[1:], numbers) if end > begin]


#: What a reader found in one run of lines (``OtlpTrace._chunk_state``), or its bad input as the error's
#: (path, record, expected): the error itself does not unpickle.
ChunkState = dict[str, Any] | tuple[str, str | None, str]


def read_chunks(
    path: str, chunks: list[tuple[int, int, int]], claims: str, spool: BinaryIO, *, pickled: bool = False
) -> tuple[list[tuple[int, ChunkState | bytes]], int]:
    """Pass one over the runs of lines (first byte, end byte, first line number) this reader claims: whoever
    is free takes the next unclaimed run (a file made in ``claims``), so a reader the machine slows down reads
    less. Each run gets its own state; all spool to ``spool``. Returns (run index, state) and the spool's size.
    ``pickled``: each state pickled as soon as it is made (a worker's: not all at the end, while the import waits).
    A first line number 0 is counted here: the newlines of the runs this reader skipped (it counts its own as it
    reads them), so the readers share the count and start at once."""
    from .trace import OtlpTrace  # the reader (whose pass one this is: it imports this module)

    found: list[tuple[int, ChunkState | bytes]] = []
    spooled = 0
    counted_to, line_there = 0, 1  # a byte offset (a line start) and its line number
    with open(path, "rb") as handle:
        for index, (start, end, first_line) in enumerate(chunks):
            try:
                os.close(os.open(os.path.join(claims, str(index)), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            except FileExistsError:
                continue  # another reader has it
            if not first_line:
                first_line = line_there + newlines(handle, counted_to, start)
            trace = OtlpTrace.__new__(OtlpTrace)  # a reader of one run: its own index, this reader's spool
            trace._begin(Path(path), spool)
            trace._spooled = spooled
            lines = Counted(lines_between(handle, start, end))
            try:
                for number, request in line_requests(lines, trace.path, first_line, reduced=True):
                    trace._take(number, request)
                state: ChunkState = trace._chunk_state()
                counted_to, line_there = end, first_line + lines.count  # every line of the run was read
            except TraceImportError as error:
                state = (str(error.path), error.record, error.expected)
                counted_to, line_there = start, first_line
            found.append((index, pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL) if pickled else state))
            spooled = trace._spooled
    return found, spooled


def stop_worker(worker: subprocess.Popen[bytes], *, at_once: bool = False) -> None:
    """End a worker: told to (the end of its input: it has nothing more to do) or, ``at_once``, killed."""
    if worker.poll() is None and not at_once:
        try:
            assert worker.stdin is not None
            worker.stdin.close()
            worker.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            pass
    if worker.poll() is None:
        worker.kill()
        worker.wait()


class WorkersFailed(Exception):
    """A worker process ended without its answer (killed, out of memory...)."""


def read_in_parallel(trace: OtlpTrace, workers: int) -> bool:
    """Pass one of ``trace``: this process and ``workers - 1`` worker processes share the runs of lines, then
    their states are joined in file order (the journal is the same bytes as from one reader). False (nothing read) when the file is not one request per line."""
    folder = tempfile.mkdtemp(prefix="replay-tui-otlp-")
    claims = os.path.join(folder, "claims")
    os.mkdir(claims)
    started: list[subprocess.Popen[bytes]] = []
    try:
        for index in range(1, workers):
            spool_path = os.path.join(folder, f"{index}.spool")
            started.append(
                subprocess.Popen(
                    [sys.executable, "-m", "replay_tui.importers.otlp.worker", str(trace.path), claims, spool_path],
                    stdin=subprocess.PIPE,  # the runs of lines, sent once the workers are on their way
                    stdout=subprocess.PIPE,
                    stderr=subprocess.DEVNULL,  # never onto the app's terminal; a failure is read alone
                    env=_worker_environment(),
                )
            )
        if not one_request_per_line(trace.path):  # asked while the workers start (their runs are sent below)
            return False
        count = max(workers, -(-trace.path.stat().st_size // CHUNK_BYTES))
        chunks = _chunks(trace.path, count, finer_tail=workers, numbered=False)
        runs = orjson.dumps(chunks) + b"\n"  # one line; then the frames of pass two, if it is written there
        for worker in started:
            assert worker.stdin is not None
            worker.stdin.write(runs)
            worker.stdin.flush()
        own, trace._spooled = read_chunks(str(trace.path), chunks, claims, trace.spool)
        states: dict[int, tuple[ChunkState | bytes, int]] = {index: (state, 0) for index, state in own}
        for index, worker in enumerate(started, start=1):
            assert worker.stdout is not None
            answer = receive_frame(worker.stdout)
            if answer is None or answer[0] != b"A":
                raise WorkersFailed(worker.wait())
            found, _size = pickle.loads(answer[1])  # noqa: S301 (our own child's answer)
            trace.spools.append(open(os.path.join(folder, f"{index}.spool"), "rb"))  # noqa: SIM115
            states.update((run, (state, index)) for run, state in found)
        if len(states) != len(chunks):
            raise WorkersFailed(None)  # a run nobody read: cannot happen while every reader answers
        for run in range(len(chunks)):
            state, spool = states[run]
            if isinstance(state, bytes):
                state = pickle.loads(state)  # noqa: S301 (our own child's answer)
            if isinstance(state, tuple):  # the first bad line in file order, where one reader would stop
                raise TraceImportError(str(trace.path), state[1], state[2])
            trace._join(state, spool)
        trace._writer, started = started[0], started[1:]  # pass two's writer; the others end
        return True
    finally:
        for worker in started:
            stop_worker(worker, at_once=True)
        shutil.rmtree(folder, ignore_errors=True)  # the spools stay readable through their open files

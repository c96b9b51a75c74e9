"""What every bench does so that its figures cannot flatter themselves (issue 30, item 1).

* Both sides of a ratio are measured in the same run, interleaved (``interleaved``: the order rotates
  each round, so a drift of the machine's load falls on each side alike).
* CPU time beside wall time (``Seconds``: this process; ``children_cpu``: reaped children, from
  getrusage). A busy neighbour stretches wall time at random; CPU time moves far less.
* The load is printed (``Load``): the 1-minute load average at the start and at the end, and a
  "not quotable" line when it is above the CPU count less a half. A loaded machine also inflates a
  baseline (a bare interpreter start took 225 ms instead of 22 at load 12), which flatters a ratio.
* Bytecode compiled first: with PYTHONDONTWRITEBYTECODE=1 (set on these machines) a checkout has no
  ``__pycache__``, so every process would compile the package again and the bench would measure the
  compiler. ``compiled_environment`` gives a child a bytecode cache under ``CACHE`` (the sandbox binds
  ``PYTHONPYCACHEPREFIX`` back read-only, so replay children read it too) and ``compile_tree`` fills it
  before anything is timed; ``run_compiled`` re-executes an in-process bench under it.
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, NamedTuple, TypeVar

ROOT = Path(__file__).resolve().parents[2]
CACHE = Path("/tmp/replay-tui-bench")  # big generated journals, cached between runs
PYCACHE = CACHE / "pycache"
COMPILED = ("replay_tui", "fixtures", "tests")  # what a bench's processes import from the tree
_MARK = "REPLAY_TUI_BENCH_COMPILED"

T = TypeVar("T")


class Seconds(NamedTuple):
    """A duration on the wall clock and in CPU time of this process."""

    wall: float
    cpu: float

    @staticmethod
    def now() -> Seconds:
        return Seconds(time.perf_counter(), time.process_time())

    def __sub__(self, other: tuple[float, ...]) -> Seconds:  # type: ignore[override]
        return Seconds(self.wall - other[0], self.cpu - other[1])


def timed(function: Callable[[], Any]) -> Seconds:
    started = Seconds.now()
    function()
    return Seconds.now() - started


def children_cpu() -> float:
    """User and system CPU of every reaped child of this process so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_child(argv: list[str], **options: Any) -> tuple[float, float, subprocess.CompletedProcess[bytes]]:
    """Wall and CPU seconds (getrusage of the reaped child) of one child process."""
    before = children_cpu()
    started = time.perf_counter()
    done = subprocess.run(argv, **options)
    return time.perf_counter() - started, children_cpu() - before, done


def compiled_environment(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """``environ`` (default ``os.environ``) with a bytecode cache, as an installed package has one."""
    environment = {key: value for key, value in (environ or os.environ).items() if key != "PYTHONDONTWRITEBYTECODE"}
    environment["PYTHONPYCACHEPREFIX"] = str(PYCACHE)
    return environment


def compile_tree(tree: Path = ROOT) -> None:
    """Fill the bytecode cache with the tree's modules (and the interpreter's own site-packages are compiled
    by pip already), before anything is timed."""
    PYCACHE.mkdir(parents=True, exist_ok=True)
    folders = [str(tree / name) for name in COMPILED if (tree / name).is_dir()]
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", "-j", "0", *folders],
        env=compiled_environment(),
        check=True,
        stdout=subprocess.DEVNULL,
    )


def bytecode_state() -> str:
    """How this process's modules were loaded, for the figures."""
    if os.environ.get(_MARK) and sys.pycache_prefix == str(PYCACHE):
        return f"compiled first (cache {PYCACHE})"
    if sys.flags.dont_write_bytecode:
        return "NOT compiled: PYTHONDONTWRITEBYTECODE is set and no cache was prepared"
    return "as found (the interpreter's own __pycache__)"


def run_compiled() -> None:
    """Re-execute this bench under the bytecode cache, compiled first (once: the marker stops a loop)."""
    if os.environ.get(_MARK):
        return
    compile_tree()
    environment = compiled_environment()
    environment[_MARK] = "1"
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, [sys.executable, *sys.argv], environment)


@contextlib.contextmanager
def server_in_child(serve: Callable[..., None], *args: Any) -> Iterator[str]:
    """A loopback server in a spawned process (its CPU is not the measured process's): ``serve(pipe, *args)``
    sends its URL down the pipe and stops when it receives anything. Yields the URL."""
    context = multiprocessing.get_context("spawn")
    ours, theirs = context.Pipe()
    process = context.Process(target=serve, args=(theirs, *args), daemon=True)
    process.start()
    try:
        yield ours.recv()
    finally:
        ours.send("stop")
        process.join(timeout=5)


def load_1m() -> float:
    return round(os.getloadavg()[0], 2)


class Load:
    """The 1-minute load at the start and the end of a bench, and whether its figures can be quoted."""

    def __init__(self) -> None:
        self.cpus = os.cpu_count() or 1
        self.samples = [load_1m()]

    def sample(self) -> float:
        self.samples.append(load_1m())
        return self.samples[-1]

    @property
    def quotable(self) -> bool:
        return max(self.samples) <= self.cpus - 0.5

    def figures(self) -> dict[str, Any]:
        return {
            "load_average_1m": list(self.samples),
            "cpus": self.cpus,
            "quotable": self.quotable,
            "bytecode": bytecode_state(),
        }

    def verdict(self) -> str:
        """One line for a person: the load, and whether the ratio may be quoted."""
        highest = max(self.samples)
        if self.quotable:
            return f"load {highest} on {self.cpus} CPUs: quotable"
        return (
            f"NOT QUOTABLE: the 1-minute load reached {highest}, above {self.cpus - 0.5} (the CPU count less a half); "
            "take these figures again on a quiet machine"
        )


def finish(figures: dict[str, Any], load: Load) -> None:
    """Print the verdict line, then the figures as the last line (one JSON object: compare_commits reads it)."""
    load.sample()
    figures.update(load.figures())
    print(load.verdict(), flush=True)
    print(json.dumps(figures), flush=True)


def interleaved(cases: Mapping[str, Callable[[], T]], rounds: int) -> dict[str, list[T]]:
    """Each case once per round, the order rotating from round to round; every result, by case."""
    names = list(cases)
    results: dict[str, list[T]] = {name: [] for name in names}
    for turn in range(rounds):
        shift = turn % len(names)
        for name in names[shift:] + names[:shift]:
            results[name].append(cases[name]())
    return results


def callgrind_total(dump: Path | str) -> int:
    """The instructions a callgrind dump counts (its ``totals:`` or ``summary:`` line)."""
    with open(dump) as lines:
        for line in lines:
            if line.startswith(("totals:", "summary:")):
                return int(line.split()[1])
    raise RuntimeError(f"no instruction total in {dump}")


def percentile(values: Iterable[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * (len(ordered) - 1) + 0.5))]


def median(values: Iterable[float]) -> float:
    return statistics.median(list(values))

"""Where a corpus's journals are replayed: local children, or tasks on a Ray cluster.

Both executors run the same thing for each journal, ``ReplayRunner(spec).run()``: a
sandboxed child process started on the machine that runs the job. They differ only in
which machine that is and in how a journal gets there:

* ``LocalExecutor(jobs)`` runs up to ``jobs`` children at once from a thread pool; by
  default they are forked by one warm fork server (``forkserver.py``) instead of each
  starting an interpreter, in the in-process namespaces (bubblewrap cannot wrap a
  forked child; the report says so). ``fork_server=False``, an experiment, an explicit
  ``--isolation bwrap`` or ``guard-only``, or a server that cannot start: plain children;
* ``RayExecutor(address)`` turns each journal into a Ray task. The driver sends the
  journal's bytes (through Ray's object store) and the spec; the node writes them to a
  scratch directory, replays them in the same sandbox as a local run, and sends back the
  outcome. Nothing else crosses the network: no environment, no credentials, no files.
  A task whose worker or node dies is retried once, then reported as ``crashed`` for that
  journal, never as a match.

Executors report each finished journal through ``on_done(position, outcome)`` in
completion order; the caller groups and orders the results, so the report, the grouping
table and the exit code do not depend on the executor.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Protocol, Sequence

from ..modes import NEW_CODE, STRICT
from ..parent.outcome import ReplayOutcome
from ..parent.runner import CRASHED, ReplayRunner
from ..protocol import ReplaySpec
from .forkserver import ForkServer, ForkServerError, label_isolation

OnDone = Callable[[int, ReplayOutcome], None]

#: Ray retries a task whose worker died this many times before the journal counts as crashed.
RAY_TASK_RETRIES = 1


class ExecutorError(ValueError):
    """The executor cannot start (Ray not installed, no cluster at the address)."""


class CorpusExecutor(Protocol):
    """Runs one replay per spec; ``on_done`` sees each outcome as it finishes."""

    name: str
    workers: int

    def run_all(self, specs: Sequence[ReplaySpec], timeout_s: float | None, on_done: OnDone) -> None: ...

    def cancel(self) -> None: ...


def forkable(spec: ReplaySpec) -> bool:
    """Whether the fork server can run this replay: strict or new-code, isolation auto or namespaces."""
    return spec.mode in (STRICT, NEW_CODE) and spec.isolation in ("auto", "namespaces")


class LocalExecutor:
    """Children on this machine, ``jobs`` at a time (a thread per job only waits on its child)."""

    name = "local"

    def __init__(self, jobs: int = 1, *, fork_server: bool = True) -> None:
        if jobs < 1:
            raise ExecutorError("--jobs must be at least 1")
        self.workers = jobs
        self.fork_server = fork_server
        self._runners: list[ReplayRunner] = []
        self._lock = threading.Lock()
        self._server: ForkServer | None = None

    def run_all(self, specs: Sequence[ReplaySpec], timeout_s: float | None, on_done: OnDone) -> None:
        if self.fork_server and any(forkable(spec) for spec in specs):
            try:
                self._server = ForkServer().start()
            except (ForkServerError, OSError):
                self._server = None  # plain children: slower, the same replay
        try:
            self._run_all(specs, timeout_s, on_done)
        finally:
            if self._server is not None:
                self._server.close()
                self._server = None

    def _replay_one(self, spec: ReplaySpec, timeout_s: float | None) -> ReplayOutcome:
        server = self._server
        if server is not None and forkable(spec):
            runner = ReplayRunner(replace(spec, isolation="namespaces"), timeout_s=timeout_s, spawner=server)
            with self._lock:
                self._runners.append(runner)
            try:
                outcome = runner.run()
            except ForkServerError:
                pass  # the server went away before this child was forked: run it plainly below
            else:
                if runner.pid not in server.lost:
                    outcome.journal = spec.journal
                    label_isolation(outcome)
                    return outcome
                # the server died mid-run and took the child along: no verdict yet, run it plainly below
        runner = ReplayRunner(spec, timeout_s=timeout_s)
        with self._lock:
            self._runners.append(runner)
        return runner.run()

    def _run_all(self, specs: Sequence[ReplaySpec], timeout_s: float | None, on_done: OnDone) -> None:
        def replay_one(position: int) -> tuple[int, ReplayOutcome]:
            try:
                return position, self._replay_one(specs[position], timeout_s)
            except Exception as error:  # one journal's failure is its own entry: the rest of the corpus still runs
                message = f"the replay could not run: {type(error).__name__}: {error}"
                return position, ReplayOutcome.failed(specs[position], "internal", message)

        with ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="replay-corpus") as pool:
            futures = [pool.submit(replay_one, position) for position in range(len(specs))]
            try:
                for future in as_completed(futures):
                    on_done(*future.result())
            except BaseException:  # Ctrl-C: no child is left running
                for future in futures:
                    future.cancel()
                self.cancel()
                raise

    def cancel(self) -> None:
        with self._lock:
            runners = list(self._runners)
        for runner in runners:
            runner.cancel()


def pack_journal(path: str) -> dict[str, bytes]:
    """A journal's bytes by file name: one entry for a file, one per shard for a directory."""
    source = Path(path)
    if source.is_dir():
        return {child.name: child.read_bytes() for child in sorted(source.iterdir()) if child.is_file()}
    return {"": source.read_bytes()}


def replay_on_node(spec: ReplaySpec, files: dict[str, bytes], timeout_s: float | None) -> ReplayOutcome:
    """Body of a Ray task: unpack the journal into a scratch directory here, replay it, clean up.

    The outcome names the journal by the driver's path, so reports read the same as a
    local run's.
    """
    scratch = tempfile.mkdtemp(prefix="replay-tui-ray-")
    try:
        original = spec.journal
        name = Path(original).name or "journal.jsonl"
        local = Path(scratch) / name
        if set(files) == {""}:
            local.write_bytes(files[""])
        else:
            local.mkdir()
            for shard, data in files.items():
                (local / Path(shard).name).write_bytes(data)
        outcome = ReplayRunner(replace(spec, journal=str(local)), timeout_s=timeout_s).run()
        outcome.journal = original
        return outcome
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def lost_worker_outcome(spec: ReplaySpec, error: BaseException) -> ReplayOutcome:
    """A journal whose Ray task died (worker or node) even after its retry: crashed, never a match."""
    reason = str(error).strip().splitlines()[0][:300] if str(error).strip() else type(error).__name__
    return ReplayOutcome.failed(
        spec,
        "worker_lost",
        f"the Ray task died {RAY_TASK_RETRIES + 1} time(s) ({type(error).__name__}): {reason}",
        status=CRASHED,
        stderr_tail=[f"Ray: {type(error).__name__}: {reason}"],
    )


class RayExecutor:
    """One Ray task per journal, on whichever node the cluster picks (see the module docstring)."""

    name = "ray"

    def __init__(self, address: str | None = None, *, num_cpus: int | None = None) -> None:
        try:
            import ray
        except ImportError:
            raise ExecutorError("--executor ray needs Ray: pip install 'replay-tui[ray]'") from None
        self._ray = ray
        self.address = address
        self._started_here = False
        if not ray.is_initialized():
            try:
                ray.init(
                    address=address,
                    num_cpus=num_cpus if address in (None, "local") else None,
                    include_dashboard=False,
                    log_to_driver=False,
                    configure_logging=False,
                )
            except (ConnectionError, ValueError, RuntimeError) as error:
                raise ExecutorError(
                    f"cannot reach a Ray cluster at {address or 'a new local cluster'}: {error}"
                ) from None
            self._started_here = True
        self.workers = max(1, int(ray.cluster_resources().get("CPU", 1)))  # type: ignore[no-untyped-call]
        self._refs: list[Any] = []

    def run_all(self, specs: Sequence[ReplaySpec], timeout_s: float | None, on_done: OnDone) -> None:
        ray = self._ray
        task = ray.remote(num_cpus=1, max_retries=RAY_TASK_RETRIES, retry_exceptions=False)(replay_on_node)
        positions: dict[Any, int] = {}
        waiting = iter(range(len(specs)))
        in_flight = 2 * self.workers  # journals held in the object store at once: bounded, not the corpus

        def submit_next() -> None:
            position = next(waiting, None)
            if position is not None:
                spec = specs[position]
                positions[task.remote(spec, ray.put(pack_journal(spec.journal)), timeout_s)] = position

        for _ in range(in_flight):
            submit_next()
        try:
            while positions:
                self._refs = list(positions)
                finished, _ = ray.wait(list(positions), num_returns=1)
                for ref in finished:
                    position = positions.pop(ref)
                    try:
                        outcome = ray.get(ref)
                    except ray.exceptions.RayError as error:
                        outcome = lost_worker_outcome(specs[position], error)
                    on_done(position, outcome)
                    submit_next()
        except BaseException:
            self.cancel()
            raise

    def cancel(self) -> None:
        for ref in self._refs:
            try:
                self._ray.cancel(ref, force=True)
            except Exception:  # already finished, or the cluster is gone
                pass

    def shutdown(self) -> None:
        """Stop the local cluster this executor started (a cluster given by address is left running)."""
        if self._started_here:
            self._ray.shutdown()


def make_executor(
    name: str, *, jobs: int = 1, address: str | None = None, fork_server: bool = True
) -> LocalExecutor | RayExecutor:
    """The executor ``--executor NAME`` asks for."""
    if name == "local":
        return LocalExecutor(jobs, fork_server=fork_server)
    if name == "ray":
        return RayExecutor(address or os.environ.get("RAY_ADDRESS"), num_cpus=jobs if address is None else None)
    raise ExecutorError(f"unknown executor {name!r}; expected local or ray")

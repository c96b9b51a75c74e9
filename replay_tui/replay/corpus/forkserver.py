"""A warm worker for corpus replays: one interpreter with the replay child side imported,
forking one fresh sandboxed child per journal instead of starting a new interpreter.

The parent side (``ForkServer``) is a drop-in spawner for ``ReplayRunner``: it is called
like ``subprocess.Popen`` with the argv, environment, working directory and pass_fds that
``prepare_launch`` made for a plain child, and returns a process object with the same
``pid``/``stdin``/``stdout``/``stderr``/``poll``/``wait``. So each forked child gets exactly
what a single replay gets: its own scratch dir and journal copy, the scrubbed environment
(it replaces ``os.environ``), the protocol pipe, the stdin "go" handshake, its own
process group (the runner kills it with ``killpg`` on timeout or cancel), and the
parent-side referee and verdict, unchanged. The child then runs ``child.main``, which
enters the sandbox (``enter_sandbox``: its own network and mount namespaces, nobody,
no capabilities, seccomp) before any agent code is imported.

What is warm: the interpreter, replay_tui's child side (journal, harness, engine) and
their libraries, and the default redaction rules compiled (``warm_up``). What is not: the
agent's modules. Importing them in the server would run agent code outside the sandbox,
so each child imports them after entering it, as a single replay does; they live only in that child's copy-on-write memory, so nothing an
agent leaves behind (a mutated module global, a file in its cwd) reaches the next journal.

A forked child cannot be wrapped by bubblewrap (bwrap execs a new program): it uses the
in-process namespaces, and the report says so (``label_isolation``).

The server (``python -m replay_tui.replay.corpus.forkserver FD``) is single-threaded, as
``enter_sandbox`` requires of the process it forks from; it talks to the parent over a
unix SEQPACKET socket (one JSON request, one JSON reply; the child's pipes travel as
SCM_RIGHTS). It reports each child's exit status, and reaps a child only when the parent
asks, after its ``killpg``: until then the child's pid (and process group id) cannot be
reused. It dies with its parent, and its children die with it.
"""

from __future__ import annotations

import ctypes
import importlib
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from typing import IO, Any, Sequence

import orjson

from ...journal.processes import Supervised, kill_group
from ..parent.child_command import CHILD_MODULE, spec_of

#: Imported once by the server: everything a replay child needs before the agent.
PRELOAD = (
    "replay_tui.replay.child.main",
    "replay_tui.replay.child.engine",
    "replay_tui.replay.child.entry_point",
    "replay_tui.harness",
    "replay_tui.harness.config",
    "replay_tui.harness.replay_support",
)
MAX_MESSAGE = 1 << 20  # one request: argv (the spec), environment, cwd
MAX_FDS = 16
PR_SET_PDEATHSIG, PR_SET_DUMPABLE = 1, 4
LOST_CHILD_WAIT_S = 5.0  # how long a lost server's child may take to exit after SIGKILL
FORK_SERVER_MECHANISM = "namespaces, forked by the fork server"
FORK_SERVER_NOTE = "forked from a warm fork server: in-process namespaces (bubblewrap cannot wrap a forked child)"


class ForkServerError(RuntimeError):
    """The fork server could not start, or went away."""


# -- the parent's half ------------------------------------------------------------------------


def _pidfd_open(pid: int) -> int | None:
    """A pidfd for ``pid``, or None where the kernel (before 5.3) or the platform has none."""
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


class ForkedChild:
    """What ``ReplayRunner`` sees of a forked child: the subset of ``subprocess.Popen`` it uses."""

    def __init__(self, server: ForkServer, pid: int, stdin: IO[bytes], stdout: IO[bytes], stderr: IO[bytes]) -> None:
        self._server = server
        self.pid = pid
        self.stdin = stdin
        self.stdout = stdout
        self.stderr = stderr
        self.returncode: int | None = None
        # A handle on this very process (not on whatever later gets its pid): the server has not
        # reaped it yet, so the pid is still this child's when the handle is taken.
        self._pidfd = _pidfd_open(pid)

    def _status(self, op: str) -> int | None:
        """The server's answer on this child. A server that is gone took the child with it (the child's
        parent-death signal is SIGKILL), so the answer is "killed" rather than an exception in the middle
        of the runner's clean-up (which left the scratch dir behind)."""
        try:
            status = self._server.request({"op": op, "pid": self.pid}).get("status")
        except ForkServerError:
            self._server.lost.add(self.pid)
            self._make_sure_it_is_gone()
            self.returncode = -signal.SIGKILL
            return self.returncode
        if op == "reap" and isinstance(status, int):
            self._forget_pidfd()
        return status if isinstance(status, int) else None

    def _make_sure_it_is_gone(self) -> None:
        """Kill the child and wait for it to exit. The parent-death signal is sent only late in the
        server's exit (after its socket closed), so "killed" could otherwise be reported while the child
        still runs for a moment."""
        if self._pidfd is None:
            return
        try:
            signal.pidfd_send_signal(self._pidfd, signal.SIGKILL)
        except ProcessLookupError:
            pass  # already exited
        poller = select.poll()
        poller.register(self._pidfd, select.POLLIN)
        poller.poll(LOST_CHILD_WAIT_S * 1000)  # readable once the process has exited
        self._forget_pidfd()

    def _forget_pidfd(self) -> None:
        if self._pidfd is not None:
            os.close(self._pidfd)
            self._pidfd = None

    def poll(self) -> int | None:
        """The exit status once the child has exited (not reaped yet: its pid stays ours)."""
        if self.returncode is None:
            return self._status("poll")
        return self.returncode

    def await_exit(self, limit_s: float) -> None:
        """Wait up to ``limit_s`` for the child to exit, without reaping it."""
        deadline = time.perf_counter() + limit_s
        while self.poll() is None and time.perf_counter() < deadline:
            time.sleep(0.005)

    def wait(self, timeout: float | None = None) -> int:
        """Reap the child (the server does) and return its status, like ``Popen.wait``."""
        deadline = None if timeout is None else time.perf_counter() + timeout
        while self.returncode is None:
            status = self._status("reap")
            if status is not None:
                self.returncode = status
                break
            if deadline is not None and time.perf_counter() >= deadline:
                raise subprocess.TimeoutExpired(str(self.pid), timeout or 0.0)
            time.sleep(0.005)
        return self.returncode


class ForkServer:
    """The warm worker, seen from the parent; call it like ``subprocess.Popen`` (see the module docstring).

    Thread-safe: a corpus's job threads share one server, one request at a time.
    """

    def __init__(self, python: str = sys.executable) -> None:
        self.python = python
        self._lock = threading.Lock()
        self._socket: socket.socket | None = None
        self._server: Supervised | None = None  # the server process, in a session of its own
        self._home: str | None = None
        self.lost: set[int] = set()  # pids of children that were running when the server died

    def start(self) -> ForkServer:
        from ..parent.sandbox_launch import PACKAGE_ROOT
        from ..sandbox import child_environment

        if self._socket is not None:
            return self
        self._home = os.path.realpath(tempfile.mkdtemp(prefix="replay-tui-forkserver-"))
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        env = child_environment(dict(os.environ), (), self._home)  # the server holds no secrets either
        env["PYTHONPATH"] = os.pathsep.join(
            [PACKAGE_ROOT, *[p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]]
        )
        try:
            self._server = Supervised.start(
                [self.python, "-m", "replay_tui.replay.corpus.forkserver", str(theirs.fileno())],
                pass_fds=(theirs.fileno(),),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                cwd=self._home,
                env=env,
            )
        finally:
            theirs.close()
        self._server.drain(stderr=True)  # its last lines say why, should it die
        self._socket = ours
        try:
            ready = self._receive()
        except ForkServerError:
            self.close()
            raise
        if not ready.get("ready"):
            self.close()
            raise ForkServerError(f"the fork server did not start: {ready.get('error')}")
        return self

    @property
    def server_pid(self) -> int | None:
        return self._server.pid if self._server is not None else None

    def accepts(self, argv: Sequence[str]) -> bool:
        """Whether ``argv`` is a plain child this server can fork (not a bwrap command, same Python)."""
        return bool(argv) and argv[0] == self.python and spec_of(list(argv)) is not None

    def __call__(
        self,
        argv: Sequence[str],
        *,
        pass_fds: Sequence[int] = (),
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        **_popen_options: Any,  # stdin/stdout/stderr are always pipes, the child always gets its own session
    ) -> ForkedChild:
        if not self.accepts(argv):
            raise ForkServerError(f"the fork server forks replay children only, not {list(argv[:3])!r}")
        self.start()
        stdin_r, stdin_w = os.pipe()
        stdout_r, stdout_w = os.pipe()
        stderr_r, stderr_w = os.pipe()
        fds = [stdin_r, stdout_w, stderr_w, *pass_fds]
        request = {
            "op": "spawn",
            "spec": spec_of(list(argv)),
            "env": env if env is not None else dict(os.environ),
            "cwd": cwd or os.getcwd(),
            "targets": [0, 1, 2, *pass_fds],
        }
        try:
            reply = self.request(request, fds)
        except BaseException:
            for fd in (stdin_w, stdout_r, stderr_r):
                os.close(fd)
            raise
        finally:
            for fd in (stdin_r, stdout_w, stderr_w):
                os.close(fd)
        if not isinstance(reply.get("pid"), int):
            for fd in (stdin_w, stdout_r, stderr_r):
                os.close(fd)
            raise ForkServerError(f"the fork server could not fork: {reply.get('error')}")
        return ForkedChild(
            self, reply["pid"], os.fdopen(stdin_w, "wb"), os.fdopen(stdout_r, "rb"), os.fdopen(stderr_r, "rb")
        )

    def request(self, message: dict[str, Any], fds: Sequence[int] = ()) -> dict[str, Any]:
        with self._lock:
            if self._socket is None:
                raise ForkServerError("the fork server is not running")
            try:
                socket.send_fds(self._socket, [orjson.dumps(message)], list(fds))
            except OSError as error:
                raise ForkServerError(f"the fork server went away: {error}") from None
            return self._receive()

    def _receive(self) -> dict[str, Any]:
        assert self._socket is not None
        try:
            data = self._socket.recv(MAX_MESSAGE)
        except OSError as error:
            data, reason = b"", str(error)
        else:
            reason = "it exited"
        if not data:
            last = None
            if self._server is not None and self._server.exited():
                last = self._server.last_stderr_line()
            raise ForkServerError(f"the fork server went away ({last or reason})")
        reply = orjson.loads(data)
        return reply if isinstance(reply, dict) else {}

    def close(self) -> None:
        """Stop the server: closing its socket makes it kill and reap whatever children it still has."""
        with self._lock:
            if self._socket is not None:
                self._socket.close()
                self._socket = None
        if self._server is not None:
            self._server.reap(timeout_s=10)  # killed if it has not ended by then
            self._server.join_drains()
            self._server = None
        if self._home is not None:
            shutil.rmtree(self._home, ignore_errors=True)
            self._home = None

    def __enter__(self) -> ForkServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def label_isolation(outcome: Any) -> None:
    """Name the fork server in the outcome's isolation report: namespaces made in process, no bubblewrap."""
    from ..sandbox import SandboxReport

    isolation = getattr(outcome, "isolation", None)
    if isolation is None or isolation.sandbox is None:
        return
    report = SandboxReport.from_json(isolation.sandbox)
    report.mechanism = FORK_SERVER_MECHANISM
    isolation.sandbox = report.to_json()
    isolation.reason = f"{isolation.reason}; {FORK_SERVER_NOTE}" if isolation.reason else FORK_SERVER_NOTE


# -- the server's half ------------------------------------------------------------------------


def _exit_status(info: os.waitid_result | None) -> int | None:
    if info is None:
        return None
    return info.si_status if info.si_code == os.CLD_EXITED else -info.si_status


def _prctl(option: int, value: int) -> None:
    try:
        ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _set_parent_death_signal() -> None:
    _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


class Server:
    """The server loop: one request at a time from the one parent, on a blocking socket (no threads)."""

    def __init__(self, control: socket.socket) -> None:
        self.control = control
        self.children: set[int] = set()

    def serve(self) -> None:
        self.reply({"ready": True, "pid": os.getpid()})
        while True:
            try:
                data, fds, _flags, _address = socket.recv_fds(self.control, MAX_MESSAGE, MAX_FDS)
            except OSError:
                data, fds = b"", []
            if not data:
                for fd in fds:
                    os.close(fd)
                self.shutdown()
                return
            try:
                message = orjson.loads(data)
                self.reply(self.handle(message, fds))
            except Exception as error:  # a bad request: say so, keep serving
                for fd in fds:
                    try:
                        os.close(fd)
                    except OSError:
                        pass
                self.reply({"error": f"{type(error).__name__}: {error}"})

    def reply(self, message: dict[str, Any]) -> None:
        self.control.send(orjson.dumps(message))

    def handle(self, message: dict[str, Any], fds: list[int]) -> dict[str, Any]:
        op = message.get("op")
        if op == "spawn":
            return {"pid": self.spawn(message, fds)}
        pid = message.get("pid")
        if pid not in self.children:
            return {"error": f"no child {pid!r} of this fork server"}
        if op == "poll":
            return {"status": _exit_status(os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT))}
        if op == "reap":
            info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG)
            if info is not None:
                self.children.discard(pid)
            return {"status": _exit_status(info)}
        return {"error": f"unknown op {op!r}"}

    def spawn(self, message: dict[str, Any], fds: list[int]) -> int:
        targets = message["targets"]
        if len(targets) != len(fds) or not isinstance(message.get("spec"), str):
            raise ValueError(f"{len(fds)} fds for {len(targets)} targets")
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                code = self.become_child(message, fds)
            except BaseException:
                traceback.print_exc()
            finally:
                try:
                    sys.stdout.flush()
                    sys.stderr.flush()
                finally:
                    os._exit(code)
        for fd in fds:
            os.close(fd)
        self.children.add(pid)
        return pid

    def become_child(self, message: dict[str, Any], fds: list[int]) -> int:
        """In the forked child: a fresh session, exactly the fds a spawned child has, its env and cwd; then child.main."""
        os.setsid()  # its own process group: the runner's killpg takes the agent's subprocesses too
        _set_parent_death_signal()
        _prctl(PR_SET_DUMPABLE, 1)  # as a spawned child is (enter_sandbox writes its own /proc/self/uid_map)
        for number in (signal.SIGINT, signal.SIGTERM, signal.SIGCHLD):
            signal.signal(number, signal.SIG_DFL)
        self.control.detach()  # its fd is closed below; the object must never close a reused number
        targets: list[int] = message["targets"]
        base = max([*targets, *fds, 2]) + 1
        moved = [int(fcntl_dup(fd, base)) for fd in fds]
        keep = set(moved)
        for name in os.listdir("/proc/self/fd"):
            fd = int(name)
            if fd not in keep:
                try:
                    os.close(fd)
                except OSError:
                    pass  # the directory listing's own fd
        for source, target in zip(moved, targets):
            os.dup2(source, target)
        for source in moved:
            os.close(source)
        os.environ.clear()
        os.environ.update(message["env"])
        tempfile.tempdir = None  # recomputed from the child's TMPDIR
        os.chdir(message["cwd"])
        if sys.path and sys.path[0] == SERVER_CWD:
            sys.path[0] = message["cwd"]  # what `python -m` puts first in a spawned child
        python_path = [entry for entry in os.environ.get("PYTHONPATH", "").split(os.pathsep) if entry]
        sys.path[1:1] = [entry for entry in python_path if entry not in sys.path]  # this child's PYTHONPATH
        sys.argv = [CHILD_MODULE, message["spec"]]
        child = importlib.import_module(CHILD_MODULE)  # by name, as a spawned child is started (preloaded)
        return int(child.main(["child", message["spec"]]))

    def shutdown(self) -> None:
        """The parent is gone or done: no child outlives the server."""
        for pid in list(self.children):
            kill_group(pid)
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass
        self.children.clear()


def fcntl_dup(fd: int, lowest: int) -> int:
    import fcntl

    return fcntl.fcntl(fd, fcntl.F_DUPFD, lowest)


SERVER_CWD = os.getcwd()


def warm_up() -> None:
    """Work every child would repeat, done once before the first fork: the default redaction rules, every
    detector, command-line and safe-text pattern and every event kind's schema test compiled (they compile on
    first use: each child would compile the ones it meets, about 8 ms of its run). Nothing here runs agent code."""
    from ...harness.redaction import RedactionRules, Redactor
    from ...journal import command_line, detectors, safe_text
    from ...journal.model import compile_event_tests

    Redactor(RedactionRules.from_config({}, source="the fork server's warm-up"))
    detectors.compile_all()
    command_line.compile_all()
    safe_text.compile_all()
    compile_event_tests()


def serve(control_fd: int) -> int:
    _set_parent_death_signal()
    _prctl(PR_SET_DUMPABLE, 0)  # a same-uid child (no root: user namespaces) cannot ptrace or read the server
    control = socket.socket(fileno=control_fd)
    try:
        for name in PRELOAD:
            importlib.import_module(name)
        warm_up()
        if threading.active_count() > 1:
            raise ForkServerError("preloading started a thread; enter_sandbox needs a single-threaded parent")
    except Exception as error:
        control.send(orjson.dumps({"ready": False, "error": f"{type(error).__name__}: {error}"}))
        return 1
    Server(control).serve()
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2 or not sys.argv[1].isdigit():
        print(
            "usage: python -m replay_tui.replay.corpus.forkserver FD (started by replay-tui, not by hand)",
            file=sys.stderr,
        )
        sys.exit(2)
    sys.exit(serve(int(sys.argv[1])))

"""The parent's half of the sandbox: a scratch dir holding a copy of the journal, the child's
environment and command line (bubblewrap when installed), and the cleanup afterwards.

The child never opens the user's journal: it reads the copy the parent put in its
scratch dir (one copy, no round trips; the engine keeps its random access for
snapshots and concurrent tool calls). What it does to the copy cannot matter: the
verdict is the parent's comparison against its own journal.
"""

from __future__ import annotations

import os
import shutil
import stat
import sys
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from ..modes import MODEL_LIVE, TOOLS_LIVE
from ..protocol import ReplaySpec
from ..sandbox import (
    BWRAP,
    GUARD_ONLY,
    NAMESPACES,
    SandboxPolicy,
    bwrap_command,
    bwrap_path,
    child_environment,
    namespace_inode,
    needed_paths,
)
from .child_command import child_command, site_directories
from .scratch import Scratch

PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])  # the directory that holds replay_tui/
#: An experiment's journal may be this many times the size of its recording (and at least OUT_FLOOR bytes):
#: the parent copies it and reads all of it to judge the run, and the agent can write any amount there.
OUT_FACTOR, OUT_FLOOR = 4, 64 << 20


class CollectError(Exception):
    """What the child left as its experiment journal cannot be used (not a regular file, too slow to copy)."""


class LaunchRefused(Exception):
    """The requested isolation cannot be had here (``kind`` "isolation") or the spec is unusable."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


@dataclass
class Launch:
    argv: list[str]
    env: dict[str, str]
    cwd: str
    scratch: str
    policy: SandboxPolicy
    child_out: str | None = None
    journal_copy: str | None = None  # the copy the child reads: its messages name it, not the user's journal
    sys_path: list[str] = field(default_factory=list)  # where the child looks for the agent
    held: Scratch | None = None  # the scratch dir's lock: a later run removes it if this one is killed
    out_limit: int | None = None  # bytes the child's experiment journal may have (OUT_FACTOR, OUT_FLOOR)

    def collect_out(self, requested: str, deadline: float | None = None) -> str | None:
        """Copy the journal the child wrote in scratch to ``requested``, never overwriting; None when there
        is none. Anything but a regular file there is a CollectError, found without blocking: the path is
        opened O_NOFOLLOW | O_NONBLOCK (a FIFO would block a plain open for ever, a symlink would point
        anywhere); so is a file over ``out_limit`` and a copy still going at ``deadline``
        (``time.perf_counter``; the run's --timeout)."""
        if self.child_out is None:
            return None
        try:
            source = os.open(self.child_out, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except FileNotFoundError:
            return None
        except OSError as error:
            raise CollectError(
                f"the experiment journal the child left is not a regular file ({error.strerror})"
            ) from None
        try:
            found = os.fstat(source)
            if not stat.S_ISREG(found.st_mode):
                raise CollectError(
                    f"the experiment journal the child left is not a regular file but {_file_kind(found.st_mode)}"
                )
            if self.out_limit is not None and found.st_size > self.out_limit:
                raise CollectError(
                    f"the experiment journal the child left has {found.st_size:,} bytes, over the {self.out_limit:,} "
                    f"an experiment may write ({OUT_FACTOR} times its recording, at least {OUT_FLOOR >> 20} MiB)"
                )
            _copy_until(source, requested, deadline)
        finally:
            os.close(source)
        return requested

    def cleanup(self) -> None:
        if self.held is not None:
            self.held.remove()
        else:
            shutil.rmtree(self.scratch, ignore_errors=True)


def _file_kind(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISDIR, "a directory"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "a special file"


def _copy_until(source: int, requested: str, deadline: float | None) -> None:
    """Copy ``source`` to a new file ``requested``; a partial copy is removed (an error, the deadline)."""
    try:
        target = os.open(requested, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except OSError as error:
        raise CollectError(f"cannot write the experiment journal to {requested}: {error.strerror}") from None
    complete = False
    try:
        while chunk := os.read(source, 1 << 20):
            os.write(target, chunk)
            if deadline is not None and time.perf_counter() > deadline:
                raise CollectError("the experiment journal the child left was still being copied at --timeout")
        complete = True
    except OSError as error:
        raise CollectError(f"cannot copy the experiment journal to {requested}: {error.strerror}") from None
    finally:
        os.close(target)
        if not complete:
            os.unlink(requested)


def choose_mechanism(isolation: str) -> str:
    """``auto``: bubblewrap when installed, else the child's own namespaces."""
    if isolation == "guard-only":
        return GUARD_ONLY
    if isolation == "namespaces":
        return NAMESPACES
    if bwrap_path() is not None:
        return BWRAP
    if isolation == "bwrap":
        raise LaunchRefused("isolation", "--isolation bwrap: bubblewrap (bwrap) is not installed")
    if isolation != "auto":
        raise LaunchRefused("usage", f"unknown isolation {isolation!r}; expected auto, bwrap, namespaces or guard-only")
    return NAMESPACES


def copy_journal(journal: str, scratch: str) -> str:
    """The child's copy: a file, or a shard directory's files."""
    name = os.path.basename(os.path.normpath(journal)) or "journal"
    target = os.path.join(scratch, name)
    if os.path.isdir(journal):
        os.mkdir(target, 0o755)
        for entry in sorted(os.listdir(journal)):
            source = os.path.join(journal, entry)
            if os.path.isfile(source):
                shutil.copyfile(source, os.path.join(target, entry))
                os.chmod(os.path.join(target, entry), 0o644)
    else:
        shutil.copyfile(journal, target)
        os.chmod(target, 0o644)
    return target


def prepare_launch(
    spec: ReplaySpec,
    protocol_fd: int,
    *,
    python: str = sys.executable,
    env: dict[str, str] | None = None,
    cwd: str | None = None,
    broker_fd: int = -1,
) -> Launch:
    """Scratch dir, journal copy, policy, environment and argv for one child."""
    mechanism = choose_mechanism(spec.isolation)
    live = spec.mode in (MODEL_LIVE, TOOLS_LIVE)
    held = Scratch.make()
    scratch = held.path
    try:
        copy = copy_journal(spec.journal, scratch)
        child_out = os.path.join(scratch, "out-" + os.path.basename(spec.out)) if spec.out else None
        base_dir = os.path.abspath(cwd or os.getcwd())
        sys_path = list(spec.sys_path) + ([base_dir] if base_dir not in spec.sys_path else [])
        model_config, tools_config = (_reachable_copy(path, scratch) for path in (spec.model_config, spec.tools_config))
        configs = [path for path in (model_config, tools_config) if path]
        source_env = os.environ if env is None else env
        bytecode = [path for path in [source_env.get("PYTHONPYCACHEPREFIX")] if path and os.path.isdir(path)]
        readable = needed_paths(
            [
                *sys_path,
                PACKAGE_ROOT,
                *(site_directories() or []),
                *configs,
                *(os.path.dirname(path) for path in configs),
                *bytecode,
            ]
        )
        policy = SandboxPolicy(
            scratch=scratch,
            mechanism=mechanism,
            network=(live and broker_fd < 0) or mechanism == GUARD_ONLY,  # with a broker, experiments stay offline too
            keep_readable=readable,
            host_netns=namespace_inode("net"),
            host_pidns=namespace_inode("pid"),
            host_ipcns=namespace_inode("ipc"),
            parent_pid=os.getpid(),
            environment_scrubbed=True,  # child_environment() below
        )
        child_spec = replace(
            spec,
            journal=copy,
            out=child_out,
            verify_hash_chain=False,  # the parent verifies its own journal
            wait_for_go=True,
            journal_verified=spec.verify_hash_chain,  # the runner says "go" only once its verification passed
            broker_fd=broker_fd,
            protocol_fd=protocol_fd,
            sys_path=sys_path,
            model_config=model_config,
            tools_config=tools_config,
            sandbox=asdict(policy),
        )
        child_env = child_environment(dict(os.environ if env is None else env), spec.pass_env, scratch)
        python_path = [PACKAGE_ROOT] + [path for path in child_env.get("PYTHONPATH", "").split(os.pathsep) if path]
        child_env["PYTHONPATH"] = os.pathsep.join(python_path)
        argv = child_command(python, child_spec.to_argv())
        if mechanism == BWRAP:
            argv = bwrap_command(policy, bwrap_path() or "bwrap") + ["--"] + argv
        return Launch(
            argv=argv,
            env=child_env,
            cwd=scratch,
            scratch=scratch,
            policy=policy,
            child_out=child_out,
            journal_copy=copy,
            sys_path=sys_path,
            held=held,
            out_limit=max(OUT_FACTOR * _bytes_of(copy), OUT_FLOOR) if spec.out else None,
        )
    except BaseException:
        held.remove()
        raise


def _bytes_of(path: str) -> int:
    """The size of a journal: a file, or a shard directory's files."""
    if os.path.isdir(path):
        return sum(entry.stat().st_size for entry in os.scandir(path) if entry.is_file())
    return os.path.getsize(path)


def world_readable(path: str) -> bool:
    """Whether an unprivileged user (the child runs as nobody when we are root) can read ``path``
    (a directory: list it and enter it)."""
    path = os.path.realpath(path)
    try:
        mode = os.stat(path).st_mode
        if not mode & stat.S_IROTH or (stat.S_ISDIR(mode) and not mode & stat.S_IXOTH):
            return False
        parent = os.path.dirname(path)
        while True:
            if not os.stat(parent).st_mode & stat.S_IXOTH:
                return False
            if parent == "/":
                return True
            parent = os.path.dirname(parent)
    except OSError:
        return False


def unreadable_path_hint(launch: Launch) -> str:
    """Why an agent may not import in the sandbox although it does here: as root, the child runs as
    ``nobody``, which cannot enter a directory only its owner can (what ``mktemp -d`` makes). Empty
    when that is not it."""
    if os.getuid() != 0 or launch.policy.mechanism == GUARD_ONLY:
        return ""
    hidden = [path for path in launch.sys_path if os.path.isdir(path) and not world_readable(path)]
    if not hidden:
        return ""
    listed = ", ".join(hidden)
    return (
        f"\nThe sandbox runs the agent as the unprivileged user nobody (replay-tui runs as root here), and nobody "
        f"cannot read {listed}, where the agent is looked for. Fix: make it readable to others "
        f"(chmod o+rx on it and o+x on each parent directory), or keep the agent in a directory others can read."
    )


def _reachable_copy(path: str | None, scratch: str) -> str | None:
    """A live plugin config the child could not read as nobody is copied into scratch (relative paths
    in it then resolve there); a readable one is used in place."""
    if path is None or os.getuid() != 0 or world_readable(path) or not os.path.isfile(path):
        return path
    target = os.path.join(scratch, "config-" + os.path.basename(path))
    shutil.copyfile(path, target)
    os.chmod(target, 0o644)
    return target

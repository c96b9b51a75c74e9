"""The replay sandbox: what the child enters before any agent code runs, and how it proves it.

Every layer, the isolation modes that have it and what the report says when one is missing are in
``SANDBOX.md`` beside this file. Layers (each one is checked from inside after entering, never assumed):

* **network namespace**: the only interface is a downed loopback (a user namespace too
  when not root);
* **PID and IPC namespaces**: the agent is process 1 of its own PID namespace (``/proc`` is
  that namespace's, so no host process can be seen or signalled, and the agent's whole tree
  dies with it) and has its own System V IPC;
* **read-only filesystem**: a private mount namespace where every mount is read-only,
  ``/tmp``, ``/var/tmp``, ``/run``, ``/dev/shm``, ``/home`` and ``/root`` are empty
  read-only tmpfs (paths the child needs are bound back read-only), and the fresh scratch
  directory (the working directory and HOME) is the one writable place;
* **unprivileged**: as root the child switches to ``nobody`` (root owns the journal,
  ``/etc/shadow`` and the parent's ``/proc`` entries, even without capabilities);
* **capabilities dropped** (effective, permitted, inheritable, ambient and the bounding
  set) and **no_new_privs**, so ``setns``, ``unshare`` and ``mount`` fail afterwards;
* **kernel keyrings**: a fresh, empty session keyring (the parent's session keyring is no
  longer possessed), then the key syscalls are blocked;
* **seccomp**: ``socket(AF_UNIX, ...)``, ``io_uring_setup``, ``add_key``, ``request_key``
  and ``keyctl`` fail with EPERM, so no pathname unix socket anywhere (a Docker socket in
  the read-only tree) can be connected; ``socketpair`` (asyncio's self-pipe) still works;
* **environment scrubbed** (done by the parent: ``child_environment``).

Two ways in: ``bwrap_command`` (bubblewrap, preferred when installed: it makes the
namespaces and a fresh ``/proc``) followed by ``enter_sandbox`` inside, or
``enter_sandbox`` alone, which does the namespaces and mounts itself (and forks once, so
that the agent runs inside its PID namespace). ``enter_sandbox`` is one documented call
(policy in, report out) that works in a freshly forked single-threaded process, so a fork
server can use it too.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import signal
import socket
import struct
import sys
import threading
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

# clone flags
CLONE_NEWNS = 0x00020000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
# mount flags
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 0x1, 0x2, 0x4, 0x8
MS_REMOUNT, MS_NOATIME, MS_NODIRATIME, MS_BIND = 0x20, 0x400, 0x800, 0x1000
MS_REC, MS_PRIVATE, MS_RELATIME, MS_STRICTATIME = 0x4000, 0x40000, 0x200000, 0x1000000
# prctl
PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, PR_CAP_AMBIENT = 24, 38, 22, 47
PR_CAP_AMBIENT_CLEAR_ALL, SECCOMP_MODE_FILTER = 4, 2
PR_SET_PDEATHSIG = 1
# keyctl(2)
KEYCTL_GET_KEYRING_ID, KEYCTL_JOIN_SESSION_KEYRING, KEY_SPEC_SESSION_KEYRING = 0, 1, -3

NOBODY = 65534
#: Directories replaced by an empty read-only tmpfs: where sockets, secrets and other
#: users' files usually live. Paths the child needs below them are bound back read-only.
HIDDEN_ROOTS = ("/tmp", "/var/tmp", "/run", "/var/run", "/dev/shm", "/home", "/root")

#: The environment a child keeps (besides LC_* and --pass-env names). PYTHONPYCACHEPREFIX: the caller's
#: bytecode cache, which the child reads (read-only, like everything) instead of compiling every module.
ENV_ALLOWLIST = (
    "PATH",
    "LANG",
    "LANGUAGE",
    "TZ",
    "PYTHONPATH",
    "PYTHONHASHSEED",
    "PYTHONUTF8",
    "PYTHONIOENCODING",
    "PYTHONPYCACHEPREFIX",
)

#: The API keys the common model SDKs read when a client is built (openai, anthropic, PydanticAI's
#: providers, LangChain's chat models): a replay child gets a clearly fake value for each one not passed
#: on purpose (``--pass-env``), so an agent module that builds its client at import loads, and sends nothing.
PLACEHOLDER_CREDENTIAL = "replay-tui-placeholder-not-a-key"
PLACEHOLDER_CREDENTIAL_VARIABLES = (
    "OPENAI_API_KEY",
    "AZURE_OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "GOOGLE_API_KEY",
    "GEMINI_API_KEY",
    "GROQ_API_KEY",
    "MISTRAL_API_KEY",
    "CO_API_KEY",
    "COHERE_API_KEY",
    "DEEPSEEK_API_KEY",
    "OPENROUTER_API_KEY",
    "TOGETHER_API_KEY",
    "FIREWORKS_API_KEY",
    "XAI_API_KEY",
    "CEREBRAS_API_KEY",
    "MOONSHOTAI_API_KEY",
    "NEBIUS_API_KEY",
    "HF_TOKEN",
)

# Layer names, as the report shows them.
NETWORK_NAMESPACE = "network namespace"
PID_NAMESPACE = "PID namespace (own /proc)"
IPC_NAMESPACE = "IPC namespace"
READ_ONLY_FILESYSTEM = "read-only filesystem (scratch dir writable)"
HIDDEN_DIRECTORIES = "/tmp, /run and home directories hidden"
UNPRIVILEGED = "unprivileged user"
CAPABILITIES_DROPPED = "capabilities dropped"
NO_NEW_PRIVS = "no_new_privs"
UNIX_SOCKETS_BLOCKED = "unix sockets blocked (seccomp)"
KEYRINGS_HIDDEN = "kernel keyrings hidden (fresh session keyring, keyctl blocked)"
PARENT_HIDDEN = "parent process hidden"
ENVIRONMENT_SCRUBBED = "environment scrubbed"
ALL_LAYERS = (
    NETWORK_NAMESPACE,
    PID_NAMESPACE,
    IPC_NAMESPACE,
    READ_ONLY_FILESYSTEM,
    HIDDEN_DIRECTORIES,
    UNPRIVILEGED,
    CAPABILITIES_DROPPED,
    NO_NEW_PRIVS,
    UNIX_SOCKETS_BLOCKED,
    KEYRINGS_HIDDEN,
    PARENT_HIDDEN,
    ENVIRONMENT_SCRUBBED,
)

#: How the child was put in its namespaces.
BWRAP, NAMESPACES, GUARD_ONLY = "bwrap", "namespaces", "guard-only"


class SandboxError(Exception):
    """A sandbox step failed in a way that leaves the child unusable."""


@dataclass
class SandboxPolicy:
    """What ``enter_sandbox`` does. ``network``: keep the host network (experiments, guard-only)."""

    scratch: str
    mechanism: str = NAMESPACES  # BWRAP (namespaces and mounts already made), NAMESPACES, GUARD_ONLY
    network: bool = False
    keep_readable: list[str] = field(default_factory=list)  # bound back read-only below hidden roots
    host_netns: int | None = None  # inode of the parent's network namespace (to check ours differs)
    host_pidns: int | None = None  # ... of its PID namespace
    host_ipcns: int | None = None  # ... of its IPC namespace
    parent_pid: int | None = None
    environment_scrubbed: bool = False  # the caller started us with child_environment() (the runner does)
    environment: dict[str, str] | None = None  # a forked worker: os.environ is replaced by this (child_environment())


@dataclass
class Layer:
    name: str
    in_force: bool
    detail: str = ""


@dataclass
class SandboxReport:
    """Which layers hold in the child, checked from inside after entering."""

    mechanism: str
    layers: list[Layer] = field(default_factory=list)

    @property
    def missing(self) -> list[Layer]:
        return [layer for layer in self.layers if not layer.in_force]

    @property
    def summary(self) -> str:
        held = ", ".join(layer.name for layer in self.layers if layer.in_force) or "none"
        text = f"sandbox ({self.mechanism}): {held}"
        if self.missing:
            text += "; MISSING: " + "; ".join(f"{layer.name} ({layer.detail})" for layer in self.missing)
        return text

    def to_json(self) -> dict[str, Any]:
        return {
            "mechanism": self.mechanism,
            "layers": [asdict(layer) for layer in self.layers],
            "summary": self.summary,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SandboxReport:
        layers = [
            Layer(str(item.get("name")), bool(item.get("in_force")), str(item.get("detail") or ""))
            for item in data.get("layers") or []
            if isinstance(item, dict)
        ]
        return cls(str(data.get("mechanism") or "?"), layers)


# -- the parent's half ----------------------------------------------------------------------


def child_environment(source: dict[str, str], pass_env: Iterable[str], scratch: str) -> dict[str, str]:
    """The allowlisted environment: no API key reaches the agent unless passed on purpose; the common SDKs'
    key variables hold ``PLACEHOLDER_CREDENTIAL`` instead (never the parent's value)."""
    allowed = set(ENV_ALLOWLIST) | set(pass_env)
    env = {name: value for name, value in source.items() if name in allowed or name.startswith("LC_")}
    for name in PLACEHOLDER_CREDENTIAL_VARIABLES:
        env.setdefault(name, PLACEHOLDER_CREDENTIAL)
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    env.update(HOME=scratch, TMPDIR=scratch, PYTHONDONTWRITEBYTECODE="1", PYTHONNOUSERSITE="1")
    return env


PASS_ENV_VARIABLE = "REPLAY_TUI_PASS_ENV"


def pass_env_default(environ: dict[str, str] | None = None) -> list[str]:
    """Names in ``$REPLAY_TUI_PASS_ENV`` (comma-separated): the app's and the CLI's default ``--pass-env``."""
    text = (os.environ if environ is None else environ).get(PASS_ENV_VARIABLE, "")
    return [name.strip() for name in text.split(",") if name.strip()]


def namespace_inode(name: str) -> int | None:
    """The inode of this process's ``name`` namespace ("net", "pid", "ipc"): the child checks its own differs."""
    try:
        return os.stat(f"/proc/self/ns/{name}").st_ino
    except OSError:
        return None


def bwrap_path() -> str | None:
    return shutil.which("bwrap")


def needed_paths(extra: Iterable[str] = ()) -> list[str]:
    """Paths the child must read that may sit below a hidden root (its Python, its sys.path)."""
    candidates = [sys.prefix, sys.base_prefix, sys.exec_prefix, os.path.dirname(os.path.realpath(sys.executable))]
    candidates += [path for path in sys.path[1:] if path] + list(extra)  # [0]: the parent's script dir
    found: list[str] = []
    for path in candidates:
        path = os.path.realpath(path)
        below = any(path.startswith(root + "/") for root in HIDDEN_ROOTS)  # a hidden root itself never comes back
        if below and os.path.exists(path) and path not in found:
            found.append(path)
    # A path below another one comes back with it: binding it again nests a mount inside a bind,
    # which the read-only remount then refuses (EINVAL; seen with Ray's thirdparty_files on sys.path).
    return [path for path in found if not any(path.startswith(other + "/") for other in found)]


def bwrap_command(policy: SandboxPolicy, bwrap: str) -> list[str]:
    """The bwrap prefix: namespaces, a read-only tree with the hidden roots emptied, scratch writable."""
    argv = [bwrap, "--die-with-parent", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"]
    if not policy.network:
        argv.append("--unshare-net")
    if os.getuid() != 0:
        argv.append("--unshare-user")
    argv += ["--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev"]
    hidden = [root for root in HIDDEN_ROOTS if os.path.isdir(root) and not os.path.islink(root) and root != "/dev/shm"]
    for root in hidden:
        argv += ["--tmpfs", root]
    made: set[str] = set()
    for path in [*policy.keep_readable, policy.scratch]:  # mount points traversable by nobody (bwrap makes 0700)
        below = next((root for root in hidden if path.startswith(root + "/")), None)
        parent = os.path.dirname(path)
        chain: list[str] = []
        while below is not None and parent != below and parent not in made:
            chain.append(parent)
            parent = os.path.dirname(parent)
        for directory in reversed(chain):
            argv += ["--perms", "0755", "--dir", directory]
            made.add(directory)
    for path in policy.keep_readable:
        argv += ["--ro-bind", path, path]
    argv += ["--bind", policy.scratch, policy.scratch]
    for root in hidden:  # last: the binds above needed their mount points made in these
        argv += ["--remount-ro", root]
    return argv + ["--chdir", policy.scratch]


# -- the child's half -----------------------------------------------------------------------

_libc: Any = None


def _c() -> Any:
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
        _libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_void_p]
        _libc.unshare.argtypes = [ctypes.c_int]
        _libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    return _libc


def _check(result: int, what: str) -> None:
    if result != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"{what}: {os.strerror(error)}")


def _bytes(text: str | None) -> bytes | None:
    return text.encode() if text is not None else None


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    _check(_c().mount(_bytes(source), _bytes(target), _bytes(fstype), flags, _bytes(data)), f"mount {target}")


def enter_sandbox(policy: SandboxPolicy) -> SandboxReport:
    """Enter every layer the system allows, then check each one from inside.

    Call it once, in a single-threaded process, before importing agent code. Never
    raises for a layer the system refuses: the report says it is missing.
    """
    notes: dict[str, str] = {}
    if policy.environment is not None:
        os.environ.clear()
        os.environ.update(policy.environment)
    if not sys.platform.startswith("linux"):
        notes["*"] = f"the sandbox needs Linux (this is {sys.platform})"
    elif policy.mechanism == NAMESPACES:
        if threading.active_count() > 1:
            notes["*"] = "the process already runs several threads"
        else:
            _enter_namespaces(policy, notes)
    elif policy.mechanism == GUARD_ONLY:
        notes["*"] = "guard-only isolation was requested"
    if policy.mechanism != GUARD_ONLY and "*" not in notes:
        os.chdir(policy.scratch)
        _drop_privileges(policy, notes)
        _join_fresh_session_keyring(notes)
        _install_seccomp(notes)
    return check_layers(policy, notes)


def _enter_namespaces(policy: SandboxPolicy, notes: dict[str, str]) -> None:
    """Network, mount, IPC and PID namespaces (and a user namespace when not root), then the read-only
    view and a /proc of the new PID namespace. A PID namespace holds only the children of the process
    that made it: so this process forks, the child goes on as the namespace's first process (the agent's
    whole tree dies with it, ``setsid`` or not), and this one only waits and exits as the child did."""
    libc = _c()
    root = os.getuid() == 0
    flags = CLONE_NEWNS | (0 if policy.network else CLONE_NEWNET)
    if not root:
        flags |= CLONE_NEWUSER
        uid, gid = os.getuid(), os.getgid()
    if libc.unshare(flags | CLONE_NEWPID | CLONE_NEWIPC) != 0:
        why = f"unshare(CLONE_NEWPID|CLONE_NEWIPC) failed: {os.strerror(ctypes.get_errno())}"
        notes[PID_NAMESPACE] = notes[IPC_NAMESPACE] = notes[PARENT_HIDDEN] = why
        if libc.unshare(flags) != 0:
            notes[NETWORK_NAMESPACE] = notes[READ_ONLY_FILESYSTEM] = (
                f"unshare failed: {os.strerror(ctypes.get_errno())}"
            )
            return
    if not root:
        try:
            for path, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
                with open(f"/proc/self/{path}", "w") as handle:
                    handle.write(text)
        except OSError as error:
            notes[READ_ONLY_FILESYSTEM] = f"user namespace id map: {error}"
            return
    if PID_NAMESPACE not in notes:
        _become_first_process()
    try:
        _read_only_view(policy)
    except OSError as error:
        notes[READ_ONLY_FILESYSTEM] = str(error)
    if PID_NAMESPACE not in notes:
        try:  # the host's /proc would still list (and let signal) every host process
            _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
        except OSError as error:
            notes[PID_NAMESPACE] = notes[PARENT_HIDDEN] = f"a /proc of the new PID namespace: {error}"


def _become_first_process() -> None:
    """Fork after unshare(CLONE_NEWPID): return in the child, PID 1 of the new namespace, which dies with
    this process; in this process, wait for it and end the same way (exit code or signal), holding nothing."""
    pid = os.fork()
    if pid == 0:
        _c().prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        return
    os.closerange(0, 1 << 20)  # the protocol pipe, stdin and the rest are the child's alone
    while True:
        try:
            _, status = os.waitpid(pid, 0)
            break
        except InterruptedError:
            continue
        except ChildProcessError:
            os._exit(1)
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        signal.signal(number, signal.SIG_DFL)
        os.kill(os.getpid(), number)
    os._exit(os.waitstatus_to_exitcode(status) & 0xFF)


def _join_fresh_session_keyring(notes: dict[str, str]) -> None:
    """A new, empty session keyring: the one inherited from the parent's session (where a login or an
    agent keeps its secrets) is no longer possessed. The seccomp filter then blocks the key syscalls."""
    if _keyctl(KEYCTL_JOIN_SESSION_KEYRING, 0) < 0:
        notes[KEYRINGS_HIDDEN] = f"keyctl(JOIN_SESSION_KEYRING): {os.strerror(ctypes.get_errno())}"


def _keyctl(operation: int, argument: int) -> int:
    """keyctl(2) (glibc has no wrapper): the result, or -1 with errno set (ENOSYS off x86_64 and aarch64)."""
    machine = _machine()
    if machine not in _ARCHES:
        ctypes.set_errno(38)  # ENOSYS
        return -1
    libc = _c()
    libc.syscall.restype = ctypes.c_long
    keyctl_nr = _ARCHES[machine][3][2]
    return int(libc.syscall(ctypes.c_long(keyctl_nr), ctypes.c_long(operation), ctypes.c_long(argument), 0))


def _read_only_view(policy: SandboxPolicy) -> None:
    """Private mounts; hidden roots emptied; scratch and needed paths bound back; everything read-only."""
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    keep = [(path, os.open(path, os.O_PATH)) for path in policy.keep_readable]
    scratch_fd = os.open(policy.scratch, os.O_PATH | os.O_DIRECTORY)
    hidden: list[str] = []
    for root in HIDDEN_ROOTS:
        if os.path.isdir(root) and not os.path.islink(root):
            _mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=64k")
            hidden.append(root)
    binds = [(path, fd, True) for path, fd in keep] + [(policy.scratch, scratch_fd, False)]
    os.umask(0o022)  # mount points below the tmpfs must be traversable once we are nobody
    for path, fd, _ in binds:
        if os.path.isdir(f"/proc/self/fd/{fd}"):
            os.makedirs(path, exist_ok=True)
        elif not os.path.exists(path):
            os.makedirs(os.path.dirname(path), exist_ok=True)
            open(path, "a").close()
        _mount(f"/proc/self/fd/{fd}", path, None, MS_BIND | MS_REC)
        os.close(fd)
    writable = {os.path.realpath(policy.scratch)}
    for mount_point, options in reversed(_mounts()):
        if mount_point in writable or mount_point == "/proc" or mount_point.startswith("/proc/"):
            continue
        if any(mount_point.startswith(root + "/") for root in hidden) and mount_point not in {p for p, _, _ in binds}:
            continue  # under a tmpfs now: not reachable
        flags = MS_BIND | MS_REMOUNT | MS_RDONLY | _flags_of(options)
        try:
            _mount(None, mount_point, None, flags)
        except OSError:
            if mount_point == "/" or mount_point in {p for p, _, _ in binds}:
                raise


def _mounts() -> list[tuple[str, str]]:
    found = []
    with open("/proc/self/mountinfo") as handle:
        for line in handle:
            parts = line.split()
            found.append((parts[4].replace("\\040", " "), parts[5]))
    return found


def _flags_of(options: str) -> int:
    names = {
        "nosuid": MS_NOSUID,
        "nodev": MS_NODEV,
        "noexec": MS_NOEXEC,
        "noatime": MS_NOATIME,
        "nodiratime": MS_NODIRATIME,
        "relatime": MS_RELATIME,
        "strictatime": MS_STRICTATIME,
    }
    flags = 0
    for option in options.split(","):
        flags |= names.get(option, 0)
    return flags


def _drop_privileges(policy: SandboxPolicy, notes: dict[str, str]) -> None:
    libc = _c()
    for cap in range(64):  # the bounding set first: that needs CAP_SETPCAP, which the next steps remove
        if libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 and ctypes.get_errno() not in (22, 1):
            break
    libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    if os.getuid() == 0:
        try:
            os.chown(policy.scratch, NOBODY, NOBODY)
            os.setgroups([])
            os.setresgid(NOBODY, NOBODY, NOBODY)
            os.setresuid(NOBODY, NOBODY, NOBODY)  # clears permitted and effective capabilities
        except OSError as error:
            notes[UNPRIVILEGED] = f"could not switch to nobody: {error}"
    header = struct.pack("Ii", 0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this process
    data = bytes(24)
    libc.capset(ctypes.c_char_p(header), ctypes.c_char_p(data))
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        notes[NO_NEW_PRIVS] = os.strerror(ctypes.get_errno())


# seccomp: (audit arch, socket nr, io_uring_setup nr, (add_key, request_key, keyctl) nrs)
_ARCHES = {"x86_64": (0xC000003E, 41, 425, (248, 249, 250)), "aarch64": (0xC00000B7, 198, 425, (217, 218, 219))}


def _machine() -> str:
    import platform

    return platform.machine()


def seccomp_program(machine: str) -> bytes:
    """BPF: kill on a foreign arch (no i386/x32 detour); socket(AF_UNIX), io_uring_setup and the kernel
    key syscalls (add_key, request_key, keyctl: a keyring outlives the process and request_key can start
    a helper outside the sandbox) -> EPERM."""
    arch, socket_nr, uring_nr, key_nrs = _ARCHES[machine]
    denied = (uring_nr, *key_nrs)
    ld, jeq, jge, ret = 0x20, 0x15, 0x35, 0x06
    allow, deny, kill = 0x7FFF0000, 0x00050000 | 1, 0x80000000
    # after the checks of the denied numbers come: socket?, load args[0], AF_UNIX?, allow, deny
    tail = 5
    program = [
        (ld, 0, 0, 4),  # arch
        (jeq, 1, 0, arch),
        (ret, 0, 0, kill),
        (ld, 0, 0, 0),  # syscall nr
        (jge, len(denied) + tail - 1, 0, 0x40000000),  # x32 syscalls -> deny
    ]
    for index, number in enumerate(denied):
        program.append((jeq, len(denied) - index + tail - 2, 0, number))
    program += [
        (jeq, 0, 2, socket_nr),
        (ld, 0, 0, 16),  # args[0] low word: the address family
        (jeq, 1, 0, socket.AF_UNIX),
        (ret, 0, 0, allow),
        (ret, 0, 0, deny),
    ]
    return b"".join(struct.pack("HBBI", *instruction) for instruction in program)


def _install_seccomp(notes: dict[str, str]) -> None:
    machine = _machine()
    if machine not in _ARCHES:
        notes[UNIX_SOCKETS_BLOCKED] = f"no seccomp filter for {machine}"
        return
    code = seccomp_program(machine)
    buffer = ctypes.create_string_buffer(code, len(code))
    fprog = struct.pack("HxxxxxxP", len(code) // 8, ctypes.addressof(buffer))
    program = ctypes.create_string_buffer(fprog, len(fprog))
    if _c().prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.addressof(program), 0, 0) != 0:
        notes[UNIX_SOCKETS_BLOCKED] = f"seccomp: {os.strerror(ctypes.get_errno())}"


def _status() -> dict[str, str]:
    try:
        with open("/proc/self/status") as handle:
            return dict(line.rstrip("\n").split(":\t", 1) for line in handle if ":\t" in line)
    except OSError:
        return {}


def check_layers(policy: SandboxPolicy, notes: dict[str, str]) -> SandboxReport:
    """Probe each layer from inside; ``notes`` say why a step failed when it did."""
    everything = notes.get("*")
    status = _status()

    def layer(name: str, held: bool, missing: str, detail: str = "") -> Layer:
        """The layer; its detail says why when it is missing (``missing``, or the note of the step that failed)."""
        return Layer(name, held, detail if held else (everything or notes.get(name) or missing))

    layers: list[Layer] = []
    try:
        netns = os.stat("/proc/self/ns/net").st_ino
    except OSError:
        netns = None
    own_net = netns is not None and policy.host_netns is not None and netns != policy.host_netns
    if policy.network:
        layers.append(Layer(NETWORK_NAMESPACE, False, "the host network is kept (live calls need it)"))
    else:
        layers.append(layer(NETWORK_NAMESPACE, own_net, "still the host's", "only a downed loopback"))
    pidns = _namespace_of("self", "pid")
    own_proc = _proc_is_ours()
    own_pid = own_proc and policy.host_pidns is not None and pidns != policy.host_pidns
    layers.append(layer(PID_NAMESPACE, own_pid, "the host's processes are visible in /proc"))
    ipcns = _namespace_of("self", "ipc")
    own_ipc = ipcns is not None and policy.host_ipcns is not None and ipcns != policy.host_ipcns
    layers.append(layer(IPC_NAMESPACE, own_ipc, "the host's System V IPC objects are shared"))
    writable = _writable_mounts(policy.scratch)
    layers.append(layer(READ_ONLY_FILESYSTEM, not writable, "writable: " + ", ".join(writable[:4])))
    visible = [root for root in HIDDEN_ROOTS if os.path.isdir(root) and _has_entries(root, policy)]
    layers.append(layer(HIDDEN_DIRECTORIES, not visible, "visible: " + ", ".join(visible)))
    layers.append(layer(UNPRIVILEGED, os.getuid() != 0, f"uid {os.getuid()}", f"uid {os.getuid()}"))
    caps = [status.get(name, "?") for name in ("CapEff", "CapPrm", "CapBnd", "CapAmb")]
    no_caps = all(value.strip("0") == "" for value in caps)
    layers.append(layer(CAPABILITIES_DROPPED, no_caps, f"CapEff/Prm/Bnd/Amb {' '.join(caps)}"))
    nnp = status.get("NoNewPrivs", "0").strip() == "1"
    layers.append(layer(NO_NEW_PRIVS, nnp, "not set"))
    layers.append(layer(UNIX_SOCKETS_BLOCKED, _unix_blocked(), "socket(AF_UNIX) still works"))
    keys_blocked = _keyctl(KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING) < 0 and ctypes.get_errno() == 1  # EPERM
    layers.append(layer(KEYRINGS_HIDDEN, keys_blocked, "keyctl still works"))
    layers.append(layer(PARENT_HIDDEN, not _parent_readable(policy.parent_pid), "the parent's environ is readable"))
    scrubbed = policy.environment_scrubbed or policy.environment is not None
    layers.append(Layer(ENVIRONMENT_SCRUBBED, scrubbed, "" if scrubbed else "the caller's environment"))
    return SandboxReport(policy.mechanism, layers)


def _proc_is_ours() -> bool:
    """Whether /proc is our PID namespace's: it names this process by the pid it has here."""
    try:
        return os.readlink("/proc/self") == str(os.getpid())
    except OSError:
        return False


def _namespace_of(process: str, name: str) -> int | None:
    try:
        return os.stat(f"/proc/{process}/ns/{name}").st_ino
    except OSError:
        return None


def _writable_mounts(scratch: str) -> list[str]:
    try:
        mounts = _mounts()
    except OSError:
        return ["(mount table unreadable)"]
    scratch = os.path.realpath(scratch)
    found = []
    for mount_point, options in mounts:
        if mount_point == scratch or mount_point.startswith(("/proc", "/dev")) or mount_point in ("/proc", "/dev"):
            continue
        if "rw" in options.split(","):
            found.append(mount_point)
    return found


def _has_entries(root: str, policy: SandboxPolicy) -> bool:
    allowed = {policy.scratch, *policy.keep_readable}
    try:
        names = os.listdir(root)
    except OSError:
        return False
    return any(
        not any(path == os.path.join(root, name) or path.startswith(os.path.join(root, name) + "/") for path in allowed)
        for name in names
    )


def _unix_blocked() -> bool:
    try:
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    except OSError:
        return True
    probe.close()
    return False


def _parent_readable(parent_pid: int | None) -> bool:
    if parent_pid is None:
        return False
    try:
        with open(f"/proc/{parent_pid}/environ", "rb") as handle:
            handle.read(1)
        return True
    except OSError:
        return False

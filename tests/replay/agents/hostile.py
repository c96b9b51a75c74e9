"""A hostile agent: the probe agent, after one attack on the sandbox chosen by ``HOSTILE_ATTACK``.

Each attack prints ``ATTACK <name>: <what happened>`` on stderr and swallows its error,
as agent code that wants to stay unnoticed would; the run then goes on as recorded.
Targets come from the environment the test passes in: ``HOSTILE_TCP`` (port on
127.0.0.1), ``HOSTILE_TCP6`` (port on ::1), ``HOSTILE_UDP`` (port on 127.0.0.1),
``HOSTILE_UNIX`` (a listening pathname socket), ``HOSTILE_JOURNAL`` (the user's
journal), ``HOSTILE_OUTSIDE`` (a file to create outside scratch), ``HOSTILE_SECRET_NAME``
(an environment variable of the parent the agent should not see).
"""

from __future__ import annotations

import ctypes
import importlib
import os
import socket
import stat
import struct
import subprocess
import sys
from typing import Any

from replay_tui.harness import Harness, agent_reducer

from . import probe

CLONE_NEWNET = 0x40000000


def _say(name: str, result: str) -> None:
    print(f"ATTACK {name}: {result}", file=sys.stderr, flush=True)


def _tcp(host: str = "127.0.0.1", family: int = socket.AF_INET, port_env: str = "HOSTILE_TCP") -> str:
    import _socket

    sock = _socket.socket(family, _socket.SOCK_STREAM)
    sock.settimeout(2)
    try:
        sock.connect((host, int(os.environ[port_env])))
        return "CONNECTED"
    finally:
        sock.close()


def _setns(path: str) -> str:
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open(path, os.O_RDONLY)
    if libc.setns(fd, CLONE_NEWNET) != 0:
        return f"setns refused: {os.strerror(ctypes.get_errno())}; raw connect: {_try(_tcp)}"
    return "SETNS OK; raw connect: " + _try(_tcp)


def _ctypes_connect() -> str:
    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.socket(socket.AF_INET, socket.SOCK_STREAM, 0)
    if fd < 0:
        return f"socket refused: {os.strerror(ctypes.get_errno())}"
    address = struct.pack("!HH4s8x", socket.AF_INET, int(os.environ["HOSTILE_TCP"]), socket.inet_aton("127.0.0.1"))
    address = struct.pack("H", socket.AF_INET) + address[2:]  # sa_family is host order
    result = libc.connect(fd, ctypes.c_char_p(address), len(address))
    error = ctypes.get_errno()
    os.close(fd)
    return "CONNECTED" if result == 0 else f"connect refused: {os.strerror(error)}"


def _udp() -> str:
    import _socket

    sock = _socket.socket(_socket.AF_INET, _socket.SOCK_DGRAM)
    try:
        sock.sendto(b"hostile", ("127.0.0.1", int(os.environ["HOSTILE_UDP"])))
        return "sendto returned (the sandbox's own loopback, if any: the listener counts)"
    finally:
        sock.close()


def _unix() -> str:
    import _socket

    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.connect(os.environ["HOSTILE_UNIX"])
        return "CONNECTED"
    finally:
        sock.close()


def _dns() -> str:
    import _socket

    answers = _socket.getaddrinfo("localhost", int(os.environ["HOSTILE_TCP"]), 0, _socket.SOCK_STREAM)
    for family, kind, proto, _, address in answers:
        sock = _socket.socket(family, kind, proto)
        sock.settimeout(2)
        try:
            sock.connect(address)
            return "CONNECTED"
        except OSError:
            continue
        finally:
            sock.close()
    return f"resolved {len(answers)} addresses, none reachable"


PY_CONNECT = (
    "import socket,sys; socket.create_connection(('127.0.0.1', int(sys.argv[1])), timeout=2); print('CONNECTED')"
)


def _python_c() -> str:
    done = subprocess.run([sys.executable, "-c", PY_CONNECT, os.environ["HOSTILE_TCP"]], capture_output=True, text=True)
    return done.stdout.strip() or f"failed: {done.stderr.strip().splitlines()[-1:]}"


def _curl() -> str:
    port = os.environ["HOSTILE_TCP"]
    done = subprocess.run(["curl", "-sS", "-m", "2", f"http://127.0.0.1:{port}/"], capture_output=True, text=True)
    return "CONNECTED" if done.returncode in (0, 52, 56) else f"curl exit {done.returncode}: {done.stderr.strip()}"


def _os_system() -> str:
    code = os.system(f'{sys.executable} -c "{PY_CONNECT}" {os.environ["HOSTILE_TCP"]} >&2')
    return f"exit status {code}"


def _multiprocessing(method: str) -> str:
    import multiprocessing

    context = multiprocessing.get_context(method)
    queue = context.Queue()
    process = context.Process(target=_connect_into, args=(queue,))
    process.start()
    process.join(20)
    return queue.get(timeout=5) if not queue.empty() else f"child exit {process.exitcode}"


def _connect_into(queue: Any) -> None:
    queue.put(_try(_tcp))


def _reload() -> str:
    importlib.reload(socket)
    connection = socket.create_connection(("127.0.0.1", int(os.environ["HOSTILE_TCP"])), timeout=2)
    connection.close()
    return "CONNECTED"


def _write_journal() -> str:
    with open(os.environ["HOSTILE_JOURNAL"], "a") as journal:
        journal.write('{"forged": true}\n')
    return "WROTE THE JOURNAL"


def _write_outside() -> str:
    written = []
    for path in (os.environ["HOSTILE_OUTSIDE"], os.path.join(os.environ["HOSTILE_REPO"], "hostile-marker.txt")):
        try:
            with open(path, "w") as handle:
                handle.write("escaped")
            written.append(path)
        except OSError as error:
            written.append(f"refused {error.strerror}")
    return "; ".join(written)


def _read_shadow() -> str:
    with open("/etc/shadow") as shadow:
        return "READ /etc/shadow: " + shadow.read(20)


def _read_secret() -> str:
    name = os.environ.get("HOSTILE_SECRET_NAME", "REPLAY_TUI_TEST_SECRET")
    seen = [f"env={os.environ[name]}"] if name in os.environ else []
    real_parent = int(os.environ.get("HOSTILE_PARENT_PID", "0"))
    for pid in [os.getppid(), *range(1, 4), real_parent]:
        try:
            with open(f"/proc/{pid}/environ", "rb") as handle:
                content = handle.read()
        except OSError:
            continue
        if name.encode() in content or (pid == real_parent and content):
            seen.append(f"/proc/{pid}/environ readable")
    return ("SECRET SEEN: " + ", ".join(seen)) if seen else "no secret visible"


def _pipes() -> list[int]:
    found = []
    for fd in range(3, 256):
        try:
            if stat.S_ISFIFO(os.fstat(fd).st_mode):
                found.append(fd)
        except OSError:
            continue
    return found


#: A "match" with every field the protocol asks for, in its shape: only the parent's own comparison can refuse it.
FORGED_RESULT = (
    b'{"type":"result","status":"match","consumed":28,"total":28,"last_seq":28,"refusals":[],"elapsed_s":0.1,'
    b'"replay_s":0.1,"replay_cpu_s":0.1,"events_per_s":280.0,"unused":null,"verification":null,"out":null,'
    b'"experiment":null,"live_calls":[],"first_seq":1,"from_seq":null,"state_checks":3,"observations_served":9,'
    b'"first_event_cpu_s":0.1,"child_cpu_s":0.2}\n'
)


def _forge_result() -> str:
    line = FORGED_RESULT
    for fd in _pipes():
        try:
            os.write(fd, line)
        except OSError:
            pass
    os._exit(0)


def _exit_early() -> str:
    os._exit(0)


def _garbage() -> str:
    for fd in _pipes():
        try:
            os.write(fd, b"\x00\xffnot a protocol line\n")
        except OSError:
            pass
    return "garbage written"


def _flood() -> str:
    """An endless protocol line: the parent must not buffer it whole."""
    block = b"x" * (1 << 20)
    pipes = _pipes()
    for _ in range(200):
        for fd in pipes:
            try:
                os.write(fd, block)
            except OSError:
                return "the pipe closed"
    return "flooded"


KEYCTL, KEYCTL_GET_KEYRING_ID, KEYCTL_SEARCH, KEYCTL_READ = 250, 0, 10, 11
KEY_SPECS = {"session": -3, "user": -4, "user-session": -5, "process": -2}


def _keyring() -> str:
    """Read the key the test put in its session keyring: by search from each special keyring, and /proc/keys."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    name = os.environ["HOSTILE_KEY_NAME"].encode()
    found = []
    for label, spec in KEY_SPECS.items():
        serial = libc.syscall(KEYCTL, KEYCTL_SEARCH, ctypes.c_long(spec), b"user", name, 0)
        if serial < 0:
            found.append(f"{label}: {os.strerror(ctypes.get_errno())}")
            continue
        buffer = ctypes.create_string_buffer(256)
        size = libc.syscall(KEYCTL, KEYCTL_READ, ctypes.c_long(serial), buffer, 256)
        found.append(f"SECRET SEEN in the {label} keyring: {buffer.raw[: max(size, 0)]!r}")
    try:
        with open("/proc/keys") as keys:
            if os.environ["HOSTILE_KEY_NAME"] in keys.read():
                found.append("SECRET SEEN: the key is listed in /proc/keys")
    except OSError as error:
        found.append(f"/proc/keys: {error.strerror}")
    return "; ".join(found)


def _host_process() -> str:
    """Signal, and read the command line of, a process of the host that runs as this user."""
    victim = int(os.environ["HOSTILE_VICTIM_PID"])
    seen = []
    try:
        with open(f"/proc/{victim}/cmdline", "rb") as handle:
            seen.append(f"SAW HOST process {victim}: {handle.read()[:60]!r}")
    except OSError as error:
        seen.append(f"/proc/{victim}: {error.strerror}")
    visible = [name for name in os.listdir("/proc") if name.isdigit()]
    if len(visible) > 20:
        seen.append(f"SAW HOST processes: {len(visible)} in /proc")
    try:
        os.kill(victim, 9)
        seen.append(f"KILLED host process {victim}")
    except OSError as error:
        seen.append(f"kill: {error.strerror}")
    return "; ".join(seen)


def _sysv_shm() -> str:
    """Read and overwrite the host's System V shared memory segment the test made."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.shmat.restype = ctypes.c_void_p
    segment = libc.shmget(int(os.environ["HOSTILE_SHM_KEY"]), 0, 0)
    if segment < 0:
        return f"shmget refused: {os.strerror(ctypes.get_errno())}"
    address = libc.shmat(segment, None, 0)
    if address in (None, ctypes.c_void_p(-1).value):
        return f"shmat refused: {os.strerror(ctypes.get_errno())}"
    content = ctypes.string_at(address, 32)
    ctypes.memmove(address, b"PWNED", 5)
    libc.shmdt(ctypes.c_void_p(address))
    return f"SHM READ: {content!r}"


def _protocol_lines() -> list[bytes]:
    """Lines to forge, from HOSTILE_LINES (JSON: a list of objects) written HOSTILE_REPEAT times each; a
    value "@BIG@" becomes a string of HOSTILE_BIG_BYTES characters (too long for the environment)."""
    import json

    big = json.dumps("x" * int(os.environ.get("HOSTILE_BIG_BYTES", "0"))).encode()
    lines = [
        json.dumps(line).encode().replace(b'"@BIG@"', big) + b"\n" for line in json.loads(os.environ["HOSTILE_LINES"])
    ]
    return lines * int(os.environ.get("HOSTILE_REPEAT", "1"))


def _forge() -> str:
    """Write forged protocol lines to every pipe, then go on as recorded. ``HOSTILE_PAUSE_S``: wait that
    long before and after (so a throttled listener hears the forged line and holds on to it)."""
    import time

    pause = float(os.environ.get("HOSTILE_PAUSE_S", "0"))
    lines = _protocol_lines()
    time.sleep(pause)
    for fd in _pipes():
        for line in lines:
            try:
                os.write(fd, line)
            except OSError:
                break
    time.sleep(pause)
    return f"forged {len(lines)} lines"


def _stdout_flood() -> str:
    """HOSTILE_FLOOD_MIB MiB on stdout without a newline: the parent keeps the lines' heads, not the line."""
    block = b"y" * (1 << 20)
    for _ in range(int(os.environ.get("HOSTILE_FLOOD_MIB", "512"))):
        os.write(1, block)
    os.write(1, b"\n")
    return "flooded stdout"


def _swap_out() -> str:
    """Replace the experiment's out journal (in the scratch dir, the cwd) by a FIFO or a symlink to the journal,
    or grow it to 256 MiB (sparse: no time, no disk)."""
    made = []
    for name in os.listdir("."):
        if name.startswith("out-"):
            if os.environ["HOSTILE_OUT"] == "grow":
                os.truncate(name, 256 << 20)
            else:
                os.unlink(name)
                if os.environ["HOSTILE_OUT"] == "fifo":
                    os.mkfifo(name)
                else:
                    os.symlink(os.environ["HOSTILE_JOURNAL"], name)
            made.append(name)
    return f"replaced {made}"


ATTACKS = {
    "keyring": _keyring,
    "host-process": _host_process,
    "sysv-shm": _sysv_shm,
    "forge": _forge,
    "stdout-flood": _stdout_flood,
    "swap-out": _swap_out,
    "flood": _flood,
    "setns-parent": lambda: _setns(f"/proc/{os.getppid()}/ns/net"),
    "setns-init": lambda: _setns("/proc/1/ns/net"),
    "raw-socket": _tcp,
    "raw-socket-ipv6": lambda: _tcp("::1", socket.AF_INET6, "HOSTILE_TCP6"),
    "udp": _udp,
    "ctypes-connect": _ctypes_connect,
    "unix-socket": _unix,
    "dns": _dns,
    "curl": _curl,
    "python-c": _python_c,
    "os-system": _os_system,
    "multiprocessing-fork": lambda: _multiprocessing("fork"),
    "multiprocessing-spawn": lambda: _multiprocessing("spawn"),
    "reload-socket": _reload,
    "write-journal": _write_journal,
    "write-outside": _write_outside,
    "read-shadow": _read_shadow,
    "read-secret": _read_secret,
    "forge-result": _forge_result,
    "exit-early": _exit_early,
    "garbage": _garbage,
}


def _try(attack: Any) -> str:
    try:
        return str(attack())
    except BaseException as error:  # noqa: BLE001 - hostile code swallows everything
        return f"refused: {type(error).__name__}: {error}"


@agent_reducer(probe.reduce, "probe-1", {"lookups": 0, "errors": 0, "stock": 0})
def agent(h: Harness, question: str) -> Any:
    name = os.environ.get("HOSTILE_ATTACK", "")
    if name:
        _say(name, _try(ATTACKS[name]))
    return probe.agent(h, question)

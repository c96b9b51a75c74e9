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


def _forge_result() -> str:
    line = b'{"type":"result","status":"match","consumed":28,"total":28,"last_seq":28}\n'
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


ATTACKS = {
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

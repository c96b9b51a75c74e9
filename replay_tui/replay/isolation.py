"""Network isolation for the replay child: its own network namespace, and a socket guard.

Two layers, because each covers what the other cannot:

* a **network namespace** (``unshare(CLONE_NEWNET)``, via ctypes since Python 3.11 has
  no ``os.unshare``) holds the whole child, including C extensions and subprocesses, in
  a namespace whose only interface is a downed loopback. It needs CAP_SYS_ADMIN, or an
  unprivileged user namespace, so it is taken "where the OS allows it";
* the in-process **socket guard** is always installed. It refuses every connect, DNS
  lookup and unconnected datagram send that the allow-list does not name, raising the
  error a network library expects (``ConnectionRefusedError``, ``socket.gaierror``), and
  *records* each refusal, so the report can list them even when agent code swallows
  the error.

Strict replay runs with both and an empty allow-list. Experiments that make one plugin
live skip the namespace and allow only the hosts named in that plugin's config.
The guard wraps the Python-level entry points every pure-Python client (and asyncio)
goes through: ``socket.socket.connect``/``connect_ex``/``sendto``/``sendmsg``,
``socket.create_connection``, ``socket.getaddrinfo``, ``gethostbyname(_ex)``,
``gethostbyaddr`` and ``getnameinfo``. Code calling ``_socket`` directly bypasses it;
that is what the namespace is for.
"""

from __future__ import annotations

import ctypes
import functools
import os
import socket
import sys
import threading
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Iterable

from .protocol import MAX_REFUSALS, SHORT_TEXT, TEXT, clip

CLONE_NEWNET = 0x40000000
CLONE_NEWUSER = 0x10000000

#: Isolation levels a caller can ask for.
NETNS_AUTO = "auto"  # namespace if the OS allows it, guard always
GUARD_ONLY = "guard-only"  # no namespace (experiments, or a caller's explicit choice)


@dataclass(frozen=True)
class Refusal:
    """One refused network operation, as it appears in the report."""

    operation: str  # connect, getaddrinfo, sendto, ...
    target: str  # "127.0.0.1:8080", "api.example.com", "unix:/run/x.sock"
    where: str | None = None  # file:line of the agent code that asked

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def __str__(self) -> str:
        return f"{self.operation} {self.target}" + (f" (from {self.where})" if self.where else "")


@dataclass
class IsolationInfo:
    """Which isolation is in force in the child; stated in every report."""

    network_namespace: bool
    namespace_method: str | None  # "unshare(CLONE_NEWNET)" or "unshare(CLONE_NEWUSER|CLONE_NEWNET)"
    socket_guard: bool
    allowed_hosts: list[str] = field(default_factory=list)
    reason: str | None = None  # why there is no namespace, when there is none
    sandbox: dict[str, Any] | None = None  # SandboxReport.to_json(): every layer, checked from inside

    @property
    def missing_layers(self) -> list[str]:
        layers = (self.sandbox or {}).get("layers") or []
        return [str(layer.get("name")) for layer in layers if isinstance(layer, dict) and not layer.get("in_force")]

    @property
    def summary(self) -> str:
        allowed = ", ".join(self.allowed_hosts) if self.allowed_hosts else "nothing"
        if self.sandbox is not None:
            text = f"{self.sandbox.get('summary')}; socket guard (allowed: {allowed})"
            return text + (f"; {self.reason}" if self.reason else "")
        if self.network_namespace:
            text = f"network namespace ({self.namespace_method}) + socket guard (allowed: {allowed})"
        else:
            text = f"socket guard only (allowed: {allowed})"
            if self.reason:
                text += f"; no network namespace: {self.reason}"
        return text

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["summary"] = self.summary
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "IsolationInfo":
        return cls(
            network_namespace=bool(data.get("network_namespace")),
            namespace_method=data.get("namespace_method"),
            socket_guard=bool(data.get("socket_guard")),
            allowed_hosts=list(data.get("allowed_hosts") or []),
            reason=data.get("reason"),
            sandbox=data.get("sandbox") if isinstance(data.get("sandbox"), dict) else None,
        )


class NetworkRefusedError(ConnectionRefusedError):
    """A connection the replay guard refused (the network is off, or the host is not allowed)."""


class LookupRefusedError(socket.gaierror):
    """A DNS lookup the replay guard refused."""


# -- network namespace ------------------------------------------------------------


def enter_network_namespace() -> tuple[str | None, str | None]:
    """Move this process into a fresh network namespace: (method, None) or (None, reason).

    Must run while the process has one thread: the namespace belongs to the calling
    thread, and a user namespace cannot be entered by a threaded process.
    """
    if not sys.platform.startswith("linux"):
        return None, f"network namespaces need Linux (this is {sys.platform})"
    if threading.active_count() > 1:
        return None, "the process already runs several threads"
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        unshare = libc.unshare
    except (OSError, AttributeError) as error:
        return None, f"libc has no unshare() ({error})"
    unshare.argtypes = [ctypes.c_int]
    if unshare(CLONE_NEWNET) == 0:
        return "unshare(CLONE_NEWNET)", None
    first = ctypes.get_errno()
    uid, gid = os.getuid(), os.getgid()
    if unshare(CLONE_NEWUSER | CLONE_NEWNET) == 0:
        # Map our own ids onto themselves so files we create keep their owner.
        try:
            _write_proc("/proc/self/setgroups", "deny")
            _write_proc("/proc/self/uid_map", f"{uid} {uid} 1")
            _write_proc("/proc/self/gid_map", f"{gid} {gid} 1")
        except OSError:
            pass  # the namespace is in force; only file ownership display is affected
        return "unshare(CLONE_NEWUSER|CLONE_NEWNET)", None
    second = ctypes.get_errno()
    return None, (
        f"unshare(CLONE_NEWNET) failed: {os.strerror(first)}; unprivileged user namespace failed: {os.strerror(second)}"
    )


def _write_proc(path: str, text: str) -> None:
    with open(path, "w") as handle:
        handle.write(text)


# -- socket guard -----------------------------------------------------------------


class AllowList:
    """Hosts the guard lets through: ``host``, ``host:port``, ``[v6]:port`` or ``unix:PATH``.

    A name is allowed for lookup; the addresses it resolved to are then allowed for
    connect, on the same port constraint.
    """

    def __init__(self, entries: Iterable[str] = ()) -> None:
        self.entries = [entry.strip() for entry in entries if entry.strip()]
        self._hosts: dict[str, set[int] | None] = {}  # host (lower-case) -> ports, None = any
        self._unix: set[str] = set()
        self._lock = threading.Lock()
        for entry in self.entries:
            if entry.startswith("unix:"):
                self._unix.add(entry[5:])
                continue
            host, port = split_host_port(entry)
            self._add(host, port)

    def _add(self, host: str, port: int | None) -> None:
        host = _normal_host(host)
        with self._lock:
            if port is None:
                self._hosts[host] = None
            elif host not in self._hosts or self._hosts[host] is not None:
                self._hosts.setdefault(host, set()).add(port)  # type: ignore[union-attr]

    def allows(self, host: Any, port: Any = None) -> bool:
        if host is None:
            return False
        ports = self._hosts.get(_normal_host(str(host)), False)
        if not isinstance(ports, set):
            return ports is None  # None = any port of a listed host; False = the host is not listed
        if port is None:
            return True
        try:
            return int(port) in ports
        except (TypeError, ValueError):
            return False

    def allows_unix(self, path: Any) -> bool:
        if isinstance(path, bytes):
            path = path.decode(errors="replace")
        return str(path) in self._unix

    def learn(self, host: str, port: Any, addresses: Iterable[Any]) -> None:
        """After an allowed lookup, allow the addresses it returned (same port rule)."""
        ports = self._hosts.get(_normal_host(host))
        for info in addresses:
            try:
                address = info[4][0]
            except (IndexError, TypeError):
                continue
            if ports is None:
                self._add(str(address), None)
            else:
                for allowed_port in ports:
                    self._add(str(address), allowed_port)


def split_host_port(entry: str) -> tuple[str, int | None]:
    """``host``, ``host:port`` or ``[v6]:port`` -> (host, port)."""
    if entry.startswith("["):
        host, _, rest = entry[1:].partition("]")
        return host, int(rest[1:]) if rest.startswith(":") and rest[1:] else None
    if entry.count(":") == 1:
        host, port = entry.split(":")
        return host, int(port) if port else None
    return entry, None


def _normal_host(host: str) -> str:
    import ipaddress  # on the first connect or lookup, not at the child's start-up

    host = host.strip().lower().rstrip(".")
    try:
        return str(ipaddress.ip_address(host.split("%")[0]))
    except ValueError:
        return host


def _describe_address(address: Any) -> tuple[str, Any, Any]:
    """(printable target, host, port) of a socket address."""
    if isinstance(address, tuple) and len(address) >= 2:
        host, port = address[0], address[1]
        shown = f"[{host}]:{port}" if isinstance(host, str) and ":" in host else f"{host}:{port}"
        return shown, host, port
    if isinstance(address, (str, bytes)):
        path = address.decode(errors="replace") if isinstance(address, bytes) else address
        return f"unix:{path}", None, None
    return repr(address), None, None


_OWN_FILE = os.path.normcase(__file__)


@functools.cache
def _stdlib() -> tuple[str, ...]:
    """The standard library's directories, on the first refusal (sysconfig costs the child's start-up)."""
    import sysconfig

    paths = {sysconfig.get_path("stdlib"), sysconfig.get_path("platstdlib")}
    return tuple(os.path.normcase(path) + os.sep for path in paths if path)


def _caller() -> str | None:
    """file:line of the code that asked: the first frame outside this module and the
    standard library (socket, asyncio, http.client, urllib...)."""
    frame = sys._getframe(2)
    while frame is not None:
        filename = os.path.normcase(frame.f_code.co_filename)
        in_stdlib = filename.startswith(_stdlib()) and f"{os.sep}site-packages{os.sep}" not in filename
        if filename != _OWN_FILE and not in_stdlib and not filename.startswith("<frozen"):
            return f"{frame.f_code.co_filename}:{frame.f_lineno}"
        frame = frame.f_back  # type: ignore[assignment]
    return None


class SocketGuard:
    """Patches the socket module so only allowed hosts are reachable; records refusals."""

    def __init__(
        self, allow: Iterable[str] = (), on_refusal: Callable[[Refusal], None] | None = None, broker: Any = None
    ) -> None:
        self.allow = AllowList(allow)
        self.broker = broker  # broker.BrokerClient: allowed hosts are reached through the parent
        self.refusals: list[Refusal] = []
        self._on_refusal = on_refusal
        self._saved: list[tuple[Any, str, Any]] = []
        self._lock = threading.Lock()

    @property
    def installed(self) -> bool:
        return bool(self._saved)

    def refuse(self, operation: str, target: str, error: type[OSError]) -> OSError:
        where = _caller()
        refusal = Refusal(clip(operation, SHORT_TEXT), clip(target, TEXT), clip(where, TEXT) if where else None)
        with self._lock:
            if len(self.refusals) < MAX_REFUSALS:  # the report lists the first ones and counts the rest
                self.refusals.append(refusal)
        if self._on_refusal is not None:
            try:
                self._on_refusal(refusal)
            except Exception:  # reporting must never change what the agent sees
                pass
        why = "not in the allowed hosts" if self.allow.entries else "the network is off during replay"
        message = f"replay-tui: network access refused ({operation} {target}): {why}"
        if error is LookupRefusedError:
            return LookupRefusedError(socket.EAI_NONAME, message)
        return error(111, message)  # ECONNREFUSED

    def _check_address(self, sock: socket.socket, address: Any, operation: str) -> None:
        shown, host, port = _describe_address(address)
        if sock.family == getattr(socket, "AF_UNIX", None):
            if not self.allow.allows_unix(address):
                raise self.refuse(operation, shown, NetworkRefusedError)
        elif not self.allow.allows(host, port):
            raise self.refuse(operation, shown, NetworkRefusedError)

    def _check_lookup(self, operation: str, host: Any, port: Any = None) -> None:
        if isinstance(host, bytes):
            host = host.decode(errors="replace")
        if not self.allow.allows(host, port):
            raise self.refuse(operation, str(host) if port is None else f"{host}:{port}", LookupRefusedError)

    def install(self) -> "SocketGuard":
        """Patch the socket module; idempotent per guard."""
        if self._saved:
            return self
        guard = self
        base = socket.socket
        original_connect = base.connect
        original_connect_ex = base.connect_ex
        original_sendto = base.sendto
        original_sendmsg = base.sendmsg
        original_getaddrinfo = socket.getaddrinfo
        original_create_connection = socket.create_connection

        def brokered(sock: socket.socket, address: Any) -> bool:
            if guard.broker is None or sock.family not in (socket.AF_INET, socket.AF_INET6):
                return False
            guard.broker.connect_into(sock, address[0], address[1])
            return True

        def connect(self: socket.socket, address: Any) -> None:
            guard._check_address(self, address, "connect")
            if brokered(self, address):
                return None
            return original_connect(self, address)

        def connect_ex(self: socket.socket, address: Any) -> int:
            guard._check_address(self, address, "connect")
            try:
                if brokered(self, address):
                    return 0
            except OSError as error:
                return error.errno or 111
            return original_connect_ex(self, address)

        def sendto(self: socket.socket, data: Any, *args: Any) -> int:
            guard._check_address(self, args[-1], "sendto")
            return original_sendto(self, data, *args)

        def sendmsg(self: socket.socket, buffers: Any, *args: Any) -> int:
            if len(args) >= 3 and args[2] is not None:
                guard._check_address(self, args[2], "sendmsg")
            return original_sendmsg(self, buffers, *args)

        def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
            guard._check_lookup("getaddrinfo", host, port)
            if guard.broker is not None:
                names = ("family", "type", "proto", "flags")
                values = dict(zip(names, args)) | {name: kwargs[name] for name in names if name in kwargs}
                text = host.decode() if isinstance(host, bytes) else str(host)
                return guard.broker.resolve(text, port, *(int(values.get(name, 0)) for name in names))
            result = original_getaddrinfo(host, port, *args, **kwargs)
            guard.allow.learn(str(host), port, result)
            return result

        def create_connection(address: Any, *args: Any, **kwargs: Any) -> socket.socket:
            shown, host, port = _describe_address(address)
            if not guard.allow.allows(host, port):
                raise guard.refuse("connect", shown, NetworkRefusedError)
            return original_create_connection(address, *args, **kwargs)

        def name_lookup(name: str, original: Callable[..., Any]) -> Callable[..., Any]:
            def lookup(host: Any, *args: Any) -> Any:
                target = host[0] if name == "getnameinfo" and isinstance(host, tuple) else host
                guard._check_lookup(name, target)
                return original(host, *args)

            lookup.__name__ = name
            return lookup

        patches: list[tuple[Any, str, Any]] = [
            (base, "connect", connect),
            (base, "connect_ex", connect_ex),
            (base, "sendto", sendto),
            (base, "sendmsg", sendmsg),
            (socket, "getaddrinfo", getaddrinfo),
            (socket, "create_connection", create_connection),
        ]
        for name in ("gethostbyname", "gethostbyname_ex", "gethostbyaddr", "getnameinfo"):
            patches.append((socket, name, name_lookup(name, getattr(socket, name))))
        for owner, name, replacement in patches:
            self._saved.append((owner, name, vars(owner).get(name, _INHERITED)))
            setattr(owner, name, replacement)
        return self

    def uninstall(self) -> None:
        """Restore the socket module (tests use this; the child never does)."""
        for owner, name, original in reversed(self._saved):
            if original is _INHERITED:
                delattr(owner, name)
            else:
                setattr(owner, name, original)
        self._saved.clear()


_INHERITED = object()  # socket.socket inherits connect & co from _socket.socket


def isolate(
    level: str = NETNS_AUTO,
    allow: Iterable[str] = (),
    on_refusal: Callable[[Refusal], None] | None = None,
    reason: str | None = None,
    broker: Any = None,
) -> tuple[IsolationInfo, SocketGuard]:
    """Apply isolation to this process (the child calls it before importing agent code)."""
    allowed = list(allow)
    method: str | None = None
    if level == NETNS_AUTO:
        method, reason = enter_network_namespace()
    elif level != GUARD_ONLY:
        raise ValueError(f"unknown isolation level {level!r}; expected {NETNS_AUTO!r} or {GUARD_ONLY!r}")
    guard = SocketGuard(allowed, on_refusal, broker).install()
    info = IsolationInfo(
        network_namespace=method is not None,
        namespace_method=method,
        socket_guard=True,
        allowed_hosts=allowed,
        reason=reason,
    )
    return info, guard

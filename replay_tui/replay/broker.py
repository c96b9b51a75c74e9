"""The experiment broker: live calls made by the parent on the child's behalf.

In ``model-live`` and ``tools-live`` runs the child keeps its empty network namespace
like a strict replay. The runner owns a ``Broker``: one end of a unix socketpair (made
before the child's seccomp filter, which forbids new unix sockets) goes to the child.
For a host the live plugin's config allows, the child's socket guard asks the broker to
resolve a name or to connect; the parent checks the allowlist, connects in its own
network namespace and hands the connected socket back (SCM_RIGHTS), which the guard
puts in place of the agent's socket (``dup2``). Anything else never leaves the child:
raw ``_socket``, subprocesses and C code find no network at all.

Messages are one JSON object each way per request (SOCK_SEQPACKET keeps the boundaries):
``{"op": "resolve", "host", "port", "family", "type", "proto", "flags"}`` ->
``{"ok": true, "addresses": [[family, type, proto, canonname, sockaddr], ...]}``;
``{"op": "connect", "host", "port", "family", "type", "proto", "timeout"}`` ->
``{"ok": true}`` with the socket's fd attached, or ``{"ok": false, "error", "errno"}``.
Agent code can write anything on that socket: each request is checked against its shape
(``REQUEST_SHAPES``: strict JSON, so no NaN or Infinity; C ints in range; a port, a host name)
before it is used, and whatever goes wrong with one request is that request's error reply: the
broker keeps serving.
"""

from __future__ import annotations

import errno
import json
import os
import socket
import threading
from typing import Any

import orjson

from .isolation import AllowList
from .shapes import Either, Integer, Nullable, Number, Record, ShapeError, Text

_C_INT = Integer(-(2**31), 2**31 - 1)
_PORT = Nullable(Either((Integer(0, 65535), Text(32))))  # a number, a service name ("https"), or none
_HOST = Text(1024)
_ADDRESS = {"op": Text(16), "host": _HOST, "port": _PORT, "family": _C_INT, "type": _C_INT, "proto": _C_INT}
#: The two requests a child may make, field by field.
REQUEST_SHAPES = {
    "resolve": Record({**_ADDRESS, "flags": _C_INT}),
    "connect": Record({**_ADDRESS, "timeout": Nullable(Number())}),
}


def checked_request(data: bytes) -> dict[str, Any]:
    """One request, parsed (strict JSON) and checked against its shape; ValueError says what is wrong."""
    try:
        request = orjson.loads(data)
    except orjson.JSONDecodeError as error:
        raise ValueError(f"not JSON: {error}") from None
    op = request.get("op") if isinstance(request, dict) else None
    if not isinstance(op, str) or op not in REQUEST_SHAPES:
        raise ValueError(f"field op: expected one of {', '.join(REQUEST_SHAPES)}, found {op!r:.60}")
    try:
        checked: dict[str, Any] = REQUEST_SHAPES[op].check(request, "")
    except ShapeError as error:
        raise ValueError(str(error)) from None
    return checked


MAX_MESSAGE = 65536
CONNECT_TIMEOUT_S = 30.0


class Broker:
    """Parent side: serves one child's resolve/connect requests for the allowed hosts."""

    def __init__(self, allowed: list[str]) -> None:
        self.allow = AllowList(allowed)
        self.parent_end, child_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.child_fd = child_end.detach()
        self._thread = threading.Thread(target=self._serve, name="replay-broker", daemon=True)
        self._thread.start()

    def close_child_end(self) -> None:
        """After the child was spawned: only the child holds its end."""
        if self.child_fd >= 0:
            os.close(self.child_fd)
            self.child_fd = -1

    def stop(self) -> None:
        self.close_child_end()
        try:
            self.parent_end.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.parent_end.close()
        self._thread.join(timeout=2)

    def _serve(self) -> None:
        while True:
            try:
                data = self.parent_end.recv(MAX_MESSAGE)
            except OSError:
                return
            if not data:
                return  # the child is gone
            try:
                reply, fd = self._handle(checked_request(data))
            except ValueError as error:
                reply, fd = {"ok": False, "error": f"bad broker request: {error}", "errno": errno.EINVAL}, None
            except Exception as error:  # whatever one request does, the broker stays up for the next
                reply, fd = {"ok": False, "error": f"{type(error).__name__}: {error}", "errno": errno.EIO}, None
            try:
                payload = json.dumps(reply).encode()
                if fd is None:
                    self.parent_end.send(payload)
                else:
                    socket.send_fds(self.parent_end, [payload], [fd])
            except OSError:
                return
            finally:
                if fd is not None:
                    os.close(fd)

    def _handle(self, request: dict[str, Any]) -> tuple[dict[str, Any], int | None]:
        op, host, port = request["op"], request["host"], request["port"]
        if not self.allow.allows(host, port):
            return {"ok": False, "error": f"{host}:{port} is not an allowed host", "errno": errno.ECONNREFUSED}, None
        if op == "resolve":
            try:
                found = socket.getaddrinfo(
                    host, port, request["family"], request["type"], request["proto"], request["flags"]
                )
            except socket.gaierror as error:
                return {"ok": False, "error": str(error), "errno": error.errno, "gai": True}, None
            self.allow.learn(host, port, found)
            return {"ok": True, "addresses": [[int(f), int(t), p, c, list(a)] for f, t, p, c, a in found]}, None
        if op == "connect":
            family, kind = request["family"], request["type"]
            if family not in (socket.AF_INET, socket.AF_INET6) or kind & 0xF != socket.SOCK_STREAM:
                return {"ok": False, "error": "the broker connects TCP only", "errno": errno.EPROTONOSUPPORT}, None
            sock = socket.socket(family, socket.SOCK_STREAM)
            try:
                sock.settimeout(min(request["timeout"] or CONNECT_TIMEOUT_S, CONNECT_TIMEOUT_S))
                number = int(port) if isinstance(port, int) else socket.getservbyname(port) if port else 0
                sock.connect((host, number) if family == socket.AF_INET else (host, number, 0, 0))
            except OSError as error:
                sock.close()
                return {"ok": False, "error": str(error), "errno": error.errno or errno.ECONNREFUSED}, None
            sock.setblocking(True)
            return {"ok": True}, sock.detach()
        return {"ok": False, "error": f"unknown broker op {op!r}", "errno": errno.EINVAL}, None


class BrokerClient:
    """Child side, used by the socket guard for allowed hosts."""

    def __init__(self, fd: int) -> None:
        self.sock = socket.socket(fileno=fd)
        self._lock = threading.Lock()

    def _ask(self, request: dict[str, Any]) -> tuple[dict[str, Any], list[int]]:
        with self._lock:
            self.sock.send(json.dumps(request).encode())
            data, fds, _, _ = socket.recv_fds(self.sock, MAX_MESSAGE, 1)
        if not data:
            raise ConnectionRefusedError(errno.ECONNREFUSED, "replay-tui: the experiment broker is gone")
        return json.loads(data), fds

    def resolve(self, host: str, port: Any, family: int, kind: int, proto: int, flags: int) -> list[Any]:
        reply, _ = self._ask(
            {
                "op": "resolve",
                "host": host,
                "port": port,
                "family": family,
                "type": kind,
                "proto": proto,
                "flags": flags,
            }
        )
        if not reply.get("ok"):
            raise socket.gaierror(reply.get("errno") or socket.EAI_NONAME, f"replay-tui broker: {reply.get('error')}")
        return [(socket.AddressFamily(f), socket.SocketKind(t), p, c, tuple(a)) for f, t, p, c, a in reply["addresses"]]

    def connect_into(self, sock: socket.socket, host: str, port: Any) -> None:
        """Connect ``sock`` to an allowed host through the parent: its fd becomes the parent's connected socket."""
        timeout = sock.gettimeout()
        reply, fds = self._ask(
            {
                "op": "connect",
                "host": host,
                "port": port,
                "family": int(sock.family),
                "type": int(sock.type),
                "proto": sock.proto,
                "timeout": timeout,
            }
        )
        if not reply.get("ok") or not fds:
            for fd in fds:
                os.close(fd)
            raise OSError(reply.get("errno") or errno.ECONNREFUSED, f"replay-tui broker: {reply.get('error')}")
        blocking = sock.getblocking()
        os.dup2(fds[0], sock.fileno())
        os.close(fds[0])
        sock.setblocking(blocking)
        if timeout is not None:
            sock.settimeout(timeout)

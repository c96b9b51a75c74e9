"""What a process of the host holds that a sandboxed agent must not reach: a key in its session keyring,
a process running as the agent's user, a System V shared-memory segment. Context managers, for the
sandbox tests of the replay child and of the fork server's children."""

from __future__ import annotations

import ctypes
import os
import platform
import subprocess
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from replay_tui.replay.sandbox import NOBODY

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
libc.shmat.restype = ctypes.c_void_p
ADD_KEY, KEYCTL, KEYCTL_INVALIDATE, KEY_SPEC_SESSION_KEYRING = 248, 250, 21, -3
IPC_CREAT, IPC_EXCL, IPC_RMID = 0o1000, 0o2000, 0


@contextmanager
def session_key() -> Iterator[tuple[str, str]]:
    """(description, secret) of a key in this process's session keyring, which every process it starts inherits."""
    if platform.machine() != "x86_64":
        pytest.skip("the key syscall numbers here are x86_64's")
    name, secret = f"replay-tui-test-{uuid.uuid4().hex}", f"sk-{uuid.uuid4().hex}"
    serial = libc.syscall(ADD_KEY, b"user", name.encode(), secret.encode(), len(secret), KEY_SPEC_SESSION_KEYRING)
    if serial < 0:
        pytest.skip(f"no session keyring here: add_key: {os.strerror(ctypes.get_errno())}")
    try:
        yield name, secret
    finally:
        libc.syscall(KEYCTL, KEYCTL_INVALIDATE, ctypes.c_long(serial))


@contextmanager
def victim() -> Iterator[subprocess.Popen[bytes]]:
    """A process of the host running as the user the agent runs as (nobody, when the tests run as root)."""
    command = ["sleep", "300"]
    if os.getuid() == 0:
        command = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", *command]
    process = subprocess.Popen(command)
    try:
        yield process
    finally:
        process.kill()
        process.wait()


@contextmanager
def shared_memory() -> Iterator[tuple[int, bytes, int]]:
    """(key, secret, address) of a System V shared-memory segment of the host that anyone may read and write."""
    key, secret = 0x52540000 | (os.getpid() & 0xFFFF), f"shm-{uuid.uuid4().hex}".encode()
    segment = libc.shmget(key, 4096, IPC_CREAT | IPC_EXCL | 0o666)
    if segment < 0:
        pytest.skip(f"shmget: {os.strerror(ctypes.get_errno())}")
    address = libc.shmat(segment, None, 0)
    ctypes.memmove(address, secret, len(secret))
    try:
        yield key, secret, address
    finally:
        libc.shmdt(ctypes.c_void_p(address))
        libc.shmctl(segment, IPC_RMID, None)


def read(address: int, size: int) -> bytes:
    return ctypes.string_at(address, size)

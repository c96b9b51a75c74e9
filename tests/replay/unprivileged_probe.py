"""Run by test_sandbox_unprivileged.py as an unprivileged user (stdlib only, any Python 3.11).

    python unprivileged_probe.py launch MECHANISM SCRATCH HOST_NETNS PARENT_PID TCP_PORT UNIX_PATH MARKER

``launch`` enters the sandbox the way the replay child does (bwrap: builds the same bwrap
command as an unprivileged caller and runs ``inside`` in it; namespaces: enters in this
process), then attacks: a raw TCP connect, setns into the parent's network namespace, a
pathname unix socket, a write outside scratch. Prints one JSON object.
"""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
from dataclasses import asdict

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, REPO)

from replay_tui.replay.sandbox import (  # noqa: E402
    BWRAP,
    SandboxPolicy,
    bwrap_command,
    bwrap_path,
    enter_sandbox,
    namespace_inode,
    needed_paths,
)


def attacks(tcp_port: int, unix_path: str, marker: str, parent_pid: int) -> dict[str, str]:
    import _socket

    results: dict[str, str] = {}

    def connect() -> str:
        sock = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
        sock.settimeout(2)
        try:
            sock.connect(("127.0.0.1", tcp_port))
            return "CONNECTED"
        except OSError as error:
            return f"refused: {error}"
        finally:
            sock.close()

    results["tcp"] = connect()
    libc = ctypes.CDLL(None, use_errno=True)
    try:
        fd = os.open(f"/proc/{parent_pid}/ns/net", os.O_RDONLY)
        ok = libc.setns(fd, 0x40000000) == 0
        results["setns"] = ("SETNS OK; " + connect()) if ok else f"refused: {os.strerror(ctypes.get_errno())}"
    except OSError as error:
        results["setns"] = f"refused: {error}"
    try:
        sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        sock.connect(unix_path)
        results["unix"] = "CONNECTED"
    except OSError as error:
        results["unix"] = f"refused: {error}"
    try:
        with open(marker, "w") as handle:
            handle.write("escaped")
        results["write"] = "WROTE"
    except OSError as error:
        results["write"] = f"refused: {error}"
    return results


def main(argv: list[str]) -> int:
    phase, mechanism, scratch, host_netns, parent_pid, tcp_port, unix_path, marker = argv[1:9]
    # the host's PID and IPC namespaces: this process's at launch, passed on to the probe inside bwrap
    host_pidns, host_ipcns = argv[9:11] if len(argv) > 9 else (namespace_inode("pid"), namespace_inode("ipc"))
    policy = SandboxPolicy(
        scratch=scratch,
        mechanism=mechanism,
        keep_readable=needed_paths([REPO]),  # a checkout below /tmp (hidden in the sandbox) is bound back
        host_netns=int(host_netns),
        host_pidns=int(host_pidns or 0),
        host_ipcns=int(host_ipcns or 0),
        parent_pid=int(parent_pid),
        environment_scrubbed=True,
    )  # the test starts the probe with a two-variable environment
    if phase == "launch" and mechanism == BWRAP:
        command = bwrap_command(policy, bwrap_path() or "bwrap") + [
            "--",
            sys.executable,
            os.path.abspath(__file__),
            "inside",
            *argv[2:9],
            str(host_pidns),
            str(host_ipcns),
        ]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        sys.stdout.write(done.stdout)
        sys.stderr.write(done.stderr)
        return done.returncode
    report = enter_sandbox(policy)
    found = {"uid": os.getuid(), "layers": [asdict(layer) for layer in report.layers]}
    found["attacks"] = attacks(int(tcp_port), unix_path, marker, int(parent_pid))
    print(json.dumps(found))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

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

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from replay_tui.replay.sandbox import BWRAP, SandboxPolicy, bwrap_command, bwrap_path, enter_sandbox  # noqa: E402


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
    policy = SandboxPolicy(
        scratch=scratch,
        mechanism=mechanism,
        host_netns=int(host_netns),
        parent_pid=int(parent_pid),
        environment_scrubbed=True,
    )  # the test starts the probe with a two-variable environment
    if phase == "launch" and mechanism == BWRAP:
        command = bwrap_command(policy, bwrap_path() or "bwrap") + [
            "--",
            sys.executable,
            os.path.abspath(__file__),
            "inside",
            *argv[2:],
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

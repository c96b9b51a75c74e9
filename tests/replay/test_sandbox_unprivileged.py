"""The sandbox as an unprivileged user (uid 65534 via setpriv when the tests run as root).

Uses ``unprivileged_probe.py`` (stdlib only), run by a Python that user can execute, so it
works even where the project's own interpreter lives in root's home. Skips, saying why,
where the kernel or the machine does not allow it.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from replay_tui.replay.parent.sandbox_launch import world_readable
from replay_tui.replay.sandbox import ALL_LAYERS, ENVIRONMENT_SCRUBBED, UNPRIVILEGED, bwrap_path

from .conftest import REPO, LoopbackListener

PROBE = Path(__file__).with_name("unprivileged_probe.py")
NOBODY = 65534


def _python_for_nobody() -> str | None:
    for candidate in (sys.executable, "/usr/bin/python3"):
        if os.path.exists(candidate) and world_readable(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


def _userns_allowed() -> str | None:
    try:
        if Path("/proc/sys/kernel/unprivileged_userns_clone").read_text().strip() == "0":
            return "kernel.unprivileged_userns_clone=0"
    except OSError:
        pass
    try:
        if Path("/proc/sys/user/max_user_namespaces").read_text().strip() == "0":
            return "user.max_user_namespaces=0"
    except OSError:
        pass
    return None


@pytest.mark.parametrize("mechanism", ["bwrap", "namespaces"])
def test_every_attack_fails_as_an_unprivileged_user(mechanism: str) -> None:
    if not sys.platform.startswith("linux"):
        pytest.skip("the sandbox is Linux-only")
    if os.getuid() != 0 and os.getuid() != NOBODY:
        pytest.skip("needs root (to become an unprivileged user with setpriv)")
    if mechanism == "bwrap" and bwrap_path() is None:
        pytest.skip("bubblewrap is not installed")
    if reason := _userns_allowed():
        pytest.skip(f"unprivileged user namespaces are off here ({reason})")
    python = _python_for_nobody()
    if python is None or not world_readable(str(REPO / "replay_tui" / "replay" / "sandbox.py")):
        pytest.skip("no Python (or no checkout) that an unprivileged user can read on this machine")
    listener = LoopbackListener()
    visible = Path(
        tempfile.mkdtemp(prefix="replay-tui-unpriv-", dir="/var/lib" if os.access("/var/lib", os.W_OK) else None)
    )
    scratch = Path(tempfile.mkdtemp(prefix="replay-tui-scratch-"))
    unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        visible.chmod(0o777)  # writable and connectable by anyone: only the sandbox may stop the probe
        unix.bind(str(visible / "agent.sock"))
        unix.listen(4)
        (visible / "agent.sock").chmod(0o777)
        os.chown(scratch, NOBODY, NOBODY)
        marker = visible / "escaped.txt"
        netns = os.stat("/proc/self/ns/net").st_ino
        command = [
            python,
            str(PROBE),
            "launch",
            mechanism,
            str(scratch),
            str(netns),
            str(os.getpid()),
            str(listener.port),
            str(visible / "agent.sock"),
            str(marker),
        ]
        if os.getuid() == 0:
            command = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", *command]
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"}
        done = subprocess.run(command, capture_output=True, text=True, timeout=60, env=env, cwd="/", check=False)
        if done.returncode != 0 and "setting up uid map" in done.stderr:
            pytest.skip(f"the kernel refuses an unprivileged user namespace here: {done.stderr.strip()[-200:]}")
        assert done.returncode == 0, done.stderr
        found = json.loads(done.stdout.strip().splitlines()[-1])
        assert found["uid"] != 0
        layers = {layer["name"]: layer["in_force"] for layer in found["layers"]}
        assert layers == {name: True for name in ALL_LAYERS}, found["layers"]
        assert layers[UNPRIVILEGED] and layers[ENVIRONMENT_SCRUBBED]
        attacks = found["attacks"]
        assert all(result.startswith("refused") for result in attacks.values()), attacks
        assert listener.accepted == 0 and not marker.exists()
    finally:
        listener.close()
        unix.close()
        shutil.rmtree(visible, ignore_errors=True)
        shutil.rmtree(scratch, ignore_errors=True)

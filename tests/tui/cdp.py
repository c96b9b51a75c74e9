"""A small Chrome DevTools Protocol client over Debian's headless Chromium (loopback only)."""

from __future__ import annotations

import base64
import itertools
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request
from typing import Any

from websockets.sync.client import connect

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-default-apps",
    "--disable-extensions",
    "--window-size=1600,1000",
]


def chromium_path() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


class Browser:
    """Headless Chromium with a fresh profile; ``page`` is a CDP session on its first tab."""

    def __init__(self) -> None:
        self.profile = tempfile.TemporaryDirectory(prefix="replay-tui-chromium-")
        chromium = chromium_path()
        assert chromium is not None
        self.process = subprocess.Popen(
            [
                chromium,
                *FLAGS,
                f"--user-data-dir={self.profile.name}",
                "--remote-debugging-port=0",  # a port of its own choosing, written to DevToolsActivePort
                "--remote-debugging-address=127.0.0.1",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            # TMPDIR: its singleton socket dir (org.chromium.Chromium.*) goes in the profile, removed with it; close()
            # kills the group, so Chromium never removes it from /tmp itself
            env={**os.environ, "HOME": self.profile.name, "TMPDIR": self.profile.name},
            start_new_session=True,  # its own process group: close() stops its renderers and helpers too
        )
        deadline = time.monotonic() + 60
        self.port = self._devtools_port(deadline)
        targets: list[dict[str, Any]] = []
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/json/list", timeout=2) as answer:
                    targets = [t for t in json.load(answer) if t.get("type") == "page"]
                if targets:
                    break
            except OSError:
                time.sleep(0.2)
        assert targets, "chromium did not start its DevTools endpoint"
        self.socket = connect(targets[0]["webSocketDebuggerUrl"], max_size=None, open_timeout=30)
        self.ids = itertools.count(1)
        self.events: list[dict[str, Any]] = []

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        number = next(self.ids)
        self.socket.send(json.dumps({"id": number, "method": method, "params": params}))
        while True:
            message = json.loads(self.socket.recv(timeout=60))
            if message.get("id") == number:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})
            self.events.append(message)

    def pump(self, seconds: float) -> None:
        """Collect the events that arrive within ``seconds``."""
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            try:
                self.events.append(json.loads(self.socket.recv(timeout=left)))
            except TimeoutError:
                return

    def websocket_text(self, start: int = 0) -> str:
        """What the page's WebSockets received (from event ``start`` on), as text."""
        parts = []
        for event in self.events[start:]:
            if event.get("method") == "Network.webSocketFrameReceived":
                response = event["params"]["response"]
                data = response["payloadData"]
                parts.append(base64.b64decode(data).decode("utf-8", "replace") if response.get("opcode") == 2 else data)
        return "".join(parts)

    def press(self, key: str, code: str, key_code: int) -> None:
        for kind in ("keyDown", "keyUp"):
            params: dict[str, Any] = {"type": kind, "key": key, "code": code, "windowsVirtualKeyCode": key_code}
            if kind == "keyDown":
                params["text"] = key
            self.call("Input.dispatchKeyEvent", **params)

    def _devtools_port(self, deadline: float) -> int:
        """The port Chromium bound (no port probed free beforehand, which another process could take)."""
        active = os.path.join(self.profile.name, "DevToolsActivePort")
        while True:
            try:
                with open(active) as handle:
                    first = handle.readline().strip()
                if first.isdigit():
                    return int(first)
            except FileNotFoundError:
                pass
            assert self.process.poll() is None, f"chromium exited ({self.process.returncode}) before listening"
            assert time.monotonic() < deadline, "chromium did not write DevToolsActivePort"
            time.sleep(0.1)

    def close(self) -> None:
        """Stop Chromium's whole process group, then remove the profile once nothing writes in it."""
        try:
            self.socket.close()
        finally:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.process.wait()
            deadline = time.monotonic() + 30
            while True:
                try:
                    self.profile.cleanup()  # a retry removes what is left (the first call unregisters the finalizer)
                    break
                except OSError:  # a helper outside the group still writing: retry until the deadline
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.1)

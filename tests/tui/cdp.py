"""A small Chrome DevTools Protocol client over Debian's headless Chromium (loopback only)."""

from __future__ import annotations

import base64
import itertools
import json
import os
import shutil
import socket
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


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Browser:
    """Headless Chromium with a fresh profile; ``page`` is a CDP session on its first tab."""

    def __init__(self) -> None:
        self.profile = tempfile.TemporaryDirectory(prefix="replay-tui-chromium-")
        self.port = free_port()
        chromium = chromium_path()
        assert chromium is not None
        self.process = subprocess.Popen(
            [
                chromium,
                *FLAGS,
                f"--user-data-dir={self.profile.name}",
                f"--remote-debugging-port={self.port}",
                "--remote-debugging-address=127.0.0.1",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env={**os.environ, "HOME": self.profile.name},
        )
        deadline = time.monotonic() + 60
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

    def close(self) -> None:
        try:
            self.socket.close()
        finally:
            self.process.kill()
            self.process.wait()
            self.profile.cleanup()

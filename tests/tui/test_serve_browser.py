"""`replay-tui serve`: the app in headless Chromium through textual-serve, on loopback behind a token.

The browser is driven through the DevTools protocol; what the app draws reaches the page over the
server's WebSocket, which the test reads from the page's network events. A key pressed in the page
must come back as a redraw with the cursor on the next event.
"""

from __future__ import annotations

import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest
from cdp import Browser, chromium_path
from test_launch import REPO

pytest.importorskip("textual_serve")
pytestmark = pytest.mark.skipif(
    chromium_path() is None, reason="chromium is not installed (apt-get install -y chromium)"
)
ENTRY = "from replay_tui.cli import entry_point; entry_point()"


@pytest.fixture
def served() -> Iterator[str]:
    server = subprocess.Popen(
        [sys.executable, "-c", ENTRY, "serve", str(REPO / "fixtures" / "journals" / "crm.jsonl")],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert server.stdout is not None
        line = server.stdout.readline()
        assert line.startswith("serving crm.jsonl at http://127.0.0.1:"), line
        url = line.split()[-1]
        deadline = time.monotonic() + 30
        while True:  # the port is printed just before it is bound
            try:
                urllib.request.urlopen(url, timeout=2).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "the server did not answer"
                time.sleep(0.1)
        yield url
    finally:
        server.terminate()
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def test_the_url_needs_its_token(served: str) -> None:
    root = served.rsplit("/", 2)[0] + "/"
    for guess in (root, root + "ws", root + "static/js/textual.js"):
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(guess, timeout=5)
        assert refused.value.code == 404
    page = urllib.request.urlopen(served, timeout=5).read().decode()
    assert "fonts.googleapis.com" not in page  # nothing is fetched from outside the server


def test_the_timeline_renders_in_chromium_and_a_key_moves_the_cursor(served: str) -> None:
    browser = Browser()
    try:
        browser.call("Network.enable")
        browser.call("Page.enable")
        browser.call("Page.navigate", url=served)
        deadline = time.monotonic() + 90
        while "State after seq 1 " not in browser.websocket_text() or "run.started" not in browser.websocket_text():
            assert time.monotonic() < deadline, browser.websocket_text()[-2000:]
            browser.pump(0.3)
        browser.pump(1.0)  # let the first screen settle
        assert "State after seq 2 " not in browser.websocket_text()
        mark = len(browser.events)
        browser.call("Runtime.evaluate", expression="document.querySelector('.xterm-helper-textarea').focus()")
        browser.press("j", "KeyJ", 74)
        while "State after seq 2 " not in browser.websocket_text(mark):
            assert time.monotonic() < deadline, browser.websocket_text(mark)[-2000:]
            browser.pump(0.3)
        requests = [
            e["params"]["request"]["url"] for e in browser.events if e.get("method") == "Network.requestWillBeSent"
        ]
        assert requests and all(url.startswith("http://127.0.0.1:") for url in requests), requests
    finally:
        browser.close()

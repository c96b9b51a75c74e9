"""A real ASGI service (uvicorn, FastAPI) on 127.0.0.1 in its own process, in front of a loopback model."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Iterator, Mapping

import pytest

from tests.httpx.servers import LLMServer

REPO = Path(__file__).resolve().parents[2]
MODEL_DELAY_S = 0.05


def order_policy(request: Mapping[str, Any]) -> dict[str, Any]:
    """Ask for the order's status, then answer with it (each answer after a moment, as a real model takes)."""
    time.sleep(MODEL_DELAY_S)
    last = request["messages"][-1]
    if last["role"] == "tool":
        return {"content": f"Your order: {last['content']}"}
    return {"content": "", "tool_calls": [{"id": "call_o1", "name": "lookup_order", "arguments": {"order": "A-1"}}]}


@pytest.fixture
def model_server() -> Iterator[LLMServer]:
    server = LLMServer(order_policy)
    try:
        yield server
    finally:
        server.close()


@contextlib.contextmanager
def chat_service(journals: Path, model_url: str, **env: str) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """uvicorn serving ``tests.service.chat_service:app`` on a socket bound here (no port race)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    port = listener.getsockname()[1]
    command = [
        sys.executable,
        "-m",
        "uvicorn",
        "tests.service.chat_service:app",
        "--fd",
        str(listener.fileno()),
        "--log-level",
        "warning",
    ]
    environment = {
        **os.environ,
        "CHAT_JOURNALS": str(journals),
        "CHAT_MODEL_URL": model_url,
        "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
        **env,
    }
    process = subprocess.Popen(command, cwd=REPO, env=environment, pass_fds=[listener.fileno()], stderr=subprocess.PIPE)
    listener.close()
    try:
        yield f"http://127.0.0.1:{port}", process
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def replay_corpus(journals: Path) -> dict[str, Any]:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "replay_tui",
            "replay",
            str(journals),
            "--jobs",
            "2",
            "--json",
            "--agent-path",
            str(REPO),
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=600,
    )
    assert done.returncode in (0, 1), done.stdout + done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result

"""A plain-httpx agent (no SDK): the transport works for the httpx module too."""

from __future__ import annotations

import os
from datetime import timedelta
from typing import Any, Mapping

import httpx

from replay_tui.harness import Harness
from replay_tui.harness.httpx_transport import http_client


def agent(h: Harness, task: Mapping[str, Any]) -> Any:
    with http_client(h, httpx_module=httpx, base_url=task["base_url"]) as client:
        response = client.post(
            "/v1/chat/completions",
            json={"model": "local", "messages": [{"role": "user", "content": task["question"]}]},
            headers={"authorization": f"Bearer {os.environ.get('PLAIN_API_TOKEN', 'none')}"},
        )
        response.raise_for_status()
        if response.elapsed != timedelta(0):  # read in record and replay alike (it raised), and never live time
            raise AssertionError(f"elapsed {response.elapsed}")
        return response.json()["choices"][0]["message"]["tool_calls"][0]["function"]["name"]

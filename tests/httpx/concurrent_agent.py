"""An async agent that asks one model three questions at once on one client and acts on the first answer."""

from __future__ import annotations

import asyncio
import time
from typing import Any, Mapping

from openai import AsyncOpenAI

from replay_tui.harness import Harness
from replay_tui.harness.httpx_transport import async_http_client

#: How long the loopback server takes to answer each question (seconds).
DELAYS = {"slow": 0.3, "mid": 0.15, "fast": 0.02}
#: When the server received each question and when it answered (monotonic seconds).
ARRIVALS: dict[str, tuple[float, float]] = {}


def policy(request: Mapping[str, Any]) -> dict[str, Any]:
    question = str(request["messages"][-1]["content"])
    arrived = time.monotonic()
    time.sleep(DELAYS.get(question, 0.3))
    ARRIVALS[question] = (arrived, time.monotonic())
    return {"content": f"answer to {question}"}


async def agent(h: Harness, task: Mapping[str, Any]) -> Any:
    client = AsyncOpenAI(api_key="sk-test-key", base_url=task["base_url"], http_client=async_http_client(h))

    async def ask(question: str) -> str:
        completion = await client.chat.completions.create(model="m", messages=[{"role": "user", "content": question}])
        return str(completion.choices[0].message.content)

    asks = [asyncio.ensure_future(ask(question)) for question in task["questions"]]
    first = await next(asyncio.as_completed(asks))
    return {"first": first, "all": await asyncio.gather(*asks)}

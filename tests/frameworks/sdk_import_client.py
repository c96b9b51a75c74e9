"""An agent module that builds its OpenAI client when it is imported, as services often do: the client reads
``OPENAI_API_KEY`` (and ``OPENAI_BASE_URL``) from the environment then, so a replay child must have a key to
import it (it gets a placeholder) although it sends nothing."""

from __future__ import annotations

from typing import Any, Mapping

from agents import Agent, Runner, set_default_openai_client
from openai import AsyncOpenAI

from replay_tui.harness import Harness
from replay_tui.harness.frameworks.agents_sdk import recording

client = AsyncOpenAI()
set_default_openai_client(client, use_for_tracing=False)

assistant = Agent(name="Assistant", instructions="You only answer in haiku.")


async def agent(h: Harness, task: Mapping[str, Any]) -> str:
    with recording(h):
        result = await Runner.run(assistant, task["question"])
    return str(result.final_output)

"""An agent on a Responses model that behaves as on OpenAI's own endpoint: the SDK then puts a
``prompt_cache_key`` in every request, made from a ``uuid4`` it draws per run (the loopback server stands in
for api.openai.com, which a test cannot reach)."""

from __future__ import annotations

from typing import Any, Mapping

from agents import Agent, OpenAIResponsesModel, Runner
from openai import AsyncOpenAI

from replay_tui.harness import Harness
from replay_tui.harness.frameworks.agents_sdk import recording


class OpenAIEndpointModel(OpenAIResponsesModel):
    def _supports_default_prompt_cache_key(self) -> bool:
        return True  # as is_official_openai_client says of api.openai.com


async def recorded(h: Harness, task: Mapping[str, Any]) -> str:
    model = OpenAIEndpointModel(model="gpt-4.1", openai_client=AsyncOpenAI(base_url=task["base_url"]))
    agent = Agent(name="Assistant", instructions="Be brief.", model=model)
    with recording(h):
        result = await Runner.run(agent, task["question"])
    return str(result.final_output)

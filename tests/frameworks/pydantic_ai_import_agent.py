"""PydanticAI's first example as its docs write it: the agent built at import from a model name, the SDK client
reading its key (and, here, the loopback base URL) from the environment; the only replay-tui line is the
capability. A replay imports this module too, so its child needs a key variable that satisfies the client.
Anthropic's provider: OpenAI's asks for no key once ``OPENAI_BASE_URL`` is set, which a loopback test needs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic_ai import Agent

from replay_tui.harness import Harness
from replay_tui.harness.frameworks.pydantic_ai import recording

agent = Agent(
    "anthropic:claude-sonnet-4-5", instructions="Be concise, reply with one sentence.", capabilities=[recording()]
)


async def ask(h: Harness, task: Mapping[str, Any]) -> str:
    result = await agent.run(task["question"])
    return result.output

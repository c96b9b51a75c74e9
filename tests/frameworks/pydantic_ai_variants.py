"""One-line changes to the PydanticAI pattern agents, for the divergence tests (``replay --agent``)."""

from __future__ import annotations

from typing import Any, Mapping

import httpx
from pydantic_ai import Agent, RunContext

from replay_tui.harness import Harness

from . import pydantic_ai_agents as agents

# -- other instructions -------------------------------------------------------------------------

_other_instructions = Agent(
    name="weather_agent",
    deps_type=agents.Service,
    instructions="You report the weather. Use every tool, then answer in two sentences.",
    tools=[agents.get_weather, agents.get_station, agents.get_alerts],
)


async def _weather(agent: Agent[agents.Service, str], task: Mapping[str, Any]) -> dict[str, Any]:
    result = await agent.run(task["question"], **agents.weather_options(task))
    return agents._answer(result)


async def other_instructions(h: Harness, task: Mapping[str, Any]) -> dict[str, Any]:
    return await _weather(_other_instructions, task)


# -- a tool takes one more argument -------------------------------------------------------------


async def get_alerts(ctx: RunContext[agents.Service], city: str, severity: str = "any") -> dict[str, Any]:
    """The weather alerts of a city, as the service lists them."""
    async with httpx.AsyncClient() as client:
        return dict((await client.get(f"{ctx.deps.url}/alerts/{city}")).json())


_extra_argument = Agent(
    name="weather_agent",
    deps_type=agents.Service,
    instructions=agents.WEATHER_INSTRUCTIONS,
    tools=[agents.get_weather, agents.get_station, get_alerts],
)


async def extra_argument(h: Harness, task: Mapping[str, Any]) -> dict[str, Any]:
    return await _weather(_extra_argument, task)


# -- the delegate is asked in other words -------------------------------------------------------

_selection = Agent(
    name="joke_selection_agent",
    instructions=(
        "Use the `joke_factory` to generate some jokes, then choose the best. You must return just a single joke."
    ),
)


@_selection.tool
async def joke_factory(ctx: RunContext[None], count: int) -> list[str]:
    r = await agents.joke_generation_agent.run(f"Please generate {count} short jokes.", usage=ctx.usage)
    return r.output


async def delegate_other_prompt(h: Harness, task: Mapping[str, Any]) -> dict[str, Any]:
    with agents.joke_generation_agent.override(model=agents.model_for(task)):
        result = await _selection.run(
            "Tell me a joke.", model=agents.model_for(task), capabilities=agents.capabilities(task)
        )
    return {"output": result.output, "requests": result.usage.requests}

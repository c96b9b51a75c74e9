"""The Agents SDK's first example (examples/basic/tools.py: a tool returning a pydantic ``Weather``) grown into
the tool results a team's agent returns: a pydantic model, a dataclass, a dict (its keys in their own order),
structured parts, two tools the model calls at once. Written the way the SDK's docs write it; the only
replay-tui lines are the ``with recording(h):`` in the recorded entry points at the bottom, one per run form
(``Runner.run``, ``Runner.run_sync``, ``Runner.run_streamed``), and one on chat completions.

Each tool leaves a marker file in the directory the task names (a tool that ran in a replay would leave one,
or fail to), and notes when it ran, so a test can see two tools run at once.
"""

from __future__ import annotations

import asyncio
import os
import time
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from agents import Agent, Runner, ToolOutputText, function_tool, set_default_openai_api, set_default_openai_client
from openai import AsyncOpenAI
from openai.types.responses import ResponseTextDeltaEvent
from pydantic import BaseModel, Field

from replay_tui.harness import Harness
from replay_tui.harness.frameworks.agents_sdk import recording

QUESTION = "What's the weather in Tokyo, and what should I know about the city?"
TOOL_DELAY_S = 0.3
#: (tool, started, ended) of each tool run in this process (time.monotonic)
TOOL_RUNS: list[tuple[str, float, float]] = []
#: Called with the first text delta a streamed run hands the caller (a test holds the stream until then).
ON_FIRST_TEXT: Callable[[str], None] | None = None
_markers: str | None = None


def _mark(tool: str) -> None:
    if _markers is not None:
        with open(os.path.join(_markers, f"{tool}-{time.monotonic_ns()}"), "x"):
            pass


class Weather(BaseModel):
    city: str = Field(description="The city name")
    temperature_range: str = Field(description="The temperature range in Celsius")
    conditions: str = Field(description="The weather conditions")


@dataclass
class Forecast:
    city: str
    days: list[str]


async def _slow(tool: str) -> None:
    """The tool's work: a wait of ``TOOL_DELAY_S``, noted in ``TOOL_RUNS``."""
    started = time.monotonic()
    await asyncio.sleep(TOOL_DELAY_S)
    _mark(tool)
    TOOL_RUNS.append((tool, started, time.monotonic()))


@function_tool
async def get_weather(city: str) -> Weather:
    """Get the current weather information for a specified city."""
    await _slow("get_weather")
    return Weather(city=city, temperature_range="14-20C", conditions="Sunny with wind.")


@function_tool
async def get_forecast(city: str) -> Forecast:
    """The forecast for the next three days."""
    await _slow("get_forecast")
    return Forecast(city=city, days=["sun", "rain", "sun"])


@function_tool
def city_facts(city: str) -> dict[str, Any]:
    """Facts about a city, most important first."""
    _mark("city_facts")
    return {"population": 13_960_000, "area_km2": 2194, "airport": "HND", "city": city}


@function_tool
def travel_tips(city: str) -> list[ToolOutputText]:
    """Travel tips, as text parts."""
    _mark("travel_tips")
    return [ToolOutputText(text=f"{city}: carry cash."), ToolOutputText(text="Trains stop at midnight.")]


agent = Agent(
    name="Weather desk",
    instructions="You are a helpful agent. Use the tools; never guess.",
    tools=[get_weather, get_forecast, city_facts, travel_tips],
)


def _connect(task: Mapping[str, Any]) -> None:
    global _markers
    _markers = task.get("markers")
    set_default_openai_client(AsyncOpenAI(base_url=task["base_url"]), use_for_tracing=False)


async def main(task: Mapping[str, Any]) -> str:
    _connect(task)
    result = await Runner.run(agent, input=task["question"])
    return str(result.final_output)


def main_sync(task: Mapping[str, Any]) -> str:
    _connect(task)
    result = Runner.run_sync(agent, input=task["question"])
    return str(result.final_output)


async def main_streamed(task: Mapping[str, Any]) -> dict[str, Any]:
    _connect(task)
    result = Runner.run_streamed(agent, input=task["question"])
    deltas: list[str] = []
    async for event in result.stream_events():
        if event.type == "raw_response_event" and isinstance(event.data, ResponseTextDeltaEvent):
            if not deltas and ON_FIRST_TEXT is not None:
                ON_FIRST_TEXT(event.data.delta)
            deltas.append(event.data.delta)
    return {"final": str(result.final_output), "deltas": deltas}


async def main_chat(task: Mapping[str, Any]) -> str:
    """``main`` on chat completions, the SDK's other OpenAI API (``set_default_openai_api``)."""
    set_default_openai_api("chat_completions")
    try:
        return await main(task)
    finally:
        set_default_openai_api("responses")


# -- recorded: the documented line around the program's own Runner call --------------------------------


async def recorded(h: Harness, task: Mapping[str, Any]) -> str:
    with recording(h):
        return await main(task)


def recorded_sync(h: Harness, task: Mapping[str, Any]) -> str:
    with recording(h):
        return main_sync(task)


async def recorded_chat(h: Harness, task: Mapping[str, Any]) -> str:
    with recording(h):
        return await main_chat(task)


async def recorded_streamed(h: Harness, task: Mapping[str, Any]) -> dict[str, Any]:
    with recording(h):
        return await main_streamed(task)

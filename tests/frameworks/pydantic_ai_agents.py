"""PydanticAI agents written the way PydanticAI's docs write them, each run form an entry point. The only
replay-tui line in each is the capability, ``capabilities=[recording()]`` in the run call (or, for the
delegate, in its ``Agent(...)``). With ``task["recorded"]`` false the same code runs unrecorded, for the
byte-for-byte comparison of what the model is sent.

The task names the model API (``chat``, ``responses`` or ``anthropic``), the loopback model server and
the weather service the tools call. The keys are fake and passed explicitly: replay children get no keys.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Mapping

import httpx
from openai import AsyncOpenAI
from pydantic import BaseModel
from pydantic_ai import (
    Agent,
    AgentRunResultEvent,
    ApprovalRequired,
    DeferredToolRequests,
    FunctionToolResultEvent,
    ModelRetry,
    RunContext,
)
from pydantic_ai.messages import (
    BinaryContent,
    ModelMessage,
    ModelResponse,
    PartDeltaEvent,
    PartStartEvent,
    TextPart,
    TextPartDelta,
    ToolReturn,
    ToolReturnPart,
)
from pydantic_ai.models import Model
from pydantic_ai.models.anthropic import AnthropicModel
from pydantic_ai.models.fallback import FallbackModel
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.openai import OpenAIChatModel, OpenAIResponsesModel
from pydantic_ai.providers.anthropic import AnthropicProvider
from pydantic_ai.providers.openai import OpenAIProvider

from replay_tui.harness import Harness
from replay_tui.harness.frameworks.pydantic_ai import recording

FAKE_OPENAI_KEY = "sk-replay-tui-test-not-a-real-key"
FAKE_ANTHROPIC_KEY = "sk-ant-replay-tui-test-not-a-real-key"
#: When each streamed text chunk reached the caller (perf_counter), while recording in this process.
CHUNK_ARRIVALS: list[float] = []


def model_for(task: Mapping[str, Any]) -> Model:
    api, name = task.get("api", "chat"), task.get("model", "gpt-4.1")
    if api == "anthropic":
        return AnthropicModel(name, provider=AnthropicProvider(base_url=task["base_url"], api_key=FAKE_ANTHROPIC_KEY))
    provider = OpenAIProvider(base_url=f"{task['base_url']}/v1", api_key=FAKE_OPENAI_KEY)
    return (
        OpenAIResponsesModel(name, provider=provider)
        if api == "responses"
        else OpenAIChatModel(name, provider=provider)
    )


def capabilities(task: Mapping[str, Any]) -> list[Any]:
    return [recording()] if task.get("recorded", True) else []


def weather_options(task: Mapping[str, Any]) -> dict[str, Any]:
    """What each run form of the weather agent is given besides the question: the model, deps and capabilities."""
    return {"model": model_for(task), "deps": Service(task["service"]), "capabilities": capabilities(task)}


# -- tools that return a pydantic model, a dataclass and a dict (PydanticAI's first examples) ------------


class Weather(BaseModel):
    city: str
    temperature_c: float
    conditions: str


@dataclass
class Station:
    station_id: str
    name: str
    elevation_m: int


class Forecast(BaseModel):
    city: str
    summary: str
    temperature_c: float


@dataclass
class Service:
    """The weather service the tools call (dependencies, as PydanticAI's docs pass an HTTP client)."""

    url: str


WEATHER_INSTRUCTIONS = "You report the weather. Use every tool, then answer in one sentence."
weather_agent = Agent(name="weather_agent", deps_type=Service, instructions=WEATHER_INSTRUCTIONS)


@weather_agent.tool
async def get_weather(ctx: RunContext[Service], city: str) -> Weather:
    """The weather now in a city."""
    async with httpx.AsyncClient() as client:
        response = await client.get(f"{ctx.deps.url}/weather/{city}")
    return Weather.model_validate(response.json())


@weather_agent.tool
def get_station(ctx: RunContext[Service], city: str) -> Station:
    """The weather station that reports for a city (a sync tool: PydanticAI runs it in a thread)."""
    data = httpx.get(f"{ctx.deps.url}/station/{city}").json()
    return Station(**data)


@weather_agent.tool
async def get_alerts(ctx: RunContext[Service], city: str) -> dict[str, Any]:
    """The weather alerts of a city, as the service lists them."""
    async with httpx.AsyncClient() as client:
        return dict((await client.get(f"{ctx.deps.url}/alerts/{city}")).json())


forecast_agent = Agent(
    name="forecast_agent",
    deps_type=Service,
    output_type=Forecast,
    instructions="You write a short forecast. Use every tool first.",
    tools=[get_weather, get_station, get_alerts],
)


def _returned_types(result: Any) -> list[str]:
    """What the agent's own code reads back from the message history: the type of each tool return."""
    return [
        type(part.content).__name__
        for message in result.all_messages()
        for part in message.parts
        if isinstance(part, ToolReturnPart)
    ]


def _answer(result: Any, **extra: Any) -> dict[str, Any]:
    output = result.output.model_dump() if isinstance(result.output, BaseModel) else result.output
    return {"output": output, "returned": _returned_types(result), **extra}


# -- every run form -------------------------------------------------------------------------------


async def run(h: Harness, task: Mapping[str, Any]) -> dict[str, Any]:
    result = await weather_agent.run(task["question"], **weather_options(task))
    return _answer(result)


def run_sync(h: Harness, task: Mapping[str, Any]) -> dict[str, Any]:
    result = weather_agent.run_sync(task["question"], **weather_options(task))
    return _answer(result)


async def run_in_thread(h: Harness, task: Mapping[str, Any]) -> dict[str, Any]:
    """``run_sync`` from async code, where PydanticAI allows it: in a worker thread (a running loop refuses it)."""
    return await asyncio.to_thread(run_sync, h, task)


async def stream_text(h: Harness, task: Mapping[str, Any]) -> dict[str, Any]:
    chunks: list[str] = []
    async with weather_agent.run_stream(task["question"], **weather_options(task)) as streamed:
        async for chunk in streamed.stream_text(delta=True, debounce_by=None):
            CHUNK_ARRIVALS.append(time.perf_counter())
            chunks.append(chunk)
    return {"chunks": chunks, "output": await streamed.get_output()}


def stream_sync(h: Harness, task: Mapping[str, Any]) -> dict[str, Any]:
    """``run_stream_sync``: the stream read from sync code."""
    with weather_agent.run_stream_sync(task["question"], **weather_options(task)) as streamed:
        chunks = list(streamed.stream_text(delta=True, debounce_by=None))
        return {"chunks": chunks, "output": streamed.get_output()}


async def stream_events(h: Harness, task: Mapping[str, Any]) -> dict[str, Any]:
    """``run_stream_events``: every event of the run, then its result."""
    kinds: list[str] = []
    output = None
    async with weather_agent.run_stream_events(task["question"], **weather_options(task)) as events:
        async for event in events:
            if isinstance(event, AgentRunResultEvent):
                output = event.result.output
            elif isinstance(event, FunctionToolResultEvent):
                kinds.append(f"result of {event.part.tool_name}")
    return {"tool_results": sorted(kinds), "output": output}


async def stream_output(h: Harness, task: Mapping[str, Any]) -> dict[str, Any]:
    partials = 0
    async with forecast_agent.run_stream(task["question"], **weather_options(task)) as streamed:
        async for _partial in streamed.stream_output(debounce_by=None):
            partials += 1
        output = await streamed.get_output()
    return {"output": output.model_dump(), "streamed": partials > 0}


async def iterate(h: Harness, task: Mapping[str, Any]) -> dict[str, Any]:
    nodes: list[str] = []
    async with weather_agent.iter(task["question"], **weather_options(task)) as agent_run:
        async for node in agent_run:
            nodes.append(type(node).__name__)
    assert agent_run.result is not None
    return _answer(agent_run.result, nodes=nodes)


async def iterate_streaming(h: Harness, task: Mapping[str, Any]) -> dict[str, Any]:
    """``iter`` streaming each model request node's events, as PydanticAI's docs stream all events."""
    texts: list[str] = []
    async with weather_agent.iter(task["question"], **weather_options(task)) as agent_run:
        async for node in agent_run:
            if Agent.is_model_request_node(node):
                async with node.stream(agent_run.ctx) as events:
                    async for event in events:
                        if isinstance(event, PartStartEvent) and isinstance(event.part, TextPart):
                            texts.append(event.part.content)
                        elif isinstance(event, PartDeltaEvent) and isinstance(event.delta, TextPartDelta):
                            texts.append(event.delta.content_delta)
    assert agent_run.result is not None
    return _answer(agent_run.result, texts=texts)


async def gathered(h: Harness, task: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Parallel runs of one agent in ``asyncio.gather``."""
    results = await asyncio.gather(
        *(weather_agent.run(question, **weather_options(task)) for question in task["questions"])
    )
    return [_answer(result) for result in results]


# -- agent delegation (PydanticAI's multi-agent docs) ------------------------------------------------

joke_selection_agent = Agent(
    name="joke_selection_agent",
    instructions=(
        "Use the `joke_factory` to generate some jokes, then choose the best. You must return just a single joke."
    ),
)
joke_generation_agent = Agent(
    name="joke_generation_agent", output_type=list[str], capabilities=[recording(required=False)]
)


@joke_selection_agent.tool
async def joke_factory(ctx: RunContext[None], count: int) -> list[str]:
    r = await joke_generation_agent.run(f"Please generate {count} jokes.", usage=ctx.usage)
    return r.output


async def delegation(h: Harness, task: Mapping[str, Any]) -> dict[str, Any]:
    with joke_generation_agent.override(model=model_for(task)):
        result = await joke_selection_agent.run(
            "Tell me a joke.", model=model_for(task), capabilities=capabilities(task)
        )
    return {"output": result.output, "requests": result.usage.requests}


# -- retries: a tool that asks the model again, an output validator ---------------------------------

checked_agent = Agent(name="checked_agent", output_type=Forecast, instructions="Look the city up, then forecast.")


@checked_agent.tool_plain
def lookup_city(name: str) -> dict[str, str]:
    if not name[:1].isupper():
        raise ModelRetry(f"unknown city {name!r}: use its capitalized name")
    return {"city": name, "country": "FR"}


@checked_agent.output_validator
def summary_names_the_city(forecast: Forecast) -> Forecast:
    if forecast.city not in forecast.summary:
        raise ModelRetry("the summary must name the city")
    return forecast


async def retries(h: Harness, task: Mapping[str, Any]) -> dict[str, Any]:
    result = await checked_agent.run(task["question"], model=model_for(task), capabilities=capabilities(task))
    return {"output": result.output.model_dump(), "requests": result.usage.requests}


# -- a tool that returns parts (a ToolReturn with an image) and one that returns a datetime -------------

PNG = bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010806000000") + b"chart"

chart_agent = Agent(name="chart_agent", deps_type=Service, instructions="Show the temperature chart of the city.")


@chart_agent.tool
async def get_chart(ctx: RunContext[Service], city: str) -> ToolReturn:
    """The temperature chart of a city: the numbers for the model, the picture beside them."""
    async with httpx.AsyncClient() as client:
        weather = (await client.get(f"{ctx.deps.url}/weather/{city}")).json()
    return ToolReturn(
        return_value={"city": city, "temperature_c": weather["temperature_c"], "unit": "C", "points": 3},
        content=[f"The chart of {city}:", BinaryContent(data=PNG, media_type="image/png")],
        metadata={"source": "met office"},
    )


@chart_agent.tool_plain
def observed_at(city: str) -> datetime:
    """When the city's weather was last observed."""
    return datetime(2026, 5, 1, 12, 30, tzinfo=timezone.utc)


async def chart(h: Harness, task: Mapping[str, Any]) -> dict[str, Any]:
    result = await chart_agent.run(task["question"], **weather_options(task))
    return _answer(result)


# -- a delegate reached through the dependencies, which the tool's code does not name -----------------


@dataclass
class Team:
    helper: Agent[None, str]


helper_agent = Agent(name="helper_agent", capabilities=[recording(required=False)])
lead_agent = Agent(name="lead_agent", deps_type=Team, instructions="Ask the helper, then answer.")


async def _ask(ctx: RunContext[Team], question: str) -> str:
    return (await ctx.deps.helper.run(question, usage=ctx.usage)).output


@lead_agent.tool
async def ask_helper(ctx: RunContext[Team], question: str) -> str:
    return await _ask(ctx, question)


lead_agent_marked = Agent(name="lead_agent", deps_type=Team, instructions="Ask the helper, then answer.")


@lead_agent_marked.tool(metadata={"replay_tui": "delegates"})
async def ask_helper_marked(ctx: RunContext[Team], question: str) -> str:
    return await _ask(ctx, question)


async def through_deps(h: Harness, task: Mapping[str, Any]) -> dict[str, Any]:
    lead = lead_agent_marked if task.get("marked") else lead_agent
    with helper_agent.override(model=model_for(task)):
        result = await lead.run(
            "Ask the helper about Paris.",
            model=model_for(task),
            deps=Team(helper_agent),
            capabilities=capabilities(task),
        )
    return {"output": result.output}


# -- a model whose calls go through no SDK client ----------------------------------------------------


def _local_answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    return ModelResponse(parts=[TextPart("computed here")])


async def unseen_model(h: Harness, task: Mapping[str, Any]) -> dict[str, Any]:
    result = await weather_agent.run(
        task["question"],
        model=FunctionModel(_local_answer),
        deps=Service(task["service"]),
        capabilities=capabilities(task),
    )
    return _answer(result)


# -- a tool that needs a person's approval (PydanticAI's deferred tools) ----------------------------

approval_agent = Agent(name="approval_agent", output_type=[str, DeferredToolRequests], instructions="Clean up.")


@approval_agent.tool
def delete_file(ctx: RunContext[None], path: str) -> str:
    if not ctx.tool_call_approved:
        raise ApprovalRequired(metadata={"reason": f"deleting {path} cannot be undone"})
    return f"deleted {path}"


async def approval(h: Harness, task: Mapping[str, Any]) -> dict[str, Any]:
    result = await approval_agent.run("Delete the old report.", model=model_for(task), capabilities=capabilities(task))
    requests = result.output
    assert isinstance(requests, DeferredToolRequests)
    return {"approvals": [call.tool_name for call in requests.approvals], "metadata": list(requests.metadata.values())}


# -- a FallbackModel whose first model is down -------------------------------------------------------


async def fallback(h: Harness, task: Mapping[str, Any]) -> dict[str, Any]:
    down = AsyncOpenAI(base_url=task["down_url"], api_key=FAKE_OPENAI_KEY, max_retries=0)
    model = FallbackModel(OpenAIChatModel("gpt-4.1", provider=OpenAIProvider(openai_client=down)), model_for(task))
    result = await weather_agent.run(
        task["question"], model=model, deps=Service(task["service"]), capabilities=capabilities(task)
    )
    return _answer(result)

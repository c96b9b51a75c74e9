"""LangGraph and LangChain agents written as those projects' docs write them, with only replay-tui's lines
added: the model built by ``chat_openai(h, ...)`` / ``chat_anthropic(h, ...)`` and ``recorded(h)`` as the
run's config. Each pattern's graph is built by a function of the model (``weather_graph(model)``...) and
run by a function of the graph and its config (``invoke_form``...), so a test can run the very same agent
unrecorded (a plain ``ChatOpenAI``, a plain config) and compare what the model server received.

The tools append a line to ``task["marker"]`` whenever they really run: a strict replay must leave it as
it is."""

from __future__ import annotations

import asyncio
import operator
import threading
import time
from collections import Counter
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Annotated, Any, TypedDict

from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import InjectedToolCallId, tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.config import get_stream_writer
from langgraph.graph import END, START, StateGraph
from langgraph.prebuilt import ToolNode, create_react_agent
from langgraph.prebuilt.chat_agent_executor import AgentState
from langgraph.types import Command, Send
from pydantic import BaseModel

from replay_tui.harness.frameworks.langgraph import GraphAgent, chat_anthropic, chat_openai, recorded

MODEL = "gpt-4.1-mini"
CLAUDE = "claude-sonnet-4-5"
PROMPT = "You report the weather. Use every tool once."
_marker: ContextVar[str | None] = ContextVar("graph_agents_marker", default=None)
#: (tool, started, ended) of every tool run in this process: the concurrency measurements read it
TOOL_SPANS: list[tuple[str, float, float]] = []


def _ran(name: str) -> None:
    path = _marker.get()
    if path:
        with open(path, "a", encoding="utf-8") as marker:
            marker.write(f"{name}\n")


# -- tools that return what tools return ---------------------------------------------------


class Weather(BaseModel):
    city: str
    temperature_c: float
    conditions: str


@dataclass
class Forecast:
    city: str
    days: list[str]


@tool
def get_weather(city: str) -> Weather:
    """The weather in a city now."""
    _ran("get_weather")
    return Weather(city=city, temperature_c=21.5, conditions="sunny")


@tool
def get_forecast(city: str) -> Forecast:
    """The next days' weather in a city."""
    _ran("get_forecast")
    return Forecast(city=city, days=["rain", "sun"])


def _station(city: str) -> dict[str, Any]:
    _ran("get_station")
    return {"zeta_id": f"ST-{city[:3].upper()}", "alpha_name": f"{city} Central", "mid": [3, 1, 2]}


@tool
def get_station(city: str) -> dict[str, Any]:
    """The weather station of a city (its keys are not in sorted order)."""
    return _station(city)


@tool("get_station")
async def aget_station(city: str) -> dict[str, Any]:
    """The weather station of a city (its keys are not in sorted order)."""
    await asyncio.sleep(0)
    return _station(city)


@tool(response_format="content_and_artifact")
def get_radar(city: str) -> tuple[str, dict[str, Any]]:
    """The rain radar of a city: a summary for the model, the raw frame as the artifact."""
    _ran("get_radar")
    return f"radar over {city}: clear", {"zulu": [1, 2], "alpha": {"y": 1, "b": 2}}


@tool
def get_alerts(city: str) -> list[dict[str, Any]]:
    """Weather alerts for a city, as content blocks."""
    _ran("get_alerts")
    return [{"type": "text", "text": f"no alerts for {city}"}]


WEATHER_TOOLS = [get_weather, get_forecast, get_station, get_radar, get_alerts]
#: the same, its station tool async (an async graph run; a sync run cannot call an async tool, recorded or not)
AWEATHER_TOOLS = [get_weather, get_forecast, aget_station, get_radar, get_alerts]


def weather_policy(request: dict[str, Any]) -> dict[str, Any]:
    """Ask for every tool offered at once, then report what they said."""
    messages = request["messages"]
    results = [str(message["content"]) for message in messages if message["role"] == "tool"]
    if results:
        return {"content": "Report: " + " | ".join(results)}
    city = str([m for m in messages if m["role"] == "user"][-1]["content"]).rsplit(" ", 1)[-1].strip("?.")
    names = ["get_weather", "get_forecast", "get_station", "get_radar", "get_alerts"]
    calls = [{"id": f"call_{i}", "name": name, "arguments": {"city": city}} for i, name in enumerate(names)]
    return {"content": "", "tool_calls": calls}


def weather_graph(model: Any, *, asynchronous: bool = False, prompt: str = PROMPT) -> Any:
    """LangGraph's prebuilt ReAct agent, as returned (compiled)."""
    return create_react_agent(model, AWEATHER_TOOLS if asynchronous else WEATHER_TOOLS, prompt=prompt)


def weather_inputs(task: dict[str, Any]) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": task["question"]}]}


def final_text(values: dict[str, Any]) -> str:
    if "messages" not in values:  # (the research graph's state)
        return str(values.get("summary"))
    last = values["messages"][-1]
    return last.text if isinstance(last, AIMessage) else str(last.content)


def summary(chunks: list[Any], modes: list[str]) -> dict[str, Any]:
    """What a streamed run returns: how many parts each mode gave, and the last values' answer."""
    if len(modes) == 1:
        chunks = [(modes[0], chunk) for chunk in chunks]
    counts = Counter(mode for mode, _ in chunks)
    values = [payload for mode, payload in chunks if mode == "values"]
    tokens = "".join(part[0].text for mode, part in chunks if mode == "messages" and isinstance(part[0], AIMessage))
    return {
        "parts": dict(sorted(counts.items())),
        "answer": final_text(values[-1]) if values else None,
        "tokens": tokens,
    }


def invoke_form(graph: Any, task: dict[str, Any], config: dict[str, Any]) -> Any:
    return final_text(graph.invoke(weather_inputs(task), config))


async def ainvoke_form(graph: Any, task: dict[str, Any], config: dict[str, Any]) -> Any:
    return final_text(await graph.ainvoke(weather_inputs(task), config))


def stream_form(graph: Any, task: dict[str, Any], config: dict[str, Any]) -> Any:
    modes = task["modes"]
    chunks = list(graph.stream(weather_inputs(task), config, stream_mode=modes if len(modes) > 1 else modes[0]))
    return summary(chunks, modes)


async def astream_form(graph: Any, task: dict[str, Any], config: dict[str, Any]) -> Any:
    modes = task["modes"]
    mode = modes if len(modes) > 1 else modes[0]
    chunks = [chunk async for chunk in graph.astream(weather_inputs(task), config, stream_mode=mode)]
    return summary(chunks, modes)


FORMS = {"invoke": invoke_form, "ainvoke": ainvoke_form, "stream": stream_form, "astream": astream_form}


# -- the recorded entry points: the agent above, with replay-tui's lines ---------------------


def weather(h: Any, task: dict[str, Any]) -> Any:
    """``invoke`` or ``stream`` (``task["form"]``) of the prebuilt agent."""
    _marker.set(task.get("marker"))
    graph = weather_graph(chat_openai(h, task["base_url"], MODEL))
    return FORMS[task["form"]](graph, task, recorded(h))


async def weather_async(h: Any, task: dict[str, Any]) -> Any:
    """``ainvoke`` or ``astream`` of the prebuilt agent."""
    _marker.set(task.get("marker"))
    graph = weather_graph(chat_openai(h, task["base_url"], MODEL), asynchronous=True)
    return await FORMS[task["form"]](graph, task, recorded(h))


async def weather_plain_config(h: Any, task: dict[str, Any]) -> Any:
    """The same without ``recorded(h)``: the graph finds the run's recorder itself."""
    _marker.set(task.get("marker"))
    graph = weather_graph(chat_openai(h, task["base_url"], MODEL), asynchronous=True)
    return await FORMS[task["form"]](graph, task, {})


def weather_other_prompt(h: Any, task: dict[str, Any]) -> Any:
    """A one-line change: another system prompt."""
    graph = weather_graph(chat_openai(h, task["base_url"], MODEL), prompt="Be brief.")
    return FORMS[task["form"]](graph, task, recorded(h))


# -- a research graph: parallel branches, Send fan-out, a sub-graph, custom stream data ------------


class Research(TypedDict, total=False):
    question: str
    topics: list[str]
    notes: Annotated[list[str], operator.add]
    summary: str


class Review(TypedDict, total=False):
    summary: str
    notes: Annotated[list[str], operator.add]


def research_policy(request: dict[str, Any]) -> dict[str, Any]:
    return {"content": f"on {str([m for m in request['messages'] if m['role'] == 'user'][-1]['content'])[:40]}"}


def research_graph(model: Any, *, asynchronous: bool, topics: tuple[str, ...] = ("ice", "wind", "sun")) -> Any:
    """Two branches from START in one superstep, a ``Send`` per topic (map-reduce), a compiled sub-graph."""
    return research_builder(model, asynchronous=asynchronous, topics=topics).compile()


def research_builder(model: Any, *, asynchronous: bool, topics: tuple[str, ...] = ("ice", "wind", "sun")) -> Any:

    if asynchronous:

        async def ask(text: str) -> str:
            return (await model.ainvoke([("user", text)])).text
    else:

        def ask(text: str) -> str:  # type: ignore[misc]
            return model.invoke([("user", text)]).text

    def node(prefix: str) -> Any:
        if asynchronous:

            async def branch(state: Research) -> dict[str, Any]:
                question = state["question"]
                return {"notes": [f"{prefix}: {await ask(f'{prefix} about {question}')}"]}
        else:

            def branch(state: Research) -> dict[str, Any]:  # type: ignore[misc]
                question = state["question"]
                return {"notes": [f"{prefix}: {ask(f'{prefix} about {question}')}"]}

        return branch

    def plan(state: Research) -> dict[str, Any]:
        return {"topics": list(topics)}

    def fan_out(state: Research) -> list[Send]:
        return [Send("summarize", {"question": topic}) for topic in state["topics"]]

    if asynchronous:

        async def summarize(state: Research) -> dict[str, Any]:
            topic = state["question"]
            get_stream_writer()({"summarizing": topic})
            return {"notes": [f"{topic}: {await ask(f'summarize {topic}')}"]}
    else:

        def summarize(state: Research) -> dict[str, Any]:  # type: ignore[misc]
            topic = state["question"]
            get_stream_writer()({"summarizing": topic})
            return {"notes": [f"{topic}: {ask(f'summarize {topic}')}"]}

    def combine(state: Research) -> dict[str, Any]:
        return {"summary": "; ".join(state["notes"])}

    def reviewer(kind: str) -> Any:
        if asynchronous:

            async def check(state: Review) -> dict[str, Any]:
                return {"notes": [await ask(f"{kind} {state['summary']}")]}
        else:

            def check(state: Review) -> dict[str, Any]:  # type: ignore[misc]
                return {"notes": [ask(f"{kind} {state['summary']}")]}

        return check

    review = StateGraph(Review)  # two reviewers at once, in a sub-graph the review node runs
    review.add_node("critique", reviewer("critique"))
    review.add_node("factcheck", reviewer("factcheck"))
    review.add_edge(START, "critique")
    review.add_edge(START, "factcheck")
    reviewers = review.compile()

    if asynchronous:

        async def review_node(state: Research) -> dict[str, Any]:
            reviewed = await reviewers.ainvoke({"summary": state["summary"]})
            return {"summary": f"{state['summary']} / {await ask('polish ' + ' + '.join(reviewed['notes']))}"}
    else:

        def review_node(state: Research) -> dict[str, Any]:  # type: ignore[misc]
            reviewed = reviewers.invoke({"summary": state["summary"]})
            return {"summary": f"{state['summary']} / {ask('polish ' + ' + '.join(reviewed['notes']))}"}

    builder = StateGraph(Research)
    builder.add_node("news", node("news"))
    builder.add_node("papers", node("papers"))
    builder.add_node("plan", plan)
    builder.add_node("summarize", summarize)
    builder.add_node("combine", combine)
    builder.add_node("review", review_node)
    builder.add_edge(START, "news")
    builder.add_edge(START, "papers")
    builder.add_edge(["news", "papers"], "plan")
    builder.add_conditional_edges("plan", fan_out, ["summarize"])
    builder.add_edge("summarize", "combine")
    builder.add_edge("combine", "review")
    builder.add_edge("review", END)
    return builder


def research_run(graph: Any, task: dict[str, Any], config: dict[str, Any]) -> Any:
    modes = task.get("modes")
    if not modes:
        return graph.invoke({"question": task["question"]}, config)["summary"]
    return summary(list(graph.stream({"question": task["question"]}, config, stream_mode=modes)), modes)


async def aresearch_run(graph: Any, task: dict[str, Any], config: dict[str, Any]) -> Any:
    modes = task.get("modes")
    if not modes:
        return (await graph.ainvoke({"question": task["question"]}, config))["summary"]
    chunks = [chunk async for chunk in graph.astream({"question": task["question"]}, config, stream_mode=modes)]
    return summary(chunks, modes)


def research(h: Any, task: dict[str, Any]) -> Any:
    return research_run(research_graph(chat_openai(h, task["base_url"], MODEL), asynchronous=False), task, recorded(h))


async def research_async(h: Any, task: dict[str, Any]) -> Any:
    graph = research_graph(chat_openai(h, task["base_url"], MODEL), asynchronous=True)
    return await aresearch_run(graph, task, recorded(h))


async def research_other_topic(h: Any, task: dict[str, Any]) -> Any:
    """A one-line change: the second topic of the fan-out."""
    graph = research_graph(chat_openai(h, task["base_url"], MODEL), asynchronous=True, topics=("ice", "fog", "sun"))
    return await aresearch_run(graph, task, recorded(h))


# -- ToolNode's parallel tool calls, each taking a while -----------------------------------


@tool
def slow_lookup(sku: str) -> str:
    """Stock of one SKU (takes 0.3 s)."""
    started = time.monotonic()
    _ran("slow_lookup")
    time.sleep(0.3)
    TOOL_SPANS.append(("slow_lookup", started, time.monotonic()))
    return f"{sku}: 7 in stock"


@tool("slow_lookup")
async def aslow_lookup(sku: str) -> str:
    """Stock of one SKU (takes 0.3 s, async)."""
    started = time.monotonic()
    _ran("aslow_lookup")
    await asyncio.sleep(0.3)
    TOOL_SPANS.append(("aslow_lookup", started, time.monotonic()))
    return f"{sku}: 7 in stock"


def stock_policy(request: dict[str, Any]) -> dict[str, Any]:
    messages = request["messages"]
    results = [str(m["content"]) for m in messages if m["role"] == "tool"]
    if results:
        return {"content": "; ".join(results)}
    return {
        "content": "",
        "tool_calls": [{"id": f"call_{i}", "name": "slow_lookup", "arguments": {"sku": f"S-{i}"}} for i in range(3)],
    }


def stock_graph(model: Any, lookup: Any) -> Any:
    """A hand-built agent loop with LangGraph's ToolNode and tools_condition."""
    from langgraph.graph import MessagesState
    from langgraph.prebuilt import tools_condition

    bound = model.bind_tools([lookup])

    def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [bound.invoke(state["messages"])]}

    async def aagent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [await bound.ainvoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent if lookup is slow_lookup else aagent)
    builder.add_node("tools", ToolNode([lookup]))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "agent")
    return builder.compile()


def stock(h: Any, task: dict[str, Any]) -> Any:
    _marker.set(task.get("marker"))
    graph = stock_graph(chat_openai(h, task["base_url"], MODEL), slow_lookup)
    return final_text(graph.invoke({"messages": [("user", task["question"])]}, recorded(h)))


async def stock_async(h: Any, task: dict[str, Any]) -> Any:
    _marker.set(task.get("marker"))
    graph = stock_graph(chat_openai(h, task["base_url"], MODEL), aslow_lookup)
    return final_text(await graph.ainvoke({"messages": [("user", task["question"])]}, recorded(h)))


# -- a tool that updates the graph state with a Command (LangGraph's "update state from tools") ------


class ProfileState(AgentState):  # type: ignore[misc]
    user_name: str


@tool
def remember_name(name: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:  # type: ignore[type-arg]
    """Remember the user's name."""
    _ran("remember_name")
    return Command(
        update={"user_name": name, "messages": [ToolMessage(f"Remembered {name}", tool_call_id=tool_call_id)]}
    )


def profile_policy(request: dict[str, Any]) -> dict[str, Any]:
    results = [str(m["content"]) for m in request["messages"] if m["role"] == "tool"]
    if results:
        return {"content": f"Done: {results[-1]}"}
    return {"content": "", "tool_calls": [{"id": "call_n", "name": "remember_name", "arguments": {"name": "Ada"}}]}


def profile(h: Any, task: dict[str, Any]) -> Any:
    _marker.set(task.get("marker"))
    graph = create_react_agent(chat_openai(h, task["base_url"], MODEL), [remember_name], state_schema=ProfileState)
    values = graph.invoke({"messages": [("user", task["question"])], "user_name": ""}, recorded(h))
    return {"user_name": values["user_name"], "answer": final_text(values)}


# -- LangChain's create_agent on ChatAnthropic, with a checkpointer and two turns of one thread ------


def anthropic_agent(model: Any, *, asynchronous: bool) -> Any:
    """LangChain's create_agent, as returned (compiled), with the checkpointer LangChain's docs give it."""
    from langchain.agents import create_agent

    tools = AWEATHER_TOOLS if asynchronous else WEATHER_TOOLS
    return create_agent(model, tools=tools, system_prompt=PROMPT, checkpointer=InMemorySaver())


async def two_turns(graph: Any, task: dict[str, Any], config: dict[str, Any]) -> Any:
    """Two user turns on one thread (the checkpointer keeps the conversation); streamed when asked."""
    config = {**config, "configurable": {"thread_id": "conversation-1"}}
    answers = []
    for question in (task["question"], "And tomorrow in Oslo?"):
        inputs = {"messages": [{"role": "user", "content": question}]}
        if task.get("modes"):
            chunks = [chunk async for chunk in graph.astream(inputs, config, stream_mode=task["modes"])]
            answers.append(summary(chunks, task["modes"]))
        else:
            answers.append(final_text(await graph.ainvoke(inputs, config)))
    return answers


async def claude(h: Any, task: dict[str, Any]) -> Any:
    _marker.set(task.get("marker"))
    graph = anthropic_agent(chat_anthropic(h, task["base_url"], CLAUDE), asynchronous=True)
    return await two_turns(graph, task, recorded(h))


def claude_sync(h: Any, task: dict[str, Any]) -> Any:
    """``invoke`` and ``stream`` (messages mode) of the same agent, sync."""
    _marker.set(task.get("marker"))
    graph = anthropic_agent(chat_anthropic(h, task["base_url"], CLAUDE), asynchronous=False)
    config = recorded(h, {"configurable": {"thread_id": "t"}})
    first = final_text(graph.invoke(weather_inputs(task), config))
    chunks = list(graph.stream({"messages": [("user", "And in Oslo?")]}, config, stream_mode=["messages", "values"]))
    return [first, summary(chunks, ["messages", "values"])]


# -- what a recorder cannot see --------------------------------------------------------------


async def unrecorded_model(h: Any, task: dict[str, Any]) -> Any:
    """The user's own ChatOpenAI (sync client given, async not) called with ainvoke."""
    from langchain_openai import ChatOpenAI

    from replay_tui.harness.httpx_transport import http_client

    model = ChatOpenAI(model=MODEL, base_url=task["base_url"], api_key="sk-test", http_client=http_client(h))
    return await ainvoke_form(weather_graph(model, asynchronous=True), task, recorded(h))


def tool_in_a_node(h: Any, task: dict[str, Any]) -> Any:
    """A node that calls a tool itself, not through ToolNode."""
    _marker.set(task.get("marker"))

    def lookup(state: Research) -> dict[str, Any]:
        return {"summary": get_weather.invoke({"city": "Oslo"}).conditions}

    builder = StateGraph(Research)
    builder.add_node("lookup", lookup)
    builder.add_edge(START, "lookup")
    return builder.compile().invoke({"question": "?"}, recorded(h))["summary"]


def expert_policy(request: dict[str, Any]) -> dict[str, Any]:
    results = [str(m["content"]) for m in request["messages"] if m["role"] == "tool"]
    if results:
        return {"content": f"The expert says: {results[-1]}"}
    return {"content": "", "tool_calls": [{"id": "call_x", "name": "ask_expert", "arguments": {"city": "Oslo"}}]}


def model_in_a_tool(h: Any, task: dict[str, Any]) -> Any:
    """A tool that asks the (recording) model itself."""
    model = chat_openai(h, task["base_url"], MODEL)

    @tool
    def ask_expert(city: str) -> str:
        """Ask an expert."""
        return model.invoke(f"weather in {city}?").text

    graph = create_react_agent(chat_openai(h, task["base_url"], MODEL), [ask_expert])
    return invoke_form(graph, task, recorded(h))


# -- token streaming: LangGraph's messages mode hands the caller each token as it arrives -----------

#: set by the chat agents when the first text token reaches them (a gated server waits for it)
TOKEN_GATE: list[threading.Event] = []


def chat_graph(model: Any, *, asynchronous: bool) -> Any:
    from langgraph.graph import MessagesState

    def chat(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    async def achat(state: MessagesState) -> dict[str, Any]:
        return {"messages": [await model.ainvoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("chat", achat if asynchronous else chat)
    builder.add_edge(START, "chat")
    return builder.compile()


def _chat_model(h: Any, task: dict[str, Any]) -> Any:
    if task["provider"] == "anthropic":
        return chat_anthropic(h, task["base_url"], CLAUDE)
    return chat_openai(h, task["base_url"], MODEL)


def _token(texts: list[str], message: Any) -> None:
    if message.text:
        texts.append(message.text)
        for gate in TOKEN_GATE:
            gate.set()


def chat_stream(h: Any, task: dict[str, Any]) -> Any:
    texts: list[str] = []
    graph = chat_graph(_chat_model(h, task), asynchronous=False)
    for message, _ in graph.stream({"messages": [("user", "hi")]}, recorded(h), stream_mode="messages"):
        _token(texts, message)
    return texts


async def chat_astream(h: Any, task: dict[str, Any]) -> Any:
    texts: list[str] = []
    graph = chat_graph(_chat_model(h, task), asynchronous=True)
    async for message, _ in graph.astream({"messages": [("user", "hi")]}, recorded(h), stream_mode="messages"):
        _token(texts, message)
    return texts


# -- GraphAgent (a step per superstep, resumable) over a compiled graph -------------------------


class ReactSteps(GraphAgent):
    """The prebuilt agent, as returned, run as a step-loop agent."""

    def build(self, h: Any, task: Any) -> Any:
        return weather_graph(chat_openai(h, task["base_url"], MODEL))

    def graph_input(self, task: Any) -> Any:
        return weather_inputs(task)


react_steps = ReactSteps


class ResearchSteps(GraphAgent):
    """The research graph (parallel branches, Send, a sub-graph) run as a step-loop agent."""

    def build(self, h: Any, task: Any) -> Any:
        return research_builder(chat_openai(h, task["base_url"], MODEL), asynchronous=False)

    def graph_input(self, task: Any) -> Any:
        return {"question": task["question"]}

    def output(self, values: Any) -> Any:
        return values["summary"]


research_steps = ResearchSteps


# -- human in the loop: a node interrupts, the run resumes it -----------------------------------------


def approval(h: Any, task: dict[str, Any]) -> Any:
    """LangGraph's interrupt() in a node and Command(resume=...), on a checkpointer's thread."""
    from langgraph.graph import MessagesState
    from langgraph.types import interrupt

    model = chat_openai(h, task["base_url"], MODEL)

    def draft(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    def review(state: MessagesState) -> dict[str, Any]:
        verdict = interrupt({"draft": state["messages"][-1].text})
        return {"messages": [("user", f"reviewer says: {verdict}")]}

    builder = StateGraph(MessagesState)
    builder.add_node("draft", draft)
    builder.add_node("review", review)
    builder.add_node("final", draft)
    builder.add_edge(START, "draft")
    builder.add_edge("draft", "review")
    builder.add_edge("review", "final")
    graph = builder.compile(checkpointer=InMemorySaver())
    config = recorded(h, {"configurable": {"thread_id": "review-1"}})
    paused = graph.invoke({"messages": [("user", task["question"])]}, config)
    done = graph.invoke(Command(resume="approved"), config)
    return {"paused_on": paused["__interrupt__"][0].value, "answer": final_text(done)}

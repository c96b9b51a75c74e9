"""Record and strictly replay an OpenAI Agents SDK run (``openai-agents``).

    from replay_tui.harness.frameworks.agents_sdk import run_recorded

    async def agent(h, task):
        result = await run_recorded(h, triage_agent, task["question"], base_url=task["base_url"], model="gpt-4.1")
        return result.final_output

What is recorded, and how:

* model calls: every agent gets one ``OpenAIChatCompletionsModel`` (through ``RunConfig.model``)
  whose ``AsyncOpenAI`` client sends through the harness's httpx transport;
* ``function_tool`` tools: each ``FunctionTool`` of the agent and of every agent it hands off
  to is cloned with an ``on_invoke_tool`` that goes through ``Harness.arecord_tool_call``: the
  arguments are copied when the call is made, a replay serves the recorded result and the
  tool function is not run;
* turns and handoffs: each model call opens the step ``turn-NN:<agent name>``; a handoff is
  recorded as the tool call the SDK runs for it (the next agent's first request hangs from it);
* run state: ``{agent, turn, handoffs, context, usage}`` plus, with a ``session``, the session's
  items, written as ``state.transition`` when it changes;
* the SDK's trace upload is off (``set_tracing_disabled`` and ``RunConfig.tracing_disabled``),
  in record and in replay.

Clock, random and ids: the SDK draws trace, span and group ids (uuid4) and stamps spans with
the time; with tracing off none of it leaves the process, and none of it is in a model
request (chat-completions requests carry only messages, tools and settings; tool call ids
come from the model and are served from the journal). So they are kept out of every matched
key, not recorded. Limits: ``Handoff`` objects built with ``handoff(...)`` are kept as they
are (only ``Agent`` handoffs are followed to wrap their tools); hosted tools (web search,
file search) and the Responses API model are not recorded.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import orjson
from agents import (
    Agent,
    FunctionTool,
    Handoff,
    OpenAIChatCompletionsModel,
    RunConfig,
    RunHooks,
    Runner,
    SQLiteSession,
    set_tracing_disabled,
)

from .common import async_openai_client, in_journal_order
from .versions import check_versions

if TYPE_CHECKING:
    from ..harness import Harness

DISTRIBUTIONS = ("openai-agents",)
#: Sessions whose items change only through add_items, pop_item and clear_session (see ``SessionWatch``).
WATCHED_SESSIONS: tuple[type, ...] = (SQLiteSession,)


def recorded_tool(h: Harness, tool: FunctionTool) -> FunctionTool:
    """``tool`` with its invocation recorded as tool.call/tool.result."""
    original = tool.on_invoke_tool

    async def invoke(context: Any, input_json: str) -> Any:
        arguments = json.loads(input_json or "{}")

        async def live(copy: Any) -> Any:
            return in_journal_order(await original(context, json.dumps(copy)))

        return await h.arecord_tool_call(tool.name, arguments, live, call_id=getattr(context, "tool_call_id", None))

    # The SDK's own shallow copy (FunctionTool.__copy__), without its re-normalising of the schema and
    # callers, which the original already went through: dataclasses.replace or copy.copy redid it, ~30 µs a
    # tool every run. The original's invoker stays bound to the original, as ``original`` above is.
    clone = object.__new__(type(tool))
    clone.__dict__.update(tool.__dict__)
    clone.on_invoke_tool = invoke
    return clone


def recorded_agent(h: Harness, agent: Agent[Any], _seen: dict[int, Agent[Any]] | None = None) -> Agent[Any]:
    """A clone of ``agent`` (and of the agents it hands off to) whose function tools are recorded."""
    seen = {} if _seen is None else _seen
    if id(agent) in seen:
        return seen[id(agent)]
    clone = copy.copy(agent)  # agent.clone()'s shallow copy without re-validating every field (~0.1 ms an agent)
    seen[id(agent)] = clone
    clone.tools = [recorded_tool(h, tool) if isinstance(tool, FunctionTool) else tool for tool in agent.tools]
    clone.handoffs = [
        recorded_agent(h, target, seen) if isinstance(target, Agent) else target for target in agent.handoffs
    ]
    return clone


class RecordingHooks(RunHooks[Any]):
    """Run hooks that turn the SDK's agent/turn structure into steps and state transitions."""

    def __init__(self, h: Harness, starting_agent: str, session: SessionWatch | None = None) -> None:
        self.h = h
        self.session = session
        self.agent = starting_agent
        self.turn = 0
        self.handoffs: list[dict[str, str]] = []
        self.calls: dict[str, tuple[str, Any]] = {}  # tool name -> (call id, arguments) of the last response

    async def record(self, context: Any) -> None:
        """Write the run state (and the session's items, when the run has a session) if it changed."""
        state = self.state(context)
        if self.session is not None:
            state["session"] = await self.session.view()
        self.h.record_state(state)

    def state(self, context: Any) -> dict[str, Any]:
        usage = context.usage
        return {
            "agent": self.agent,
            "turn": self.turn,
            "handoffs": list(self.handoffs),
            "context": _json_view(context.context),
            "usage": {
                "requests": usage.requests,
                "input_tokens": usage.input_tokens,
                "output_tokens": usage.output_tokens,
            },
        }

    async def on_agent_start(self, context: Any, agent: Agent[Any]) -> None:
        self.agent = agent.name
        await self.record(context)

    async def on_llm_start(self, context: Any, agent: Agent[Any], system_prompt: Any, input_items: Any) -> None:
        self.turn += 1
        self.h.step_id = f"turn-{self.turn:02d}:{agent.name}"

    async def on_llm_end(self, context: Any, agent: Agent[Any], response: Any) -> None:
        self.calls = {
            item.name: (item.call_id, _arguments(item.arguments))
            for item in response.output
            if getattr(item, "type", None) == "function_call"
        }
        await self.record(context)

    async def on_handoff(self, context: Any, from_agent: Agent[Any], to_agent: Agent[Any]) -> None:
        # The handoff is a tool call the SDK runs itself: recorded as one, so the new agent's
        # first model request hangs from it (and from the model response that asked for it).
        name = Handoff.default_tool_name(to_agent)
        call_id, arguments = self.calls.get(name, (None, {}))

        async def hand_over(copy: Any) -> dict[str, str]:
            return {"handoff_to": to_agent.name}

        await self.h.arecord_tool_call(name, arguments, hand_over, call_id=call_id)
        self.handoffs.append({"from": from_agent.name, "to": to_agent.name, "turn": str(self.turn)})
        self.agent = to_agent.name
        await self.record(context)

    async def on_tool_end(self, context: Any, agent: Agent[Any], tool: Any, result: Any) -> None:
        await self.record(context)


async def run_recorded(
    h: Harness,
    agent: Agent[Any],
    task_input: Any,
    *,
    base_url: str,
    model: str,
    context: Any = None,
    max_turns: int = 10,
    run_config: RunConfig | None = None,
    session: Any = None,
) -> Any:
    """``Runner.run`` with every model call, tool call, turn and handoff recorded through ``h``
    (and the items of ``session``, an SDK ``Session``, in the run state)."""
    check_versions(*DISTRIBUTIONS)
    set_tracing_disabled(True)
    chat_model = OpenAIChatCompletionsModel(model=model, openai_client=async_openai_client(h, base_url))
    config = dataclasses.replace(
        run_config or RunConfig(), model=chat_model, tracing_disabled=True, trace_include_sensitive_data=False
    )
    watch = SessionWatch(session) if session is not None else None
    hooks = RecordingHooks(h, agent.name, watch)
    try:
        return await Runner.run(
            recorded_agent(h, agent),
            task_input,
            context=context,
            hooks=hooks,
            run_config=config,
            max_turns=max_turns,
            session=session,
        )
    finally:
        h.step_id = None
        if watch is not None:
            watch.close()


class SessionWatch:
    """The session's items as the run state holds them, read again only after the session may have changed.

    Reading a ``SQLiteSession`` is a trip to a worker thread (~0.2 ms), and the hooks ask after every turn,
    tool and handoff, while the items change only when the runner saves a turn. For the session classes
    whose items change only through ``add_items``, ``pop_item`` and ``clear_session`` (``WATCHED_SESSIONS``),
    those three are wrapped on the instance for the run (and put back after it), and a call to any of them
    makes the next view read the session again; a read that overlapped such a call is not kept. Any other
    session (a branching ``AdvancedSQLiteSession``, a remote conversation, one of your own) is read every
    time. Limit: a second session object writing the same database during the run is not seen."""

    MUTATORS = ("add_items", "pop_item", "clear_session")

    def __init__(self, session: Any) -> None:
        self.session = session
        self._view: dict[str, Any] | None = None
        self._changes = 0  # calls to a mutator begun so far
        self._changing = 0  # calls to a mutator not finished yet
        self._wrapped: list[str] = []
        if type(session) in WATCHED_SESSIONS:
            for name in self.MUTATORS:
                setattr(session, name, self._marking(getattr(session, name)))
                self._wrapped.append(name)

    def _marking(self, method: Any) -> Any:
        @functools.wraps(method)  # the SDK reads the signature (whether to pass ``wrapper``)
        async def marked(*args: Any, **kwargs: Any) -> Any:
            self._changes += 1
            self._changing += 1
            self._view = None
            try:
                return await method(*args, **kwargs)
            finally:
                self._changing -= 1
                self._view = None

        return marked

    async def view(self) -> dict[str, Any]:
        """``{id, items}`` of the session now (read only: record_state serialises it at once)."""
        if self._view is not None:
            return self._view
        changes = self._changes
        items = await self.session.get_items()
        view = {"id": str(self.session.session_id), "items": _json_view(list(items))}
        if self._wrapped and not self._changing and self._changes == changes:
            self._view = view
        return view

    def close(self) -> None:
        for name in self._wrapped:
            delattr(self.session, name)  # the class's own method shows through again
        self._wrapped.clear()
        self._view = None


def _arguments(text: str) -> Any:
    try:
        return json.loads(text or "{}")
    except ValueError:
        return {"unparsed": text}


def _json_view(value: Any) -> Any:
    """The run context as the journal can hold it: dataclasses and pydantic models as their fields."""
    try:  # the common case (plain JSON, dataclasses of it) in one orjson round trip
        return orjson.loads(orjson.dumps(value))
    except TypeError:
        pass
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(mode="json")
    if isinstance(value, Mapping):
        return {str(key): _json_view(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_view(item) for item in value]
    return f"<{type(value).__qualname__}>"  # no repr: it may hold a memory address

"""Record and strictly replay OpenAI Agents SDK runs (``openai-agents``): the reference is agents_sdk.md.

    from replay_tui.harness.frameworks.agents_sdk import recording

    async def agent(h, task):
        with recording(h):
            result = await Runner.run(triage_agent, task["question"])
        return result.final_output

Inside ``recording(h)`` every ``Runner.run``, ``Runner.run_sync`` and ``Runner.run_streamed`` is recorded,
the ones the SDK starts itself too (an ``Agent.as_tool`` tool's run, a guardrail's agent), from any task
the block starts. The agents, tools, models and hooks are the user's own: nothing is swapped or cloned.
The recorder puts the SDK's own default agent runner behind one that, for a run made inside a recording,

* hands ``Runner`` the user's hooks wrapped in its own (turns, handoffs and the run state) and the
  user's ``RunConfig`` with tracing off (``tracing_disabled``; the trace upload is turned off for the
  process too: it would send the run to OpenAI unrecorded);
* makes the run's models send through the harness's httpx transport: each OpenAI model (the Responses
  API's ``OpenAIResponsesModel``, the SDK's default, or ``OpenAIChatCompletionsModel``) the run resolves
  is used through a copy of itself whose ``AsyncOpenAI`` client is the user's client on the harness's
  transport (``AsyncOpenAI.copy(http_client=...)``), streamed or not;
* records each function tool's call through ``Harness.arecord_tool_call``, its result as the exact text
  (or parts) the SDK puts in front of the model, so the SDK gets the same value in record and replay.

Objects are changed once, in place and only by their invoker (a tool's ``on_invoke_tool``, a handoff's
``on_invoke_handoff``, a guardrail's function, a model's ``get_response``/``stream_response``, a
provider's ``get_model``): each checks whether the calling code is in a recorded run and else calls the
original, so a run outside a recording, in the same process at the same time, runs exactly as before.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import dataclasses
import functools
import inspect
import json
import threading
import uuid
from collections.abc import Mapping
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, AsyncIterator, Awaitable, Callable, Iterator

import orjson
from agents import (
    Agent,
    FunctionTool,
    Handoff,
    ItemHelpers,
    Model,
    OpenAIChatCompletionsModel,
    OpenAIResponsesModel,
    RunConfig,
    RunHooks,
    Runner,
    SQLiteSession,
    set_tracing_disabled,
)
from agents import run as sdk_run
from agents.models.openai_responses import OpenAIResponsesWSModel
from agents.tool import ApplyPatchTool, ComputerTool, CustomTool, LocalShellTool, ShellTool

from ...journal.model import TOOL_RESULT
from ..harness import CURRENT_HARNESS, current_harness
from .common import MissingCredentials, UnrecordableCall, api_key, missing_key_problem
from .versions import check_versions

if TYPE_CHECKING:
    from ..harness import Harness

DISTRIBUTIONS = ("openai-agents",)
#: Sessions whose items change only through add_items, pop_item and clear_session (see ``SessionWatch``).
WATCHED_SESSIONS: tuple[type, ...] = (SQLiteSession,)
#: Tools the SDK runs on this machine outside a function tool's invoker: a replay would run them live.
LOCAL_TOOLS: tuple[type, ...] = (ComputerTool, LocalShellTool, ApplyPatchTool, CustomTool)

#: What each replaced invoker keeps of the original (set on the object; its presence means "done").
_ORIGINAL = "_replay_tui_original"
#: A function tool whose body runs agents itself (``runs_agents``): its body runs in a replay too.
_RUNS_AGENTS = "_replay_tui_runs_agents"
#: A model copy on the harness's transport (never copied again).
_RECORDED_MODEL = "_replay_tui_recorded"

_RECORDING: ContextVar[_Recording | None] = ContextVar("replay_tui_agents_sdk_recording", default=None)
_RUN: ContextVar[_Run | None] = ContextVar("replay_tui_agents_sdk_run", default=None)
#: What a run started here is for: ``turn-01:orchestrator/translate`` (an agent tool), ``input_guardrail:x``.
_ORIGIN: ContextVar[str | None] = ContextVar("replay_tui_agents_sdk_origin", default=None)
#: The recorded tool whose body is running here (a run started in it could not be replayed).
_LEAF_TOOL: ContextVar[str | None] = ContextVar("replay_tui_agents_sdk_leaf_tool", default=None)

# -- the public API -------------------------------------------------------------------------------------


@contextlib.contextmanager
def recording(h: Harness | None = None) -> Iterator[None]:
    """Record every Agents SDK run made in this block, and in the tasks it starts (threads too, when started
    with the block's context: ``asyncio.to_thread``), through ``h`` (default: ``current_harness()``, the run
    or session the calling code belongs to). Once a recording was made in the process, a ``Runner`` call in
    a recorded run but outside the block fails with ``UnrecordableCall``."""
    check_versions(*DISTRIBUTIONS)
    harness = h if h is not None else current_harness()
    set_tracing_disabled(True)  # the SDK's trace upload would send the run to OpenAI, unrecorded
    _install_runner()
    _route_mcp()
    token = _RECORDING.set(_Recording(harness))
    try:
        yield
    finally:
        _RECORDING.reset(token)


def runs_agents(tool: FunctionTool) -> FunctionTool:
    """Mark a function tool whose body runs agents itself (``await Runner.run(...)`` inside): its call is
    recorded as a tool call around its runs, and a replay runs its body, whose model calls and tools are
    served from the journal. A body that does anything else the journal does not hold must not be marked.
    ``Agent.as_tool`` tools need no mark."""
    setattr(tool, _RUNS_AGENTS, True)
    return tool


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
    """``Runner.run`` recorded, on **chat completions**: every agent of the run talks to ``model`` at
    ``base_url`` through one ``OpenAIChatCompletionsModel`` (the run's ``RunConfig.model``), whatever model
    the agents name. To record the agents on their own models (the Responses API by default), call
    ``Runner.run`` inside ``recording(h)`` instead."""
    chat_model = OpenAIChatCompletionsModel(
        model=model, openai_client=_openai_client(base_url=base_url, api_key=api_key())
    )
    config = dataclasses.replace(run_config or RunConfig(), model=chat_model)
    with recording(h):
        return await Runner.run(
            agent, task_input, context=context, max_turns=max_turns, run_config=config, session=session
        )


def _openai_client(**options: Any) -> Any:
    from openai import AsyncOpenAI, DefaultAsyncHttpxClient

    from ..httpx_transport import plain_async_client

    # no retries: each would be another exchange to serve; the SDK's default client, on the shared SSL context
    return AsyncOpenAI(max_retries=0, http_client=plain_async_client(DefaultAsyncHttpxClient), **options)


# -- the runner ------------------------------------------------------------------------------------------


_install_lock = threading.Lock()
_mcp_routed = False


def _install_runner() -> None:
    """Put ``_RecordingRunner`` in front of the SDK's default agent runner (once; again if it was replaced),
    and make the run grouping id the SDK draws go through the harness."""
    with _install_lock:
        current = sdk_run.get_default_agent_runner()
        if not isinstance(current, _RecordingRunner):
            sdk_run.set_default_agent_runner(_RecordingRunner(current))  # type: ignore[arg-type]
        _draw_grouping_ids_through_the_harness()


def _route_mcp() -> None:
    """Route the SDK's MCP servers' transports through the MCP recorder (mcp.md), once per process: the sessions
    an agent's ``mcp_servers`` open in a recorded run are recorded at the MCP seam, and a replay answers them
    from the journal without starting a server. Without the ``mcp`` package there are no MCP servers to route."""
    global _mcp_routed
    with _install_lock:
        if _mcp_routed:
            return
        with contextlib.suppress(ImportError):
            from .mcp import install

            install()
        _mcp_routed = True


def _draw_grouping_ids_through_the_harness() -> None:
    """The SDK draws a ``uuid4`` per run for the ``prompt_cache_key`` it puts in each Responses request to
    OpenAI's own endpoint (``agents-sdk:run:<hex>``, when the run has no session, group or conversation id):
    inside a recorded run it is the harness's ``ids.uuid4()`` (a ``random.draw`` a replay serves), so the
    replayed requests are the recorded ones."""
    from agents.run_internal import run_grouping

    grouping: Any = run_grouping  # (its uuid4 is the name it imported)
    if _ORIGINAL in vars(grouping.uuid4):
        return
    original = grouping.uuid4

    def uuid4() -> uuid.UUID:
        run = _RUN.get()
        return original() if run is None else uuid.UUID(run.h.ids.uuid4())

    setattr(uuid4, _ORIGINAL, original)
    grouping.uuid4 = uuid4


class _RecordingRunner:
    """The SDK's agent runner, with each run made inside ``recording`` recorded (``Runner.run``, ``run_sync``
    and ``run_streamed`` all come here through the SDK's default runner)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    async def run(self, starting_agent: Any, input: Any, **options: Any) -> Any:
        run = _begin_run(starting_agent, input, options)
        if run is None:
            return await self.inner.run(starting_agent, input, **options)
        with _whole_run(run):
            return await self.inner.run(starting_agent, input, **run.options(options))

    def run_sync(self, starting_agent: Any, input: Any, **options: Any) -> Any:
        run = _begin_run(starting_agent, input, options)
        if run is None:
            return self.inner.run_sync(starting_agent, input, **options)
        with _whole_run(run):  # the run's task copies the context it is made in
            return self.inner.run_sync(starting_agent, input, **run.options(options))

    def run_streamed(self, starting_agent: Any, input: Any, **options: Any) -> Any:
        run = _begin_run(starting_agent, input, options)
        if run is None:
            return self.inner.run_streamed(starting_agent, input, **options)
        with _running(run):  # the run loop's task, made in there, keeps it
            result = self.inner.run_streamed(starting_agent, input, **run.options(options))
        task = getattr(result, "run_loop_task", None)
        if task is not None:
            task.add_done_callback(lambda _task: run.close())
        events = result.stream_events

        async def stream_events() -> AsyncIterator[Any]:
            async with contextlib.aclosing(events()) as relayed:
                async for event in relayed:  # each event as the SDK hands it over, nothing held back
                    yield event
            run.check()

        result.stream_events = stream_events
        return result


@contextlib.contextmanager
def _running(run: _Run) -> Iterator[None]:
    """The calling code is in ``run`` (and not in the tool or guardrail that started it)."""
    tokens = (_RUN.set(run), _ORIGIN.set(None), _LEAF_TOOL.set(None))
    try:
        yield
    finally:
        _LEAF_TOOL.reset(tokens[2])
        _ORIGIN.reset(tokens[1])
        _RUN.reset(tokens[0])


@contextlib.contextmanager
def _whole_run(run: _Run) -> Iterator[None]:
    """A run from its start to its end: the calling code in it, then closed, then checked."""
    try:
        with _running(run):
            yield
    finally:
        run.close()
    run.check()


def _begin_run(starting_agent: Any, input: Any, options: Mapping[str, Any]) -> _Run | None:
    """The recorded run a ``Runner`` call makes here, or None outside a recording."""
    recording = _RECORDING.get()
    if recording is None:
        if CURRENT_HARNESS.get() is not None:  # a recorded run, and this Runner call would go out unrecorded
            raise UnrecordableCall(
                f"Runner call of agent {getattr(starting_agent, 'name', starting_agent)!r} outside "
                "`with recording(h):` in a recorded run: its model calls would not be recorded (and would go "
                "out live in a replay); make the call inside the block"
            )
        return None
    parent, origin = _RUN.get(), _ORIGIN.get()
    leaf = _LEAF_TOOL.get()
    if leaf is not None and origin is None:
        recording.problem(
            f"function tool {leaf!r} runs an agent (Runner.run) in its body: a replay serves the tool's "
            "recorded result without running it, so its agent's calls could not be replayed; use Agent.as_tool, "
            "or mark the tool with replay_tui.harness.frameworks.agents_sdk.runs_agents(tool)"
        )
    agent = getattr(input, "_current_agent", None) or starting_agent  # a RunState resumes its own agent
    recording.prepare_agent(agent)
    if agent is not starting_agent:
        recording.prepare_agent(starting_agent)
    label, prefix = recording.name_run(parent, origin)
    return _Run(recording, label, prefix, parent, agent.name, options.get("session"))


# -- one recording ----------------------------------------------------------------------------------------


class _Recording:
    """What the runs of one ``recording`` block share: the harness, run names, the recorded OpenAI clients,
    and the problems that fail the recording."""

    def __init__(self, h: Harness) -> None:
        self.h = h
        self._names: set[str] = set()
        self._top_level = 0
        self._clients: dict[int, tuple[Any, Any]] = {}  # id(user's client) -> (it, its copy on the transport)
        self._models: dict[int, tuple[Any, Any]] = {}  # id(user's model) -> (it, its recorded copy)
        self._problems: list[str] = []
        self._lock = threading.Lock()  # run_sync from several threads

    def problem(self, text: str) -> None:
        with self._lock:
            if text not in self._problems:
                self._problems.append(text)

    def problems(self) -> list[str]:
        with self._lock:
            return list(self._problems)

    def name_run(self, parent: _Run | None, origin: str | None) -> tuple[str, str]:
        """(name, step prefix): ``run-01`` (steps ``turn-NN:Agent``), ``run-02`` (``run-02/turn-NN:Agent``),
        a run started by a tool or guardrail after it (``turn-01:Orchestrator/translate/turn-NN:Agent``)."""
        with self._lock:
            if origin is None and parent is None:
                self._top_level += 1
                name = f"run-{self._top_level:02d}"
                return name, "" if self._top_level == 1 else f"{name}/"
            if origin is None:
                assert parent is not None
                parent.nested += 1
                origin = f"{parent.step or parent.label}/run-{parent.nested:02d}"
            name, number = origin, 1
            while name in self._names:
                number += 1
                name = f"{origin}#{number}"
            self._names.add(name)
            return name, f"{name}/"

    # -- what a run reaches, made to record -------------------------------------------------------------

    def prepare_agent(self, agent: Any, seen: set[int] | None = None) -> None:
        """Make every invoker ``agent`` and the agents it reaches (handoffs, agent tools) can call record."""
        seen = set() if seen is None else seen
        if id(agent) in seen or not isinstance(agent, Agent):
            return
        seen.add(id(agent))
        if isinstance(agent.model, Model):
            _patch_model(agent.model)
        for tool in agent.tools:
            if isinstance(tool, FunctionTool):
                _patch_tool(tool)
                inner = getattr(tool, "_agent_instance", None)
                if inner is not None:
                    self.prepare_agent(inner, seen)
            elif isinstance(tool, LOCAL_TOOLS) or (isinstance(tool, ShellTool) and tool.executor is not None):
                raise UnrecordableCall(
                    f"agent {agent.name!r}: the {type(tool).__name__} {getattr(tool, 'name', '')!r} runs on this "
                    "machine and is not recorded (a replay would run it live)"
                )
        for target in agent.handoffs:
            if isinstance(target, Handoff):
                _patch_handoff(target)
                ref = target._agent_ref() if target._agent_ref is not None else None  # noqa: SLF001
                if ref is not None:
                    self.prepare_agent(ref, seen)
            else:
                self.prepare_agent(target, seen)
        for checking_input in agent.input_guardrails:
            _patch_guardrail(checking_input, "input_guardrail")
        for checking_output in agent.output_guardrails:
            _patch_guardrail(checking_output, "output_guardrail")
        self._prepare_mcp(agent)

    def prepare_config(self, config: RunConfig) -> None:
        _patch_provider(config.model_provider)
        if isinstance(config.model, Model):
            _patch_model(config.model)
        for checking_input in config.input_guardrails or ():
            _patch_guardrail(checking_input, "input_guardrail")
        for checking_output in config.output_guardrails or ():
            _patch_guardrail(checking_output, "output_guardrail")

    def _prepare_mcp(self, agent: Agent[Any]) -> None:
        """Each MCP server of the agent must talk through a session the MCP recorder records or replays for this
        harness (its tools are the SDK's own, left as they are: their calls are recorded at that session, once)."""
        for server in getattr(agent, "mcp_servers", None) or ():
            problem = _unrecorded_mcp_server(server, self.h)
            if problem is not None:
                name = getattr(server, "name", type(server).__name__)
                raise UnrecordableCall(
                    f"agent {agent.name!r}: the MCP server {name!r} ({type(server).__name__}) {problem}: its calls "
                    "would go out unrecorded and run live in a replay"
                )

    # -- models ------------------------------------------------------------------------------------------

    def recorded_model(self, model: Any, *, keep: bool = False) -> Any:
        """``model`` as the run uses it while recorded: a copy of it (the same class, settings and client
        options) whose OpenAI client sends through the harness's transport; ``keep``: the user's own model
        object, whose copy serves every call (a provider makes a new model each turn)."""
        if getattr(model, _RECORDED_MODEL, False):
            return model
        with self._lock:
            kept = self._models.get(id(model))
        if kept is not None and kept[0] is model:
            return kept[1]
        supported = isinstance(model, (OpenAIResponsesModel, OpenAIChatCompletionsModel))
        if not supported or isinstance(model, OpenAIResponsesWSModel):
            raise UnrecordableCall(
                f"the model {type(model).__name__} ({getattr(model, 'model', '?')!r}) is not recorded: the Agents "
                "SDK recorder records OpenAI clients (OpenAIResponsesModel, the default, and "
                "OpenAIChatCompletionsModel) over HTTP"
            )
        client = model._client  # noqa: SLF001 (both models keep their AsyncOpenAI there)
        if client is None:
            client = model._get_client()  # noqa: SLF001 (the SDK's own default client)
        recorded = copy.copy(model)
        for name in _MODEL_INVOKERS:
            recorded.__dict__.pop(name, None)  # the class's own methods, not the dispatchers ``_patch_model`` set
        recorded._client = self._client(client)  # noqa: SLF001
        _name_steps(recorded)
        setattr(recorded, _RECORDED_MODEL, True)
        if keep:
            with self._lock:
                self._models[id(model)] = (model, recorded)
        return recorded

    def _client(self, client: Any) -> Any:
        """The user's client on the harness's transport, which sends through the transport the client had (its
        proxies and certificates); a client already on this harness's transport as it is."""
        from ..httpx_transport import async_http_client

        with self._lock:
            kept = self._clients.get(id(client))
            if kept is not None and kept[0] is client:
                return kept[1]
        live = getattr(getattr(client, "_client", None), "_transport", None)  # (the SDK's httpx client's)
        if getattr(live, "harness", None) is self.h:
            return client
        inner = getattr(live, "inner", live) if hasattr(live, "harness") else live  # (another harness's: its own)
        recorded = client.copy(http_client=async_http_client(self.h, inner=inner))
        with self._lock:
            self._clients[id(client)] = (client, recorded)
        return recorded


# -- one run -----------------------------------------------------------------------------------------------


class _Run:
    """One ``Runner`` call being recorded: its name, its steps (one per model call), its part of the run
    state, and how its tools, handoffs and nested runs are recorded."""

    def __init__(
        self, recording: _Recording, label: str, prefix: str, parent: _Run | None, agent: str, session: Any
    ) -> None:
        self.recording = recording
        self.h = recording.h
        self.label = label
        self.prefix = prefix
        self.parent = parent
        self.agent = agent
        self.turn = 0
        self.step: str | None = f"{prefix}turn-01:{agent}"
        self.nested = 0  # runs started inside this one without a known origin
        self.handoffs: list[dict[str, str]] = []
        self.calls: dict[str, tuple[str, Any]] = {}  # tool name -> (call id, arguments) of the last response
        self.handed: set[str] = set()  # agents handed over to by a Handoff object, which recorded it
        self.written: dict[str, Any] | None = None  # the part of the run state written last
        self.usage = {"requests": 0, "input_tokens": 0, "output_tokens": 0}  # of this run's own answers
        self.session = SessionWatch(session) if session is not None else None

    def options(self, options: Mapping[str, Any]) -> dict[str, Any]:
        """The ``Runner`` options the SDK gets: the user's, with the recorder's hooks and tracing off."""
        config = options.get("run_config")
        if isinstance(config, Mapping):
            config = RunConfig(**config)
        config = dataclasses.replace(config or RunConfig(), tracing_disabled=True)
        self.recording.prepare_config(config)
        return {**options, "run_config": config, "hooks": _Hooks(self, options.get("hooks"))}

    def close(self) -> None:
        if self.session is not None:
            self.session.close()
            self.session = None

    def check(self) -> None:
        """Fail a top-level run whose recording saw a call it could not record."""
        problems = self.recording.problems() if self.parent is None else []
        if problems:
            raise UnrecordableCall("; ".join(problems))

    def name_step(self) -> None:
        self.h.step_id = self.step

    def begin_turn(self, agent: Agent[Any]) -> None:
        self.turn += 1
        self.agent = agent.name
        self.step = f"{self.prefix}turn-{self.turn:02d}:{agent.name}"
        self.name_step()

    async def record_state(self, context: Any) -> None:
        """Write this run's part of the run state (``runs.NAME``) if it changed: runs beside it (parallel runs, a
        guardrail's agent, agent tools called at once) write their own parts, each in its turn.

        A part holds only what its own flow made, so a replay writes it alike whatever the other flows did
        meanwhile: the usage of its own answers (the SDK sums an agent tool's into its caller's), and for a
        top-level run the run context, read between turns, when none of its tools is running (a nested run
        shares its caller's context with tools that may be running beside it)."""
        part: dict[str, Any] = {
            "agent": self.agent,
            "turn": self.turn,
            "handoffs": list(self.handoffs),
            "usage": dict(self.usage),
        }
        if self.parent is None:
            part["context"] = _json_view(context.context)
        if self.session is not None:
            part["session"] = await self.session.view()
        if part == self.written:
            return
        self.written = part
        self.name_step()
        await self.h.arecord_state_member(("runs", self.label), part)

    def add_usage(self, usage: Any) -> None:
        for name in self.usage:
            self.usage[name] += getattr(usage, name, 0) or 0

    # -- tools ----------------------------------------------------------------------------------------

    async def call_tool(self, tool: FunctionTool, original: Any, context: Any, input_json: str) -> Any:
        """A function tool's call, recorded; the SDK gets the text (or parts) the model is sent, in record
        and in replay."""
        name = getattr(context, "tool_name", None) or tool.name
        call_id = getattr(context, "tool_call_id", None)
        arguments = _arguments(input_json)

        async def body() -> Any:
            return _model_text(tool, context, input_json, await original(context, input_json))

        self.name_step()
        if getattr(tool, "_is_agent_tool", False) or getattr(tool, _RUNS_AGENTS, False):
            return await self._call_running_agents(name, arguments, call_id, body)

        async def live(_copy: Any) -> Any:
            token = _LEAF_TOOL.set(name)
            before = _context_view(context)
            try:
                return _with_context_change(await body(), before, context)
            finally:
                _LEAF_TOOL.reset(token)

        served = self._served(await self.h.arecord_tool_call(name, arguments, live, call_id=call_id), context)
        return _as_tool_output(served)

    def _served(self, result: Any, context: Any) -> Any:
        """What a recorded call hands back: its result, after putting the run context as the call left it
        (a replay did not run it; recording, the context is that already)."""
        if not isinstance(result, Mapping) or _CONTEXT_AFTER not in result:
            return result
        if TOOL_RESULT in self.h.sources:
            _restore_context(context, result[_CONTEXT_AFTER])
        return result.get("output")

    async def _call_running_agents(
        self, name: str, arguments: Any, call_id: str | None, body: Callable[[], Awaitable[Any]]
    ) -> Any:
        """A tool whose body runs agents: tool.call, the runs, tool.result. While recording the body runs
        inside the call; in a strict replay the result is served and the body runs beside it, its model calls
        and tools served at their recorded turns (after the tool.call, before the tool.result)."""
        h, step = self.h, self.step
        token = _ORIGIN.set(f"{step}/{name}")
        try:
            if TOOL_RESULT not in h.sources:
                return _as_tool_output(
                    await h.arecord_tool_call(name, arguments, lambda _copy: body(), call_id=call_id)
                )

            async def served() -> Any:
                h.step_id = step
                return await h.arecord_tool_call(name, arguments, _not_run, call_id=call_id)

            result = asyncio.ensure_future(served())
            runs = asyncio.ensure_future(body())
            done, _pending = await asyncio.wait((result, runs), return_when=asyncio.FIRST_EXCEPTION)
            failure = runs.exception() if runs in done else None
            if failure is not None and not result.done():  # (a divergence in the runs stops the replay)
                result.cancel()
                await asyncio.gather(result, return_exceptions=True)
                raise failure
            await asyncio.gather(runs, return_exceptions=True)
            return _as_tool_output(await result)
        finally:
            _ORIGIN.reset(token)

    # -- handoffs -------------------------------------------------------------------------------------

    async def hand_off(self, handoff: Handoff[Any, Any], original: Any, context: Any, input_json: str) -> Any:
        """A ``handoff(...)`` object's invocation (its ``on_handoff`` callback, its input), recorded as the tool
        call the model made; a replay serves it and hands over to the agent the handoff was made for."""
        name = handoff.tool_name
        call_id, _arguments_seen = self.calls.get(name, (None, None))
        reached: list[Any] = []

        async def live(_copy: Any) -> Any:
            before = _context_view(context)
            agent = await original(context, input_json)
            reached.append(agent)
            return _with_context_change({"handoff_to": agent.name}, before, context)

        self.name_step()
        outcome = self._served(
            await self.h.arecord_tool_call(name, _arguments(input_json), live, call_id=call_id), context
        )
        if reached:
            agent = reached[0]
        else:
            agent = handoff._agent_ref() if handoff._agent_ref is not None else None  # noqa: SLF001
            wanted = outcome.get("handoff_to") if isinstance(outcome, Mapping) else None
            if agent is None or agent.name != wanted:
                raise UnrecordableCall(
                    f"handoff {name!r}: the journal hands over to {wanted!r}, and this Handoff does not name that "
                    "agent (build it with handoff(agent, ...))"
                )
        self.recording.prepare_agent(agent)
        self.handed.add(agent.name)
        return agent

    async def record_handoff(self, context: Any, from_agent: Agent[Any], to_agent: Agent[Any]) -> None:
        if to_agent.name in self.handed:  # its Handoff object recorded it
            self.handed.discard(to_agent.name)
        else:
            # An agent handed over as itself (no Handoff object): the SDK runs the handoff, recorded as the
            # tool call it is, so the new agent's first request hangs from it.
            name = Handoff.default_tool_name(to_agent)
            call_id, arguments = self.calls.get(name, (None, {}))

            async def hand_over(_copy: Any) -> dict[str, str]:
                return {"handoff_to": to_agent.name}

            self.name_step()
            await self.h.arecord_tool_call(name, arguments, hand_over, call_id=call_id)
        self.handoffs.append({"from": from_agent.name, "to": to_agent.name, "turn": str(self.turn)})
        self.agent = to_agent.name
        self.step = f"{self.prefix}turn-{self.turn + 1:02d}:{to_agent.name}"
        await self.record_state(context)


class _Hooks(RunHooks[Any]):
    """The recorder's run hooks around the user's (theirs are called after, with the same arguments)."""

    def __init__(self, run: _Run, user: Any) -> None:
        self.run = run
        self.user = user

    async def on_agent_start(self, context: Any, agent: Any) -> None:
        self.run.agent = agent.name
        await self.run.record_state(context)
        if self.user is not None:
            await self.user.on_agent_start(context, agent)

    async def on_agent_end(self, context: Any, agent: Any, output: Any) -> None:
        if self.user is not None:
            await self.user.on_agent_end(context, agent, output)

    async def on_llm_start(self, context: Any, agent: Any, system_prompt: Any, input_items: Any) -> None:
        self.run.begin_turn(agent)
        if self.user is not None:
            await self.user.on_llm_start(context, agent, system_prompt, input_items)

    async def on_llm_end(self, context: Any, agent: Any, response: Any) -> None:
        self.run.add_usage(response.usage)
        self.run.calls = {
            item.name: (item.call_id, _arguments(item.arguments))
            for item in response.output
            if getattr(item, "type", None) == "function_call"
        }
        await self.run.record_state(context)
        if self.user is not None:
            await self.user.on_llm_end(context, agent, response)

    async def on_handoff(self, context: Any, from_agent: Any, to_agent: Any) -> None:
        await self.run.record_handoff(context, from_agent, to_agent)
        if self.user is not None:
            await self.user.on_handoff(context, from_agent, to_agent)

    async def on_tool_start(self, context: Any, agent: Any, tool: Any) -> None:
        if self.user is not None:
            await self.user.on_tool_start(context, agent, tool)

    async def on_tool_end(self, context: Any, agent: Any, tool: Any, result: Any) -> None:
        # (no state here: the other tools of the turn may be running; what a tool did to the context is in its
        # result, and in the run state from the next turn on)
        if self.user is not None:
            await self.user.on_tool_end(context, agent, tool, result)


# -- the invokers, replaced in place ----------------------------------------------------------------------


def _patch_tool(tool: FunctionTool) -> None:
    _replace_invoker(tool, "on_invoke_tool", lambda run, original, *call: run.call_tool(tool, original, *call))


def _patch_handoff(handoff: Handoff[Any, Any]) -> None:
    _replace_invoker(handoff, "on_invoke_handoff", lambda run, original, *call: run.hand_off(handoff, original, *call))


def _replace_invoker(target: Any, attribute: str, recorded: Callable[..., Awaitable[Any]]) -> None:
    """``target.attribute(context, input_json)`` goes to ``recorded(run, original, context, input_json)`` inside
    a recorded run, to the original anywhere else (once per object)."""
    if _ORIGINAL in vars(target):
        return
    original = getattr(target, attribute)

    async def invoke(context: Any, input_json: str) -> Any:
        run = _RUN.get()
        if run is None:
            return await original(context, input_json)
        return await recorded(run, original, context, input_json)

    setattr(target, attribute, invoke)
    setattr(target, _ORIGINAL, original)


def _patch_guardrail(guardrail: Any, kind: str) -> None:
    """A guardrail names the runs it starts (``input_guardrail:NAME``), so their steps say whose they are."""
    if _ORIGINAL in vars(guardrail):
        return
    original = guardrail.guardrail_function
    name = guardrail.get_name()

    def origin() -> Any:
        run = _RUN.get()
        return None if run is None else _ORIGIN.set(f"{run.prefix}{kind}:{name}")

    if inspect.iscoroutinefunction(original):

        @functools.wraps(original)
        async def guarded(*args: Any, **kwargs: Any) -> Any:
            token = origin()
            try:
                return await original(*args, **kwargs)
            finally:
                if token is not None:
                    _ORIGIN.reset(token)

    else:

        @functools.wraps(original)
        def guarded(*args: Any, **kwargs: Any) -> Any:
            token = origin()
            try:
                return original(*args, **kwargs)
            finally:
                if token is not None:
                    _ORIGIN.reset(token)

    guardrail.guardrail_function = guarded
    setattr(guardrail, _ORIGINAL, original)


_MODEL_INVOKERS = ("get_response", "stream_response")


def _patch_model(model: Model) -> None:
    """A user's model object: inside a recorded run its calls go to its recorded copy."""
    if _ORIGINAL in vars(model) or getattr(model, _RECORDED_MODEL, False):
        return
    get_response, stream_response = model.get_response, model.stream_response

    async def dispatch_response(*args: Any, **kwargs: Any) -> Any:
        recording = _RECORDING.get() if _RUN.get() is not None else None
        if recording is None:
            return await get_response(*args, **kwargs)
        return await recording.recorded_model(model, keep=True).get_response(*args, **kwargs)

    async def dispatch_stream(*args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        recording = _RECORDING.get() if _RUN.get() is not None else None
        target: Any = (
            stream_response if recording is None else recording.recorded_model(model, keep=True).stream_response
        )
        async with contextlib.aclosing(target(*args, **kwargs)) as events:
            async for event in events:
                yield event

    model.get_response = dispatch_response  # type: ignore[method-assign]
    model.stream_response = dispatch_stream  # type: ignore[method-assign]
    setattr(model, _ORIGINAL, (get_response, stream_response))


def _name_steps(model: Any) -> None:
    """A recorded model copy names the calling run's step right before each request goes out: the step a
    hook named may since have been renamed by a run beside it (a guardrail's agent)."""
    get_response, stream_response = model.get_response, model.stream_response

    async def stepped_response(*args: Any, **kwargs: Any) -> Any:
        run = _RUN.get()
        if run is not None:
            run.name_step()
        return await get_response(*args, **kwargs)

    async def stepped_stream(*args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        run = _RUN.get()
        if run is not None:
            run.name_step()
        async with contextlib.aclosing(stream_response(*args, **kwargs)) as events:
            async for event in events:
                yield event

    model.get_response = stepped_response
    model.stream_response = stepped_stream


def _patch_provider(provider: Any) -> None:
    """A model provider: inside a recorded run the models it gives are their recorded copies."""
    if _ORIGINAL in vars(provider):
        return
    get_model = provider.get_model

    def dispatch(model_name: str | None) -> Any:
        recording = _RECORDING.get() if _RUN.get() is not None else None
        if recording is None:
            return get_model(model_name)
        try:
            model = get_model(model_name)
        except Exception as error:
            problem = missing_key_problem(error)
            if problem is None:
                raise
            raise MissingCredentials(f"recording the Agents SDK model {model_name!r}: {problem}") from None
        return recording.recorded_model(model)

    provider.get_model = dispatch
    setattr(provider, _ORIGINAL, get_model)


def _unrecorded_mcp_server(server: Any, h: Harness) -> str | None:
    """Why ``server``'s calls would not be recorded through ``h``, or None: a server not connected yet has no
    session (the SDK refuses to list its tools, alike in record and replay)."""
    if not hasattr(server, "session"):
        return "keeps no mcp.ClientSession the recorder can see"
    if server.session is None:
        return None
    from .mcp import recording_harness

    recorded_by = recording_harness(server.session)
    if recorded_by is h:
        return None
    if recorded_by is not None:
        return "was connected in another recorded run"
    return (
        "was connected outside the recorded run (connect it inside, with `async with server:` around the run) or "
        "over a transport the MCP recorder does not route (stdio and streamable HTTP are routed)"
    )


async def _not_run(_copy: Any) -> Any:
    raise AssertionError("a strict replay serves this tool's result")  # (never called: the result is served)


# -- values -----------------------------------------------------------------------------------------------


def _model_text(tool: FunctionTool, context: Any, input_json: str, output: Any) -> Any:
    """What the SDK puts in front of the model for ``output``: the text (``str(value)`` for a plain value, the
    JSON of a typed output) or the list of parts (text, image, file), as ``ItemHelpers.tool_call_output_item``
    makes it; handed back to the SDK, it makes the same text again. Keys keep their order: it is text."""
    tool_call = getattr(context, "tool_call", None)
    if tool_call is None:
        from openai.types.responses import ResponseFunctionToolCall

        tool_call = ResponseFunctionToolCall(
            arguments=input_json,
            call_id=getattr(context, "tool_call_id", None) or "",
            name=tool.name,
            type="function_call",
        )
    try:
        item = ItemHelpers.tool_call_output_item(
            tool_call,
            output,
            output_json_schema=tool.output_json_schema,
            output_type_adapter=getattr(tool, "_output_type_adapter", None),
        )
    except Exception:  # (the SDK raises it again itself, on the value it is handed back)
        return output
    return item["output"]


#: A recorded result's key for the run context as the call left it (a tool's model text is never a mapping).
_CONTEXT_AFTER = "context_after"


def _context_view(context: Any) -> Any:
    return _json_view(getattr(context, "context", None))


def _with_context_change(output: Any, before: Any, context: Any) -> Any:
    """``output``, or ``{output, context_after}`` when the call changed the run context (the SDK's way for
    tools and handoffs to share state: the airline example's ``update_seat``): a replay serves the result
    and puts the context as it was left, since it does not run the call."""
    after = _context_view(context)
    return output if after == before else {"output": output, _CONTEXT_AFTER: after}


def _restore_context(context: Any, view: Any) -> None:
    """Make the run context ``view`` (its recorded JSON form): a mapping's items, a pydantic model's or a
    dataclass's fields (each validated back to its declared type)."""
    target = getattr(context, "context", None)
    if isinstance(target, dict) and isinstance(view, Mapping):
        target.clear()
        target.update(view)
        return
    if target is None or not isinstance(view, Mapping):
        raise UnrecordableCall(f"the run context {type(target).__name__} cannot be put back as the journal holds it")
    from pydantic import TypeAdapter

    rebuilt = TypeAdapter(type(target)).validate_python(dict(view))
    for name in view:
        setattr(target, name, getattr(rebuilt, name))


#: A part the model is sent (``input_text``...) -> the tool output the SDK makes it from (``ToolOutputText``...).
_PART_SOURCES = {"input_text": "text", "input_image": "image", "input_file": "file"}


def _as_tool_output(recorded: Any) -> Any:
    """The value to hand the SDK for a recorded model text: the text itself, or for parts the SDK's own tool
    outputs (``{"type": "text", ...}``), which it turns into those very parts again."""
    if not isinstance(recorded, list):
        return recorded
    return [
        {**part, "type": _PART_SOURCES[part["type"]]}
        if isinstance(part, Mapping) and part.get("type") in _PART_SOURCES
        else part
        for part in recorded
    ]


def _arguments(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text or "{}")
    except ValueError:
        return {"unparsed": text}
    return value if isinstance(value, dict) else {"value": value}


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


# -- sessions ---------------------------------------------------------------------------------------------


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
        if type(session) in WATCHED_SESSIONS and not any(name in vars(session) for name in self.MUTATORS):
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

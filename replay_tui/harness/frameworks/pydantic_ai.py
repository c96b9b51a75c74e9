"""Record and strictly replay PydanticAI runs (``pydantic-ai-slim[openai,anthropic]``): every run form, the
user's own calls, one capability added. Reference: pydantic_ai.md beside this file.

    from replay_tui.harness.frameworks.pydantic_ai import recording

    result = await agent.run(prompt, capabilities=[recording()])
    result = agent.run_sync(prompt, capabilities=[recording()])
    async with agent.run_stream(prompt, capabilities=[recording()]) as streamed: ...
    async with agent.iter(prompt, capabilities=[recording()]) as run: ...

``recording()`` records into the harness of the run or session the calling code belongs to
(``current_harness()``), or into the one it is given. What it records, all through PydanticAI's
capability hooks:

* model calls: the run's model, as the user built it, sends through the harness's httpx transport
  (pydantic_ai_models.py): ``model.request`` before it goes out, ``model.response`` when it arrives or,
  streamed, when the stream ends, the stream passing through to the caller as it arrives;
* tools: each call to a function tool is ``tool.call``/``tool.result`` (``Harness.arecord_tool_call``),
  its return recorded as the text PydanticAI sends the model and rebuilt from it, in the recording as
  in a replay (pydantic_ai_results.py); a replay serves it and the tool function is not run. Concurrent
  tool calls run concurrently, each result written when it arrives;
* MCP: an ``MCPToolset``'s sessions are recorded at the MCP seam (``frameworks.mcp``, routed by this module),
  its tool calls passing through; the model its server samples (``sampling_model``) sends through the harness;
* delegation: a tool whose code names another agent (PydanticAI's agent delegation) runs its code in a
  replay too: ``tool.call``/``tool.result`` say it delegates, and the delegate's own run, recorded by its
  own ``recording()``, hangs from them;
* turns: each model request opens the step ``turn-NN:<agent>`` (``turn-00`` before the first); a run of
  the same agent started while one is recorded is ``<agent>#2``, and so on;
* run state: ``{run, turn, node, usage, output_validation_failures}`` as ``state.transition`` after each
  graph node that changed it, and a failed output validation (the model is asked again) the moment it fails;
* ids: the run id is drawn through the harness (``random.draw``), and the conversation id derived from it.
"""

from __future__ import annotations

import contextvars
import functools
import inspect
import sys
import threading
import types
import weakref
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from pydantic import ValidationError
from pydantic_ai import Agent
from pydantic_ai.agent import AbstractAgent
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.durable_exec import conversation_id_from_run_id
from pydantic_ai.exceptions import ApprovalRequired, CallDeferred, ModelRetry, ToolRetryError
from pydantic_ai.messages import tool_return_ta
from pydantic_ai.models import Model
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider
from pydantic_ai.toolsets import AbstractToolset, WrapperToolset
from pydantic_core import PydanticSerializationError

from ...journal.errors import SchemaError
from ...journal.model import TOOL_RESULT
from ..harness import CURRENT_HARNESS, HarnessError
from ..httpx_transport import default_httpx_module, plain_async_client
from .common import api_key
from .pydantic_ai_models import recorded_model
from .pydantic_ai_results import (
    NotRecordable,
    deferral_form,
    json_arguments,
    rebuilt_error,
    recorded_form,
    served_value,
)
from .versions import check_versions

if TYPE_CHECKING:
    from ...journal import Event
    from ..harness import Harness
    from ..plugins import HookPoint

__all__ = [
    "NotRecordable",
    "RecordingCapability",
    "recording",
    "run_recorded",
]

DISTRIBUTIONS = ("pydantic-ai-slim",)


def recording(h: Harness | None = None, *, required: bool = True) -> RecordingCapability:
    """The capability that records a PydanticAI run: pass it in ``capabilities=`` of any run form, or give it to
    the ``Agent`` once. ``h``: the harness to record into (default: ``current_harness()`` when the run starts).
    ``required=False``: a run started where nothing is recorded or replayed runs plain (an agent that carries
    the capability and also runs outside recorded sessions)."""
    return RecordingCapability(h, required=required)


@functools.cache
def _route_mcp() -> bool:
    """Record PydanticAI's ``MCPToolset`` sessions at the MCP seam (``frameworks.mcp.install``: its transports go
    through the MCP recorder inside a recorded or replayed run), and the model calls an MCP server samples through
    the toolset's ``sampling_model`` through the run's harness. False when ``mcp`` is not installed (then no
    toolset can be an ``MCPToolset``)."""
    try:
        import pydantic_ai.mcp

        from .mcp import install
    except ImportError:
        return False
    install()
    pydantic_mcp: Any = pydantic_ai.mcp
    original = pydantic_mcp.model_request  # what the sampling handler of an MCPToolset calls its model through

    @functools.wraps(original)
    async def model_request(model: Any, *args: Any, **kwargs: Any) -> Any:
        h = CURRENT_HARNESS.get()
        if h is not None and isinstance(model, Model):
            model = _book_of(h).sampling_models.of(h, model)
        return await original(model, *args, **kwargs)

    pydantic_mcp.model_request = model_request
    return True


def _route_mcp_if_used() -> None:
    """``_route_mcp`` once PydanticAI's MCP module is imported (an agent with an ``MCPToolset`` has imported it):
    routing imports it and every framework's MCP glue, about 2 s of CPU, which a run without MCP does not pay."""
    if "pydantic_ai.mcp" in sys.modules:
        _route_mcp()


class RecordingCapability(AbstractCapability[Any]):
    """What PydanticAI asks before a run starts (its ids), and the recorder of each run (``for_run``)."""

    def __init__(self, h: Harness | None = None, *, required: bool = True) -> None:
        self.h = h
        self.required = required
        _route_mcp_if_used()  # where the capability is made (an agent's module, mostly), not on the run's loop

    def harness(self) -> Harness | None:
        h = self.h or CURRENT_HARNESS.get()
        if h is None and self.required:
            raise HarnessError(
                "recording(): no run is being recorded or replayed here (record inside run_agent, record_run or "
                "record_session, pass recording(h), or recording(required=False) to run plain)"
            )
        return h

    def get_default_run_id(self) -> str | None:
        h = self.harness()
        if h is None:
            return None
        inside = _BLACK_BOX_TOOL.get()
        if inside is not None:
            raise NotRecordable(
                f"an agent run started inside the tool {inside!r}, which is recorded as a black box (a replay serves "
                "its result and does not run it): the run's calls would be in the journal and never replayed. A tool "
                "that names the agent it runs in its code is recorded as delegating; else give the tool "
                "metadata={'replay_tui': 'delegates'}"
            )
        return h.ids.uuid4()

    def get_default_conversation_id(self, run_id: str) -> str | None:
        return conversation_id_from_run_id(run_id) if self.harness() is not None else None

    async def for_run(self, ctx: Any) -> AbstractCapability[Any]:
        h = self.harness()
        if h is None:
            return _PLAIN
        check_versions(*DISTRIBUTIONS)
        _route_mcp_if_used()  # (MCP imported after the capability was made: before the run's toolsets connect)
        book = _book_of(h)
        if not book.claim(ctx.run_id):
            return _PLAIN  # the run is recorded already (the capability is on the agent and in the call)
        agent = getattr(ctx, "agent", None)
        name = getattr(agent, "name", None) or "agent"
        delegated_by = _DELEGATING_CALL.get()  # a delegate's run is named after the call that runs it
        label = book.label(name if delegated_by is None else f"{name}@{delegated_by}")
        return _RunRecorder(h, book, label, ctx.run_id)


class _Plain(AbstractCapability[Any]):
    """No hooks: a run nothing records (or one another recorder of this harness records)."""


_PLAIN = _Plain()

#: The tool being run as a black box while recording (an agent run started inside it could not be replayed).
_BLACK_BOX_TOOL: contextvars.ContextVar[str | None] = contextvars.ContextVar("replay_tui_black_box_tool", default=None)
#: The id of the delegating tool call whose code runs now: the runs it starts are named after it (concurrent
#: delegations start their runs in whichever order their calls are answered, so an order would not do).
_DELEGATING_CALL: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "replay_tui_delegating_call", default=None
)


class _RunRecorder(AbstractCapability[Any]):
    """The recorder of one run: its model, tools, turns and state."""

    def __init__(self, h: Harness, book: _Book, label: str, run_id: str) -> None:
        self.h = h
        self.book = book
        self.label = label
        self.run_id = run_id
        self.turn = 0
        self.node = ""
        self.failures: list[dict[str, Any]] = []
        # this run's own usage, from its own answers and calls: a delegate shares its caller's RunUsage
        # (``usage=ctx.usage``), whose counts at any moment depend on what concurrent runs did by then
        self.usage = {"requests": 0, "input_tokens": 0, "output_tokens": 0, "tool_calls": 0}
        self.outer_step = h.step_id  # the step of the code that started the run, its own again when the run ends
        self.step = f"turn-00:{label}"
        self.last_state: dict[str, Any] | None = None
        self.models = _ModelCopies()

    # -- steps and state --------------------------------------------------------------

    def enter_step(self) -> None:
        """Name this run's step for the flow about to write (a delegate's run names its own in the same flow)."""
        self.h.step_id = self.step

    async def record_state(self, ctx: Any) -> None:
        """This run's state, as the harness's (``run`` names it), when it changed. Only this run's: a state made of
        concurrent runs' would depend on how far each had got at the moment it is written, which a replay does not
        reproduce; the harness's state is that of the run that wrote last."""
        state = {
            "run": self.label,
            "turn": self.turn,
            "node": self.node,
            "output_validation_failures": list(self.failures),
            "usage": dict(self.usage),
        }
        if state == self.last_state:
            return
        self.last_state = state
        self.enter_step()
        await self.h.arecord_state(state)

    async def before_run(self, ctx: Any) -> None:
        self.enter_step()

    async def before_model_request(self, ctx: Any, request_context: Any) -> Any:
        settings = getattr(request_context, "model_settings", None) or {}
        if settings.get("openai_transport") == "websocket":
            raise NotRecordable(
                "openai_transport='websocket' sends the Responses API over a websocket, which replay-tui does not "
                "record: its calls would go out unrecorded (leave it at 'http' while recording)"
            )
        self.turn += 1
        self.step = f"turn-{self.turn:02d}:{self.label}"
        self.enter_step()
        return request_context

    async def after_model_request(self, ctx: Any, *, request_context: Any, response: Any) -> Any:
        usage = getattr(response, "usage", None)
        self.usage["requests"] += 1
        self.usage["input_tokens"] += getattr(usage, "input_tokens", 0) or 0
        self.usage["output_tokens"] += getattr(usage, "output_tokens", 0) or 0
        return response

    async def before_node_run(self, ctx: Any, *, node: Any) -> Any:
        self.node = type(node).__name__
        return node

    async def after_node_run(self, ctx: Any, *, node: Any, result: Any) -> Any:
        await self.record_state(ctx)
        return result

    async def after_run(self, ctx: Any, *, result: Any) -> Any:
        self.h.step_id = self.outer_step
        return result

    async def on_run_error(self, ctx: Any, *, error: BaseException) -> Any:
        self.h.step_id = self.outer_step
        raise error

    async def wrap_output_validate(self, ctx: Any, *, output_context: Any, output: Any, handler: Any) -> Any:
        try:
            return await handler(output)
        except (ValidationError, ModelRetry, ToolRetryError) as error:
            await self._failed_output(ctx, output, error)
            raise

    #: output validators (``@agent.output_validator``) run in output processing, and say so the same way
    wrap_output_process = wrap_output_validate

    async def _failed_output(self, ctx: Any, output: Any, error: BaseException) -> None:
        """An output the model must be asked for again, written before PydanticAI sends the retry prompt (which
        is then in the next model.request). A partial output of a stream is still arriving: not a failure."""
        if getattr(ctx, "partial_output", False):
            return
        self.failures.append({"turn": self.turn, "output": _output_view(output), "errors": _errors_of(error)})
        await self.record_state(ctx)

    # -- the model and the tools ----------------------------------------------------------

    def get_wrapper_model(self, model: Any) -> Any:
        """The run's model sending through the harness (one copy per model the run uses)."""
        return self.models.of(self.h, model)

    def get_wrapper_toolset(self, toolset: AbstractToolset[Any]) -> AbstractToolset[Any]:
        return _RecordingToolset(toolset, recorder=self)

    async def call_tool(
        self, wrapped: AbstractToolset[Any], name: str, args: dict[str, Any], ctx: Any, tool: Any
    ) -> Any:
        leaf = _leaf(tool)
        toolset = getattr(leaf, "toolset", None)
        self.usage["tool_calls"] += 1
        self.enter_step()
        if toolset is not None and _is_mcp(toolset):
            if not _route_mcp():
                raise NotRecordable(
                    f"the tool {name!r} comes from the MCP toolset {type(toolset).__name__}, whose calls the MCP "
                    "recorder records (replay_tui.harness.frameworks.mcp), which cannot be imported here: the call "
                    "would go out unrecorded and run live in a replay"
                )
            return await wrapped.call_tool(name, args, ctx, tool)  # recorded at the MCP seam, its own tool.call
        function = _function_of(leaf)
        call = _ToolCall(wrapped, name, args, ctx, tool, json_arguments(args), getattr(ctx, "tool_call_id", None))
        delegates = _delegates(function, getattr(leaf, "tool_def", None) or tool.tool_def)
        try:
            if delegates:
                return await self._delegating_call(call, delegates)
            return await self._black_box_call(call, function)
        finally:
            self.enter_step()

    async def _delegating_call(self, call: _ToolCall, delegates: tuple[str, ...]) -> Any:
        """A tool that runs other agents: its code runs in a replay too (each delegate's run is recorded by its own
        ``recording()``); the call is recorded first, so the delegate's first request hangs from it."""

        async def delegation(copy: Any) -> dict[str, Any]:
            return {"delegates": list(delegates)}

        await self.h.arecord_tool_call(call.name, call.arguments, delegation, call_id=call.call_id)
        token = _DELEGATING_CALL.set(call.call_id or call.name)
        try:
            return await call.run()
        finally:
            _DELEGATING_CALL.reset(token)

    async def _black_box_call(self, call: _ToolCall, function: Any) -> Any:
        name = call.name
        raised: list[BaseException] = []  # the tool's own error, while recording: PydanticAI gets it as it was

        async def live(copy: Any) -> dict[str, Any]:
            token = _BLACK_BOX_TOOL.set(name)
            try:
                value = await call.run()
            except (CallDeferred, ApprovalRequired) as deferral:
                return deferral_form(deferral)
            except BaseException as error:
                raised.append(error)
                raise
            finally:
                _BLACK_BOX_TOOL.reset(token)
            return recorded_form(name, value, function)

        try:
            recorded = await self.h.arecord_tool_call(name, call.arguments, live, call_id=call.call_id)
        except Exception as error:
            if raised:
                raise raised[0] from None
            raise rebuilt_error(error) from None
        if isinstance(recorded, Mapping) and set(recorded) == {"delegates"}:
            raise HarnessError(
                f"the journal has the tool {name!r} delegating to {recorded['delegates']} (its code ran the agents), "
                "and this agent's tool is a black box (its code names no agent)"
            )
        try:
            return served_value(name, recorded, function)
        except ValueError as problem:
            if TOOL_RESULT not in self.h.sources:  # recording: the journal holds the result redacted
                raise NotRecordable(
                    f"the result of tool {name!r} as the journal holds it (redacted) cannot be rebuilt: {problem}"
                ) from None
            raise self._unusable_result(recorded, str(problem)) from None

    def _unusable_result(self, recorded: Any, problem: str) -> BaseException:
        """A recorded result this recorder does not write (a hostile or foreign journal): a journal error naming
        the tool.result's seq, never whatever PydanticAI would make of it."""
        expected = f'the tool return as the PydanticAI recorder writes it ({{"text"}} or {{"json", "as"}}: {problem})'
        seq = self.book.served.seq_of(recorded)
        return self.h.unusable_record(SchemaError("payload.result", expected, recorded, seq=seq))


@dataclass(frozen=True)
class _ToolCall:
    """One call of a tool, as the toolset was asked for it, and its arguments as the journal records them."""

    wrapped: AbstractToolset[Any]
    name: str
    args: dict[str, Any]
    ctx: Any
    tool: Any
    arguments: dict[str, Any]
    call_id: str | None

    async def run(self) -> Any:
        return await self.wrapped.call_tool(self.name, self.args, self.ctx, self.tool)


@dataclass
class _RecordingToolset(WrapperToolset[Any]):
    """The run's function toolset (every toolset but the output one), each call going through the recorder."""

    recorder: _RunRecorder = field(kw_only=True)

    async def call_tool(self, name: str, tool_args: dict[str, Any], ctx: Any, tool: Any) -> Any:
        return await self.recorder.call_tool(self.wrapped, name, tool_args, ctx, tool)


def _leaf(tool: Any) -> Any:
    """The tool as its own toolset holds it (through combined toolsets)."""
    while hasattr(tool, "source_tool"):
        tool = tool.source_tool
    return tool


def _function_of(leaf: Any) -> Any:
    """The Python function of a function-toolset tool, or None."""
    tools = getattr(getattr(leaf, "toolset", None), "tools", None)
    definition = getattr(leaf, "tool_def", None)
    if not isinstance(tools, Mapping) or definition is None:
        return None
    held = tools.get(getattr(leaf, "original_name", None) or definition.name)
    return getattr(held, "function", None)


def _is_mcp(toolset: Any) -> bool:
    return type(toolset).__module__.startswith(("pydantic_ai.mcp", "pydantic_ai.toolsets.fastmcp"))


def _delegates(function: Any, tool_def: Any) -> tuple[str, ...]:
    """The agents a tool runs (PydanticAI's agent delegation): the agents its code names, unless its metadata says
    ``{"replay_tui": "delegates"}`` (it runs agents it reaches some other way) or ``"black_box"`` (it names agents
    and runs none)."""
    marker = (getattr(tool_def, "metadata", None) or {}).get("replay_tui")
    if marker == "black_box":
        return ()
    named = _agents_named_by(function) if function is not None else ()
    if marker == "delegates":
        return named or ("an agent",)
    return named


@functools.lru_cache(maxsize=1024)
def _agents_named_by(function: Any) -> tuple[str, ...]:
    try:
        names = inspect.getclosurevars(function)
    except (TypeError, ValueError):  # a builtin, a partial, a callable object
        return ()
    found = {**names.globals, **names.nonlocals}
    for module in [value for value in found.values() if isinstance(value, types.ModuleType)]:
        for attribute in names.unbound:  # ``agents.joke_agent.run(...)``: an agent reached through its module
            value = getattr(module, attribute, None)
            if isinstance(value, AbstractAgent):
                found[f"{module.__name__}.{attribute}"] = value
    return tuple(
        sorted({agent.name or variable for variable, agent in found.items() if isinstance(agent, AbstractAgent)})
    )


class _ModelCopies:
    """The copies of models that send through a harness, one per model (``recorded_model``)."""

    def __init__(self) -> None:
        self._held: dict[int, tuple[Any, Any, Any]] = {}  # id(model) -> (model: held, so the id stays its own,
        # its client when copied, the copy)

    def of(self, h: Harness, model: Any) -> Any:
        held = self._held.get(id(model))
        client = getattr(getattr(model, "provider", None), "client", None)
        if held is None or held[0] is not model or held[1] is not client:  # (a provider moved to another event
            held = (model, client, recorded_model(h, model))  # loop builds a new client)
            self._held[id(model)] = held
        return held[2]


class _Book:
    """What the runs recorded into one harness share: the names they are told apart by, and which runs are
    recorded (a run has one recorder, however many times the capability is given)."""

    def __init__(self, h: Harness) -> None:
        self.lock = threading.Lock()
        self.names: Counter[str] = Counter()
        self.run_ids: set[str] = set()
        self.served = _ServedResults()
        self.sampling_models = _ModelCopies()  # the models MCP servers sample through (MCPToolset sampling_model)
        if TOOL_RESULT in h.sources:  # a replay: a served result the recorder cannot use is named by its seq
            h.hooks.append(cast("HookPoint", self.served))  # (the harness calls its hooks' on_event only)

    def claim(self, run_id: str) -> bool:
        with self.lock:
            if run_id in self.run_ids:
                return False
            self.run_ids.add(run_id)
            return True

    def label(self, name: str) -> str:
        with self.lock:
            self.names[name] += 1
            count = self.names[name]
        return name if count == 1 else f"{name}#{count}"


class _ServedResults:
    """A hook (``HookPoint``) that keeps the seq of the tool results a replay served last, by the result object
    the harness hands the recorder: concurrent calls' results are written in between, so the event written last
    need not be this call's. Bounded: a result is looked up right after it is served."""

    KEPT = 256

    def __init__(self) -> None:
        self._seqs: dict[int, tuple[int, Any]] = {}  # id(result) -> (seq, result: held, so the id stays its own)

    def on_event(self, event: Event) -> None:
        if event.kind == TOOL_RESULT and "result" in event.payload:
            result = event.payload["result"]
            self._seqs[id(result)] = (event.seq, result)
            if len(self._seqs) > self.KEPT:
                del self._seqs[next(iter(self._seqs))]

    def seq_of(self, result: Any) -> int | None:
        held = self._seqs.get(id(result))
        return held[0] if held is not None and held[1] is result else None


_BOOKS: weakref.WeakKeyDictionary[Harness, _Book] = weakref.WeakKeyDictionary()
_BOOKS_LOCK = threading.Lock()


def _book_of(h: Harness) -> _Book:
    with _BOOKS_LOCK:
        book = _BOOKS.get(h)
        if book is None:
            book = _BOOKS[h] = _Book(h)
        return book


async def run_recorded(
    h: Harness,
    agent: Agent[Any, Any],
    prompt: str,
    *,
    base_url: str | None = None,
    model: str | None = None,
    deps: Any = None,
    **run_options: Any,
) -> Any:
    """``agent.run(prompt, capabilities=[recording(h)])``; with ``base_url`` and ``model``, on an
    ``OpenAIChatModel`` of that name at that URL in place of the agent's own model (said by its arguments)."""
    _infer_name(agent, inspect.currentframe())
    chosen = None
    if base_url is not None or model is not None:
        if base_url is None or model is None:
            raise HarnessError("run_recorded: give base_url and model together (or neither, for the agent's model)")
        # PydanticAI's default client settings (600 s, connect 5 s), on the shared SSL context (a provider per run)
        http = plain_async_client(timeout=default_httpx_module().Timeout(600, connect=5))
        chosen = OpenAIChatModel(model, provider=OpenAIProvider(base_url=base_url, api_key=api_key(), http_client=http))
    capabilities = [*run_options.pop("capabilities", ()), recording(h)]
    try:
        return await agent.run(prompt, model=chosen, deps=deps, capabilities=capabilities, **run_options)
    finally:
        h.step_id = None


def _infer_name(agent: Agent[Any, Any], frame: Any) -> None:
    """Name an unnamed agent after the variable its caller holds it in, as ``agent.run`` does for its own caller
    (called here, it would find this function's parameter)."""
    caller = frame.f_back if frame is not None else None
    if agent.name is not None or caller is None:
        return
    for scope in (caller.f_locals, caller.f_globals):
        for variable, value in scope.items():
            if value is agent:
                agent.name = variable
                return


def _errors_of(error: BaseException) -> list[dict[str, Any]]:
    if isinstance(error, ValidationError):
        return [_error_item(item) for item in error.errors(include_url=False, include_input=False)]
    if isinstance(error, ToolRetryError):
        content = error.tool_retry.content
        if isinstance(content, list):  # validation errors, as pydantic gives them
            return [_error_item(item) for item in content]
        return [{"loc": [], "type": "ModelRetry", "msg": str(content)}]
    return [{"loc": [], "type": type(error).__name__, "msg": str(error)}]


def _error_item(item: Any) -> dict[str, Any]:
    if not isinstance(item, Mapping):
        return {"loc": [], "type": "ModelRetry", "msg": str(item)}
    return {"loc": [str(part) for part in item.get("loc", ())], "type": item.get("type"), "msg": item.get("msg")}


def _output_view(output: Any) -> Any:
    """The output that failed, as JSON (the model's arguments or text); a value with no JSON form by its type."""
    try:
        return tool_return_ta.dump_python(output, mode="json")
    except PydanticSerializationError:
        return f"<{type(output).__qualname__}>"

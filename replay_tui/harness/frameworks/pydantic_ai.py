"""Record and strictly replay a PydanticAI run (``pydantic-ai-slim[openai]``).

    from replay_tui.harness.frameworks.pydantic_ai import run_recorded

    async def agent(h, task):
        result = await run_recorded(h, crm_agent, task["question"], base_url=task["base_url"], model="gpt-4.1")
        return result.output.model_dump()

What is recorded, and how (all through one capability, ``RecordingCapability``, the hook
surface PydanticAI gives durable-execution engines):

* model calls: the run's model is an ``OpenAIChatModel`` whose ``AsyncOpenAI`` client sends
  through the harness's httpx transport;
* tools: ``wrap_tool_execute`` sends every function-tool call through
  ``Harness.arecord_tool_call`` (arguments copied after PydanticAI validated them, the tool
  call id the model gave); a replay serves the result and the tool function is not run;
* graph nodes: each node (user prompt, model request, call tools) is the step
  ``NN:<node>``, and the run state ``{node, nodes_run, output_validation_failures, usage}``
  is written as ``state.transition`` after it;
* structured output: a failed validation of the model's output (``on_output_validate_error``)
  is added to ``output_validation_failures`` at once, with the error locations and messages,
  before PydanticAI sends the retry prompt (which is then in the next model.request).

Clock, random and ids: PydanticAI draws a UUID7 run id and conversation id (time + random):
``get_default_run_id`` returns one drawn through ``h.ids.uuid4()``, so it is recorded and
replayed, and the conversation id is derived from it. Message timestamps (``datetime.now``)
are never sent in an OpenAI chat request and are not part of the recorded state, so they
are kept out of every matched key; the run clock (used only to measure ``timeout=``) stays
the system clock for the same reason. Limits: streamed runs (``run_stream``) and models other
than OpenAI-compatible chat completions are not recorded.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError
from pydantic_ai import Agent
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

from .common import async_openai_client, in_journal_order
from .versions import check_versions

if TYPE_CHECKING:
    from ..harness import Harness

DISTRIBUTIONS = ("pydantic-ai-slim",)


class RecordingCapability(AbstractCapability[Any]):
    """Records a PydanticAI run's tools, nodes and output validation failures through ``h``."""

    def __init__(self, h: Harness) -> None:
        self.h = h
        self.nodes_run = 0
        self.node = ""
        self.failures: list[dict[str, Any]] = []

    def state(self, ctx: Any) -> dict[str, Any]:
        usage = getattr(ctx, "usage", None)
        return {
            "node": self.node,
            "nodes_run": self.nodes_run,
            "output_validation_failures": list(self.failures),
            "usage": {
                "requests": getattr(usage, "requests", 0),
                "input_tokens": getattr(usage, "input_tokens", 0),
                "output_tokens": getattr(usage, "output_tokens", 0),
            },
        }

    def get_default_run_id(self) -> str | None:
        return self.h.ids.uuid4()

    async def wrap_node_run(self, ctx: Any, *, node: Any, handler: Any) -> Any:
        self.nodes_run += 1
        self.node = type(node).__name__
        self.h.step_id = f"{self.nodes_run:02d}:{self.node}"
        try:
            return await handler(node)
        finally:
            self.h.record_state(self.state(ctx))

    async def wrap_tool_execute(self, ctx: Any, *, call: Any, tool_def: Any, args: dict[str, Any], handler: Any) -> Any:
        async def live(copy: Any) -> Any:
            return in_journal_order(await handler(copy))

        return await self.h.arecord_tool_call(call.tool_name, args, live, call_id=call.tool_call_id)

    async def on_output_validate_error(self, ctx: Any, *, output_context: Any, output: Any, error: Any) -> Any:
        self.failures.append({"node": self.nodes_run, "output": _output_view(output), "errors": _errors_of(error)})
        self.h.record_state(self.state(ctx))
        raise error


async def run_recorded(
    h: Harness, agent: Agent[Any, Any], prompt: str, *, base_url: str, model: str, deps: Any = None
) -> Any:
    """``agent.run`` with its model, tools, nodes and output validation recorded through ``h``."""
    check_versions(*DISTRIBUTIONS)
    chat_model = OpenAIChatModel(model, provider=OpenAIProvider(openai_client=async_openai_client(h, base_url)))
    try:
        return await agent.run(prompt, model=chat_model, deps=deps, capabilities=[RecordingCapability(h)])
    finally:
        h.step_id = None


def _errors_of(error: Any) -> list[dict[str, Any]]:
    if isinstance(error, ValidationError):
        return [
            {"loc": [str(part) for part in item.get("loc", ())], "type": item.get("type"), "msg": item.get("msg")}
            for item in error.errors(include_url=False, include_input=False)
        ]
    return [{"loc": [], "type": type(error).__name__, "msg": str(error)}]


def _output_view(output: Any) -> Any:
    if isinstance(output, (str, Mapping)):
        return in_journal_order(output)
    return f"<{type(output).__qualname__}>"

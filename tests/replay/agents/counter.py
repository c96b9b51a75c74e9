"""A step-loop agent with constant-size state, for long generated runs (bench_replay).

Each step asks the scripted model which item to count next, calls the ``count``
tool, and the reducer keeps running totals: about six events per step, any length.
The input is the number of steps, e.g. ``"20000"``.
"""

from __future__ import annotations

from typing import Any, Mapping

from replay_tui.harness import Done, Harness, StepAgent, ToolSpec
from replay_tui.journal import Event


def policy(request: Mapping[str, Any]) -> dict[str, Any]:
    done, total = request["messages"][-1]["content"].split("/")
    if int(done) >= int(total):
        return {"content": f"counted {done} items", "tool_calls": []}
    item = int(done) + 1
    return {"content": None, "tool_calls": [{"id": f"c-{item}", "name": "count", "arguments": {"item": item}}]}


def tools(options: Mapping[str, Any]) -> list[ToolSpec]:
    return [ToolSpec("count", lambda item: {"item": item, "units": item % 7}, {"item": "integer"})]


class CounterAgent(StepAgent):
    reducer_version = "counter-1"
    max_steps = 10_000_000

    def initial_state(self) -> dict[str, Any]:
        return {"done": 0, "units": 0, "goal": 0}

    def reduce(self, state: dict[str, Any], event: Event) -> dict[str, Any]:
        if event.kind == "input.received":
            return {**state, "goal": int(event.payload["content"])}
        if event.kind == "tool.result":
            return {**state, "done": state["done"] + 1, "units": state["units"] + event.payload["result"]["units"]}
        return state

    def step(self, h: Harness, state: dict[str, Any]) -> Done | None:
        response = h.model(
            {"model": "counter", "messages": [{"role": "user", "content": f"{state['done']}/{state['goal']}"}]}
        )
        if not response["tool_calls"]:
            return Done(output=response["content"])
        for call in response["tool_calls"]:
            h.tool(call["name"], call["arguments"], call_id=call["id"])
        return None


agent = CounterAgent

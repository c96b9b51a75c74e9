"""A small step-loop agent for the app's replay tests, recorded through the real harness
by the tests themselves.

It counts ``N`` items (the input), one model call and one tool call per step. Two
environment variables change how it behaves when it runs again (they are read by
the replay child, which inherits the test's environment):

* ``WOBBLY_SLEEP_S``: sleep this long in every step (a replay long enough to cancel);
* ``WOBBLY_CRASH_AT``: at this step, print a last line to stderr and abort the
  process (SIGABRT), as a segfaulting native extension would.
"""

from __future__ import annotations

import os
import sys
import time
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
    return [ToolSpec("count", lambda item: {"item": item, "units": item % 5}, {"item": "integer"})]


class WobblyAgent(StepAgent):
    reducer_version = "wobbly-1"

    def initial_state(self) -> dict[str, Any]:
        return {"done": 0, "units": 0, "goal": 0}

    def reduce(self, state: dict[str, Any], event: Event) -> dict[str, Any]:
        if event.kind == "input.received":
            return {**state, "goal": int(event.payload["content"])}
        if event.kind == "tool.result":
            return {**state, "done": state["done"] + 1, "units": state["units"] + event.payload["result"]["units"]}
        return state

    def step(self, h: Harness, state: dict[str, Any]) -> Done | None:
        if os.environ.get("WOBBLY_CRASH_AT") == str(state["done"] + 1):
            print(f"wobbly: native crash in step {state['done'] + 1}", file=sys.stderr, flush=True)
            os.abort()
        time.sleep(float(os.environ.get("WOBBLY_SLEEP_S", "0")))
        response = h.model(
            {"model": "wobbly", "messages": [{"role": "user", "content": f"{state['done']}/{state['goal']}"}]}
        )
        if not response["tool_calls"]:
            return Done(output=response["content"])
        for call in response["tool_calls"]:
            h.tool(call["name"], call["arguments"], call_id=call["id"])
        return None


agent = WobblyAgent

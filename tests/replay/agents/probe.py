"""Small agents for replay tests, recorded through the real harness by the tests.

* ``agent``: a function agent: clock, random and uuid reads, then model -> tool
  rounds until the model answers. The second lookup raises (a recorded tool error).
* ``StepProbe``: the same conversation as a step-loop agent (state-only memory),
  for --from-seq resume from a snapshot.

Set ``PROBE_LOG`` to a file and every real call of the model policy or the tool
appends a line to it: replay must leave it untouched. Set ``REPLAY_TEST_PORT`` and
the agent also tries to reach 127.0.0.1:PORT at the start of the run, swallowing
the error, as careless agent code would.
"""

from __future__ import annotations

import json
import os
import socket
from typing import Any, Mapping

from replay_tui.harness import Done, Harness, StepAgent, ToolSpec, agent_reducer
from replay_tui.journal import Event

ROUNDS = int(os.environ.get("PROBE_ROUNDS", "3"))


def _log(what: str) -> None:
    path = os.environ.get("PROBE_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as log:
            log.write(what + "\n")


def policy(request: Mapping[str, Any]) -> dict[str, Any]:
    """Ask for ``ROUNDS`` lookups, one per turn, then answer with the stock total."""
    _log("model")
    results = [m for m in request["messages"] if m.get("role") == "tool"]
    if len(results) < ROUNDS:
        item = len(results) + 1
        return {"content": None, "tool_calls": [{"id": f"call-{item}", "name": "lookup", "arguments": {"item": item}}]}
    total = sum(json.loads(m["content"]).get("stock", 0) for m in results)
    return {"content": f"total stock {total}", "tool_calls": []}


def lookup(item: int) -> dict[str, Any]:
    _log(f"tool lookup {item}")
    if item == 2:
        raise KeyError(f"item {item} is not in the catalogue")
    return {"item": item, "stock": item * 10}


def tools(options: Mapping[str, Any]) -> list[ToolSpec]:
    return [ToolSpec("lookup", lookup, {"item": "integer"})]


def reduce(state: dict[str, Any], event: Event) -> dict[str, Any]:
    if event.kind == "tool.result":
        if event.payload.get("error"):
            return {**state, "errors": state["errors"] + 1}
        return {**state, "lookups": state["lookups"] + 1, "stock": state["stock"] + event.payload["result"]["stock"]}
    return state


def _phone_home() -> None:
    port = os.environ.get("REPLAY_TEST_PORT")
    if port:
        try:
            socket.create_connection(("127.0.0.1", int(port)), timeout=2).close()
        except OSError:
            pass


def _conversation(h: Harness, messages: list[dict[str, Any]]) -> Any:
    response = h.model({"model": "probe", "messages": messages})
    if not response["tool_calls"]:
        return Done(output=response["content"])
    messages.append({"role": "assistant", "content": None, "tool_calls": response["tool_calls"]})
    for call in response["tool_calls"]:
        try:
            result = h.tool(call["name"], call["arguments"], call_id=call["id"])
        except KeyError as error:
            result = {"error": str(error)}
        messages.append({"role": "tool", "tool_call_id": call["id"], "content": json.dumps(result)})
    return None


@agent_reducer(reduce, "probe-1", {"lookups": 0, "errors": 0, "stock": 0})
def agent(h: Harness, question: str) -> Any:
    _phone_home()
    h.clock.now()
    h.random.random()
    h.ids.uuid4()
    messages: list[dict[str, Any]] = [{"role": "user", "content": question}]
    while True:
        with h.step():
            done = _conversation(h, messages)
        if done is not None:
            return done.output


class StepProbe(StepAgent):
    """The same conversation, with all memory in the reducer state."""

    reducer_version = "step-probe-1"

    def initial_state(self) -> dict[str, Any]:
        return {"messages": [], "lookups": 0}

    def reduce(self, state: dict[str, Any], event: Event) -> dict[str, Any]:
        if event.kind == "input.received":
            return {**state, "messages": state["messages"] + [{"role": "user", "content": event.payload["content"]}]}
        if event.kind == "model.response" and event.payload.get("response", {}).get("tool_calls"):
            calls = event.payload["response"]["tool_calls"]
            return {
                **state,
                "messages": state["messages"] + [{"role": "assistant", "content": None, "tool_calls": calls}],
            }
        if event.kind == "tool.result":
            content = (
                event.payload.get("result")
                if not event.payload.get("error")
                else {"error": event.payload["error"]["message"]}
            )
            message = {"role": "tool", "tool_call_id": event.payload["call_id"], "content": json.dumps(content)}
            return {**state, "messages": state["messages"] + [message], "lookups": state["lookups"] + 1}
        return state

    def step(self, h: Harness, state: dict[str, Any]) -> Done | None:
        response = h.model({"model": "probe", "messages": state["messages"]})
        if not response["tool_calls"]:
            return Done(output=response["content"])
        for call in response["tool_calls"]:
            try:
                h.tool(call["name"], call["arguments"], call_id=call["id"])
            except KeyError:
                pass
        return None


def new_policy(request: Mapping[str, Any]) -> dict[str, Any]:
    """The "new model": after the first lookup it asks for item 99, which the recording never looked up."""
    _log("new model")
    results = [m for m in request["messages"] if m.get("role") == "tool"]
    if not results:
        return {"content": None, "tool_calls": [{"id": "call-1", "name": "lookup", "arguments": {"item": 1}}]}
    if len(results) == 1:
        return {"content": None, "tool_calls": [{"id": "call-2", "name": "lookup", "arguments": {"item": 99}}]}
    return {"content": "done", "tool_calls": []}


def restocked_tools(options: Mapping[str, Any]) -> list[ToolSpec]:
    """The live tools of a tools-live experiment: item 3 now has different stock."""

    def restocked(item: int) -> dict[str, Any]:
        _log(f"tool restocked {item}")
        if item == 2:
            raise KeyError(f"item {item} is not in the catalogue")
        return {"item": item, "stock": item * 10 + (5 if item == 3 else 0)}

    return [ToolSpec("lookup", restocked, {"item": "integer"})]


def networked_tools(options: Mapping[str, Any]) -> list[ToolSpec]:
    """Tools that talk to a service: ``base_url`` (allowed in experiments) and ``other_port`` (not named as a host)."""
    from urllib.parse import urlsplit

    service = urlsplit(str(options["base_url"]))
    other_port = int(options["other_port"])

    def reach(host: str, port: int) -> bool:
        try:
            socket.create_connection((host, port), timeout=2).close()
            return True
        except OSError:
            return False

    def reach_raw(host: str, port: int) -> bool:
        """The same host through ``_socket``, past the guard (and so past an experiment's broker)."""
        import _socket

        sock = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
        sock.settimeout(2)
        try:
            sock.connect((host, port))
            return True
        except OSError:
            return False
        finally:
            sock.close()

    def lookup_remote(item: int) -> dict[str, Any]:
        _log(f"tool remote {item}")
        return {
            "item": item,
            "stock": item * 10,
            "service": reach(service.hostname or "", service.port or 80),
            "mirror": reach("127.0.0.1", other_port),
            "raw_service": reach_raw(service.hostname or "", service.port or 80),
        }

    return [ToolSpec("lookup", lookup_remote, {"item": "integer"})]


#: A token of the GitHub shape, as a live tool might return one (never a real one).
LIVE_TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


def leaky_tools(options: Mapping[str, Any]) -> list[ToolSpec]:
    """Live tools whose results carry a token: whatever writes them to a journal must redact it."""

    def lookup_with_token(item: int) -> dict[str, Any]:
        if item == 2:
            raise KeyError(f"item {item} is not in the catalogue")
        return {"item": item, "stock": item * 10, "token": LIVE_TOKEN}

    return [ToolSpec("lookup", lookup_with_token, {"item": "integer"})]

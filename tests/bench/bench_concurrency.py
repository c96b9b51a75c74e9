"""Parallel work stays parallel while recorded: the three cases of issue 25, plain against recorded, in one run.

    python tests/bench/bench_concurrency.py [--runs N] [--delay S]

* ``gather``: ``asyncio.gather`` of 3 chat completions on one ``AsyncOpenAI`` client, each answered after
  ``--delay`` (0.3 s) by a threaded loopback server in a process of its own; plain (the SDK's own async
  client) and recorded (``async_http_client(h)`` of a harness writing a journal). Wall time of the gather.
* ``toolnode``: a LangGraph graph whose one planning answer asks for 3 tool calls at once, each tool taking
  ``--delay``; ``ToolNode`` runs them in its threads. Plain: the graph as built without recording; recorded:
  the same graph with the recorder's ``wrap_tool_call`` (``tool_call_recorder(h)``), recorded by
  ``record_run``. The figure is the tools' span (the first tool's start to the last one's end, read inside
  the tools), as issue 25 quoted it; the invoke's own wall time beside it.
* ``atool``: ``h.tools_parallel`` of 3 async tools each sleeping ``--delay`` against ``asyncio.gather`` of the
  same coroutines unrecorded. Wall time of the call.

Each case runs ``--runs`` times each way (after one untimed pair), plain and recorded alternating; medians,
wall and CPU (``process_time``) of this process. Target (issue 25 item 8): recorded wall within 5 % of plain.
The last line is one JSON object; the line before it says whether the load let the figures be quoted.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))
import honest  # noqa: E402

ROOT = honest.ROOT
sys.path.insert(0, str(ROOT))

CALLS = 3
TARGET_PCT = 5.0


# -- the loopback model, in a process of its own ------------------------------------------------------


def _serve(pipe: Any, delay: float) -> None:
    sys.path.insert(0, str(ROOT))
    from tests.httpx.servers import LLMServer

    def slow(request: Any) -> dict[str, Any]:
        time.sleep(delay)
        return {"content": f"answer to {request['messages'][-1]['content']}"}

    server = LLMServer(slow)
    pipe.send(server.url + "/v1")
    pipe.recv()
    server.close()


# -- gather of 3 chat completions ----------------------------------------------------------------------


def gather_case(url: str, scratch: Path) -> dict[str, Callable[[int], honest.Seconds]]:
    from openai import AsyncOpenAI

    from replay_tui.harness import Harness, JsonlSink
    from replay_tui.harness.httpx_transport import _shared_ssl_context, async_http_client, default_httpx_module

    module = default_httpx_module()

    async def three(client: Any) -> honest.Seconds:
        started = honest.Seconds.now()
        await asyncio.gather(
            *(
                client.chat.completions.create(model="m", messages=[{"role": "user", "content": f"q{n}"}])
                for n in range(CALLS)
            )
        )
        return honest.Seconds.now() - started

    def plain(index: int) -> honest.Seconds:
        async def run() -> honest.Seconds:
            http = module.AsyncClient(verify=_shared_ssl_context(module))
            async with AsyncOpenAI(api_key="sk-bench", base_url=url, max_retries=0, http_client=http) as client:
                return await three(client)

        return asyncio.run(run())

    def recorded(index: int) -> honest.Seconds:
        harness = Harness(sink=JsonlSink(scratch / f"gather-{index}.jsonl", run_id=f"g{index}"), run_id=f"g{index}")
        harness.start_run("bench")

        async def run() -> honest.Seconds:
            http = async_http_client(harness)
            async with AsyncOpenAI(api_key="sk-bench", base_url=url, max_retries=0, http_client=http) as client:
                return await three(client)

        try:
            return asyncio.run(run())
        finally:
            harness.end_run("ok")

    return {"plain": plain, "recorded": recorded}


# -- LangGraph ToolNode with 3 parallel tools -------------------------------------------------------------


class _Span:
    """The first start and the last end of the tool calls of one run (read inside the tools, in their threads)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.starts: list[float] = []
        self.ends: list[float] = []

    def seconds(self) -> float:
        return max(self.ends) - min(self.starts)


SPAN = _Span()


def _graph_builder(delay: float, wrap: Any = None) -> Any:
    from langchain_core.messages import AIMessage
    from langchain_core.tools import tool
    from langgraph.graph import END, START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode

    @tool
    def lookup(sku: str) -> str:
        """Stock of one SKU."""
        with SPAN.lock:
            SPAN.starts.append(time.perf_counter())
        time.sleep(delay)
        with SPAN.lock:
            SPAN.ends.append(time.perf_counter())
        return f"{sku}: 7 in stock"

    def plan(state):  # type: ignore[no-untyped-def]  # (LangGraph reads a node's hints: none to resolve here)
        if len(state["messages"]) > 1:
            return {"messages": [AIMessage("all looked up")]}
        calls = [
            {"name": "lookup", "args": {"sku": f"S-{n}"}, "id": f"call-{n}", "type": "tool_call"} for n in range(CALLS)
        ]
        return {"messages": [AIMessage("", tool_calls=calls)]}

    def route(state):  # type: ignore[no-untyped-def]
        last = state["messages"][-1]
        return "tools" if isinstance(last, AIMessage) and last.tool_calls else END

    builder = StateGraph(MessagesState)
    builder.add_node("plan", plan)
    builder.add_node("tools", ToolNode([lookup], wrap_tool_call=wrap) if wrap else ToolNode([lookup]))
    builder.add_edge(START, "plan")
    builder.add_conditional_edges("plan", route, {"tools": "tools", END: END})
    builder.add_edge("tools", "plan")
    return builder


DELAY = [0.3]  # the recorded agent (a GraphAgent named by "module:attr") reads it here


def _recorded_graph_agent() -> Any:
    from langchain_core.messages import HumanMessage

    from replay_tui.harness.frameworks.langgraph import GraphAgent, tool_call_recorder

    class ParallelTools(GraphAgent):  # type: ignore[misc]
        def build(self, h: Any, task: Any) -> Any:
            return _graph_builder(DELAY[0], tool_call_recorder(h))

        def graph_input(self, task: Any) -> Any:
            return {"messages": [HumanMessage(task["question"])]}

    return ParallelTools


graph_agent: Any = None  # made on first use (LangGraph is imported only by this case)


def toolnode_case(scratch: Path, delay: float) -> dict[str, Callable[[int], honest.Seconds]]:
    global graph_agent
    from langchain_core.messages import HumanMessage

    from replay_tui.harness import record_run

    DELAY[0] = delay
    graph_agent = _recorded_graph_agent()
    config = ROOT / "fixtures" / "configs" / "frameworks.toml"
    plain_graph = _graph_builder(delay).compile()
    spans: dict[str, list[float]] = {"plain": [], "recorded": []}

    def plain(index: int) -> honest.Seconds:
        SPAN.__init__()  # type: ignore[misc]
        started = honest.Seconds.now()
        plain_graph.invoke({"messages": [HumanMessage("stock?")]})
        took = honest.Seconds.now() - started
        spans["plain"].append(SPAN.seconds())
        return took

    def recorded(index: int) -> honest.Seconds:
        SPAN.__init__()  # type: ignore[misc]
        started = honest.Seconds.now()
        outcome = record_run(
            config, f"{__name__}:graph_agent", [{"question": "stock?"}], journal=scratch / f"graph-{index}.jsonl"
        )
        took = honest.Seconds.now() - started
        if outcome.status != "ok":
            raise SystemExit(f"bench_concurrency: the recorded graph failed: {outcome.error}")
        spans["recorded"].append(SPAN.seconds())
        return took

    return {"plain": plain, "recorded": recorded, "_spans": spans}  # type: ignore[dict-item]


# -- tools_parallel ------------------------------------------------------------------------------------


def atool_case(scratch: Path, delay: float) -> dict[str, Callable[[int], honest.Seconds]]:
    from replay_tui.harness import Harness, JsonlSink, ToolSpec

    async def lookup(sku: str) -> dict[str, Any]:
        await asyncio.sleep(delay)
        return {"sku": sku, "stock": 7}

    calls = [("lookup", {"sku": f"S-{n}"}) for n in range(CALLS)]

    def plain(index: int) -> honest.Seconds:
        async def run() -> honest.Seconds:
            started = honest.Seconds.now()
            await asyncio.gather(*(lookup(**arguments) for _, arguments in calls))
            return honest.Seconds.now() - started

        return asyncio.run(run())

    def recorded(index: int) -> honest.Seconds:
        tools = {"lookup": ToolSpec(name="lookup", function=lookup, schema={"type": "object"})}
        harness = Harness(
            sink=JsonlSink(scratch / f"atool-{index}.jsonl", run_id=f"t{index}"), run_id=f"t{index}", tools=tools
        )
        harness.start_run("bench")

        async def run() -> honest.Seconds:
            started = honest.Seconds.now()
            await harness.tools_parallel(calls)
            return honest.Seconds.now() - started

        try:
            return asyncio.run(run())
        finally:
            harness.end_run("ok")

    return {"plain": plain, "recorded": recorded}


def measure(case: dict[str, Any], runs: int) -> dict[str, Any]:
    counter = iter(range(10**6))
    sides = {side: case[side] for side in ("plain", "recorded")}
    for side in sides.values():  # untimed: imports, connections, caches
        side(next(counter))
    found = honest.interleaved({name: (lambda f=f: f(next(counter))) for name, f in sides.items()}, runs)
    figures: dict[str, Any] = {}
    for side, samples in found.items():
        figures[f"{side}_wall_ms"] = round(honest.median(s.wall for s in samples) * 1000, 1)
        figures[f"{side}_cpu_ms"] = round(honest.median(s.cpu for s in samples) * 1000, 1)
    figures["recorded_over_plain_wall_pct"] = round(
        100 * (figures["recorded_wall_ms"] - figures["plain_wall_ms"]) / figures["plain_wall_ms"], 1
    )
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=9, help="runs of each side of each case (default 9)")
    parser.add_argument("--delay", type=float, default=0.3, help="seconds each call takes (default 0.3)")
    args = parser.parse_args()
    honest.run_compiled()
    load = honest.Load()
    figures: dict[str, Any] = {"bench": "concurrency", "runs": args.runs, "delay_s": args.delay, "calls": CALLS}
    with honest.server_in_child(_serve, args.delay) as url:
        with tempfile.TemporaryDirectory(prefix="bench-concurrency-", dir=ROOT) as folder:
            scratch = Path(folder)
            figures["gather"] = measure(gather_case(url, scratch), args.runs)
            toolnode = toolnode_case(scratch, args.delay)
            figures["toolnode"] = measured = measure(toolnode, args.runs)
            # a recorded run is a whole record_run (the harness, the graph and its saver, both supersteps): its
            # wall time is not the plain invoke's, and the tools' span is the figure
            measured.pop("recorded_over_plain_wall_pct")
            measured["recorded_run_wall_ms"] = measured.pop("recorded_wall_ms")
            measured["recorded_run_cpu_ms"] = measured.pop("recorded_cpu_ms")
            spans = toolnode["_spans"]
            for side in ("plain", "recorded"):
                figures["toolnode"][f"{side}_tools_span_ms"] = round(honest.median(spans[side][1:]) * 1000, 1)
            plain_span = figures["toolnode"]["plain_tools_span_ms"]
            figures["toolnode"]["recorded_over_plain_tools_span_pct"] = round(
                100 * (figures["toolnode"]["recorded_tools_span_ms"] - plain_span) / plain_span, 1
            )
            figures["atool"] = measure(atool_case(scratch, args.delay), args.runs)
    shares = {
        "gather": figures["gather"]["recorded_over_plain_wall_pct"],
        "toolnode": figures["toolnode"]["recorded_over_plain_tools_span_pct"],
        "atool": figures["atool"]["recorded_over_plain_wall_pct"],
    }
    figures["target_met"] = all(share <= TARGET_PCT for share in shares.values())
    for name, share in shares.items():
        print(f"{name}: recorded {share:+.1f} % of plain wall ({figures[name]})", flush=True)
    honest.finish(figures, load)
    return 0


if __name__ == "__main__":
    sys.exit(main())

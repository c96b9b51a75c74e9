"""Recording overhead of the framework recorders, against the same agents run without recording.

    python tests/bench/bench_frameworks.py [--runs N]

Prints one JSON line. For each framework (Agents SDK, LangGraph, PydanticAI) the CRM example
agent runs against the loopback model server, alternately plain (the framework's own client,
tools and checkpointer, no harness) and recorded (``record_run`` into a journal), so both see
the same machine load. The overhead per call is the difference of the fastest runs (a recorded run timed from
run.started to run.ended; building the harness, its environment fingerprint and the closing
fsync of the journal are once per run)
divided by the model and tool calls of a run, and is given as a share of one loopback model call (a plain
chat-completions request to the same server). Per model call and per tool call, the same
transport and tool path every recorder uses are timed on their own: an OpenAI client with and
without the harness transport, and ``Harness.record_tool_call`` against calling the tool.
Target: the overhead per call is at most 5 % of a loopback model call.

Every figure is given in wall time and in CPU time of the process (``*_cpu_*``; the loopback
server is a thread of the same process, so a model call's CPU includes serving it). On a
shared machine a busy neighbour adds wall time to either side at random; CPU time only grows
with it, so the CPU figures are the steadier ones. ``load_average`` is the 1-minute load at
the start and the end of the run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, NamedTuple

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from fixtures.agents import framework_crm as crm  # noqa: E402
from fixtures.agents.loopback_llm import LoopbackLLM  # noqa: E402
from replay_tui.harness import Harness, JsonlSink, build_harness, run_agent  # noqa: E402
from replay_tui.harness.frameworks.common import api_key  # noqa: E402

CONFIG = ROOT / "fixtures" / "configs" / "frameworks.toml"
AGENTS = {
    "agents-sdk": "fixtures.agents.agents_sdk_crm:agent",
    "langgraph": "fixtures.agents.langgraph_crm:agent",
    "pydantic-ai": "fixtures.agents.pydantic_ai_crm:agent",
}


# -- the same agents without recording ------------------------------------------------------


def _plain_async_http() -> Any:
    """A plain async client per run, with the one SSL context the recording transport shares too
    (so neither side pays for reading the CA bundle on every run)."""
    from replay_tui.harness.httpx_transport import _shared_ssl_context, default_httpx_module

    module = default_httpx_module()
    return module.AsyncClient(verify=_shared_ssl_context(module))


def plain_agents_sdk(base_url: str) -> Any:
    from agents import OpenAIChatCompletionsModel, RunConfig, Runner, set_tracing_disabled
    from openai import AsyncOpenAI

    from fixtures.agents import agents_sdk_crm as example

    set_tracing_disabled(True)
    client = AsyncOpenAI(api_key=api_key(), base_url=base_url, max_retries=0, http_client=_plain_async_http())
    config = RunConfig(model=OpenAIChatCompletionsModel(model=crm.MODEL, openai_client=client), tracing_disabled=True)
    return asyncio.run(Runner.run(example.triage, crm.QUESTION, context=example.SupportDesk(), run_config=config))


def plain_pydantic_ai(base_url: str) -> Any:
    from openai import AsyncOpenAI
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    from fixtures.agents import pydantic_ai_crm as example

    client = AsyncOpenAI(api_key=api_key(), base_url=base_url, max_retries=0, http_client=_plain_async_http())
    model = OpenAIChatModel(crm.MODEL, provider=OpenAIProvider(openai_client=client))
    return asyncio.run(example.crm_agent.run(crm.QUESTION, model=model))


def plain_langgraph(base_url: str) -> Any:
    import sqlite3

    from langchain_core.messages import HumanMessage, SystemMessage
    from langchain_openai import ChatOpenAI
    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.graph import END, START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode, tools_condition

    from fixtures.agents import langgraph_crm as example

    model = ChatOpenAI(model=crm.MODEL, base_url=base_url, api_key=api_key(), max_retries=0).bind_tools(example.TOOLS)

    def call_model(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke([SystemMessage(crm.INSTRUCTIONS), *state["messages"]])]}

    builder = StateGraph(MessagesState)
    builder.add_node("agent", call_model)
    builder.add_node("tools", ToolNode(example.TOOLS))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition, {"tools": "tools", END: END})
    builder.add_edge("tools", "agent")
    with tempfile.TemporaryDirectory() as scratch:
        connection = sqlite3.connect(str(Path(scratch) / "checkpoints.sqlite"), check_same_thread=False)
        graph = builder.compile(checkpointer=SqliteSaver(connection))
        # one node at a time, as the recorder runs it
        config = {"configurable": {"thread_id": "bench"}}
        pending: Any = {"messages": [HumanMessage(crm.QUESTION)]}
        while True:
            for _ in graph.stream(pending, config, stream_mode="values", interrupt_after=list(builder.nodes)):
                pass
            pending = None
            if not graph.get_state(config).next:
                break
        connection.close()


PLAIN: dict[str, Callable[[str], Any]] = {
    "agents-sdk": plain_agents_sdk,
    "langgraph": plain_langgraph,
    "pydantic-ai": plain_pydantic_ai,
}


def recorded(name: str, base_url: str, scratch: Path, index: int) -> tuple[Seconds, int, int]:
    """Wall and CPU seconds of one recorded run (from run.started to run.ended: the harness is built
    before the clock starts and the journal's closing fsync is left out, both being per-run costs,
    not per-call ones), and the model and tool calls it made."""
    from replay_tui.journal import open_journal

    journal = scratch / f"{name}-{index}.jsonl"
    with build_harness(CONFIG, journal=journal, agent=AGENTS[name]) as recording:
        recording.started(AGENTS[name])
        sink = recording.harness.sink
        close, closing = sink.close, [Seconds(0.0, 0.0)]

        def timed_close() -> None:  # the fsync of the finished journal: once per run, not per call
            closing[0] = timed(close)

        sink.close = timed_close  # type: ignore[method-assign]
        started = Seconds.now()
        outcome = run_agent(AGENTS[name], recording.harness, [crm.task(base_url)])
        seconds = Seconds.now() - started - closing[0]
    if outcome.status != "ok":
        raise RuntimeError(f"{name}: {outcome.error}")
    with open_journal(journal) as opened:
        kinds = [opened.event(position).kind for position in range(len(opened))]
    journal.unlink()
    return seconds, kinds.count("model.request"), kinds.count("tool.call")


class Seconds(NamedTuple):
    """A duration on the wall clock and in CPU time of this process."""

    wall: float
    cpu: float

    @staticmethod
    def now() -> Seconds:
        return Seconds(time.perf_counter(), time.process_time())

    def __sub__(self, other: tuple[float, ...]) -> Seconds:
        return Seconds(self.wall - other[0], self.cpu - other[1])


def timed(function: Callable[[], Any]) -> Seconds:
    started = Seconds.now()
    function()
    return Seconds.now() - started


# -- one model call and one tool call on their own ------------------------------------------


def model_call_overhead(server: LoopbackLLM, scratch: Path, calls: int) -> dict[str, float]:
    from openai import OpenAI

    from replay_tui.harness.httpx_transport import http_client

    body = {"model": crm.MODEL, "messages": [{"role": "user", "content": crm.QUESTION}]}
    plain = OpenAI(api_key=api_key(), base_url=server.url, max_retries=0)
    harness = Harness(sink=JsonlSink(scratch / "model.jsonl", run_id="bench"), run_id="bench")
    harness.start_run("bench")
    recording = OpenAI(api_key=api_key(), base_url=server.url, max_retries=0, http_client=http_client(harness))
    plain_s, recorded_s = [], []
    for _ in range(calls):
        plain_s.append(timed(lambda: plain.chat.completions.create(**body)))
        recorded_s.append(timed(lambda: recording.chat.completions.create(**body)))
    harness.end_run("ok")
    figures = {}
    for clock, suffix in (("wall", ""), ("cpu", "_cpu")):
        plain_ms = statistics.median(getattr(s, clock) for s in plain_s) * 1000
        recorded_ms = statistics.median(getattr(s, clock) for s in recorded_s) * 1000
        figures[f"loopback_model_call{suffix}_ms"] = round(plain_ms, 3)
        figures[f"overhead_per_model_call{suffix}_ms"] = round(recorded_ms - plain_ms, 3)
    return figures


def tool_call_overhead(scratch: Path, calls: int) -> Seconds:
    """Milliseconds one recorded tool call adds (wall, CPU)."""
    harness = Harness(sink=JsonlSink(scratch / "tools.jsonl", run_id="bench"), run_id="bench")
    harness.start_run("bench")

    def live(arguments: Any) -> Any:
        return crm.open_tickets(arguments["customer_id"])

    plain = [timed(lambda: live({"customer_id": "C-042"})) for _ in range(calls)]
    with_harness = [
        timed(lambda: harness.record_tool_call("open_tickets", {"customer_id": "C-042"}, live)) for _ in range(calls)
    ]
    harness.end_run("ok")
    return Seconds(
        *(
            round(
                (statistics.median(s[clock] for s in with_harness) - statistics.median(s[clock] for s in plain)) * 1000,
                3,
            )
            for clock in (0, 1)
        )
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=12, help="runs of each agent, plain and recorded (default 12)")
    parser.add_argument("--calls", type=int, default=200, help="single model and tool calls timed (default 200)")
    args = parser.parse_args()
    figures: dict[str, Any] = {"bench": "frameworks", "runs": args.runs, "load_average": [os.getloadavg()[0]]}
    with LoopbackLLM() as server, tempfile.TemporaryDirectory(prefix="bench-frameworks-") as scratch_dir:
        scratch = Path(scratch_dir)
        figures.update(model_call_overhead(server, scratch, args.calls))
        tool = tool_call_overhead(scratch, args.calls * 5)
        figures["overhead_per_tool_call_ms"], figures["overhead_per_tool_call_cpu_ms"] = tool
        model_call = Seconds(figures["loopback_model_call_ms"], figures["loopback_model_call_cpu_ms"])
        for name in AGENTS:
            PLAIN[name](server.url)  # warm imports and connections
            _, *calls = recorded(name, server.url, scratch, -1)
            plain_s, recorded_s = [], []
            for index in range(args.runs):
                plain_s.append(timed(lambda: PLAIN[name](server.url)))
                recorded_s.append(recorded(name, server.url, scratch, index)[0])
            figures[name] = {"model_calls": calls[0], "tool_calls": calls[1]}
            for clock, suffix in ((0, ""), (1, "_cpu")):
                # the fastest run of each kind: the machine is shared, and noise only ever adds time
                plain_ms, recorded_ms = (min(s[clock] for s in runs) * 1000 for runs in (plain_s, recorded_s))
                per_call_ms = (recorded_ms - plain_ms) / sum(calls)
                figures[name] |= {
                    f"plain_run{suffix}_ms": round(plain_ms, 2),
                    f"recorded_run{suffix}_ms": round(recorded_ms, 2),
                    f"overhead_per_call{suffix}_ms": round(per_call_ms, 3),
                    f"overhead{suffix}_pct_of_model_call": round(100 * per_call_ms / model_call[clock], 1),
                }
        for clock, suffix in ((0, ""), (1, "_cpu")):
            figures[f"overhead_per_model_call{suffix}_pct"] = round(
                100 * figures[f"overhead_per_model_call{suffix}_ms"] / model_call[clock], 1
            )
            figures[f"overhead_per_tool_call{suffix}_pct_of_model_call"] = round(
                100 * figures[f"overhead_per_tool_call{suffix}_ms"] / model_call[clock], 1
            )
    figures["load_average"].append(os.getloadavg()[0])
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())

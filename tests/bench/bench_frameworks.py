"""Recording overhead of the framework recorders, against the same agents run without recording.

    python tests/bench/bench_frameworks.py [--runs N] [--calls N]

Prints one JSON line. The loopback model server runs in a child process (HTTP/1.1 keep-alive, no
Nagle delay: a connection per call or a server sharing this process's interpreter would add its
own cost to every call and flatter the ratio), so the figures are the agent side's only.

* Per model call: the same ``OpenAI`` client request, with and without the harness transport,
  interleaved call by call; the median of each kind, and the overhead as the median of the pairs'
  differences (as for runs, below). The denominator, "a loopback model call", is the plain call:
  the SDK's own client to the loopback server.
* The floor per model call: the same request through ``floor_transport``, which does only what any
  recorder keeping the journal contract must do in the agent's process (parse and re-serialize both
  bodies with sorted keys, hash the request, hash and write each event line with one write(2)), paired
  with a plain call just before it as the recorded calls are. ``overhead_over_floor_cpu`` is the
  recorder's CPU overhead over the floor's: what redaction, the schema and the harness add to it.
* Per tool call: ``Harness.record_tool_call`` against calling the tool, interleaved, medians.
* Per run: for each framework (Agents SDK, LangGraph, PydanticAI) the CRM example agent, plain
  (the framework's own client, tools, session and checkpointer, no harness) and recorded
  (``record_run`` into a journal), interleaved run by run; the median of the differences of each
  pair (a recorded run less the plain run just before it: the machine's speed drifts over seconds,
  and a pair sees the same speed) divided by the model and tool calls of a run. A recorded run is
  timed from run.started to run.ended: building the harness (its environment fingerprint) and the
  journal's closing fsync are once per run, not per call.

The server answers like a real API (``like_a_real_api``): every answer has fresh random ids, so a
recorded call pays for redacting a new answer, as it does against a real model.

Every figure is given in wall time and in CPU time of this process (``*_cpu_*``); shares are of
the plain model call's wall time (its median). On a shared machine a busy neighbour adds wall time to
either side at random and stretches the median call, which flatters every share of it; CPU time grows
far less with it. ``overhead_per_model_call_cpu_pct_of_fast_call`` is the strict figure: the CPU a
recorded model call adds, as a share of the fastest tenth of the plain calls (``loopback_model_call_fast_ms``,
close to an unloaded call).
``load_average`` is the 1-minute load at the start and the end. Target: the overhead per call is
at most 5 % of a loopback model call.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from honest import Seconds, timed  # noqa: E402

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
    """A plain async client per run, on the one SSL context the recording side shares too (so neither side
    pays for reading the CA bundle on every run)."""
    from replay_tui.harness.httpx_transport import plain_async_client

    return plain_async_client()


def plain_agents_sdk(base_url: str) -> Any:
    from agents import OpenAIChatCompletionsModel, RunConfig, Runner, SQLiteSession, set_tracing_disabled
    from openai import AsyncOpenAI

    from fixtures.agents import agents_sdk_crm as example

    set_tracing_disabled(True)
    client = AsyncOpenAI(api_key=api_key(), base_url=base_url, max_retries=0, http_client=_plain_async_http())
    config = RunConfig(model=OpenAIChatCompletionsModel(model=crm.MODEL, openai_client=client), tracing_disabled=True)
    session = SQLiteSession("crm-desk")  # the example agent keeps its conversation in one too
    return asyncio.run(
        Runner.run(example.triage, crm.QUESTION, context=example.SupportDesk(), run_config=config, session=session)
    )


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


# -- the loopback server, in a child process ------------------------------------------------


def like_a_real_api(document: dict[str, Any]) -> dict[str, Any]:
    """A loopback answer as a real chat-completions API shapes it: a fresh random completion id and tool call
    ids, a system fingerprint and the usage details. The loopback's own ids repeat from run to run, and a
    recorder finds repeated values in redaction's cache of values found clean, which no real run does."""
    import secrets

    def base62(length: int) -> str:
        alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
        return "".join(secrets.choice(alphabet) for _ in range(length))

    answer = json.loads(json.dumps(document))
    answer["id"] = f"chatcmpl-{base62(29)}"
    answer["system_fingerprint"] = f"fp_{secrets.token_hex(5)}"
    for choice in answer.get("choices") or []:
        for call in choice.get("message", {}).get("tool_calls") or []:
            call["id"] = f"call_{base62(24)}"
    usage = answer.get("usage") or {}
    usage["prompt_tokens_details"] = {"cached_tokens": 0, "audio_tokens": 0}
    usage["completion_tokens_details"] = {
        "reasoning_tokens": 0,
        "audio_tokens": 0,
        "accepted_prediction_tokens": 0,
        "rejected_prediction_tokens": 0,
    }
    return answer


def serve() -> None:
    """The child: the CRM loopback model, keep-alive, answering like a real API (``like_a_real_api``);
    prints its URL, stops when stdin closes."""
    from fixtures.agents.loopback_llm import _Handler

    class KeepAlive(_Handler):
        protocol_version = "HTTP/1.1"  # one connection for every call, as with a real model API
        disable_nagle_algorithm = True  # headers and body are two writes: no 40 ms delayed-ACK stall

        def _send(self, status: int, document: Any) -> None:
            super()._send(status, like_a_real_api(document) if status == 200 else document)

    with LoopbackLLM() as server:
        server.httpd.RequestHandlerClass = KeepAlive
        print(server.url, flush=True)
        sys.stdin.read()


class ChildServer:
    """The loopback server in its own process (its CPU is not this process's)."""

    def __enter__(self) -> ChildServer:
        import subprocess

        self.process = subprocess.Popen(
            [sys.executable, __file__, "--serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        assert self.process.stdout is not None
        self.url = self.process.stdout.readline().strip()
        if not self.url:
            raise RuntimeError("the loopback server did not start")
        return self

    def __exit__(self, *exc: object) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=10)


# -- one model call and one tool call on their own ------------------------------------------


def median_of(samples: list[Seconds], clock: int) -> float:
    return statistics.median(sample[clock] for sample in samples)


def paired_median(plain_s: list[Seconds], recorded_s: list[Seconds], clock: int) -> float:
    """The median of each recorded sample less the plain one taken just before it (same machine speed)."""
    return statistics.median(recorded[clock] - plain[clock] for plain, recorded in zip(plain_s, recorded_s))


def floor_transport(module: Any, journal: Path) -> Any:
    """An httpx transport doing the least that any recorder keeping the journal contract does in the agent's
    process: both JSON bodies parsed and written again with sorted keys, the request hashed, each event line
    hashed (SHA-256, chained) and written with one write(2) before the call goes out and before the SDK reads
    the answer. No redaction, no schema, no harness. Its cost is the floor the recorder's is measured against."""
    import hashlib

    import orjson

    from replay_tui.harness.httpx_transport import _shared_ssl_context

    def headers(message: Any) -> list[tuple[str, str]]:
        return [(name.decode("latin-1"), value.decode("latin-1")) for name, value in message.headers.raw]

    class Floor(module.BaseTransport):  # type: ignore[misc]
        def __init__(self) -> None:
            self.inner = module.HTTPTransport(verify=_shared_ssl_context(module))
            self.fd = os.open(journal, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            self.seq, self.previous = 0, b""

        def write(self, kind: bytes, payload: bytes) -> None:
            self.seq += 1
            body = b'{"kind":"%s","payload":%s,"prev":"%s","seq":%d}' % (kind, payload, self.previous, self.seq)
            self.previous = hashlib.sha256(body).hexdigest().encode()
            os.write(self.fd, b'{"event_hash":"%s",%s\n' % (self.previous, body[1:]))

        def handle_request(self, request: Any) -> Any:
            request.read()
            record = {"request": orjson.loads(request.content), "headers": headers(request), "url": str(request.url)}
            request_json = orjson.dumps(record, option=orjson.OPT_SORT_KEYS)
            request_hash = hashlib.sha256(request_json).hexdigest().encode()
            self.write(b"model.request", b'{"request":%s,"request_hash":"%s"}' % (request_json, request_hash))
            live = self.inner.handle_request(request)
            try:
                live.read()
            finally:
                live.close()
            http = {"status": live.status_code, "headers": headers(live), "body_json": orjson.loads(live.content)}
            response = {"request_hash": request_hash.decode(), "response": {"http": http}}
            self.write(b"model.response", orjson.dumps(response, option=orjson.OPT_SORT_KEYS))
            return live

    return Floor()


def model_call_overhead(url: str, scratch: Path, calls: int) -> dict[str, float]:
    from openai import OpenAI

    from replay_tui.harness.httpx_transport import _shared_ssl_context, default_httpx_module, http_client

    module = default_httpx_module()
    body = {"model": crm.MODEL, "messages": [{"role": "user", "content": crm.QUESTION}]}
    # all on the same httpx module, SSL context and keep-alive pool settings
    plain = OpenAI(
        api_key=api_key(), base_url=url, max_retries=0, http_client=module.Client(verify=_shared_ssl_context(module))
    )
    harness = Harness(sink=JsonlSink(scratch / "model.jsonl", run_id="bench"), run_id="bench")
    harness.start_run("bench")
    recording = OpenAI(api_key=api_key(), base_url=url, max_retries=0, http_client=http_client(harness))
    floor_client = module.Client(transport=floor_transport(module, scratch / "floor.jsonl"))
    floor = OpenAI(api_key=api_key(), base_url=url, max_retries=0, http_client=floor_client)
    for _ in range(50):  # warm connections and caches
        plain.chat.completions.create(**body)
        recording.chat.completions.create(**body)
        floor.chat.completions.create(**body)
    # each recorded call, then each floor call, paired with the plain call just before it: in two loops of
    # two clients, as a third client between two recorded calls would cool their caches more than plain calls do
    plain_s, recorded_s, plain_before_floor_s, floor_s = [], [], [], []
    for _ in range(calls):
        plain_s.append(timed(lambda: plain.chat.completions.create(**body)))
        recorded_s.append(timed(lambda: recording.chat.completions.create(**body)))
    harness.end_run("ok")
    for _ in range(calls):
        plain_before_floor_s.append(timed(lambda: plain.chat.completions.create(**body)))
        floor_s.append(timed(lambda: floor.chat.completions.create(**body)))
    figures = {}
    for clock, suffix in ((0, ""), (1, "_cpu")):
        plain_ms = median_of(plain_s, clock) * 1000
        paired_ms = paired_median(plain_s, recorded_s, clock) * 1000
        figures[f"loopback_model_call{suffix}_ms"] = round(plain_ms, 3)
        figures[f"overhead_per_model_call{suffix}_ms"] = round(paired_ms, 3)
        figures[f"floor_per_model_call{suffix}_ms"] = round(
            paired_median(plain_before_floor_s, floor_s, clock) * 1000, 3
        )
    # a loaded machine stretches the median call; the fastest tenth is close to an unloaded one
    figures["loopback_model_call_fast_ms"] = round(sorted(sample.wall for sample in plain_s)[calls // 10] * 1000, 3)
    return figures


def tool_call_overhead(scratch: Path, calls: int) -> Seconds:
    """Milliseconds one recorded tool call adds (wall, CPU)."""
    harness = Harness(sink=JsonlSink(scratch / "tools.jsonl", run_id="bench"), run_id="bench")
    harness.start_run("bench")

    def live(arguments: Any) -> Any:
        return crm.open_tickets(arguments["customer_id"])

    plain, with_harness = [], []
    for _ in range(calls):
        plain.append(timed(lambda: live({"customer_id": "C-042"})))
        with_harness.append(timed(lambda: harness.record_tool_call("open_tickets", {"customer_id": "C-042"}, live)))
    harness.end_run("ok")
    return Seconds(*(round((median_of(with_harness, c) - median_of(plain, c)) * 1000, 3) for c in (0, 1)))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20, help="runs of each agent, plain and recorded (default 20)")
    parser.add_argument("--calls", type=int, default=500, help="single model and tool calls timed (default 500)")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)  # the child server
    args = parser.parse_args()
    if args.serve:
        serve()
        return 0
    figures: dict[str, Any] = {"bench": "frameworks", "runs": args.runs, "answers": "fresh ids, like a real API"}
    figures["load_average"] = [os.getloadavg()[0]]
    with ChildServer() as server, tempfile.TemporaryDirectory(prefix="bench-frameworks-") as scratch_dir:
        scratch = Path(scratch_dir)
        figures.update(model_call_overhead(server.url, scratch, args.calls))
        tool = tool_call_overhead(scratch, args.calls * 5)
        figures["overhead_per_tool_call_ms"], figures["overhead_per_tool_call_cpu_ms"] = tool
        model_call_ms = figures["loopback_model_call_ms"]
        for name in AGENTS:
            PLAIN[name](server.url)  # warm imports and connections
            _, *calls = recorded(name, server.url, scratch, -1)
            plain_s, recorded_s = [], []
            for index in range(args.runs):
                plain_s.append(timed(lambda: PLAIN[name](server.url)))
                recorded_s.append(recorded(name, server.url, scratch, index)[0])
            figures[name] = {"model_calls": calls[0], "tool_calls": calls[1]}
            for clock, suffix in ((0, ""), (1, "_cpu")):
                plain_ms, recorded_ms = (median_of(runs, clock) * 1000 for runs in (plain_s, recorded_s))
                per_call_ms = paired_median(plain_s, recorded_s, clock) * 1000 / sum(calls)
                figures[name] |= {
                    f"plain_run{suffix}_ms": round(plain_ms, 2),
                    f"recorded_run{suffix}_ms": round(recorded_ms, 2),
                    f"overhead_per_call{suffix}_ms": round(per_call_ms, 3),
                    f"overhead{suffix}_pct_of_model_call": round(100 * per_call_ms / model_call_ms, 1),
                }
        for suffix in ("", "_cpu"):
            figures[f"overhead_per_model_call{suffix}_pct"] = round(
                100 * figures[f"overhead_per_model_call{suffix}_ms"] / model_call_ms, 1
            )
            figures[f"overhead_per_tool_call{suffix}_pct_of_model_call"] = round(
                100 * figures[f"overhead_per_tool_call{suffix}_ms"] / model_call_ms, 1
            )
            figures[f"floor_per_model_call{suffix}_pct"] = round(
                100 * figures[f"floor_per_model_call{suffix}_ms"] / model_call_ms, 1
            )
        figures["overhead_over_floor_cpu"] = round(
            figures["overhead_per_model_call_cpu_ms"] / figures["floor_per_model_call_cpu_ms"], 2
        )
        figures["overhead_per_model_call_cpu_pct_of_fast_call"] = round(
            100 * figures["overhead_per_model_call_cpu_ms"] / figures["loopback_model_call_fast_ms"], 1
        )
    figures["load_average"].append(os.getloadavg()[0])
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())

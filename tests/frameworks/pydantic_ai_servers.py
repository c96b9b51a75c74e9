"""The loopback servers the PydanticAI pattern agents talk to: the model (``tests/httpx/servers.py`` with the
policy below, in the chat-completions, Responses API or Anthropic wire format) and the weather service their
tools call (it counts every request, so a replay that ran a tool would show).

The policy is a pure function of the request, so a recording and an unrecorded run of the same agent get
the same answers, and any difference in what they send is the recorder's."""

from __future__ import annotations

import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Mapping

from tests.httpx.servers import LLMServer, Served

JOKES = ["Why did the scarecrow win? He was outstanding in his field.", "I told a chemistry joke. No reaction."]
WEATHER_TOOLS = ("get_weather", "get_station", "get_alerts")


def _question(messages: list[Mapping[str, Any]]) -> str:
    return next((str(m["content"]) for m in messages if m["role"] == "user" and m.get("content")), "")


def _called(messages: list[Mapping[str, Any]]) -> list[str]:
    return [call["name"] for m in messages for call in m.get("tool_calls") or ()]


def _results(messages: list[Mapping[str, Any]]) -> list[str]:
    return [str(m["content"]) for m in messages if m["role"] == "tool"]


def _calls(*calls: tuple[str, dict[str, Any]], turn: int) -> dict[str, Any]:
    return {
        "content": None,
        "tool_calls": [
            {"id": f"call_{turn}_{index}", "name": name, "arguments": arguments}
            for index, (name, arguments) in enumerate(calls, start=1)
        ],
    }


def policy(request: Mapping[str, Any]) -> dict[str, Any]:
    """The model of the pattern agents (each told apart by the tools it is offered)."""
    tools, messages = list(request["tools"]), list(request["messages"])
    called, results, question = _called(messages), _results(messages), _question(messages)
    turn = sum(1 for m in messages if m.get("tool_calls")) + 1
    city = question.rstrip("?.!").rsplit(" ", 1)[-1]
    if "joke_factory" in tools:  # the joke selection agent (PydanticAI's agent delegation example)
        if "joke_factory" not in called:
            return _calls(("joke_factory", {"count": 2}), ("joke_factory", {"count": 1}), turn=turn)
        best = next(joke for joke in JOKES if joke in results[0])  # (a JSON list, or Anthropic's text blocks)
        return {"content": f"The best one: {best}"}
    if "jokes" in question:  # the joke generation agent: list[str] output
        count = int(re.search(r"\d+", question).group(0))  # type: ignore[union-attr]
        return _calls(("final_result", {"response": JOKES[:count]}), turn=turn)
    if "get_chart" in tools:
        if "get_chart" not in called:
            return _calls(("get_chart", {"city": city}), ("observed_at", {"city": city}), turn=turn)
        return {"content": f"Here is the chart of {city}."}
    if "ask_helper" in tools or "ask_helper_marked" in tools:
        name = "ask_helper" if "ask_helper" in tools else "ask_helper_marked"
        if name not in called:
            return _calls((name, {"question": "What is Paris known for?"}), turn=turn)
        return {"content": f"The helper says: {results[0]}"}
    if "delete_file" in tools:
        return _calls(("delete_file", {"path": "reports/2025.pdf"}), turn=turn)
    if "lookup_city" in tools:  # the agent with a retried tool and an output validator
        if not any(name == "lookup_city" for name in called):
            return _calls(("lookup_city", {"name": city.lower()}), turn=turn)
        if called.count("lookup_city") == 1:
            return _calls(("lookup_city", {"name": city}), turn=turn)
        summary = "Mild." if called.count("final_result") == 0 else f"Mild in {city}."
        return _calls(("final_result", {"city": city, "summary": summary, "temperature_c": 21.5}), turn=turn)
    if "get_weather" in tools:
        if not set(WEATHER_TOOLS) & set(called):  # three calls in one answer: PydanticAI runs them concurrently
            return _calls(*((name, {"city": city}) for name in WEATHER_TOOLS), turn=turn)
        weather = json.loads(next(r for r in results if "temperature_c" in r))
        if "final_result" in tools:
            summary = f"{weather['conditions']} in {city}"
            arguments = {"city": city, "summary": summary, "temperature_c": weather["temperature_c"]}
            return _calls(("final_result", arguments), turn=turn)
        return {"content": f"It is {weather['conditions']} in {city} at {weather['temperature_c']} C today."}
    return {"content": f"No tools for: {question}"}


def model_server(**options: Any) -> LLMServer:
    """The loopback model with the pattern policy (``delay_s``, ``event_gap_s`` as ``FakeLLM`` takes them)."""
    server = LLMServer(policy)
    for name, value in options.items():
        setattr(server.state, name, value)
    return server


class WeatherService(Served):
    """The service the weather tools call, on 127.0.0.1: ``GET /weather/<city>``, ``/station/<city>``,
    ``/alerts/<city>``, each answered after ``delay_s``; ``requests`` counts them and ``intervals`` keeps when
    each came and was answered. Its answers put object members in an order of their own, not sorted."""

    def __init__(self, delay_s: float = 0.0) -> None:
        service = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802 (http.server naming)
                came = time.perf_counter()
                with service.lock:
                    service.requests += 1
                time.sleep(service.delay_s)
                kind, _, city = self.path.strip("/").partition("/")
                data = json.dumps(_record(kind, city)).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                with service.lock:
                    service.intervals.append((came, time.perf_counter()))

        self.delay_s = delay_s
        self.lock = threading.Lock()
        self.requests = 0
        self.intervals: list[tuple[float, float]] = []
        httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        httpd.daemon_threads = True
        super().__init__(httpd)


def _record(kind: str, city: str) -> dict[str, Any]:
    if kind == "weather":
        return {"city": city, "temperature_c": 21.5, "conditions": "sunny"}
    if kind == "station":
        return {"station_id": f"ST-{city[:3].upper()}", "name": f"{city} Central", "elevation_m": 35}
    return {"zone": city, "level": "none", "active": False, "issued_by": "met office"}


def overlapping(intervals: list[tuple[float, float]]) -> int:
    """The most intervals open at one moment."""
    edges = sorted([(start, 1) for start, _ in intervals] + [(end, -1) for _, end in intervals])
    most = open_now = 0
    for _, step in edges:
        open_now += step
        most = max(most, open_now)
    return most

"""Record mode: what the harness writes for each boundary, and how it behaves."""

from __future__ import annotations

import asyncio
import random
import sys
import threading
import time

import pytest

from replay_tui.harness import (
    Harness,
    HarnessError,
    JsonlSink,
    RecordedToolError,
    RecordedToolTimeout,
    ToolSpec,
    error_from_payload,
    error_to_payload,
)
from replay_tui.harness.replay_support import RecordedObservations, sources_for
from replay_tui.journal import call_key_of, hash_value, verify_journal
from replay_tui.journal.model import OBSERVATION_KINDS

from .helpers import events_of


class Scripted:
    extension, version = "model", "1"

    def __init__(self, output):
        self.output = output
        self.calls = 0

    def complete(self, request):
        self.calls += 1
        return self.output() if callable(self.output) else self.output


def _harness(tmp_path, name="run", **kwargs):
    journal = tmp_path / f"{name}.jsonl"
    harness = Harness(sink=JsonlSink(journal, run_id=name), run_id=name, **kwargs)
    harness.start_run(agent="tests:agent")
    return harness, journal


def _kinds(journal):
    return [event.kind for event in events_of(journal)]


def test_arguments_are_copied_at_call_time(tmp_path):
    def mutating(rows, region):
        rows.append("added by the tool")
        return len(rows)

    harness, journal = _harness(tmp_path, tools={"count": ToolSpec("count", mutating)})
    arguments = {"rows": ["a"], "region": "east"}
    assert harness.tool("count", arguments) == 2
    arguments["region"] = "changed by the agent afterwards"
    harness.end_run("ok")
    call = next(e for e in events_of(journal) if e.kind == "tool.call")
    assert call.payload["arguments"] == {"rows": ["a"], "region": "east"}
    assert call.payload["call_key"] == call_key_of("count", {"rows": ["a"], "region": "east"})
    result = next(e for e in events_of(journal) if e.kind == "tool.result")
    assert (result.payload["call_key"], result.parent_event_id) == (call.payload["call_key"], call.event_id)


def test_model_request_is_normalized_and_hashed(tmp_path):
    model = Scripted(
        {"content": "hi", "tool_calls": [], "finish_reason": "stop", "usage": {"prompt_tokens": 3}, "extra": 1}
    )
    harness, journal = _harness(tmp_path, model=model)
    response = harness.model({"model": "m", "messages": ({"role": "user", "content": "q"},), "temperature": None})
    harness.end_run("ok")
    request, answer = [e for e in events_of(journal) if e.kind.startswith("model.")]
    assert request.payload["request"] == {"model": "m", "messages": [{"role": "user", "content": "q"}]}
    assert request.payload["request_hash"] == hash_value(request.payload["request"]) == answer.payload["request_hash"]
    assert answer.payload["response"] == {
        "content": "hi",
        "tool_calls": [],
        "finish_reason": "stop",
        "usage": {"prompt_tokens": 3},
    }
    assert response == answer.payload["response"] and answer.parent_event_id == request.event_id


def test_streamed_output_is_assembled_and_the_boundaries_kept(tmp_path):
    chunks = [
        {"content": "Hel"},
        {"content": "lo, "},
        {"content": "world"},
        {"tool_calls": [{"index": 0, "id": "t1", "name": "lookup", "arguments": '{"sk'}]},
        {"tool_calls": [{"index": 0, "arguments": 'u": "A-1"}'}]},
        {"finish_reason": "tool_calls", "usage": {"completion_tokens": 4}},
    ]
    harness, journal = _harness(tmp_path, model=Scripted(lambda: iter(chunks)))
    deltas: list[str] = []
    response = harness.model({"model": "m", "messages": []}, on_chunk=deltas.append)
    harness.end_run("ok")
    # a token at the end of a chunk waits for the next (it may be part of a secret); the last goes with the end
    assert response["content"] == "Hello, world" and deltas == ["", "Hello, ", "", "", "", "world"]
    assert response["tool_calls"] == [{"id": "t1", "name": "lookup", "arguments": {"sku": "A-1"}}]
    event = next(e for e in events_of(journal) if e.kind == "model.response")
    assert event.payload["stream"] == {"chunks": 6, "boundaries": [0, 7, 7, 7, 7, 12]}

    # served from the journal, the same deltas come back from the boundaries
    replay_deltas: list[str] = []
    source = RecordedObservations(events_of(journal))
    again, _ = _harness(tmp_path, name="again", observation_sources=sources_for(source, OBSERVATION_KINDS))
    again.model({"model": "m", "messages": []}, on_chunk=replay_deltas.append)
    assert replay_deltas == deltas


def test_clock_random_and_uuid_are_recorded_observations(tmp_path):
    harness, journal = _harness(tmp_path, wall_clock=lambda: 1700000000.5, random_seed=3)
    values = [
        harness.clock.now(),
        harness.clock.monotonic(),
        harness.random.random(),
        harness.random.randint(1, 6),
        harness.random.choice(["x", "y", "z"]),
        harness.ids.uuid4(),
        harness.clock.utcnow().year,
    ]
    harness.end_run("ok")
    observed = [(e.kind, e.payload["source"], e.payload["value"]) for e in events_of(journal) if e.is_observation]
    assert [source for _, source, _ in observed] == [
        "clock.wall",
        "clock.monotonic",
        "random.random",
        "random.randint",
        "random.choice",
        "uuid4",
        "clock.wall",
    ]
    assert observed[0][2] == values[0] == 1700000000.5 and values[-1] == 2023
    assert observed[5][2] == values[5] and len(values[5]) == 36 and values[5][14] == "4"
    assert ["x", "y", "z"][observed[4][2]] == values[4]


class QuotaExceeded(Exception):
    code = "QUOTA"


def test_tool_errors_and_timeouts_are_recorded_and_raised(tmp_path):
    def broken(kind):
        if kind == "builtin":
            raise ValueError("bad region")
        raise QuotaExceeded("quota exceeded for today")

    released = threading.Event()

    def slow():
        released.wait(60)  # far longer than any scheduling delay: only the timeout can end the call in time
        return "late"

    harness, journal = _harness(
        tmp_path, tools={"broken": ToolSpec("broken", broken), "slow": ToolSpec("slow", slow, timeout_s=0.05)}
    )
    with pytest.raises(ValueError, match="bad region"):
        harness.tool("broken", {"kind": "builtin"})
    with pytest.raises(RecordedToolError) as custom:
        harness.tool("broken", {"kind": "custom"})
    assert custom.value.type_name.endswith("QuotaExceeded") and custom.value.code == "QUOTA"
    started = time.perf_counter()
    with pytest.raises(TimeoutError, match="timed out after 0.05s"):
        harness.tool("slow", {})
    assert time.perf_counter() - started < 30, "the call ended at its timeout, not when the tool did"
    released.set()
    harness.end_run("ok")
    errors = [e.payload["error"] for e in events_of(journal) if e.kind == "tool.result"]
    assert [(error["type"], error["timeout"]) for error in errors] == [
        ("ValueError", False),
        ("tests.harness.test_harness_record.QuotaExceeded", False),
        ("TimeoutError", True),
    ]
    assert verify_journal(journal).ok


def test_error_from_payload_rebuilds_builtins_and_stands_in_for_the_rest():
    assert isinstance(error_from_payload(error_to_payload(KeyError("Q-404"))), KeyError)
    assert error_from_payload(error_to_payload(KeyError("Q-404"))).args == ("Q-404",)
    timeout = error_from_payload({"error": {"type": "TimeoutError", "message": "slow", "timeout": True}})
    assert type(timeout) is TimeoutError and str(timeout) == "slow"
    custom = error_from_payload({"type": "crm.RateLimited", "message": "429", "code": 429, "timeout": False})
    assert type(custom) is RecordedToolError and custom.code == 429 and "crm.RateLimited" in str(custom)
    custom_timeout = error_from_payload({"type": "httpx.ReadTimeout", "message": "read", "timeout": True})
    assert isinstance(custom_timeout, RecordedToolTimeout) and isinstance(custom_timeout, TimeoutError)
    not_an_exception = error_from_payload({"type": "SystemExit", "message": "x", "timeout": False})
    assert type(not_an_exception) is RecordedToolError


def test_model_errors_are_recorded_and_raised(tmp_path):
    def fail():
        raise ConnectionError("model endpoint unreachable")

    harness, journal = _harness(tmp_path, model=Scripted(fail))
    with pytest.raises(ConnectionError, match="unreachable"):
        harness.model({"model": "m", "messages": []})
    harness.end_run("error", error=ConnectionError("model endpoint unreachable"))
    response = next(e for e in events_of(journal) if e.kind == "model.response")
    assert response.payload["response"] is None and response.payload["error"]["type"] == "ConnectionError"


@pytest.mark.parametrize("seed", range(5))
def test_concurrent_tool_calls_are_written_in_the_order_they_finish(tmp_path, seed):
    """Concurrent calls run concurrently, and the journal is what happened: every call when it was made, every
    result when it arrived (here: all calls first, then the results in the order the tools returned)."""
    rng = random.Random(seed)
    delays = {f"t{index}": rng.uniform(0.005, 0.05) for index in range(8)}
    finished: list[str] = []

    async def work(name):
        await asyncio.sleep(delays[name])  # finish in a random order
        finished.append(name)
        return name

    harness, journal = _harness(tmp_path, tools={"work": ToolSpec("work", work)})

    async def agent():
        return await harness.tools_parallel([("work", {"name": f"t{index}"}) for index in range(8)])

    started = time.perf_counter()
    assert asyncio.run(agent()) == [f"t{index}" for index in range(8)]  # handed back in call order
    assert time.perf_counter() - started < sum(delays.values())  # they ran at the same time
    harness.end_run("ok")
    events = events_of(journal)
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    shape = [(e.kind, e.payload.get("arguments", {}).get("name") or e.payload.get("result")) for e in events[1:-1]]
    assert shape == [("tool.call", f"t{i}") for i in range(8)] + [("tool.result", name) for name in finished]
    calls = {e.payload["call_id"]: e for e in events if e.kind == "tool.call"}
    for result in (e for e in events if e.kind == "tool.result"):  # each observation names the call it answers
        assert result.parent_event_id == calls[result.payload["call_id"]].event_id


def test_sync_and_async_tools_in_parallel_keep_each_result_after_its_call(tmp_path):
    def sync_work(name):
        time.sleep(0.02 if name == "slow" else 0)
        return name

    async def work(name):
        await asyncio.sleep(0.01)
        return name

    tools = {"work": ToolSpec("work", work), "sync_work": ToolSpec("sync_work", sync_work)}
    harness, journal = _harness(tmp_path, tools=tools)

    async def agent():
        calls = [("sync_work", {"name": "slow"}), ("work", {"name": "a"}), ("sync_work", {"name": "quick"})]
        return await harness.tools_parallel(calls)

    assert asyncio.run(agent()) == ["slow", "a", "quick"]
    harness.end_run("ok")
    events = events_of(journal)
    assert verify_journal(journal).ok
    results = [e.payload["result"] for e in events if e.kind == "tool.result"]
    assert sorted(results) == ["a", "quick", "slow"] and results[-1] == "slow"  # the slow one came last


def test_a_tool_that_needs_no_wait_is_written_as_it_happened(tmp_path):
    """A tool that returns without awaiting finishes before the next concurrent call is even made."""

    async def ready(name):
        return name

    harness, journal = _harness(tmp_path, tools={"ready": ToolSpec("ready", ready)})

    async def agent():
        return await harness.tools_parallel([("ready", {"name": f"t{index}"}) for index in range(3)])

    assert asyncio.run(agent()) == ["t0", "t1", "t2"]
    harness.end_run("ok")
    shape = [
        (e.kind, e.payload.get("arguments", {}).get("name") or e.payload.get("result"))
        for e in events_of(journal)[1:-1]
    ]
    assert shape == [item for i in range(3) for item in (("tool.call", f"t{i}"), ("tool.result", f"t{i}"))]


def test_a_call_cancelled_while_its_tool_runs_is_recorded_as_cancelled(tmp_path):
    async def slow():
        await asyncio.sleep(10)

    harness, journal = _harness(tmp_path, tools={"slow": ToolSpec("slow", slow)})

    async def agent():
        call = asyncio.ensure_future(harness.atool("slow", {}))
        await asyncio.sleep(0.01)  # the call is written and its tool is running
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call

    asyncio.run(agent())
    harness.end_run("ok")
    kinds = [(e.kind, e.payload.get("error", {}).get("message")) for e in events_of(journal)[1:-1]]
    assert kinds == [("tool.call", None), ("tool.result", "tool call cancelled")]


def test_tool_calls_from_several_threads_keep_the_chain_whole(tmp_path):
    """A framework may call the harness from threads of its own: every event still gets its own seq and its
    link in the chain (two threads used to take the same seq, and the run ended in a HarnessError)."""
    harness, journal = _harness(tmp_path, tools={"work": ToolSpec("work", lambda name: name)})
    switch_interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # hand the interpreter between threads as often as it can

    def work(thread: int) -> None:
        for index in range(100):
            harness.record_tool_call("work", {"name": f"{thread}-{index}"}, lambda copy: copy["name"])

    try:
        threads = [threading.Thread(target=work, args=(thread,)) for thread in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(switch_interval)
    harness.end_run("ok")
    assert verify_journal(journal).ok
    events = events_of(journal)
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert sorted(e.payload["result"] for e in events if e.kind == "tool.result") == sorted(
        f"{thread}-{index}" for thread in range(4) for index in range(100)
    )


def test_a_cancelled_call_is_written_when_it_is_cancelled_and_holds_back_nothing(tmp_path):
    async def forever():
        await asyncio.sleep(10)

    async def quick():
        return "ok"

    harness, journal = _harness(
        tmp_path, tools={"forever": ToolSpec("forever", forever), "quick": ToolSpec("quick", quick)}
    )

    async def agent():
        stuck = asyncio.ensure_future(harness.atool("forever", {}))
        fast = asyncio.ensure_future(harness.atool("quick", {}))
        await asyncio.sleep(0.01)
        stuck.cancel()
        return await fast

    assert asyncio.run(agent()) == "ok"
    harness.end_run("ok")
    results = [e.payload for e in events_of(journal) if e.kind == "tool.result"]
    assert results[0]["result"] == "ok" and results[1]["error"]["message"] == "tool call cancelled"


def test_misuse_is_refused_before_anything_is_written(tmp_path):
    harness, journal = _harness(tmp_path, tools={"t": ToolSpec("t", lambda **kw: 1)})
    with pytest.raises(HarnessError, match="unknown tool 'nope'"):
        harness.tool("nope", {})
    with pytest.raises(HarnessError, match="not JSON"):
        harness.tool("t", {"when": object()})
    with pytest.raises(HarnessError, match="no model plugin"):
        harness.model({"messages": []})
    harness.end_run("ok")
    assert _kinds(journal) == ["run.started", "run.ended"]


def test_only_the_bus_assigns_seq(tmp_path):
    class SkippingSink(JsonlSink):
        def emit(self, kind, payload, *, step_id, parent_event_id):
            event = super().emit(kind, payload, step_id=step_id, parent_event_id=parent_event_id)
            if event.seq == 2:
                super().emit(
                    "input.received", {"role": "x", "content": "sneaked in"}, step_id=None, parent_event_id=None
                )
            return event

    harness = Harness(sink=SkippingSink(tmp_path / "s.jsonl", run_id="s"), run_id="s")
    harness.start_run()
    harness.receive_input("hello")
    with pytest.raises(HarnessError, match="the sink gave seq 4 .* expected 3"):
        harness.receive_input("again")


def test_non_json_input_and_output_are_clear(tmp_path):
    harness, journal = _harness(tmp_path)
    with pytest.raises(HarnessError, match="input content is not JSON"):
        harness.receive_input({"when": object()})
    harness.end_run("ok", output={"answer": {1, 2}})
    ended = events_of(journal)[-1]
    assert ended.payload["status"] == "error" and "agent output is not JSON" in ended.payload["error"]["message"]


def test_an_async_tool_called_synchronously_inside_a_loop_is_refused(tmp_path):
    async def fetch():
        return 1

    harness, journal = _harness(tmp_path, tools={"fetch": ToolSpec("fetch", fetch)})

    async def agent():
        with pytest.raises(HarnessError, match="use 'await h.atool"):
            harness.tool("fetch", {})
        return await harness.atool("fetch", {})

    assert asyncio.run(agent()) == 1
    assert harness.tool("fetch", {}) == 1  # outside a loop the sync call runs it
    harness.end_run("ok")
    assert [e.kind for e in events_of(journal)].count("tool.call") == 2


class _Served:
    """A source serving one recorded value for every clock read and random draw (a hostile journal's)."""

    def __init__(self, value):
        self.value = value

    def observe(self, kind, key, request):
        return {"source": key, "value": self.value}


# (the read, a value the journal may hold that the read cannot use, what the error expects)
HOSTILE_OBSERVATIONS = [
    (lambda h: h.clock.now(), "1700000000", "a number of seconds since 1970"),
    (lambda h: h.clock.utcnow(), 1e300, "a number of seconds since 1970 that falls in the years 1 to 9999"),
    (lambda h: h.clock.monotonic(), True, "a number of seconds"),
    (lambda h: h.random.random(), 7, "a number from 0 up to 1"),
    (lambda h: h.random.randint(1, 6), 9, "an integer from 1 to 6"),
    (lambda h: h.random.choice(["x", "y", "z"]), -1, "an integer from 0 to 2"),
    (lambda h: h.random.choice(["x", "y", "z"]), 2.0, "an integer from 0 to 2"),
    (lambda h: h.ids.uuid4(), {"a": 1}, "a UUID as text"),
    (lambda h: h.ids.uuid4(), "not-a-uuid", "a UUID as text"),
]


@pytest.mark.parametrize(("read", "value", "expected"), HOSTILE_OBSERVATIONS)
def test_a_recorded_observation_the_reader_cannot_use_ends_the_replay_naming_its_seq(tmp_path, read, value, expected):
    """Served from a hostile journal, a clock read, random draw or id of the wrong type or range is a journal error
    at its seq, not a TypeError in the agent (or, for a choice of -1, an option the recording never drew)."""
    from replay_tui.harness import UnusableJournal

    harness, _ = _harness(tmp_path, observation_sources=sources_for(_Served(value), OBSERVATION_KINDS))
    with pytest.raises(UnusableJournal) as raised:
        read(harness)
    seq = harness.last_event.seq
    assert str(raised.value).startswith(f"seq {seq}: field payload.value: expected {expected}"), raised.value


def test_recorded_observations_of_the_right_shape_are_served_as_recorded(tmp_path):
    harness, _ = _harness(tmp_path, observation_sources=sources_for(_Served(2), OBSERVATION_KINDS))
    assert (harness.clock.now(), harness.random.choice("xyz"), harness.random.randint(2, 2)) == (2, "z", 2)
    uuid_text = "1b4e28ba-2fa1-41d2-883f-0016d3cca427"
    served, _ = _harness(tmp_path, name="uuid", observation_sources=sources_for(_Served(uuid_text), OBSERVATION_KINDS))
    assert served.ids.uuid4() == uuid_text


class _Answers:
    """A source serving one recorded model.response payload (a hostile journal's) for every request."""

    def __init__(self, payload):
        self.payload = payload

    def observe(self, kind, key, request):
        return {"request_hash": key, **self.payload}


# (the recorded payload less its request hash, stream the answer?, the field the error names)
ANSWER = {"content": "hello", "tool_calls": [], "finish_reason": "stop", "usage": {}}

HOSTILE_ANSWERS = [
    ({"response": None}, False, "payload.response"),
    ({"response": {"a": 1}}, False, "payload.response.content"),  # (before: the agent's KeyError on "content")
    ({"response": {**ANSWER, "content": 5}}, False, "payload.response.content"),
    ({"response": {**ANSWER, "tool_calls": -1}}, False, "payload.response.tool_calls"),
    ({"response": {**ANSWER, "tool_calls": [5]}}, False, "payload.response.tool_calls"),
    ({"response": {**ANSWER, "finish_reason": 1}}, False, "payload.response.finish_reason"),
    ({"response": {**ANSWER, "usage": None}}, False, "payload.response.usage"),
    ({"response": ANSWER, "stream": {"boundaries": [3, 1]}}, True, "payload.stream.boundaries"),
    ({"response": ANSWER, "stream": {"boundaries": [99]}}, True, "payload.stream.boundaries"),
    ({"response": ANSWER, "stream": {"boundaries": "5"}}, True, "payload.stream.boundaries"),
    ({"response": ANSWER, "stream": {"chunks": 1, "boundaries": None}}, True, "payload.stream.boundaries"),
]


@pytest.mark.parametrize(("payload", "streamed", "field"), HOSTILE_ANSWERS)
def test_a_recorded_answer_the_harness_cannot_hand_over_ends_the_replay_naming_its_seq(
    tmp_path, payload, streamed, field
):
    """``model()`` hands the agent ``{content, tool_calls, finish_reason, usage}``: served from a hostile journal,
    another shape is a journal error at its seq, not the agent's KeyError or a text cut at made-up places."""
    from replay_tui.harness import UnusableJournal

    harness, _ = _harness(tmp_path, observation_sources={"model.response": _Answers(payload)})
    chunks: list[str] = []
    with pytest.raises(UnusableJournal) as raised:
        harness.model({"model": "m", "messages": []}, on_chunk=chunks.append if streamed else None)
    assert str(raised.value).startswith(f"seq {harness.last_event.seq}: field {field}: expected "), raised.value
    assert chunks == []  # nothing of an answer that cannot be cut as recorded reaches the agent


def test_a_recorded_answer_of_the_documented_shape_is_served_as_recorded(tmp_path):
    answer = {**ANSWER, "content": None, "tool_calls": [{"id": "c1", "name": "t", "arguments": {}}]}
    harness, _ = _harness(tmp_path, observation_sources={"model.response": _Answers({"response": answer})})
    assert harness.model({"model": "m", "messages": []}) == answer
    payload = {"response": ANSWER, "stream": {"boundaries": [2, 5]}}
    streamed, _ = _harness(tmp_path, name="streamed", observation_sources={"model.response": _Answers(payload)})
    chunks: list[str] = []
    streamed.model({"model": "m", "messages": []}, on_chunk=chunks.append)
    assert chunks == ["he", "llo"]


def test_an_exchange_whose_answer_names_tool_calls_that_are_no_list_is_still_written(tmp_path):
    """The tool call ids an answer names are only noted (as the causes of the calls that follow): a recorder's
    exchange with a hostile value there is written, not a TypeError in the harness (as it was)."""
    served = _Answers({"response": {"tool_calls": 5, "http": {"status": 200}}})
    harness, _ = _harness(tmp_path, observation_sources={"model.response": served})
    event = harness.record_model_exchange({"model": "m", "messages": []}, lambda request_hash: {})
    assert event.kind == "model.response" and event.payload["response"]["tool_calls"] == 5

"""What the SDK reads while the httpx transport records: the response as it came when redaction left it
alone, the recorded (redacted) one when redaction changed it, so an agent never reads a secret the journal
does not hold, and reads in record what a replay will hand it."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from replay_tui.harness import Harness, JsonlSink
from replay_tui.harness.httpx_transport import default_httpx_module, exchange_from_payload, http_client
from replay_tui.journal import open_journal

SECRET = "sk-plainCANARY0123456789abcdefghij"


def _answer(content: str) -> bytes:
    message = {"role": "assistant", "content": content}
    return orjson.dumps({"id": "c-1", "object": "chat.completion", "choices": [{"index": 0, "message": message}]})


def _recorded_client(tmp_path: Path, body: bytes) -> tuple[Harness, object]:
    module = default_httpx_module()
    served = module.MockTransport(
        lambda request: module.Response(200, headers={"content-type": "application/json"}, content=body)
    )
    harness = Harness(sink=JsonlSink(tmp_path / "run.jsonl", run_id="handover"), run_id="handover")
    harness.start_run("tests:handover")
    return harness, http_client(harness, httpx_module=module, inner=served)


def _recorded_response(tmp_path: Path) -> dict:
    with open_journal(tmp_path / "run.jsonl") as opened:
        events = [opened.event(position) for position in range(len(opened))]
    return next(event.payload for event in events if event.kind == "model.response")


@pytest.mark.parametrize("content", ["Acme has 3 open tickets.", f"the key is {SECRET}"])
def test_the_sdk_reads_what_the_journal_holds(tmp_path: Path, content: str) -> None:
    harness, client = _recorded_client(tmp_path, _answer(content))
    read = client.post("http://127.0.0.1:9/v1/chat/completions", json={"model": "m", "messages": []})  # type: ignore[attr-defined]
    harness.end_run("ok")
    recorded = _recorded_response(tmp_path)
    replayed = exchange_from_payload(recorded)  # what a replay hands the SDK
    assert read.status_code == replayed.status == 200
    assert read.json() == orjson.loads(replayed.body)
    assert read.headers["content-type"] == dict(replayed.headers)["content-type"]
    assert SECRET not in read.text
    assert SECRET.encode() not in (tmp_path / "run.jsonl").read_bytes()
    if SECRET in content:
        assert "[REDACTED" in read.json()["choices"][0]["message"]["content"]
    else:
        assert read.json()["choices"][0]["message"]["content"] == content

"""vcrpy cassettes recorded while the openai client called the loopback server, imported."""

from __future__ import annotations

from pathlib import Path

import pytest

from replay_tui.cli import main
from replay_tui.importers import TraceImportError, import_trace

from .conftest import REPO, Produce
from .helpers import events_of, kinds, of_kind


def test_live_cassette(produce: Produce, tmp_path: Path) -> None:
    cassette = produce("vcr", "run.yaml")
    assert b"sk-producer-SECRET" in cassette.read_bytes()  # vcrpy keeps the key; the import must not
    [result] = import_trace(cassette, tmp_path / "run.jsonl")
    events = events_of(result.path)
    assert kinds(events) == ["run.started", "input.received"] + ["model.request", "model.response"] * 3 + [
        "tool.call",
        "tool.result",
        "run.ended",
    ]
    text = result.path.read_text()
    for secret in ("sk-producer-SECRET", "authorization", "s3cr3t-cookie", "set-cookie"):
        assert secret not in text
    first = of_kind(events, "model.request")[0]["payload"]["request"]
    assert first["model"] == "gpt-4.1-mini" and first["params"]["body"]["temperature"] == 0
    assert first["params"]["http"]["method"] == "POST" and first["params"]["http"]["url"].endswith(
        "/v1/chat/completions"
    )
    assert "x-stainless-os" not in first["headers"] and first["headers"]["content-type"] == "application/json"
    answer = of_kind(events, "model.response")[0]["payload"]["response"]
    assert answer["tool_calls"] == [{"id": "call_w1", "name": "weather", "arguments": {"city": "Oslo"}}]
    assert answer["http"]["status"] == 200
    streamed = of_kind(events, "model.response")[2]["payload"]
    assert streamed["response"]["content"] == "Let me check."
    assert streamed["stream"]["boundaries"][-1] == len("Let me check.") and streamed["stream"]["chunks"] > 3
    call, outcome = of_kind(events, "tool.call")[0]["payload"], of_kind(events, "tool.result")[0]["payload"]
    assert call["tool"] == "http llm.test" and call["arguments"]["body"] == {"city": "Oslo"}
    assert outcome["error"]["code"] == 404
    assert [event["payload"]["diagnostics"]["source"]["interaction"] for event in of_kind(events, "model.request")] == [
        0,
        1,
        2,
    ]
    assert result.fidelity["label"] == "replayable (model and tools)"


def test_bare_list_is_refused(tmp_path: Path) -> None:
    bare = tmp_path / "bare.yaml"
    bare.write_text("- request: {method: GET, uri: 'http://x/'}\n")
    with pytest.raises(TraceImportError) as caught:
        import_trace(bare, tmp_path / "out.jsonl", format="vcr")
    assert (
        str(caught.value) == f"{bare}: a vcrpy cassette: a mapping with interactions and version 1 (found a bare list)"
    )


def test_bad_interaction_is_named(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("interactions:\n- request: {method: GET, uri: 'http://x/'}\nversion: 1\n")
    with pytest.raises(
        TraceImportError, match=r"bad\.yaml: interactions\[0\]: an interaction with a request and a response"
    ):
        import_trace(bad, tmp_path / "out.jsonl")
    assert not (tmp_path / "out.jsonl").exists()


def test_the_original_openai_client_agent_replays_on_the_imported_cassette(
    produce: Produce, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The import normalizes each exchange as the httpx transport records it, so the producer's own
    loop, given ``http_client=http_client(h)``, hashes the same requests and gets the recorded answers."""
    cassette = produce("vcr", "chat.yaml", VCR_CHAT_ONLY="1")
    out = tmp_path / "chat.jsonl"
    assert main(["import", str(cassette), "-o", str(out)]) == 0
    capsys.readouterr()
    code = main(["replay", str(out), "--agent", "fixtures.imports.agents:cassette_agent", "--agent-path", str(REPO)])
    report = capsys.readouterr().out
    assert code == 0, report
    assert "Replay matched: 7 of 7 events" in report

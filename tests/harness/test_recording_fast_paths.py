"""The recording overhead's shortcuts write what the plain paths write: a model.request spliced around the
request's canonical JSON (the bytes its hash was taken of), a live model.response around its payload's (the
bytes redaction's gate judged), a line-flushing writer's unbuffered file (one
write(2) a line, the rest of a line a file took only part of), the httpx transport's headers told apart by
their bytes before decoding."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from replay_tui.harness import Harness, JsonlSink
from replay_tui.harness.httpx_transport import (
    _NOT_RECORDED_REQUEST_HEADERS,
    CREDENTIAL_HEADERS,
    IGNORED_HEADER_PREFIXES,
    IGNORED_RESPONSE_HEADERS,
    _header_dict,
    _request_headers,
    _response_headers_of,
    default_httpx_module,
)
from replay_tui.journal import Event, JournalWriter, verify_journal
from replay_tui.journal.hashing import event_hash_of

REQUESTS: list[dict[str, Any]] = [
    {"model": "m", "messages": [{"role": "user", "content": "How many tickets?"}]},
    {"model": "m", "messages": [{"role": "user", "content": 'quote " back\\slash \u2028 \x00 é 𝄞 \ue000'}]},
    {"model": "m", "temperature": 1.0, "params": {"top_p": 1e-6, "seed": 2**40, "big": 1.5e300, "none": None}},
    {
        "model": "m",
        "tools": [{"name": "t", "parameters": {"\ue000b": 1, "a": 2, "\U0001d11e": 3}}],
        "tool_choice": None,
    },
]


#: Answers written spliced around their JSON (made once for the gate and the line), and one that redaction
#: changes (written by the dict path).
ANSWERS: list[dict[str, Any]] = [
    {"content": "ok"},
    {"content": 'quote " back\\slash \u2028 \x00 é 𝄞 \ue000', "usage": {"cost": 1.0, "tiny": 1e-7, "big": 2**40}},
    {
        "content": "the key is sk-proj-" + "a1B2c3D4e5F6g7H8i9J0" * 3,
        "tool_calls": [{"id": "call_x9Yz", "arguments": {}}],
    },
]


def _fixed_now() -> str:
    return "2026-12-01T00:00:00.000000Z"


class _DictPathSink:
    """A JsonlSink that never takes a payload's canonical JSON: the whole event made canonical (the exact path)."""

    def __init__(self, path: Path, run_id: str) -> None:
        self.writer = JournalWriter(path, run_id=run_id, now=_fixed_now)

    def emit(self, kind: str, payload: dict[str, Any], *, step_id: str | None, parent_event_id: str | None) -> Event:
        return self.writer.append(kind, payload, step_id=step_id, parent_event_id=parent_event_id)

    def close(self) -> None:
        self.writer.close()


def _record_requests(sink: Any, run_id: str) -> None:
    harness = Harness(sink=sink, run_id=run_id)
    harness.start_run("tests:fast-paths")
    with harness.step('step \u00e9 "1"'):
        for request in REQUESTS:
            event, _ = harness.open_model_exchange(request)
            for answer in ANSWERS:
                payload = {"request_hash": event.payload["request_hash"], "response": answer}
                harness.close_model_exchange(event, payload, recorded=False)
    harness.end_run("ok")


@pytest.mark.parametrize("run_id", ["plain", 'r\u00e9 "quoted" \\ run'])
def test_a_spliced_model_request_and_answer_are_the_lines_the_dict_path_writes(tmp_path: Path, run_id: str) -> None:
    spliced_sink = JsonlSink(tmp_path / "spliced.jsonl", run_id=run_id)
    spliced_sink.writer._now = _fixed_now
    _record_requests(spliced_sink, run_id)
    _record_requests(_DictPathSink(tmp_path / "dict.jsonl", run_id), run_id)
    spliced, plain = (tmp_path / "spliced.jsonl").read_bytes(), (tmp_path / "dict.jsonl").read_bytes()
    assert spliced.count(b'"kind":"model.request"') == len(REQUESTS)
    assert spliced.count(b'"kind":"model.response"') == len(REQUESTS) * len(ANSWERS)
    assert b"a1B2c3D4e5F6g7H8i9J0" not in spliced  # (the answer redaction changed)
    assert spliced == plain
    assert verify_journal(tmp_path / "spliced.jsonl").ok


def test_the_writer_append_with_payload_json_matches_append(tmp_path: Path) -> None:
    from replay_tui.journal.canonical import canonical_json_of_parsed

    payloads = [{"b": [1.5, 2.0, "x"], "a": {"\ue000": None, "z": "\u00e9"}}, {}, {"n": -0.0, "e": 1e21}]
    lines = []
    for name, splice in (("given.jsonl", True), ("parsed.jsonl", None), ("dict.jsonl", False)):
        # payload_json given; made by a parsed-JSON writer; the whole event made canonical (exact path)
        parsed = splice is not False
        with JournalWriter(tmp_path / name, run_id="r", now=_fixed_now, payloads_are_parsed_json=parsed) as writer:
            for index, payload in enumerate(payloads):
                json = canonical_json_of_parsed(payload) if splice else None
                event = writer.append("kind.x", payload, step_id=f"s{index}" if index else None, payload_json=json)
                assert event.payload is payload and event.seq == index + 1
        lines.append((tmp_path / name).read_bytes())
    assert lines[0] == lines[1] == lines[2]


class _ShortWrites:
    """A raw file that takes at most ``most`` bytes a write, as a file may (a full disk, a signal)."""

    def __init__(self, inner: Any, most: int) -> None:
        self.inner, self.most, self.calls = inner, most, 0

    def write(self, data: bytes | memoryview) -> int:
        self.calls += 1
        return int(self.inner.write(bytes(data[: self.most])))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_a_line_a_file_took_in_part_is_written_whole(tmp_path: Path) -> None:
    writer = JournalWriter(tmp_path / "short.jsonl", run_id="r")
    writer._file = _ShortWrites(writer._file, 7)  # type: ignore[assignment]
    writer.append("input.received", {"role": "user", "content": "a line far longer than seven bytes"})
    writer.append("input.received", {"role": "user", "content": "and another"})
    assert writer._file.calls > 10  # type: ignore[attr-defined]
    writer.close()
    lines = [orjson.loads(line) for line in (tmp_path / "short.jsonl").read_bytes().splitlines()]
    assert [line["payload"]["content"] for line in lines] == ["a line far longer than seven bytes", "and another"]
    assert all(event_hash_of(line, parsed=True) == line["event_hash"] for line in lines)


def test_a_line_flushing_writer_has_each_line_on_disk_before_append_returns(tmp_path: Path) -> None:
    writer = JournalWriter(tmp_path / "tail.jsonl", run_id="r")
    for count in (1, 2, 3):
        writer.append("input.received", {"role": "user", "content": count})
        assert len((tmp_path / "tail.jsonl").read_bytes().splitlines()) == count  # a tailing reader sees it
    writer.close()


HEADER_SETS: list[list[tuple[bytes, bytes]]] = [
    [
        (b"Host", b"127.0.0.1:9"),
        (b"Authorization", b"Bearer sk-x"),
        (b"Accept", b"application/json"),
        (b"X-Stainless-Lang", b"python"),
        (b"x-stainless-retry-count", b"0"),
        (b"Content-Type", b"application/json"),
        (b"X-Tenant", b"a"),
        (b"x-tenant", b"b"),
        (b"Idempotency-Key", b"stainless-1"),
        (b"User-Agent", b"OpenAI/Py"),
    ],
    [(b"X-Note", "caf\u00e9".encode()), (b"Accept", b"*/*")],  # utf-8: httpx picks utf-8 for every header
    [(b"X-Note", "caf\u00e9".encode("latin-1")), (b"Content-Length", b"3")],  # not utf-8: latin-1 for all
    [("\u212aeep-Alive".encode(), b"5"), ("\u212aeep-Alive".encode(), b"6"), (b"Connection", b"close")],
    [(b"Content-Encoding", b"gzip"), (b"Date", b"Tue, 01 Dec 2026 00:00:00 GMT"), (b"Server", b"s")],
]


@pytest.mark.parametrize("raw", HEADER_SETS)
def test_headers_told_apart_by_their_bytes_are_the_ones_multi_items_gives(raw: list[tuple[bytes, bytes]]) -> None:
    module = default_httpx_module()
    for _ in range(2):  # the second time from the names already judged
        headers = module.Headers(raw)
        assert _header_dict(_request_headers(headers), _NOT_RECORDED_REQUEST_HEADERS, IGNORED_HEADER_PREFIXES) == (
            _header_dict(headers.multi_items(), _NOT_RECORDED_REQUEST_HEADERS, IGNORED_HEADER_PREFIXES)
        )
        not_recorded = IGNORED_RESPONSE_HEADERS | frozenset(CREDENTIAL_HEADERS)  # a response's credentials neither
        assert _header_dict(_response_headers_of(headers), IGNORED_RESPONSE_HEADERS) == _header_dict(
            headers.multi_items(), not_recorded
        )

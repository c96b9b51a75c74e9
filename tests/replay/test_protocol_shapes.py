"""The parent's checked readers of what the child writes: protocol messages (one shape per type), their
order, the broker's requests, the child's output lines and refusals. Each bad input is refused naming the
field, never a TypeError later (issue 27, items 8, 11, 14 and 15)."""

from __future__ import annotations

import collections
import io
import json
import os
import socket

import orjson
import pytest

from replay_tui.journal.processes import LINE_BYTES as OUTPUT_LINE_BYTES
from replay_tui.journal.processes import drain as _drain
from replay_tui.replay import protocol
from replay_tui.replay.broker import Broker
from replay_tui.replay.isolation import SocketGuard
from replay_tui.replay.protocol import MAX_REFUSALS, MessageOrder, ProtocolError, decode, encode

LAYERS = [{"name": "network namespace", "in_force": True, "detail": ""}]
ISOLATION = {
    "network_namespace": True,
    "namespace_method": "bwrap",
    "socket_guard": True,
    "allowed_hosts": [],
    "reason": None,
    "sandbox": {"mechanism": "bwrap", "layers": LAYERS, "summary": "sandbox (bwrap): network namespace"},
    "summary": "sandbox (bwrap)",
}
GOOD = {
    "hello": {"protocol": 2, "pid": 7, "isolation": ISOLATION, "python": "3.11.7"},
    "progress": {"phase": "replay", "consumed": 1, "total": 2, "seq": 1},
    "refusal": {"operation": "connect", "target": "127.0.0.1:80", "where": "agent.py:3"},
    "error": {"kind": "agent_crash", "message": "boom", "traceback": ["line 1"]},
    "start": {"resume_seq": None},
    "events": {"items": [["o", "clock.read", "clock.wall"]]},
}
# (message type, field, wrong value): the attacks of the audit, and their siblings
WRONG = [
    ("progress", "phase", ["replay"]),
    ("progress", "phase", "\x1b]52;c;cHduZWQ=\x07"),
    ("progress", "consumed", "many"),
    ("progress", "total", 1.5),
    ("progress", "seq", True),
    ("hello", "isolation", "bwrap, every layer in force"),
    ("hello", "isolation.sandbox.layers[0].in_force", "yes"),
    ("hello", "protocol", 3),
    ("error", "traceback", {"line": 1}),
    ("error", "traceback[0]", 5),
    ("error", "kind", "anything"),
    ("error", "message", "x" * 70_000),
    ("refusal", "target", ["a"]),
    ("refusal", "target", "x" * 5000),
    ("events", "items", {"e": 1}),
    ("start", "resume_seq", "4"),
]


def line(message_type: str, /, **fields: object) -> bytes:
    return orjson.dumps({"type": message_type, **fields}) + b"\n"


def with_field(fields: dict, dotted: str, value: object) -> dict:
    """``fields`` (deep-copied) with the member at ``dotted`` ("a.b[0].c") replaced."""
    copy = json.loads(json.dumps(fields))
    parts = [part for chunk in dotted.replace("]", "").split(".") for part in chunk.split("[")]
    target = copy
    for part in parts[:-1]:
        target = target[int(part)] if part.isdigit() else target[part]
    last = parts[-1]
    target[int(last) if last.isdigit() else last] = value
    return copy


def test_every_message_the_child_sends_passes_its_shape():
    for kind, fields in GOOD.items():
        assert decode(encode(kind, **fields))["type"] == kind


@pytest.mark.parametrize(("kind", "field", "value"), WRONG, ids=[f"{kind}-{field}" for kind, field, _ in WRONG])
def test_a_wrong_field_is_refused_naming_it(kind, field, value):
    with pytest.raises(ProtocolError) as caught:
        decode(line(kind, **with_field(GOOD[kind], field, value)))
    assert caught.value.field == field and f"field {field}: expected" in str(caught.value)
    assert "\x1b" not in str(caught.value)  # what was found is quoted, escaped


@pytest.mark.parametrize("kind", [["progress"], {"t": 1}, 5, None, "nonsense"])
def test_a_message_type_that_is_not_a_known_name_is_refused(kind):
    with pytest.raises(ProtocolError) as caught:
        decode(orjson.dumps({"type": kind}))
    assert caught.value.field == "type"


def test_missing_and_unknown_fields_are_refused():
    with pytest.raises(ProtocolError, match="field consumed: expected an integer from 0, found nothing"):
        decode(line("progress", phase="replay", total=1, seq=None))
    with pytest.raises(ProtocolError, match="field extra: expected no such field"):
        decode(line("progress", **GOOD["progress"], extra=1))


def test_a_line_over_its_types_limit_is_refused_before_its_fields_are_read():
    huge = line("refusal", operation="connect", target="x" * (1 << 20), where=None)
    with pytest.raises(ProtocolError, match="refusal message: 1,048,6.. bytes, over the 16,384"):
        decode(huge)


def test_the_order_holds_hello_first_and_once_and_nothing_after_the_end():
    order = MessageOrder()
    with pytest.raises(ProtocolError, match="before the child's hello"):
        order.admit("progress")
    order.admit("hello")
    with pytest.raises(ProtocolError, match="a second hello"):
        order.admit("hello")
    with pytest.raises(ProtocolError, match="events before the child started"):
        order.admit("events")
    for kind in ("start", "events", "progress", "divergence", "result"):
        order.admit(kind)
    with pytest.raises(ProtocolError, match="a progress message after the result"):
        order.admit("progress")


def test_the_drain_keeps_the_head_of_a_huge_line_and_counts_the_rest():
    kept: collections.deque[str] = collections.deque(maxlen=40)
    _drain(io.BufferedReader(io.BytesIO(b"a" * (3 << 20) + b"\nshort\n" + b"b" * 10_000)), kept)
    tail = list(kept)
    assert tail[0] == "a" * OUTPUT_LINE_BYTES + f" … ({(3 << 20) - OUTPUT_LINE_BYTES:,} more bytes)"
    assert tail[1] == "short" and tail[2].startswith("b" * OUTPUT_LINE_BYTES + " … (")


def test_the_socket_guard_keeps_the_first_refusals_and_cuts_long_targets():
    guard = SocketGuard()
    for number in range(MAX_REFUSALS + 50):
        guard.refuse("connect", f"{'h' * 10_000}:{number}", ConnectionRefusedError)
    assert len(guard.refusals) == MAX_REFUSALS
    assert all(len(refusal.target) <= protocol.TEXT for refusal in guard.refusals)


def ask(end: socket.socket, request: bytes) -> dict:
    end.send(request)
    data, _fds, _, _ = socket.recv_fds(end, 65536, 1)
    return json.loads(data)


@pytest.mark.parametrize(
    "request_",
    [
        b'{"op":"resolve","host":"127.0.0.1","port":80,"family":Infinity,"type":1,"proto":0,"flags":0}',
        b'{"op":"resolve","host":"127.0.0.1","port":80,"family":NaN,"type":1,"proto":0,"flags":0}',
        b'{"op":"resolve","host":"127.0.0.1","port":80,"family":1e400,"type":1,"proto":0,"flags":0}',
        b'{"op":"resolve","host":"127.0.0.1","port":80,"family":99999999999,"type":1,"proto":0,"flags":0}',
        b'{"op":"connect","host":["127.0.0.1"],"port":80,"family":2,"type":1,"proto":0,"timeout":1}',
        b'{"op":"connect","host":"127.0.0.1","port":80,"family":2,"type":1,"proto":0,"timeout":"soon"}',
        b'{"op":["resolve"]}',
        b"[1, 2]",
        b"\xff not json",
    ],
)
def test_the_broker_answers_a_bad_request_with_an_error_and_keeps_serving(request_):
    broker = Broker(["127.0.0.1:80"])
    child = socket.socket(fileno=os.dup(broker.child_fd))
    broker.close_child_end()
    try:
        reply = ask(child, request_)
        assert reply["ok"] is False and "bad broker request" in reply["error"], reply
        good = b'{"op":"resolve","host":"127.0.0.1","port":80,"family":2,"type":1,"proto":0,"flags":0}'
        assert ask(child, good)["ok"] is True  # still serving
        assert broker._thread.is_alive()
    finally:
        child.close()
        broker.stop()

"""Redaction: key names, headers, capture allowlist, JSONPath, detectors, size cap; and
it happens before hashing and writing."""

from __future__ import annotations

import copy

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replay_tui.analysis.secrets import scan_event
from replay_tui.harness import Harness, JsonlSink, RedactionRules, Redactor
from replay_tui.harness.canaries import detector_canaries
from replay_tui.harness.config import config_from_mapping
from replay_tui.harness.redaction import REDACTED, RedactionConfigError
from replay_tui.journal import Event, hash_value
from replay_tui.journal.detectors import FORMAT_NAMES

from .helpers import events_of


@pytest.fixture
def redactor() -> Redactor:
    return Redactor()


@pytest.mark.parametrize("filler", [0, 2000])
@pytest.mark.parametrize(
    "key", ["raw_token", "x_api_key", "clientSecret", "password", "API-KEY", "sessionId", "Authorization"]
)
def test_key_name_rules(redactor, key, filler):
    arguments = {"nested": {key: "s3cr3t-value"}, "keep": "me", "filler": "x" * filler}
    out = redactor.redact("tool.call", {"tool": "t", "arguments": arguments})
    assert out["arguments"]["nested"][key] == REDACTED
    assert out["arguments"]["keep"] == "me"


def test_key_names_leave_counts_and_allowed_keys_alone(redactor):
    response = {"content": "hi", "usage": {"prompt_tokens": 12, "max_tokens": 100}, "tokenizer": "cl100k"}
    out = redactor.redact("model.response", {"request_hash": "h", "response": response})
    assert out["response"] == response


@pytest.mark.parametrize("filler", [0, 2000])
def test_every_detector_catches_its_format(redactor, filler):
    for canary in detector_canaries():
        text = canary.text if canary.whole else f"before {canary.text} after" + " lorem ipsum" * (filler // 12)
        out = redactor.redact("input.received", {"role": "user", "content": text})
        assert canary.secret not in out["content"], canary.name
        if canary.name in FORMAT_NAMES:
            assert f"[REDACTED:{canary.name}]" in out["content"], canary.name


def test_bearer_and_url_credentials_in_free_text(redactor):
    text = "curl -H 'Authorization: Bearer abcdefghijklmnop1234' https://bob:hunter2hunter2@example.com/x"
    out = redactor.redact("tool.result", {"call_id": "c", "call_key": "k", "tool": "t", "result": text})
    assert "abcdefghijklmnop1234" not in out["result"] and "hunter2hunter2" not in out["result"]
    assert out["call_key"] == "k"  # harness fields are never touched


def test_headers_dropped_and_capture_allowlist(redactor):
    request = {
        "model": "m",
        "messages": [],
        "headers": {"Authorization": "x", "X-Api-Key": "y", "Accept": "json"},
        "api_key_for_debug_only": "zzz",
        "proxy": {"url": "http://proxy"},
    }
    out = redactor.redact("model.request", {"request": request})
    assert out["request"]["headers"] == {"Accept": "json"}
    assert set(out["request"]) == {"model", "messages", "headers"}  # not captured: dropped


def test_jsonpath_replacements_and_custom_rules():
    rules = RedactionRules.from_config(
        {
            "replace": [
                {"path": "$.request.metadata.user_email", "value": "[email]"},
                {"path": "$.arguments.rows[*].ssn", "kind": "tool.call"},
                {"path": "$..phone"},
            ],
            "key_names": ["internal_ref"],
            "drop_headers": ["X-Tenant"],
            "capture": {"model.request": ["model", "messages", "metadata", "headers"]},
        }
    )
    redactor = Redactor(rules)
    out = redactor.redact(
        "model.request",
        {
            "request": {
                "model": "m",
                "messages": [],
                "metadata": {"user_email": "a@b.c", "internal_ref": "R-1"},
                "headers": {"x-tenant": "acme"},
            }
        },
    )
    assert out["request"]["metadata"] == {"user_email": "[email]", "internal_ref": REDACTED}
    assert out["request"]["headers"] == {}
    args = {"rows": [{"ssn": "123-45-6789", "name": "A", "contact": {"phone": "555"}}]}
    out = redactor.redact("tool.call", {"tool": "t", "arguments": args})
    assert out["arguments"]["rows"][0] == {"ssn": REDACTED, "name": "A", "contact": {"phone": REDACTED}}


def test_max_body_bytes_truncates_with_a_marker():
    redactor = Redactor(RedactionRules.from_config({"max_body_bytes": 100}))
    out = redactor.redact("tool.result", {"call_id": "c", "call_key": "k", "tool": "t", "result": {"blob": "x" * 1000}})
    assert out["result"]["blob"].startswith("x" * 100) and out["result"]["blob"].endswith("…[truncated 900 bytes]")


def test_redaction_never_mutates_the_input(redactor):
    payload = {
        "tool": "t",
        "arguments": {"password": "p", "text": "AKIA" + "A" * 16, "headers": {"Authorization": "x"}},
    }
    before = copy.deepcopy(payload)
    redactor.redact("tool.call", payload)
    assert payload == before


def test_untouched_payload_is_returned_as_is(redactor):
    payload = {"tool": "t", "arguments": {"sku": "A-100"}}
    assert redactor.redact("tool.call", payload) is payload


@pytest.mark.parametrize(
    "table, message",
    [
        ({"nonsense": 1}, "unknown key"),
        ({"max_body_bytes": 3}, "max_body_bytes"),
        ({"detectors": ["no-such"]}, "unknown detector"),
        ({"extra_detectors": {"bad": 1}}, "extra_detectors"),
        ({"replace": [{"path": "request.x"}]}, "must start with '$'"),
        ({"extra_detectors": {"bad": "("}}, None),
    ],
)
def test_bad_redaction_config_is_a_clear_error(table, message):
    with pytest.raises(RedactionConfigError) as error:
        Redactor(RedactionRules.from_config(table))
    if message:
        assert message in str(error.value)


class _Echo:
    extension, version = "model", "1"

    def __init__(self) -> None:
        self.seen = []

    def complete(self, request):
        self.seen.append(request)
        return {"content": "ok"}


def test_redaction_happens_before_hashing_and_writing(tmp_path):
    secret = "ghp_" + "a1B2" * 9
    journal = tmp_path / "r.jsonl"
    model = _Echo()
    harness = Harness(sink=JsonlSink(journal, run_id="r"), run_id="r", model=model)  # type: ignore[arg-type]
    harness.start_run(agent="tests:none")
    harness.model(
        {
            "model": "m",
            "messages": [{"role": "user", "content": f"token {secret}"}],
            "headers": {"Authorization": "Bearer " + secret},
        }
    )
    harness.end_run("ok", {"api_token": secret})
    raw = journal.read_bytes()
    assert secret.encode() not in raw
    assert secret in model.seen[0]["messages"][0]["content"]  # the live model got the real request
    request_event = next(e for e in events_of(journal) if e.kind == "model.request")
    assert request_event.payload["request_hash"] == hash_value(request_event.payload["request"])
    assert orjson.loads(raw.splitlines()[-1])["payload"]["output"] == {"api_token": REDACTED}


def test_redaction_from_a_config_file_is_used_by_the_harness(tmp_path):
    config = config_from_mapping({"redaction": {"key_names": ["customer_ssn"]}})
    from replay_tui.harness.builder import redactor_for

    out = redactor_for(config).redact("tool.call", {"tool": "t", "arguments": {"customer_ssn": "1"}})
    assert out["arguments"]["customer_ssn"] == REDACTED


_secretish = st.sampled_from([c.text for c in detector_canaries()] + ["plain words", "token", "key=value", "://x"])
_json = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=8) | _secretish,
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.sampled_from(["a", "raw_token", "note", "headers", "clientSecret", "usage"]), children, max_size=4
        )
    ),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(_json)
def test_redaction_is_idempotent_and_leaves_nothing_scan_finds(value):
    redactor = Redactor()
    once = redactor.redact("tool.result", {"call_id": "c", "call_key": "k", "tool": "t", "result": value})
    assert redactor.redact("tool.result", once) == once
    event = Event(1, "tool.result", "r", "r:1", None, None, "2026-01-01T00:00:00Z", once, None, None, {"payload": once})
    assert scan_event(event) == []


def test_model_usage_token_counts_are_not_redacted() -> None:
    from replay_tui.harness.redaction import Redactor

    usage = {
        "prompt_tokens": 12,
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 3},
        "cache_read_input_tokens": 5,
    }
    payload = {
        "request_hash": "sha256:" + "0" * 64,
        "response": {"content": "ok", "usage": usage, "access_token": "abc123"},
    }
    redacted = Redactor().redact("model.response", payload)
    assert redacted["response"]["usage"] == usage
    assert redacted["response"]["access_token"] != "abc123"

"""The redaction gate: skipping the parts of a payload no rule can change must never change
what is recorded. Every test compares with, or relies on, the full walk of every value."""

from __future__ import annotations

import json
import random
import re
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replay_tui.harness import RedactionRules, Redactor
from replay_tui.harness.canaries import detector_canaries, random_token
from replay_tui.harness.redaction import _WALK, REDACTED
from replay_tui.journal import detectors


class FullWalk(Redactor):
    """The same rules with no gate and no cache: every object, list and string is walked."""

    def _judge(self, value: Any, data: bytes, key: str | None, *, top: bool = False) -> str:
        return _WALK

    def _needs_walk(self, data: bytes) -> bool:
        return True


RULES = {
    "drop_headers": ["X-Tenant"],
    "key_allow": ["token"],
    "key_names": ["internal_ref"],
    "extra_detectors": {"employee": r"^EMP-\d{6}$", "ticket": r"(?i)\bsecret-ticket-\w+"},
}
_rng = random.Random(16)
_texts = [canary.text for canary in detector_canaries(_rng)] + [
    random_token(_rng),
    "pw=1234",
    "plain words",
    "EMP-123456",
    "Secret-Ticket-42",
    "x" * 600,  # big enough to make its container be judged part by part
    "http://bob:hunter2hunter2@example.com/x",
    "the API_KEY=" + random_token(_rng),
    "chatcmpl-" + random_token(_rng),  # ids random by design: the gate passes them under an id key only
    "call_" + random_token(_rng),
    '{"p\\u0061ssword": "hunter2hunter2"}',  # JSON in a string that spells a name with escapes
    '{"t\\u20acoken": "hunter2hunter2"}',
]
_keys = [
    "a",
    "notes",
    "call_id",
    "headers",
    "token",
    "raw_token",
    "authorization",
    "x-tenant",
    "name",
    "value",
    "usage",
    "id",
    "requestId",
    "etag",
    "api_key",
    "key",
    "pa-ss_word",  # names the byte searches do not read plainly: is_secret_key leaves out all but letters and digits
    "au\nthorization",
    'pa"ssword',
    "se\u20accr\u200bet",
]
_header_like = st.dictionaries(
    st.sampled_from(["x-tenant", "accept", "authorization", "Accept"]),
    st.sampled_from(["plain words", "json"]),
    min_size=1,
)
_json = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 123456) | st.sampled_from(_texts) | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=5)
        | st.dictionaries(st.sampled_from(_keys), children, max_size=5)
        | children.map(lambda value: json.dumps(value))  # JSON kept in a string
        | _header_like
    ),
    max_leaves=25,
)
# one gated redactor across all examples, so its cache of clean values is full of earlier ones
_gated = Redactor(RedactionRules.from_config(RULES))


@settings(max_examples=400, deadline=None)
@given(st.lists(_json, min_size=1, max_size=3))
def test_the_gate_and_its_cache_record_what_the_full_walk_records(values):
    full = FullWalk(RedactionRules.from_config(RULES))
    for value in values:
        payload = {"tool": "t", "call_id": "c", "call_key": "k", "result": value}
        assert _gated.redact("tool.result", payload) == full.redact("tool.result", payload)
        assert _gated.redact_value(value) == full.redact_value(value)
        headers = value if isinstance(value, dict) else {"a": value}  # the same object seen elsewhere first
        request = {"model": "m", "messages": [value, {"role": "user", "content": value}], "headers": headers}
        assert _gated.redact("model.request", {"request": request}) == full.redact(
            "model.request", {"request": request}
        )


@settings(max_examples=300, deadline=None)
@given(st.lists(_json, min_size=1, max_size=3))
def test_the_default_rules_gate_records_what_the_full_walk_records(values):
    full = FullWalk()
    for value in values:
        payload = {"request_hash": "sha256:" + "0" * 64, "response": {"http": {"body_json": value}, "content": value}}
        assert _default_gated.redact("model.response", payload) == full.redact("model.response", payload)


_default_gated = Redactor()


def test_a_new_answer_whose_random_tokens_are_ids_passes_the_gate_whole():
    """A model answer's fresh ``chatcmpl-…`` and ``call_…`` ids sit under id keys, where no detector looks
    for random tokens: the gate passes the answer at the top instead of searching it again at every level
    down to its ids. The same token under another name, in a list, or escaped is still walked to."""
    token = random_token(random.Random(3))
    answer = {
        "id": f"chatcmpl-{token}",
        "choices": [{"message": {"content": "3 open tickets", "tool_calls": [{"id": f"call_{token}"}]}}],
        "usage": {"prompt_tokens": 12, "completion_tokens_details": {"reasoning_tokens": 0}},
    }
    assert not detectors.might_hold_secret(orjson.dumps(answer))
    for elsewhere in ({"note": token}, {"ids": [token]}, {"id": json.dumps({"note": token})}, {"id": f'a"{token}'}):
        assert detectors.might_hold_secret(orjson.dumps(elsewhere)), elsewhere
    assert detectors.might_hold_secret(orjson.dumps({"id": "sk-proj-" + token}))  # a credential format still is


def test_a_credential_header_walks_only_the_parts_that_may_hold_a_secret():
    secret = random_token(random.Random(1))
    history = [{"role": "user", "content": f"question {index} " + "words " * 40} for index in range(20)]
    request = {
        "model": "m",
        "messages": [*history, {"role": "tool", "content": f"found it: {secret}"}],
        "headers": {"authorization": "Bearer abc", "accept": "application/json"},
    }
    scrubbed: list[str] = []

    class Counting(Redactor):
        def _scrub(self, text: str, key: str | None, depth: int) -> Any:
            scrubbed.append(text)
            return super()._scrub(text, key, depth)

    redactor = Counting()
    out = redactor.redact("model.request", {"request": request})["request"]
    assert out["headers"] == {"accept": "application/json"}
    assert secret not in out["messages"][-1]["content"]
    assert out["messages"][:-1] == history
    assert not any("words" in text for text in scrubbed)  # the history was skipped whole, not searched string by string
    scrubbed.clear()
    again = redactor.redact("model.request", {"request": request})["request"]
    assert again == out and not any("words" in text for text in scrubbed)


def test_a_value_clean_elsewhere_is_still_judged_as_headers():
    redactor = Redactor(RedactionRules.from_config({"drop_headers": ["x-tenant"]}))
    tenant = {"x-tenant": "acme", "accept": "json"}
    assert redactor.redact("tool.call", {"tool": "t", "arguments": {"meta": tenant}})["arguments"]["meta"] == tenant
    out = redactor.redact("model.request", {"request": {"model": "m", "headers": dict(tenant)}})
    assert out["request"]["headers"] == {"accept": "json"}


def test_strings_clean_under_an_id_name_are_still_judged_under_another():
    token = random_token(random.Random(2))
    redactor = Redactor()
    assert redactor.redact("tool.call", {"tool": "t", "arguments": {"call_id": [token, token]}})["arguments"] == {
        "call_id": [token, token]
    }
    out = redactor.redact("tool.call", {"tool": "t", "arguments": {"notes": [token, token]}})
    assert token not in orjson.dumps(out).decode()


def test_an_anchored_extra_detector_is_applied_though_its_pattern_never_matches_the_serialized_bytes():
    redactor = Redactor(RedactionRules.from_config({"extra_detectors": {"employee": r"^EMP-\d{6}$"}}))
    out = redactor.redact("input.received", {"role": "user", "content": {"id": "EMP-123456", "note": "hi"}})
    assert out["content"] == {"id": "[REDACTED:employee]", "note": "hi"}
    multiline = Redactor(RedactionRules.from_config({"extra_detectors": {"pair": r"secret\s+value"}}))
    out = multiline.redact("input.received", {"role": "user", "content": "a secret\nvalue"})
    assert out["content"] == "a [REDACTED:pair]"


def test_a_sensitive_name_spelled_with_a_kelvin_sign_is_redacted():
    name = "x-api-\u212aey"  # lower-cases to x-api-key; a byte search for "key" does not see it
    out = Redactor().redact("tool.call", {"tool": "t", "arguments": {name: "hunter22"}})
    assert out["arguments"] == {name: REDACTED}


@pytest.mark.parametrize(
    "value",
    [
        {"pa-ss_word": "hunter2hunter2"},
        {"pa\u200bssword": "hunter2hunter2"},  # a zero-width space
        {"au\nthorization": "hunter2hunter2"},  # a line break, written \\n in the JSON
        {'pa"ssword': "hunter2hunter2"},  # an escaped quote splits the name in the JSON
        {"notes": '{"p\\u0061ssword": "hunter2hunter2"}'},  # JSON in a string, the name spelled with an escape
        {"notes": '{"t\\u20acoken": "hunter2hunter2"}'},  # ... with an escape of a character names leave out
        {"notes": '{"pa\\"ssword": "hunter2hunter2"}'},
        {"notes": json.dumps({"inner": json.dumps({"se\u20accret": "hunter2hunter2"})})},  # two levels down
        {"notes": '{"url": "https:\\/\\/bob:hunter2hunter2@example.com\\/x"}'},  # JSON that escapes its slashes
    ],
)
def test_a_sensitive_name_the_byte_searches_cannot_read_plainly_is_redacted(value):
    """``is_secret_key`` compares names with all but letters and digits left out, and the walk decodes JSON kept
    in strings: the gate must not let through what either would find (it did, for all of these)."""
    assert detectors.first_secret_in_value(value) is not None
    assert detectors.might_hold_secret(orjson.dumps(value))
    out = Redactor().redact("tool.result", {"call_id": "c", "call_key": "k", "tool": "t", "result": value})
    assert "hunter2hunter2" not in orjson.dumps(out).decode()


def _mangled(rng: random.Random, name: str) -> str:
    """``name`` with characters ``is_secret_key`` leaves out (and JSON must escape) put between its letters."""
    out = []
    for char in name:
        out.append(char)
        if rng.random() < 0.1:
            out.append(rng.choice(["-", "_", ".", '"', "\\", "\u200b", "\u20ac", " ", "\n", "'", "=", ":"]))
    return "".join(out).upper() if rng.random() < 0.2 else "".join(out)


def _generated(rng: random.Random, texts: list[str], depth: int = 0) -> Any:
    roll = rng.random()
    if depth > 3 or roll < 0.4:
        return rng.choice([*texts, random_token(rng), rng.randint(0, 10**7), "max_tokens", "x" * rng.randint(1, 40)])
    if roll < 0.6:
        return [_generated(rng, texts, depth + 1) for _ in range(rng.randint(0, 4))]
    if roll < 0.75:  # JSON kept in a string, sometimes escaping its slashes or spelling letters as \u escapes
        text = json.dumps(_generated(rng, texts, depth + 1), ensure_ascii=rng.random() < 0.5)
        if rng.random() < 0.3:
            text = text.replace("/", "\\/")
        if rng.random() < 0.3 and '"' not in text:
            text = "".join(f"\\u{ord(char):04x}" if char.isalpha() and rng.random() < 0.3 else char for char in text)
        return text
    names = ["password", "api_key", "token", "secret", "authorization", "pw", "sessionid", "clientSecret", "bearer"]
    keys = [
        rng.choice(["id", "call_id", "notes", "usage", "name", "value"])
        if rng.random() < 0.5
        else _mangled(rng, rng.choice(names))
        for _ in range(rng.randint(1, 4))
    ]
    return {key: _generated(rng, texts, depth + 1) for key in keys}


def test_the_gate_lets_through_nothing_the_detectors_find():
    """Soundness: whatever ``first_secret_in_value`` (scan's walk) finds, the gate must not pass. Generated
    values hide names behind punctuation, escapes and JSON kept in strings; the gate keeps what it found
    clean across values, as it does across a run's payloads."""
    rng = random.Random(20261201)
    texts = [canary.text for canary in detector_canaries(rng)] + [
        "plain words",
        "http://127.0.0.1:8080/v1",
        "see https://bob:hunter2hunter2@x.io/a",
        "chatcmpl-" + random_token(rng),
    ]
    passed = 0
    for _ in range(3000):
        value = _generated(rng, texts)
        if not detectors.might_hold_secret(orjson.dumps(value)):
            passed += 1
            assert detectors.first_secret_in_value(value) is None, value
    assert passed > 300  # the gate does pass clean values (it is not just saying "walk" to everything)


def test_a_url_passes_the_gate_unless_it_holds_a_password():
    """Every model request holds its endpoint's URL: a gate that stopped at every "://" walked them all."""
    assert not detectors.might_hold_secret(orjson.dumps({"url": "http://127.0.0.1:8080/v1/chat/completions"}))
    payload = {"tool": "t", "arguments": {"dsn": "postgres://app:hunter2hunter2@db.internal:5432/crm"}}
    assert detectors.might_hold_secret(orjson.dumps(payload))
    assert "hunter2hunter2" not in orjson.dumps(Redactor().redact("tool.call", payload)).decode()


def test_the_gate_searches_only_the_pieces_it_has_not_found_clean(monkeypatch):
    searched: list[set[bytes]] = []
    search = detectors._fresh_pieces_may_hold_secret

    def recording(fresh: set[bytes], flat: bytes, parts: list[bytes], ids: set[bytes]) -> bool:
        searched.append(set(fresh))
        return search(fresh, flat, parts, ids)

    monkeypatch.setattr(detectors, "_fresh_pieces_may_hold_secret", recording)
    rng = random.Random(9)

    def answer() -> bytes:
        token = random_token(rng)
        return orjson.dumps({"id": f"chatcmpl-{token}", "content": "3 open tickets", "usage": {"prompt_tokens": 12}})

    assert not detectors.might_hold_secret(answer())
    second = answer()
    assert not detectors.might_hold_secret(second)
    assert searched[-1] == {second.split(b'"')[3]}  # the fresh id only: keys, text and numbers were found clean
    assert not detectors.might_hold_secret(second)
    assert searched[-1] == {second.split(b'"')[3]}  # an id is clean under an id name only: never kept


def test_many_fresh_strings_are_judged_in_one_pass(monkeypatch):
    """Each fresh token that starts a string is checked for an id name by looking the string up in the split:
    a payload of thousands of fresh strings (file paths) made that quadratic (20 s for 20,000 rows). Past a
    few lookups, every string is judged in one pass, with the same verdicts."""
    lookups: list[bytes] = []
    look_up = detectors._only_id_values

    def counting(flat: bytes, piece: bytes) -> bool:
        lookups.append(piece)
        return look_up(flat, piece)

    monkeypatch.setattr(detectors, "_only_id_values", counting)
    rng = random.Random(4)
    rows = [
        {"path": f"/srv/{rng.getrandbits(64):016x}/r{index}.csv", "id": f"row_{rng.getrandbits(96):024x}"}
        for index in range(2000)
    ]
    data = orjson.dumps(rows)
    assert not detectors.might_hold_secret(data)  # clean: every fresh path and id was judged
    assert len(lookups) <= detectors._ID_LOOKUPS
    detectors._CLEAN_PIECES.pieces.clear()  # again, every string looked up on its own: the same verdict
    detectors._CLEAN_PIECES.bytes = 0
    monkeypatch.setattr(detectors, "_ID_LOOKUPS", 10**9)
    assert not detectors.might_hold_secret(data)
    assert len(lookups) > 2000  # (the paths and the ids start their strings: each was looked up)
    parts = detectors._flattened(data).split(b'"')
    verdicts = detectors._id_verdicts(parts)
    for piece in set(parts[1::2]):
        if TOKEN_START.match(piece):  # (the lookup is asked of pieces a candidate token starts only)
            assert verdicts[piece] == look_up(detectors._flattened(data), piece), piece


TOKEN_START = re.compile(rb"[A-Za-z0-9+/_\-.~]")


def test_an_id_is_found_by_its_quoted_bytes_as_the_split_finds_it():
    """``_only_id_values`` finds a piece by searching the payload's bytes for it quoted: the same verdict as
    walking the split (``_id_verdicts``), for ids as member values, list items, keys, values under other
    names, after escaped quotes and backslashes, in JSON kept in a string, and repeated."""
    rng = random.Random(11)
    names = ["id", "call_id", "etag", "name", "token", "api_key", 'a\\"id', "x"]

    def value(depth: int) -> Any:
        roll = rng.random()
        if depth > 2 or roll < 0.4:
            return rng.choice([f"call_{random_token(rng)}", f"chatcmpl-{random_token(rng)}", 'q"uo\\te', 7, None])
        if roll < 0.7:
            return [value(depth + 1) for _ in range(rng.randrange(4))]
        return {rng.choice(names + [f"call_{random_token(rng)}"]): value(depth + 1) for _ in range(rng.randrange(4))}

    checked = 0
    for _ in range(400):
        document = value(0)
        if rng.random() < 0.2:
            document = {"id": orjson.dumps(document).decode(), "content": document}
        data = orjson.dumps(document)
        parts = detectors._flattened(data).split(b'"')
        verdicts = detectors._id_verdicts(parts)
        flat = detectors._flattened(data)
        for piece in set(parts[1::2]):
            if TOKEN_START.match(piece):
                assert detectors._only_id_values(flat, piece) == verdicts[piece], (data, piece)
                checked += 1
    assert checked > 500


def test_the_pieces_found_clean_are_bounded():
    for index in range(2000):
        detectors.might_hold_secret(orjson.dumps({"n": f"{index} " + "x " * 4000}))
    assert detectors._CLEAN_PIECES.bytes <= detectors._CleanPieces.MAX_BYTES


def test_the_cache_of_clean_values_is_bounded():
    redactor = Redactor()
    for index in range(3000):
        redactor.redact(
            "tool.result", {"call_id": "c", "call_key": "k", "tool": "t", "result": {"n": "x" * 4000, "i": index}}
        )
    assert redactor._clean_bytes <= 8 * 1024 * 1024


def test_values_under_an_allowed_sensitive_name_are_judged_by_that_name():
    rules = RedactionRules.from_config({"key_allow": ["token"]})
    for value in (["plain words", "more words"], {"token": ["plain words"]}, [["plain words"]]):
        payload = {"tool": "t", "arguments": {"token": value}}
        assert Redactor(rules).redact("tool.call", payload) == FullWalk(rules).redact("tool.call", payload)


def test_a_deeply_nested_payload_is_searched_a_bounded_number_of_times():
    gated: list[int] = []

    class Counting(Redactor):
        def _needs_walk(self, data: bytes) -> bool:
            gated.append(len(data))
            return super()._needs_walk(data)

    secret = random_token(random.Random(3))
    value: Any = {"note": f"key {secret}"}
    for _ in range(200):  # (orjson serializes up to 254 levels)
        value = [value, "words"]
    out = Counting().redact("tool.result", {"call_id": "c", "call_key": "k", "tool": "t", "result": value})
    assert secret not in orjson.dumps(out).decode()
    assert len(gated) < 40  # not once per level: each would search all that is below it


def test_redactors_of_the_default_rules_share_what_they_found_clean_and_no_one_else_does():
    schema = {"name": "lookup", "parameters": {"properties": {"words": {"type": "string"}}, "type": "object"}}
    payload = {"request": {"model": "m", "tools": [schema] * 120, "messages": [{"role": "user", "content": "hi"}]}}
    first, second = Redactor(), Redactor(RedactionRules.from_config({}))
    assert first._cache is second._cache
    first.redact("model.request", payload)
    scrubbed: list[str] = []

    class Counting(Redactor):
        def _scrub(self, text: str, key: str | None, depth: int) -> Any:
            scrubbed.append(text)
            return super()._scrub(text, key, depth)

    assert Counting()._cache is not first._cache  # a subclass may judge otherwise: it never fills the shared one
    assert Redactor(RedactionRules.from_config({"key_allow": ["words"]}))._cache is not first._cache
    assert Redactor(RedactionRules.from_config({"drop_headers": ["x-tenant"]}))._cache is not first._cache
    assert orjson.dumps(schema) in second._cache.values  # the next run's harness finds the schemas clean


def test_a_subclass_that_lets_everything_through_leaves_the_default_rules_redacting():
    class Permissive(Redactor):
        def _needs_walk(self, data: bytes) -> bool:
            return False

    secret = random_token(random.Random(5))
    payload = {"tool": "t", "arguments": {"notes": f"key {secret}"}}
    assert Permissive().redact("tool.call", payload) == payload  # nothing redacted: its cache said clean
    assert secret not in orjson.dumps(Redactor().redact("tool.call", payload)).decode()

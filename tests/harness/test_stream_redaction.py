"""The stream redactor (harness/stream_redaction.py): for any split of any text into deltas, what it hands
over joins to what it makes of the whole text at once; for text that is not JSON that is the harness's own
redaction of the whole text; it is always a fixed point of the harness's redaction (so the journal holds
what the caller saw); and no secret of the whole text is ever handed over, whatever the split."""

from __future__ import annotations

import random
import string
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from replay_tui.harness.canaries import detector_canaries
from replay_tui.harness.redaction import RedactionRules, Redactor
from replay_tui.harness.stream_redaction import ChannelRedactor, StreamPolicy, policy_for, redact_whole

CANARIES = detector_canaries(random.Random(11))
PROSE_CANARIES = [canary for canary in CANARIES if not canary.whole]
WORDS = ["the", "key", "is", "Hello", "world", "password", "token", "=", ":", '"', "'", "Bearer", "Basic", "\n"]
WORDS += ["-----BEGIN RSA PRIVATE KEY-----", "-----END RSA PRIVATE KEY-----", "https://", "user:pw@host", ","]
WORDS += ["DB_PASSWORD=", "api_key:", "{", "}", "[", "]", "sk-", "ghp_", "AKIA", "eyJ", "max_tokens: 5", "id"]
SETTINGS = settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def harness_text(redactor: Redactor, text: str) -> str:
    """What the harness's redaction makes of ``text`` as a model answer's content, redacted again until it is
    left alone (a marker can give the next token the start a detector wants: ``]AKIA…``)."""
    for _ in range(4):
        redacted = str(redactor.redact_value({"content": text})["content"])
        if redacted == text:
            break
        text = redacted
    return text


def streamed(policy: StreamPolicy, pieces: list[str]) -> list[str]:
    channel = ChannelRedactor(policy)
    return [channel.feed(piece) for piece in pieces] + [channel.finish()]


def split(text: str, cuts: list[int]) -> list[str]:
    places = sorted({cut % (len(text) + 1) for cut in cuts})
    return [text[start:end] for start, end in zip([0, *places], [*places, len(text)])]


@st.composite
def prose(draw: Any) -> tuple[str, list[str]]:
    """Text made of words, separators, secret shapes and whole canaries; the canary secrets planted."""
    parts: list[str] = []
    planted: list[str] = []
    for _ in range(draw(st.integers(1, 14))):
        choice = draw(st.integers(0, 9))
        if choice == 0:
            canary = draw(st.sampled_from(PROSE_CANARIES))
            parts.append(canary.text)
            planted.append(canary.secret)
        elif choice == 1:
            parts.append(draw(st.text(string.ascii_letters + string.digits + "_-./+=", min_size=1, max_size=40)))
        else:
            parts.append(draw(st.sampled_from(WORDS)))
        parts.append(draw(st.sampled_from([" ", "  ", "\n", "\t", "", " \n", ", "])))
    text = "".join(parts)
    if text.lstrip()[:1] in ("{", "["):
        text = "x " + text  # JSON-looking text is the JSON strategy's
    return text, planted


def _leaf(draw: Any) -> Any:
    return draw(
        st.one_of(
            st.sampled_from([canary.text for canary in CANARIES]),
            st.text(string.printable, max_size=30),
            st.integers(-100000, 100000),
            st.booleans(),
            st.none(),
            st.sampled_from(["Authorization", "Bearer abcdefghij0123456789", "x-api-key", "hunter2", "ok"]),
        )
    )


KEYS = ["password", "headers", "name", "value", "authorization", "id", "note", "token", "city", "items", "key"]


@st.composite
def json_values(draw: Any, depth: int = 0) -> Any:
    if depth >= 3 or draw(st.integers(0, 3)) == 0:
        return _leaf(draw)
    if draw(st.booleans()):
        keys = draw(st.lists(st.sampled_from(KEYS), max_size=4, unique=True))
        return {key: draw(json_values(depth + 1)) for key in keys}
    return draw(st.lists(json_values(depth + 1), max_size=4))


@st.composite
def json_texts(draw: Any) -> tuple[str, Any]:
    value = draw(json_values())
    if not isinstance(value, (dict, list)):
        value = {"value": value}
    layout = draw(st.sampled_from(["compact", "spaced", "indented"]))
    if layout == "compact":
        text = orjson.dumps(value).decode()
    elif layout == "spaced":
        import json

        text = json.dumps(value, ensure_ascii=draw(st.booleans()))
    else:
        text = orjson.dumps(value, option=orjson.OPT_INDENT_2).decode()
    return text, value


@SETTINGS
@given(prose(), st.lists(st.integers(0, 10_000), max_size=12))
def test_any_split_of_text_hands_over_the_harness_redaction_of_the_whole(case: tuple[str, list[str]], cuts) -> None:
    text, planted = case
    redactor = Redactor()
    policy = policy_for(redactor)
    pieces = streamed(policy, split(text, cuts))
    whole = harness_text(redactor, text)
    assert "".join(pieces) == whole == redact_whole(policy, text)
    assert harness_text(redactor, whole) == whole
    for secret in planted:
        if secret not in whole:  # (a canary glued to a neighbour may lose the context its detector needs)
            assert all(secret not in "".join(pieces[: index + 1]) for index in range(len(pieces)))


@SETTINGS
@given(json_texts(), st.lists(st.integers(0, 10_000), max_size=12))
def test_any_split_of_json_hands_over_the_same_text_the_harness_leaves_alone(case: tuple[str, Any], cuts) -> None:
    text, value = case
    redactor = Redactor()
    policy = policy_for(redactor)
    joined = "".join(streamed(policy, split(text, cuts)))
    assert joined == redact_whole(policy, text)
    assert harness_text(redactor, joined) == joined  # a fixed point: as text, and as parsed JSON
    try:
        parsed = orjson.loads(joined)
    except orjson.JSONDecodeError:  # the harness's own text pass may replace a bare value: {"pin":[REDACTED:…]}
        assert harness_text(redactor, text) == text or "[REDACTED:" in joined
    else:
        assert redactor.redact_value(parsed) == parsed
    for canary in CANARIES:
        if canary.text in text and not canary.whole:
            assert canary.secret not in joined


@SETTINGS
@given(prose(), st.lists(st.integers(0, 10_000), max_size=12))
def test_the_length_cap_is_the_whole_texts(case: tuple[str, list[str]], cuts) -> None:
    """The cap keeps room for its marker: what is handed over is within the cap, so the harness (which cuts
    what is over it, marker and all) leaves it alone; it is the start of the uncapped redaction."""
    text, _ = case
    redactor = Redactor(RedactionRules(max_body_bytes=64))
    policy = StreamPolicy(redactor)
    joined = "".join(streamed(policy, split(text, cuts)))
    assert joined == redact_whole(policy, text)
    assert len(joined.encode()) <= 64 and harness_text(redactor, joined) == joined
    uncapped = harness_text(Redactor(RedactionRules(max_body_bytes=None)), text)
    kept, _, dropped = joined.partition("…[truncated ")
    assert uncapped.startswith(kept)
    assert (kept == uncapped) if not dropped else int(dropped.split()[0]) == len(uncapped.encode()) - len(kept.encode())


@SETTINGS
@given(prose(), st.lists(st.integers(0, 10_000), max_size=12))
def test_extra_detectors_are_judged_on_whole_lines(case: tuple[str, list[str]], cuts) -> None:
    text, _ = case
    rules = RedactionRules.from_config({"extra_detectors": {"ticket": r"TICKET (?:[0-9]+ )*[0-9]+"}})
    redactor = Redactor(rules)
    policy = StreamPolicy(redactor)
    text = text.replace("is", "is TICKET 12 34 56 ")
    joined = "".join(streamed(policy, split(text, cuts)))
    assert joined == harness_text(redactor, text)


@pytest.mark.parametrize("canary", PROSE_CANARIES, ids=lambda canary: canary.name)
def test_a_secret_cut_at_every_place_is_never_handed_over(canary) -> None:
    redactor = Redactor()
    policy = policy_for(redactor)
    text = f"Here it is: {canary.text} and that is all."
    whole = harness_text(redactor, text)
    assert canary.secret not in whole
    for cut in range(1, len(text)):
        for second in (cut + 1, cut + 7, len(text)):
            pieces = streamed(policy, split(text, [cut, second]))
            assert "".join(pieces) == whole
            assert all(canary.secret not in piece for piece in pieces)


def test_only_the_bytes_that_may_be_a_secret_are_held_back() -> None:
    policy = policy_for(Redactor())
    # a token at the end of a delta waits for the next; whole words go at once
    assert streamed(policy, ["Hello", " world, how", " are you?"]) == ["", "Hello world, ", "how are ", "you?"]
    assert streamed(policy, ["Hello world. ", "Bye. "]) == ["Hello world. ", "Bye. ", ""]
    # an assignment to a sensitive name waits for its value to end; a credential waits for its token
    assert streamed(policy, ["ok password = ", "'a b ", "c1234567' next "]) == [
        "ok ",
        "",
        "password = '[REDACTED:assignment]' next ",
        "",
    ]
    assert streamed(policy, ["use Bearer ", "abcdefghijklmnop1234", " ok"]) == [
        "use ",
        "",
        "Bearer [REDACTED:bearer-token] ",
        "ok",
    ]
    # a private key waits for its end line
    key = CANARIES[0].text
    assert streamed(policy, ["A ", key[:40], key[40:], " B "]) == ["A ", "", "", "[REDACTED:private-key] B ", ""]


def test_json_streams_member_by_member() -> None:
    policy = policy_for(Redactor())
    pieces = streamed(policy, ['{"city": "Lis', 'bon", "note": "a long', ' text", "password": "hun', 'ter22"}'])
    assert pieces == ['{"city": ', '"Lisbon", "note": "a ', 'long text", ', '"password": ', '"[REDACTED]"}']
    compact = streamed(policy, ['{"city":"Lis', 'bon","n":5,"note":"a long', ' text","password":"hun', 'ter22"}'])
    assert compact == ["", '{"city":"Lisbon","n":5,"note":"a ', 'long text",', "", '"password":"[REDACTED]"}']


def test_redaction_off_hands_everything_over_at_once() -> None:
    policy = StreamPolicy(Redactor(RedactionRules(enabled=False)))
    assert streamed(policy, ["sk-proj-", "abcdefghijklmnopqrstuvwx"]) == ["sk-proj-", "abcdefghijklmnopqrstuvwx", ""]

"""Canonical JSON is byte-identical to RFC 8785 (vectors + property tests)."""

from __future__ import annotations

import os
from pathlib import Path

import orjson
import pytest
import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st

from replay_tui.journal.canonical import CanonicalizationError, canonical_json, canonical_json_of_parsed

REPO = Path(__file__).resolve().parents[2]
# The vectors live in the repository (tests/journal/conformance, with their licence and source).
JCS_DIR = Path(os.environ.get("REPLAY_TUI_CONFORMANCE_DIR", Path(__file__).parent / "conformance")) / "jcs"
VECTORS = sorted(p.name for p in (JCS_DIR / "input").glob("*.json")) if JCS_DIR.is_dir() else []


def test_conformance_vectors_are_present() -> None:
    assert VECTORS, f"RFC 8785 vectors not found under {JCS_DIR}; set REPLAY_TUI_CONFORMANCE_DIR"


@pytest.mark.parametrize("name", VECTORS)
def test_jcs_vector(name: str) -> None:
    value = orjson.loads((JCS_DIR / "input" / name).read_bytes())
    expected = (JCS_DIR / "output" / name).read_bytes()
    assert canonical_json(value) == expected
    assert canonical_json_of_parsed(value) == expected


# Every region where orjson's and JCS's spellings differ, and their edges.
SPECIAL_FLOATS = [
    -0.0,
    0.0,
    1.0,
    -3.0,
    100.0,
    1.5,
    0.1 + 0.2,
    2.0**53,
    -1e300,
    5e-324,
    1e15,
    1e16,
    1.5e16,
    9.999999999999999e20,
    1e20,
    1e21,
    1.5e22,
    1e-5,
    9.99e-6,
    1.2345e-6,
    1e-6,
    9.9e-7,
    1e-7,
    1.5e-7,
    1e-60,
]
# Characters across the BMP (including U+E000..U+FFFF, which sort differently in
# UTF-16 and UTF-8), the astral planes and the C0 controls; no lone surrogates.
characters = st.characters(blacklist_categories=("Cs",))
keys = st.one_of(
    st.text(characters, max_size=6), st.sampled_from(["", "a", "\ue000", "\U0001f600", "\x1f", "é", "\uffff"])
)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**53) + 1, max_value=2**53 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from(SPECIAL_FLOATS),
    st.text(characters, max_size=20),
)
json_values = st.recursive(
    scalars,
    lambda children: st.one_of(st.lists(children, max_size=8), st.dictionaries(keys, children, max_size=8)),
    max_leaves=60,
)


@settings(max_examples=600, deadline=None)
@given(json_values)
def test_canonical_json_equals_reference(value: object) -> None:
    assert canonical_json(value) == rfc8785.dumps(value)


@settings(max_examples=600, deadline=None)
@given(json_values)
def test_fast_path_equals_reference_on_parsed_json(value: object) -> None:
    parsed = orjson.loads(orjson.dumps(value))
    assert canonical_json_of_parsed(parsed) == rfc8785.dumps(parsed)


@pytest.mark.parametrize(
    "value",
    [
        1.0,  # the integral float ends the text
        ["127.0.0.1", "v2.0.1", "x.0,", "0.05", 12.0],  # ".0" that is not a float end, then one that is
        {"url": "http://127.0.0.1:8000/v1", "price": 3.05, "count": 40.0},
        {"a": "1.0", "b": ".0]"},  # only strings: nothing to respell
    ],
)
def test_integral_floats_found_past_other_point_zeros(value: object) -> None:
    assert canonical_json_of_parsed(orjson.loads(orjson.dumps(value))) == rfc8785.dumps(value)


@settings(max_examples=200, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False))
def test_every_float_spelling_matches(number: float) -> None:
    document = {"x": [number, {"y": number}]}
    assert canonical_json(document) == canonical_json_of_parsed(document) == rfc8785.dumps(document)


def test_every_depth_the_parser_accepts_can_be_hashed() -> None:
    text = b'{"a":' * 500 + b"[" * 523 + b"1.0" + b"]" * 523 + b"}" * 500
    value = orjson.loads(text)  # 1,023 levels: orjson's limit is 1,024
    expected = text.replace(b"1.0", b"1")
    assert canonical_json(value) == expected
    assert canonical_json_of_parsed(value) == expected


def test_long_and_deeply_nested_containers() -> None:
    deep: object = "leaf"
    for level in range(300):
        deep = {f"k{level}": [deep, level + 0.5]}
    wide = {"items": [{"n": n, "v": n / 7, "s": "\u00e9\U0001f600"} for n in range(5000)]}
    for value in (deep, wide):
        assert canonical_json(value) == rfc8785.dumps(value)
        assert canonical_json_of_parsed(value) == rfc8785.dumps(value)


@pytest.mark.parametrize(
    "value", [float("nan"), float("inf"), -float("inf"), 2**53, -(2**53), "\ud800", {1: "x"}, {"a": object()}]
)
def test_values_without_a_canonical_form_are_refused(value: object) -> None:
    with pytest.raises(CanonicalizationError):
        canonical_json(value)
    with pytest.raises((CanonicalizationError, rfc8785.CanonicalizationError)):
        rfc8785.dumps(value)

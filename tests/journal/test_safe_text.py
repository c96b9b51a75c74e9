"""The one rule for showing journal text: nothing terminal-active or invisible survives, readable text does."""

from __future__ import annotations

import json
import sys
import unicodedata

import pytest

from replay_tui.journal import safe_text
from replay_tui.journal.safe_text import (
    is_safe,
    safe,
    safe_json,
    safe_json_text,
    safe_line,
    safe_value,
)

HOSTILE = "a\x1b]52;c;ZXZpbA==\x07b\x1b]0;owned\x07\x1b[2J\rX\u202eevil\u2066\u200b\ufeff\U000e0041\x9b\x00\ud800"


def test_escape_sequences_are_shown_not_sent() -> None:
    shown = safe(HOSTILE)
    assert shown == (
        "a\\x1b]52;c;ZXZpbA==\\x07b\\x1b]0;owned\\x07\\x1b[2J\\rX\\u202eevil\\u2066\\u200b\\ufeff\\U000e0041"
        "\\x9b\\x00\\ud800"
    )
    assert shown.isascii() and shown.isprintable()


def test_readable_text_is_kept_as_it_is() -> None:
    for text in ("plain", "héllo wörld", "日本語のテキスト", "emoji ❤️ 🙂", "path C:\\temp\\x1b", "a\u00a0b"):
        assert safe(text) == text
        assert is_safe(text)


def test_newlines_and_tabs_are_kept_only_in_multiline_text() -> None:
    assert safe("one\ntwo\tthree") == "one\\ntwo\\tthree"
    assert safe("one\ntwo\tthree\r", multiline=True) == "one\ntwo\tthree\\r"
    assert not is_safe("a\nb") and is_safe("a\nb", multiline=True)


def test_every_control_format_separator_and_surrogate_code_point_is_escaped() -> None:
    missed = []
    for point in range(sys.maxunicode + 1):
        char = chr(point)
        category = unicodedata.category(char)
        if category in ("Cc", "Cf", "Cs", "Zl", "Zp") and safe(char) == char:
            missed.append(f"U+{point:04X} {category}")
    assert missed == []


def test_the_fast_check_never_passes_an_unsafe_character() -> None:
    for point in range(sys.maxunicode + 1):
        char = chr(point)
        # the full rule escapes it: the fast check must not pass it
        if safe_text._patterns.unsafe_multiline.search(char):
            assert not char.isprintable() or safe_text._patterns.printable_invisible.search(char), f"U+{point:04X}"


def test_safe_line_cuts_after_escaping_and_collapses_spaces() -> None:
    assert safe_line("x" * 300, 20) == "x" * 19 + "…"
    assert safe_line("a   b\n\nc") == "a b\\n\\nc"
    cut = safe_line("\x1b" * 300, 10)
    assert len(cut) == 10 and "\x1b" not in cut
    assert safe_line("short", 10) == "short"


def test_safe_json_escapes_keys_and_values_that_json_leaves_raw() -> None:
    shown = safe_json({"k\u202e\x1b": ["v\u200b\x9b", 1, None]})
    assert shown == '{"k\\u202e\\u001b": ["v\\u200b\\u009b", 1, null]}'
    assert json.loads(shown) == {"k\u202e\x1b": ["v\u200b\x9b", 1, None]}  # still JSON, the same value
    assert json.loads(safe_json(["\U000e0041\ud800"])) == ["\U000e0041\ud800"]
    assert safe_json({"a": {"b": 1}}, indent=2) == json.dumps({"a": {"b": 1}}, indent=2)
    assert safe_json({"when": object}).startswith('{"when": "<class')


@pytest.mark.parametrize("indent", [None, 2])
def test_safe_json_handles_the_deepest_nesting_the_reader_accepts(indent: int | None) -> None:
    value: list = []
    inner = value
    for _ in range(1_024):
        deeper: list = []
        inner.append({"k": deeper, "e": {}, "z": [1, "s"]})
        inner = deeper
    shown = safe_json(value, indent=indent)
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(20_000)
    try:
        assert shown == json.dumps(value, ensure_ascii=False, indent=indent)
    finally:
        sys.setrecursionlimit(limit)


def test_safe_value_shows_strings_as_themselves_and_the_rest_as_json() -> None:
    assert safe_value("say \x1b[31mred") == "say \\x1b[31mred"
    assert safe_value({"a": "\u202e"}, 40) == '{"a": "\\u202e"}'
    assert safe_value(None) == "null" and safe_value(3) == "3" and safe_value(True) == "true"


def test_safe_json_text_escapes_json_made_elsewhere_and_keeps_its_value() -> None:
    text = '{"a\u202e": "b\x9b\u200b", "n": [1, 2]}'
    shown = safe_json_text(text)
    assert shown.isascii() and json.loads(shown) == json.loads(text)
    assert safe_json_text('{"plain": "é"}') == '{"plain": "é"}'

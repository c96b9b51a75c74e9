"""The one rule for showing journal text: every unsafe character is shown escaped, never sent raw.

Journal strings are hostile (model output can be steered by whoever wrote what the agent read). Before a
journal string reaches a terminal, a Rich renderable, a Markdown or HTML export or a CLI line, it goes
through this module, which rewrites, visibly and reversibly to the eye:

- C0 controls (ESC, BEL, CR, NUL, …), DEL and C1 controls (``\\x9b`` is a one-byte CSI): ``\\x1b``, ``\\r``;
  so an OSC 52 clipboard write shows as ``\\x1b]52;c;…\\x07`` and does nothing;
- bidi overrides, embeddings, isolates and marks: ``\\u202e``, ``\\u2066``, …;
- zero-width and other invisible characters (ZWSP, ZWJ, word joiner, BOM, soft hyphen, tag characters,
  Hangul fillers, variation selectors 17-256, every Unicode "format" character), line/paragraph separators
  and lone surrogates (which would crash an encoder): ``\\u200b``, ``\\U000e0041``, ``\\ud800``.

The API (stable; other layers import it):

- ``safe(text, multiline=False)``: the escaped string. Newlines and tabs are kept only when ``multiline``.
- ``safe_line(text, limit)``: one line, escaped, whitespace runs collapsed, cut to ``limit`` with "…".
- ``safe_json(value, indent=None)``: JSON of any value (keys too), escaped, at any nesting depth; still valid
  JSON (the escapes are JSON ``\\uXXXX`` escapes).
- ``safe_json_text(text)``: the same escaping for JSON text made elsewhere (orjson output, ``--json`` modes).
- ``safe_value(value, limit)``: a string shown as itself, anything else as compact JSON; one line.
- ``is_safe(text)``: whether ``safe(text)`` would change nothing.

Markup is a separate matter: these functions return plain ``str``; the caller shows them as text
(``rich.text.Text(...)``, ``Static(..., markup=False)``, HTML-escaped), never as markup.
"""

from __future__ import annotations

import json
import re
from functools import cached_property
from typing import Any

from .lazy_patterns import compile_every

__all__ = ["ELLIPSIS", "is_safe", "safe", "safe_json", "safe_json_text", "safe_line", "safe_value"]

ELLIPSIS = "…"

# Invisible or terminal-active code points. Every Unicode Cc, Cf, Cs, Zl and Zp character is in here (a test
# checks the whole code space), plus invisible letters and marks that are used to hide text.
_INVISIBLE = (
    "\u00ad"  # soft hyphen
    "\u034f"  # combining grapheme joiner
    "\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2"  # Arabic format characters, Arabic letter mark
    "\u115f\u1160\u17b4\u17b5\u180b-\u180f"  # Hangul fillers, Khmer invisible vowels, Mongolian selectors
    "\u200b-\u200f\u2028-\u202e\u2060-\u206f"  # zero-width, bidi marks/embeddings/overrides/isolates
    "\u3164\ufe00-\ufe0e\ufeff\uffa0\ufff9-\ufffb"  # filler, variation selectors (not VS16), BOM
    "\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a"
    "\U000e0000-\U000e0fff"  # tag characters, variation selectors 17-256
    "\ud800-\udfff"  # lone surrogates
)
_CONTROLS = "\x00-\x08\x0b-\x1f\x7f-\x9f"
_SHORT_ESCAPES = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


class _Patterns:
    """Each pattern compiled on first use: most text is printable ASCII, which needs none of them, and
    compiling the classes above at import was about 13 M instructions of the viewer's first frame."""

    @cached_property
    def unsafe_multiline(self) -> re.Pattern[str]:
        return re.compile(f"[{_CONTROLS}{_INVISIBLE}]")

    @cached_property
    def unsafe(self) -> re.Pattern[str]:
        return re.compile(f"[\t\n{_CONTROLS}{_INVISIBLE}]")

    # The part of the above that str.isprintable() lets through (invisible letters and marks): text that is
    # printable and holds none of these is already safe, which a small class checks faster than the full one.
    @cached_property
    def printable_invisible(self) -> re.Pattern[str]:
        return re.compile("[\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180f\u3164\ufe00-\ufe0e\uffa0\U000e0100-\U000e01ef]")

    @cached_property
    def whitespace_run(self) -> re.Pattern[str]:
        return re.compile(r"[ ]{2,}")


_patterns = _Patterns()


def compile_all() -> None:
    """Every pattern compiled now (see ``lazy_patterns``)."""
    compile_every(_patterns)


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    short = _SHORT_ESCAPES.get(char)
    if short is not None:
        return short
    point = ord(char)
    if point <= 0xFF:
        return f"\\x{point:02x}"
    if point <= 0xFFFF:
        return f"\\u{point:04x}"
    return f"\\U{point:08x}"


def _escape_in_json(match: re.Match[str]) -> str:
    point = ord(match.group())
    if point <= 0xFFFF:
        return f"\\u{point:04x}"
    point -= 0x10000
    return f"\\u{0xD800 + (point >> 10):04x}\\u{0xDC00 + (point & 0x3FF):04x}"


def _printable_and_visible(text: str) -> bool:
    """The fast "already safe" check: C-speed for ASCII, a small class for the rest."""
    if text.isascii():
        return text.isprintable()
    return text.isprintable() and _patterns.printable_invisible.search(text) is None


def is_safe(text: str, multiline: bool = False) -> bool:
    """True when the text can be shown as it is (the common case, checked at C speed)."""
    if _printable_and_visible(text):
        return True
    return (_patterns.unsafe_multiline if multiline else _patterns.unsafe).search(text) is None


def safe(text: str, multiline: bool = False) -> str:
    """The text with every control, escape-sequence, bidi and invisible character shown as an escape.

    ``multiline`` keeps ``\\n`` and ``\\t`` (a pane or an export body); otherwise they are escaped too, so the
    result is always one line. CR is always escaped: it would move the cursor back over what was shown.
    """
    if _printable_and_visible(text):
        return text
    return (_patterns.unsafe_multiline if multiline else _patterns.unsafe).sub(_escape, text)


def safe_line(text: str, limit: int | None = None) -> str:
    """One escaped line, runs of spaces collapsed, at most ``limit`` characters (ending in "…" when cut)."""
    if limit is not None and len(text) > limit:
        text = text[: limit + 1]  # each character escapes to at least one, so this is enough to fill the limit
    shown = text if _printable_and_visible(text) else safe(text)
    if "  " in shown:
        shown = _patterns.whitespace_run.sub(" ", shown)
    shown = shown.strip()
    if limit is not None and len(shown) > limit:
        return shown[: max(limit - 1, 0)] + ELLIPSIS
    return shown


def safe_json(value: Any, indent: int | None = None, sort_keys: bool = False) -> str:
    """JSON text of a value, non-ASCII kept readable, keys and strings escaped; any nesting depth.

    JSON already escapes C0 controls inside strings; this also escapes what JSON leaves raw (C1 controls, DEL,
    bidi and zero-width characters), in keys as well as in values. Values that are not JSON are shown by str().
    """
    try:
        text = json.dumps(value, ensure_ascii=False, indent=indent, sort_keys=sort_keys, default=str)
    except RecursionError:
        text = _deep_json(value, indent, sort_keys)
    except ValueError:  # a circular reference: not from a journal, but never crash on display
        text = repr(value)
    return safe_json_text(text)


def safe_json_text(text: str) -> str:
    """JSON text with what JSON leaves raw (C1, DEL, bidi, invisible characters) as JSON ``\\uXXXX`` escapes.

    The result parses to the same value. Raw C0 controls cannot occur in valid JSON strings; any outside
    strings (a newline of the indentation) are kept.
    """
    if text.isascii() and text.isprintable():
        return text
    return _patterns.unsafe_multiline.sub(_escape_in_json, text)


def safe_value(value: Any, limit: int | None = None) -> str:
    """A journal value on one line: a string as itself, anything else as compact JSON; escaped, cut to ``limit``."""
    if isinstance(value, str):
        return safe_line(value, limit)
    if value is None or isinstance(value, (bool, int, float)):
        return safe_line(json.dumps(value), limit)
    return safe_line(safe_json(value), limit)


def _deep_json(value: Any, indent: int | None, sort_keys: bool) -> str:
    """json.dumps without recursion, for values nested deeper than the interpreter's recursion limit."""
    item_separator, key_separator = (", ", ": ") if indent is None else (",", ": ")
    parts: list[str] = []
    # The stack holds what is left to write: values, or literal text (closing brackets, separators).
    stack: list[tuple[bool, Any, int]] = [(False, value, 0)]
    while stack:
        is_text, item, depth = stack.pop()
        if is_text:
            parts.append(item)
            continue
        if isinstance(item, dict) and item:
            entries = sorted(item.items(), key=lambda entry: str(entry[0])) if sort_keys else list(item.items())
            opener, closer = "{", "}"
        elif isinstance(item, (list, tuple)) and item:
            entries = [(None, element) for element in item]
            opener, closer = "[", "]"
        else:
            parts.append(
                json.dumps(item, ensure_ascii=False, default=str)
                if not isinstance(item, (dict, list, tuple))
                else ("{}" if isinstance(item, dict) else "[]")
            )
            continue
        inner = "" if indent is None else "\n" + " " * (indent * (depth + 1))
        outer = "" if indent is None else "\n" + " " * (indent * depth)
        parts.append(opener)
        pending: list[tuple[bool, Any, int]] = []
        for index, (key, element) in enumerate(entries):
            prefix = inner if index == 0 else item_separator + inner
            if key is not None:
                prefix += json.dumps(key if isinstance(key, str) else str(key), ensure_ascii=False) + key_separator
            pending.append((True, prefix, depth))
            pending.append((False, element, depth + 1))
        pending.append((True, outer + closer, depth))
        stack.extend(reversed(pending))
    return "".join(parts)

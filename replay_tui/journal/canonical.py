"""RFC 8785 (JCS) canonical JSON.

Two entry points share one definition of the output:

* ``canonical_json`` accepts any Python JSON value, including ones an agent built
  by hand (so it must reject NaN and infinities, which orjson would write as null).
* ``canonical_json_of_parsed`` is the fast path for values that came out of
  ``orjson.loads``: those can hold no NaN or infinity, so orjson's sorted output is
  already canonical except for float spelling and a rare key order, both repaired
  below. Property tests prove both equal the ``rfc8785`` reference package.
"""

from __future__ import annotations

import math
import re
from typing import Any

import orjson

__all__ = [
    "CanonicalizationError",
    "canonical_json",
    "canonical_json_of_parsed",
    "canonical_string",
    "format_number",
]

#: JSON's exact integer range (RFC 8785 refuses others; importers turn larger ones into text).
MAX_EXACT_INT = 2**53 - 1
_ORJSON_OPTIONS = orjson.OPT_SORT_KEYS | orjson.OPT_STRICT_INTEGER

# orjson sorts keys by UTF-8 bytes (code point order); JCS sorts by UTF-16 code
# units. The two disagree only when a key holds a character >= U+E000, whose UTF-8
# lead byte is 0xEE..0xF4. Any such byte sends the value down the exact path.
_HIGH_PLANE_BYTE = re.compile(rb"[\xee-\xf4]")
# orjson and JCS spell a float alike (shortest round-trip digits) except for an
# integral float ("1.0" vs "1", "-0.0" vs "0") and where orjson already uses an
# exponent but JCS does not: 1e16 <= |x| < 1e21 ("1e+16") and 1e-6 <= |x| < 1e-5
# ("1e-6" vs "0.000001"). A match inside a string is only a false alarm that
# costs the exact token rewrite below.
_FLOAT_TO_RESPELL = re.compile(rb"[0-9](?:\.0(?:[,}\]]|$)|e\+(?:1[6-9]|20)(?![0-9])|e-6(?![0-9]))")
_STRING_OR_NUMBER = re.compile(rb'"(?:[^"\\]|\\.)*"|-?[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?')
# The end of orjson's spelling of an integral float (``12.0``): ".0" then a delimiter or the end of the text.
_POINT_ZERO_END = re.compile(rb"\.0(?:[,}\]]|\Z)")


class CanonicalizationError(ValueError):
    """A value that has no RFC 8785 form (NaN, a 2**53 integer, a lone surrogate...)."""


def format_number(value: float) -> str:
    """ECMAScript Number::toString, as RFC 8785 section 3.2.2.3 requires."""
    if math.isnan(value) or math.isinf(value):
        raise CanonicalizationError(f"{value} is not representable in JSON")
    if value == 0:
        return "0"
    if value < 0:
        return "-" + format_number(-value)
    # repr gives the shortest round-tripping digits, as ECMAScript does; only the
    # placement of the decimal point and the exponent differ.
    mantissa, _, exponent = repr(value).partition("e")
    int_part, _, frac_part = mantissa.partition(".")
    all_digits = int_part + frac_part
    digits = all_digits.lstrip("0")
    # ECMAScript's n: the value is 0.DIGITS times 10**point.
    point = len(int_part) + int(exponent or 0) - (len(all_digits) - len(digits))
    digits = digits.rstrip("0")
    count = len(digits)
    if count <= point <= 21:
        return digits + "0" * (point - count)
    if 0 < point <= 21:
        return digits[:point] + "." + digits[point:]
    if -6 < point <= 0:
        return "0." + "0" * -point + digits
    power = point - 1
    head = digits[0] + ("." + digits[1:] if count > 1 else "")
    return f"{head}e{'+' if power >= 0 else '-'}{abs(power)}"


def _rewrite_floats(text: bytes) -> bytes:
    def fix(match: re.Match[bytes]) -> bytes:
        token = match.group(0)
        if token[:1] == b'"' or (b"." not in token and b"e" not in token and b"E" not in token):
            return token
        return format_number(float(token)).encode("ascii")

    return _STRING_OR_NUMBER.sub(fix, text)


def orjson_is_canonical(text: bytes) -> bool:
    """True when orjson's sorted output of parsed JSON is already its RFC 8785 form.

    This runs once per event on every read, so it uses byte searches (C speed)
    and leaves the regex to confirm the rare candidates they find.
    """
    if not text.isascii() and _HIGH_PLANE_BYTE.search(text):
        return False
    if (b"+" in text or text.rfind(b"e-6") >= 0) and _FLOAT_TO_RESPELL.search(text):
        return False
    return not _has_integral_float(text)


def _has_integral_float(text: bytes) -> bool:
    """Whether a token like ``12.0`` ends at a delimiter (orjson's spelling of 12.0). The regex finds the
    ".0" ends at C speed (its literal prefix): a ``find(b".0")`` loop stopped in Python at every ".0" of an
    IP address, a version or a decimal in the text (3 µs of the largest fixture model request, 2.5 KB)."""
    end = _POINT_ZERO_END.search(text)
    while end is not None:
        at = end.start()
        if text[at - 1 : at].isdigit():  # at 0: b"", not a digit
            return True
        end = _POINT_ZERO_END.search(text, at + 2)
    return False


def canonical_json_of_parsed(value: Any) -> bytes:
    """Canonical bytes of a value decoded from JSON (no NaN or infinity inside)."""
    try:
        text = orjson.dumps(value, option=_ORJSON_OPTIONS)
    except (orjson.JSONEncodeError, TypeError):
        return canonical_json(value)
    if orjson_is_canonical(text):
        return text
    if not text.isascii() and _HIGH_PLANE_BYTE.search(text):
        return canonical_json(value)
    return _rewrite_floats(text)


def canonical_json(value: Any) -> bytes:
    """Canonical bytes of any JSON value; raises CanonicalizationError if it has none.

    Iterative, with an explicit stack, so any depth the parser accepts (orjson
    allows 1,024 levels) can be hashed without running into Python's recursion limit.
    """
    parts: list[bytes] = []
    emit = parts.append
    # A frame is [remaining children, closing bracket, is an object, wrote a child yet].
    stack: list[list[Any]] = []
    node = value
    while True:
        if isinstance(node, dict):
            for key in node:
                if not isinstance(key, str):
                    raise CanonicalizationError(f"object keys must be strings, found {type(key).__name__}")
            emit(b"{")
            stack.append([iter(sorted(node.items(), key=_key_order)), b"}", True, False])
        elif isinstance(node, (list, tuple)):
            emit(b"[")
            stack.append([iter(node), b"]", False, False])
        else:
            emit(_scalar(node))
        while stack:
            frame = stack[-1]
            child: Any = next(frame[0], _END)
            if child is _END:
                emit(frame[1])
                stack.pop()
                continue
            if frame[3]:
                emit(b",")
            frame[3] = True
            if frame[2]:
                emit(_string(child[0]))
                emit(b":")
                child = child[1]
            node = child
            break
        else:
            return b"".join(parts)


_END = object()


def _key_order(item: tuple[str, Any]) -> bytes:
    return item[0].encode("utf-16-be", "surrogatepass")


def _scalar(value: Any) -> bytes:
    if value is None:
        return b"null"
    if value is True:
        return b"true"
    if value is False:
        return b"false"
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, int):
        if not -MAX_EXACT_INT <= value <= MAX_EXACT_INT:
            raise CanonicalizationError(f"{value} is outside the exact integer range of JSON numbers (2**53)")
        return str(int(value)).encode("ascii")
    if isinstance(value, float):
        return format_number(value).encode("ascii")
    raise CanonicalizationError(f"unsupported type {type(value).__name__}")


def canonical_string(text: str) -> bytes:
    """The canonical JSON of one string (for a writer that splices canonical bytes together)."""
    if not isinstance(text, str):
        raise CanonicalizationError(f"expected a string, found {type(text).__name__}")
    return _string(text)


def _string(text: str) -> bytes:
    # orjson's string escaping is exactly JCS's (short escapes, lowercase \u00xx,
    # nothing else escaped); it also rejects lone surrogates, as JCS must.
    try:
        return orjson.dumps(text)
    except orjson.JSONEncodeError as error:
        raise CanonicalizationError("string is not valid Unicode (lone surrogate)") from error

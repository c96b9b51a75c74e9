"""Shapes of what the parent reads from the sandboxed child: protocol messages (``protocol.py``) and
broker requests (``broker.py``).

Everything on those pipes may have been written by agent code, so it is checked field by field, for
type and size, before anything uses it: a list where a phase belongs, a dict as a traceback, a 1 MiB
refusal target or a count that is text is refused as one ``ShapeError`` naming the field and what was
expected ("progress message: field consumed: expected an integer from 0, found string 'x'"), never a
``TypeError`` somewhere later. A shape is a small value (``Text(200)``, ``Integer(low=1)``,
``Record({...})``); ``check(value, field)`` returns the value when it fits.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..journal.errors import SchemaError, missing


class ShapeError(ValueError):
    """A value that does not fit its shape: ``field`` names where, the message says what was expected."""

    def __init__(self, where: str, expected: str, found: object) -> None:
        super().__init__(SchemaError(where, expected, found).message)
        self.field = where


class Shape:
    """One field's shape. ``expected`` is how a message names it."""

    expected = "a value"

    def check(self, value: Any, where: str) -> Any:
        raise NotImplementedError


@dataclass(frozen=True)
class Text(Shape):
    """A string of at most ``limit`` characters, or one of ``choices``."""

    limit: int
    choices: tuple[str, ...] = ()

    @property
    def expected(self) -> str:  # type: ignore[override]
        if self.choices:
            return "one of " + ", ".join(repr(choice) for choice in self.choices)
        return f"a string of at most {self.limit:,} characters"

    def check(self, value: Any, where: str) -> Any:
        if type(value) is not str or len(value) > self.limit or (self.choices and value not in self.choices):
            raise ShapeError(where, self.expected, value)
        return value


@dataclass(frozen=True)
class Integer(Shape):
    """An integer (a boolean is none) from ``low`` to ``high``."""

    low: int = 0
    high: int = 2**63 - 1

    @property
    def expected(self) -> str:  # type: ignore[override]
        if self.low == self.high:
            return f"the integer {self.low}"
        return f"an integer from {self.low:,}" + ("" if self.high == 2**63 - 1 else f" to {self.high:,}")

    def check(self, value: Any, where: str) -> Any:
        if type(value) is not int or not self.low <= value <= self.high:
            raise ShapeError(where, self.expected, value)
        return value


@dataclass(frozen=True)
class Number(Shape):
    """A finite number (integer or float; no NaN, no infinity, no boolean) of at least ``low``."""

    low: float = 0.0

    @property
    def expected(self) -> str:  # type: ignore[override]
        return f"a finite number from {self.low:g}"

    def check(self, value: Any, where: str) -> Any:
        if type(value) not in (int, float) or not math.isfinite(value) or value < self.low:
            raise ShapeError(where, self.expected, value)
        return value


@dataclass(frozen=True)
class Boolean(Shape):
    expected = "true or false"

    def check(self, value: Any, where: str) -> Any:
        if type(value) is not bool:
            raise ShapeError(where, self.expected, value)
        return value


@dataclass(frozen=True)
class AnyJson(Shape):
    """Any JSON value: what the parent only stores or shows escaped (its size is the line's limit)."""

    expected = "a JSON value"

    def check(self, value: Any, where: str) -> Any:
        return value


@dataclass(frozen=True)
class AnyObject(Shape):
    """Any JSON object (its members are the line limit's business and its reader's)."""

    expected = "an object"

    def check(self, value: Any, where: str) -> Any:
        if type(value) is not dict:
            raise ShapeError(where, self.expected, value)
        return value


@dataclass(frozen=True)
class Either(Shape):
    """A value of any one of ``shapes``."""

    shapes: tuple[Shape, ...]

    @property
    def expected(self) -> str:  # type: ignore[override]
        return " or ".join(shape.expected for shape in self.shapes)

    def check(self, value: Any, where: str) -> Any:
        for shape in self.shapes:
            try:
                return shape.check(value, where)
            except ShapeError:
                continue
        raise ShapeError(where, self.expected, value)


@dataclass(frozen=True)
class Nullable(Shape):
    inner: Shape

    @property
    def expected(self) -> str:  # type: ignore[override]
        return f"null or {self.inner.expected}"

    def check(self, value: Any, where: str) -> Any:
        if value is None:
            return None
        try:
            return self.inner.check(value, where)
        except ShapeError as error:
            if error.field != where:
                raise  # a member of the inner value is wrong: name it
            raise ShapeError(where, self.expected, value) from None


@dataclass(frozen=True)
class ListOf(Shape):
    """An array of at most ``limit`` items, each of shape ``item``."""

    item: Shape
    limit: int

    @property
    def expected(self) -> str:  # type: ignore[override]
        return f"an array of at most {self.limit:,} items"

    def check(self, value: Any, where: str) -> Any:
        if type(value) is not list or len(value) > self.limit:
            raise ShapeError(where, self.expected, value)
        if not isinstance(self.item, AnyJson):  # (an events batch: its reader checks each item)
            for index, item in enumerate(value):
                self.item.check(item, f"{where}[{index}]")
        return value


@dataclass(frozen=True)
class MapOf(Shape):
    """An object of at most ``limit`` members, keys of at most ``key_limit`` characters, values of ``value``."""

    value: Shape
    limit: int
    key_limit: int = 200

    @property
    def expected(self) -> str:  # type: ignore[override]
        return f"an object of at most {self.limit:,} members"

    def check(self, value: Any, where: str) -> Any:
        if type(value) is not dict or len(value) > self.limit:
            raise ShapeError(where, self.expected, value)
        for key, item in value.items():
            if len(key) > self.key_limit:
                raise ShapeError(f"{where} (a key)", f"a key of at most {self.key_limit} characters", key)
            self.value.check(item, f"{where}.{key}")
        return value


@dataclass(frozen=True)
class Record(Shape):
    """An object with exactly these members: every one of ``fields`` (those in ``optional`` may be
    absent) and nothing else."""

    fields: Mapping[str, Shape]
    optional: frozenset[str] = field(default_factory=frozenset)

    expected = "an object"

    def check(self, value: Any, where: str) -> Any:
        if type(value) is not dict:
            raise ShapeError(where, self.expected, value)
        for name in value:
            if name not in self.fields:
                known = ", ".join(self.fields)
                raise ShapeError(f"{where}.{name}" if where else name, f"no such field (known: {known})", value[name])
        for name, shape in self.fields.items():
            inner = f"{where}.{name}" if where else name
            if name not in value:
                if name in self.optional:
                    continue
                raise ShapeError(inner, shape.expected, _MISSING)
            shape.check(value[name], inner)
        return value


_MISSING = missing()

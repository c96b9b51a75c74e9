"""Errors that name where in a journal something is wrong and what was expected."""

from __future__ import annotations


class JournalError(Exception):
    """A problem with a journal, located by file, line and seq where known."""

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        line: int | None = None,
        seq: int | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.path = path
        self.line = line
        self.seq = seq

    @property
    def where(self) -> str:
        parts = []
        if self.path:
            parts.append(self.path)
        if self.line is not None:
            parts.append(f"line {self.line}")
        if self.seq is not None:
            parts.append(f"seq {self.seq}")
        return ", ".join(parts)

    def located(self, *, path: str | None = None, line: int | None = None, seq: int | None = None) -> "JournalError":
        """Fill in location fields that the raiser could not know."""
        self.path = self.path or path
        self.line = self.line if self.line is not None else line
        self.seq = self.seq if self.seq is not None else seq
        return self

    def __str__(self) -> str:
        where = self.where
        return f"{where}: {self.message}" if where else self.message


class JournalOpenError(JournalError):
    """The path cannot be opened as a journal at all (missing, empty, no shards)."""


class MalformedLineError(JournalError):
    """A line that is not a JSON object: bad JSON, bad UTF-8, too large, too deep."""


class DuplicateKeyError(MalformedLineError):
    """An object with the same key twice: parsers keep one value, the bytes say both."""

    def __init__(self, key: str, **location: object) -> None:
        super().__init__(
            f"duplicate key {quoted(key)}: it appears twice in one object, a reader sees only the last value "
            "while the line also holds the first",
            **location,  # type: ignore[arg-type]
        )
        self.key = key


def quoted(text: str, limit: int = 60) -> str:
    """A journal string in a message: quoted, with control, bidi and zero-width characters escaped."""
    shown = repr(text)
    return shown if len(shown) <= limit else shown[: limit - 4] + "...'"


class SchemaError(JournalError):
    """A well-formed JSON object that does not match the event schema."""

    def __init__(self, field: str, expected: str, found: object, **location: object) -> None:
        shown = _describe(found)
        super().__init__(f"field {field}: expected {expected}, found {shown}", **location)  # type: ignore[arg-type]
        self.field = field
        self.expected = expected
        self.found = shown


class UnknownKindError(SchemaError):
    """An event kind that neither schema v1 nor a registered migration knows."""


class UnsupportedVersionError(SchemaError):
    """A schema_version with no registered migration to the current one."""


_MISSING = object()


def missing() -> object:
    """Sentinel passed as ``found`` when a field is absent."""
    return _MISSING


def _describe(value: object) -> str:
    if value is _MISSING:
        return "nothing (the field is missing)"
    if value is None:
        return "null"
    type_name = {dict: "object", list: "array", str: "string", bool: "boolean", int: "integer", float: "number"}.get(
        type(value), type(value).__name__
    )
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{type_name} {text}"

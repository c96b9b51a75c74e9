"""What `y`, `Y` and `ctrl+y` copy: the value or JSON path under the cursor, or the event's raw line.

The text goes to the terminal's clipboard through Textual (OSC 52, base64: journal text cannot act on
the terminal on its way there).
"""

from __future__ import annotations

from typing import Any

import orjson

from ..analysis.marks import line_of
from ..journal import Event
from .widgets.timeline import Timeline

MISSING = object()


def value_at(value: Any, pointer: str) -> Any:
    """The value an RFC 6901 pointer names inside ``value`` (MISSING when it names nothing)."""
    if not pointer:
        return value
    for token in (part.replace("~1", "/").replace("~0", "~") for part in pointer[1:].split("/")):
        if isinstance(value, dict) and token in value:
            value = value[token]
        elif isinstance(value, list) and token.isdigit() and int(token) < len(value):
            value = value[int(token)]
        else:
            return MISSING
    return value


def as_text(value: Any) -> str:
    """A string as itself, anything else as indented JSON."""
    if isinstance(value, str):
        return value
    return orjson.dumps(value, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS).decode()


def copy_value(focused: object, timeline: Timeline) -> tuple[str | None, str]:
    """(text to copy, what it is) for `y`; text None with the reason when there is nothing."""
    from .widgets.json_view import JsonView  # the views load after the first frame, not with the app

    if isinstance(focused, JsonView):
        pointer = focused.cursor_pointer
        if pointer is None:
            return None, "the cursor is on a header line: move it onto a value"
        value = value_at(focused.document.value, pointer)
        if value is MISSING:
            return None, f"nothing at {pointer or '/'}"
        return as_text(value), f"value at {pointer or '/ (the whole value)'}"
    event = timeline.cursor_event()
    if not isinstance(event, Event):
        return None, "no readable event under the cursor"
    return as_text(event.payload), f"payload of seq {event.seq}"


def copy_path(focused: object) -> tuple[str | None, str]:
    """(pointer, what it is) for `Y`."""
    from .widgets.json_view import JsonView  # see copy_value

    if not isinstance(focused, JsonView):
        return None, "Y copies the path of a value: tab to a state pane or the event, move onto a value"
    pointer = focused.cursor_pointer
    if pointer is None:
        return None, "the cursor is on a header line: move it onto a value"
    return pointer or "/", f"JSON path {pointer or '/'}"


def copy_line(timeline: Timeline) -> tuple[str | None, str]:
    """(raw line, what it is) for `ctrl+y`: the bytes of the event under the timeline cursor."""
    if not timeline.shown:
        return None, "no events yet"
    position = timeline.cursor
    event = timeline.journal.try_event(position)
    line = line_of(timeline.journal, position, event)
    if not line:
        return None, "the line under the cursor cannot be read"
    where = f"seq {event.seq}" if isinstance(event, Event) else f"position {position + 1}"
    return line.decode("utf-8", "replace"), f"raw line of {where}"

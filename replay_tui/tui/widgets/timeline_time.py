"""Times in the timeline: reading recorded_at, offsets from the run's start, durations, step folds.

recorded_at is for people only (order is by seq), so anything unreadable is shown blank, never an error.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta

_OFFSET = re.compile(r"^\+(?:(\d+):)?(\d+):(\d+(?:\.\d+)?)$|^\+(\d+(?:\.\d+)?)s?$")
_CLOCK = re.compile(r"^(\d{1,2}):(\d{2})(?::(\d{2}(?:\.\d+)?))?$")


def parse_time(text: object) -> datetime | None:
    """An RFC 3339 time with a zone, or None."""
    if not isinstance(text, str) or not text:
        return None
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo is not None else None


def format_offset(when: datetime | None, start: datetime | None) -> str:
    """``+MM:SS.mmm`` (``+H:MM:SS`` past an hour) from the start; blank when either is unknown."""
    if when is None or start is None:
        return ""
    seconds = (when - start).total_seconds()
    sign = "-" if seconds < 0 else "+"
    seconds = abs(seconds)
    hours, rest = divmod(seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    if hours >= 1:
        return f"{sign}{int(hours)}:{int(minutes):02d}:{int(seconds):02d}"
    return f"{sign}{int(minutes):02d}:{seconds:06.3f}"


def format_duration(seconds: float) -> str:
    """A short duration: 850ms, 12.3s, 4m05s, 2h07m."""
    if seconds < 0:
        return "-" + format_duration(-seconds)
    if seconds < 1:
        return f"{seconds * 1000:.0f}ms"
    if seconds < 60:
        return f"{seconds:.1f}s"
    if seconds < 3600:
        return f"{int(seconds // 60)}m{int(seconds % 60):02d}s"
    return f"{int(seconds // 3600)}h{int(seconds % 3600 // 60):02d}m"


def parse_when(text: str, start: datetime) -> datetime | None:
    """What `T` accepts: ``+MM:SS``/``+H:MM:SS``/``+90s`` from the run's start, ``HH:MM[:SS]`` on the
    start's day (in its zone), or a full RFC 3339 time."""
    offset = _OFFSET.match(text)
    if offset:
        if offset.group(4) is not None:
            return start + timedelta(seconds=float(offset.group(4)))
        hours = int(offset.group(1) or 0)
        return start + timedelta(hours=hours, minutes=int(offset.group(2)), seconds=float(offset.group(3)))
    clock = _CLOCK.match(text)
    if clock:
        hour, minute = int(clock.group(1)), int(clock.group(2))
        second = float(clock.group(3) or 0)
        if hour > 23 or minute > 59 or second >= 60:
            return None
        midnight = start.replace(hour=0, minute=0, second=0, microsecond=0)
        return midnight + timedelta(hours=hour, minutes=minute, seconds=second)
    return parse_time(text)


class StepFold:
    """A run of consecutive events of one step (or one run-level event): how many, from when to when.
    (Not a dataclass: that compiled its methods when the app was imported, before its first frame.)"""

    def __init__(self, step: str | None, first: datetime | None) -> None:
        self.step = step
        self.first = first
        self.last = first
        self.count = 1

    def add(self, when: datetime | None) -> None:
        self.count += 1
        if when is not None:
            self.last = when
            self.first = self.first or when

    @property
    def seconds(self) -> float | None:
        if self.first is None or self.last is None:
            return None
        return (self.last - self.first).total_seconds()

    def duration_text(self) -> str:
        seconds = self.seconds
        return "" if seconds is None else f" · {format_duration(seconds)}"

"""Clock, random and id adapters: what an agent uses instead of ``time``, ``random``
and ``uuid``. Each read is a ``clock.read`` or ``random.draw`` observation whose
``source`` names what was read, so replay serves the recorded value."""

from __future__ import annotations

import os
import random
import uuid
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Callable, NamedTuple, Sequence, TypeVar

from ..journal.model import CLOCK_READ, RANDOM_DRAW

if TYPE_CHECKING:
    from .harness import Harness

T = TypeVar("T")


class Expected(NamedTuple):
    """What a reader of a recorded value can use: ``test`` says whether a value is it
    (``Harness.read_observation``; the journal is hostile)."""

    description: str
    test: Callable[[Any], bool]


def _is_number(value: Any) -> bool:
    return type(value) is int or type(value) is float  # (JSON holds no NaN or infinity; a bool is no number)


def _is_uuid(value: Any) -> bool:
    try:
        return type(value) is str and str(uuid.UUID(value)) == value
    except ValueError:
        return False


SECONDS = Expected("a number of seconds", _is_number)
# the seconds ``datetime.fromtimestamp`` can turn into a date (years 1 to 9999), as ``utcnow`` does
WALL_SECONDS = Expected(
    "a number of seconds since 1970 that falls in the years 1 to 9999",
    lambda value: _is_number(value) and -62_135_596_800 <= value < 253_402_300_799,
)
FRACTION = Expected("a number from 0 up to 1", lambda value: _is_number(value) and 0 <= value < 1)
UUID_TEXT = Expected('a UUID as text ("1b4e28ba-2fa1-41d2-883f-0016d3cca427")', _is_uuid)


def _integer_from(low: int, high: int) -> Expected:
    return Expected(f"an integer from {low} to {high}", lambda value: type(value) is int and low <= value <= high)


class Clock:
    def __init__(self, harness: "Harness", wall: Callable[[], float], monotonic: Callable[[], float]) -> None:
        self._harness, self._wall, self._monotonic = harness, wall, monotonic

    def now(self) -> float:
        """Seconds since the epoch (source ``clock.wall``)."""
        seconds: float = self._harness.read_observation(CLOCK_READ, "clock.wall", self._wall, expected=WALL_SECONDS)
        return seconds

    def monotonic(self) -> float:
        """A monotonic reading in seconds (source ``clock.monotonic``)."""
        seconds: float = self._harness.read_observation(
            CLOCK_READ, "clock.monotonic", self._monotonic, expected=SECONDS
        )
        return seconds

    def utcnow(self) -> datetime:
        """``now()`` as an aware UTC datetime (one ``clock.wall`` read)."""
        return datetime.fromtimestamp(self.now(), tz=timezone.utc)


class RandomSource:
    """Seeded when the config gives ``random_seed``; otherwise seeded from the OS."""

    def __init__(self, harness: "Harness", seed: int | None) -> None:
        self._harness = harness
        self.generator = random.Random(seed if seed is not None else int.from_bytes(os.urandom(8), "big"))

    def random(self) -> float:
        value: float = self._harness.read_observation(
            RANDOM_DRAW, "random.random", self.generator.random, expected=FRACTION
        )
        return value

    def randint(self, low: int, high: int) -> int:
        value: int = self._harness.read_observation(
            RANDOM_DRAW, "random.randint", lambda: self.generator.randint(low, high), expected=_integer_from(low, high)
        )
        return value

    def choice(self, options: Sequence[T]) -> T:
        """A recorded index into ``options`` (so the options themselves need not be JSON)."""
        if not options:
            raise IndexError("choice from an empty sequence")
        index: int = self._harness.read_observation(
            RANDOM_DRAW,
            "random.choice",
            lambda: self.generator.randrange(len(options)),
            expected=_integer_from(0, len(options) - 1),
        )
        return options[index]


class Ids:
    def __init__(self, harness: "Harness") -> None:
        self._harness = harness

    def uuid4(self) -> str:
        """A version 4 UUID string (source ``uuid4``), drawn from the harness generator."""
        generator = self._harness.random.generator
        drawn: str = self._harness.read_observation(
            RANDOM_DRAW,
            "uuid4",
            lambda: str(uuid.UUID(int=generator.getrandbits(128), version=4)),
            expected=UUID_TEXT,
        )
        return drawn

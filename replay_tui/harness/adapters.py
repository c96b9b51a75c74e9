"""Clock, random and id adapters: what an agent uses instead of ``time``, ``random``
and ``uuid``. Each read is a ``clock.read`` or ``random.draw`` observation whose
``source`` names what was read, so replay serves the recorded value."""

from __future__ import annotations

import os
import random
import uuid
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Callable, Sequence, TypeVar

from ..journal.model import CLOCK_READ, RANDOM_DRAW

if TYPE_CHECKING:
    from .harness import Harness

T = TypeVar("T")


class Clock:
    def __init__(self, harness: "Harness", wall: Callable[[], float], monotonic: Callable[[], float]) -> None:
        self._harness, self._wall, self._monotonic = harness, wall, monotonic

    def now(self) -> float:
        """Seconds since the epoch (source ``clock.wall``)."""
        seconds: float = self._harness.read_observation(CLOCK_READ, "clock.wall", self._wall)
        return seconds

    def monotonic(self) -> float:
        """A monotonic reading in seconds (source ``clock.monotonic``)."""
        seconds: float = self._harness.read_observation(CLOCK_READ, "clock.monotonic", self._monotonic)
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
        value: float = self._harness.read_observation(RANDOM_DRAW, "random.random", self.generator.random)
        return value

    def randint(self, low: int, high: int) -> int:
        value: int = self._harness.read_observation(
            RANDOM_DRAW, "random.randint", lambda: self.generator.randint(low, high)
        )
        return value

    def choice(self, options: Sequence[T]) -> T:
        """A recorded index into ``options`` (so the options themselves need not be JSON)."""
        if not options:
            raise IndexError("choice from an empty sequence")
        index: int = self._harness.read_observation(
            RANDOM_DRAW, "random.choice", lambda: self.generator.randrange(len(options))
        )
        return options[index]


class Ids:
    def __init__(self, harness: "Harness") -> None:
        self._harness = harness

    def uuid4(self) -> str:
        """A version 4 UUID string (source ``uuid4``), drawn from the harness generator."""
        generator = self._harness.random.generator
        drawn: str = self._harness.read_observation(
            RANDOM_DRAW, "uuid4", lambda: str(uuid.UUID(int=generator.getrandbits(128), version=4))
        )
        return drawn

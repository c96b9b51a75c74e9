"""The secret detectors are linear: every detector, through scan's and redaction's entry points and the
redaction gate, on long generated inputs made of the pieces their patterns start at, run through or stop
at, repeated (what made the URL and JWT patterns rescan from every candidate start), within a time bound.

The bench (tests/bench/bench_detectors.py) times 1 MB strings; here 256 KB ones, so the suite stays quick:
a linear pass takes well under a second of CPU, a quadratic one took 15 s at 80 KB.
"""

from __future__ import annotations

import contextlib
import signal
import time
from collections.abc import Iterator

import orjson
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from replay_tui.analysis.secrets import scan_string
from replay_tui.harness.redaction import Redactor
from replay_tui.journal import detectors

from .detector_shapes import FRAGMENTS

SIZE = 256 * 1024
CPU_BOUND_S = 3.0  # generous for a loaded 2-core machine; the quadratic detectors took minutes here
REDACTOR = Redactor()

_pieces = st.lists(st.tuples(st.sampled_from(FRAGMENTS), st.integers(1, 40)), min_size=1, max_size=5)


@contextlib.contextmanager
def cpu_bound(seconds: float) -> Iterator[None]:
    """Fail once the work has used ``seconds`` of CPU (SIGPROF; the regex engine checks signals as it runs),
    rather than wait for a quadratic pass to end: minutes here, hours at the reader's line limit."""

    def overrun(signum: int, frame: object) -> None:
        raise TimeoutError(f"over {seconds} s of CPU: not linear")

    previous = signal.signal(signal.SIGPROF, overrun)
    signal.setitimer(signal.ITIMER_PROF, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, previous)


def _text(pieces: list[tuple[str, int]]) -> str:
    unit = "".join(fragment * count for fragment, count in pieces)
    return (unit * (SIZE // len(unit) + 1))[:SIZE]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_pieces)
@example([("a", 4000), ("://b:c@ ", 1)])  # the URL pattern's scheme, rescanned from every letter of a run
@example([("eyJ-", 1)])  # the JWT pattern's first segment, from every eyJ inside a run
@example([("AccountKey=", 1)])  # an assignment's bare value, from every name inside it (12 s at 2,900)
@example([("password=***", 1)])  # a placeholder value holding the next name, judged whole at each
@example([("Bearer ", 1), ("kQ2mN7pL1vR9tY4wB6sH", 1), ("-", 1)])  # a random token at every step
def test_every_detector_is_linear_on_long_inputs(pieces: list[tuple[str, int]]) -> None:
    text = _text(pieces)
    started = time.process_time()
    with cpu_bound(CPU_BOUND_S):
        scan_string(text, "note")
        detectors.find_secrets(text, "note")  # every hit, as redaction asks
        detectors.might_hold_secret(orjson.dumps({"note": text}))
        REDACTOR.redact("tool.result", {"call_id": "c", "call_key": "k", "tool": "t", "result": {"note": text}})
    spent = time.process_time() - started
    assert spent < CPU_BOUND_S, (spent, text[:120])

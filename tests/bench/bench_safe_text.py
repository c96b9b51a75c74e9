"""Benchmark: what the one rule for journal text (journal/safe_text) costs the timeline.

    python tests/bench/bench_safe_text.py [--rows N]

Measured side by side in one run: the cost of a timeline row summary (tui/format.summary_of, which escapes
through journal/safe_text) against the same summary with ``safe_line`` swapped for a plain cut (no
escaping), on realistic events and on hostile ones, plus the throughput of ``safe`` on plain ASCII,
non-ASCII and hostile strings. The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from replay_tui.journal import Event, Journal  # noqa: E402
from replay_tui.journal.safe_text import safe, safe_json  # noqa: E402
from replay_tui.tui import format as row_format  # noqa: E402
from tests.hostile.hostile_journal import ATTACK, write_hostile_journal  # noqa: E402

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "journals" / "crm.jsonl"


def per_call_ns(function: Callable[[Any], Any], items: list[Any], rounds: int) -> float:
    """Best of three passes over ``items`` repeated ``rounds`` times, in nanoseconds per call."""
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter_ns()
        for _ in range(rounds):
            for item in items:
                function(item)
        best = min(best, (time.perf_counter_ns() - started) / (rounds * len(items)))
    return best


def _plain_cut(text: str, limit: int | None = None) -> str:
    return text if limit is None or len(text) <= limit else text[: limit - 1] + "…"


@contextmanager
def no_escaping() -> Iterator[None]:
    """``safe_line`` replaced by a plain cut wherever the row summary calls it (the baseline)."""
    patched = []
    for name in ("replay_tui.tui.format", "replay_tui.journal.describe"):
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        if hasattr(module, "safe_line"):
            patched.append((module, module.safe_line))
            module.safe_line = _plain_cut  # type: ignore[attr-defined]
    try:
        yield
    finally:
        for module, original in patched:
            module.safe_line = original  # type: ignore[attr-defined]


def row_summary() -> Callable[[Any], str]:
    """The uncached describer of a timeline row (the app may cache its results per event)."""
    try:
        describe = importlib.import_module("replay_tui.journal.describe")
    except ImportError:
        return row_format.summary_of
    return lambda event: describe.describe_event(event, "short")


def events_of(path: Path) -> list[Event]:
    with Journal(path) as journal:
        journal.index()
        return [event for event in (journal.try_event(p) for p in range(len(journal))) if isinstance(event, Event)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=50_000, help="row summaries per measurement")
    args = parser.parse_args()
    realistic = events_of(FIXTURE)
    hostile_path = Path("/tmp/replay-tui-bench-hostile.jsonl")
    hostile_path.unlink(missing_ok=True)
    hostile = events_of(write_hostile_journal(hostile_path))
    figures: dict[str, Any] = {}
    summarize = row_summary()
    for name, events in (("realistic", realistic), ("hostile", hostile)):
        rounds = max(1, args.rows // len(events))
        with no_escaping():
            raw = per_call_ns(summarize, events, rounds)
        escaped = per_call_ns(summarize, events, rounds)
        figures[f"{name}_row_ns_raw"] = round(raw)
        figures[f"{name}_row_ns_escaped"] = round(escaped)
        figures[f"{name}_row_ratio"] = round(raw / escaped, 3)  # 1.0: escaping is free
    strings = {
        "ascii": "tool.result customer_query → {'rows': 42, 'region': 'east'}" * 2,
        "unicode": "Überweisung an Zoë: 42 € — 日本語の説明 ✓" * 2,
        "hostile": ATTACK,
    }
    for name, text in strings.items():
        figures[f"safe_ns_{name}_{len(text)}chars"] = round(per_call_ns(safe, [text], args.rows))
    figures["safe_json_ns_small_object"] = round(
        per_call_ns(safe_json, [{"a": [1, 2, {"b": "c"}], "d": ATTACK}], args.rows // 10)
    )
    figures["target"] = "realistic_row_ns_escaped < 20000: a 45-row timeline screen of summaries under 1 ms"
    figures["target_met"] = figures["realistic_row_ns_escaped"] < 20_000
    print(json.dumps(figures))


if __name__ == "__main__":
    main()

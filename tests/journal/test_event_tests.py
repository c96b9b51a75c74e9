"""Each event kind's schema test is compiled the first time an event of the kind is checked (compiling
all of them cost every start 4 ms, the app's first frame included), and gives the same verdicts."""

from __future__ import annotations

import subprocess
import sys

import pytest

from replay_tui.journal import model
from replay_tui.journal.errors import SchemaError


def test_importing_the_model_compiles_no_event_test() -> None:
    code = "from replay_tui.journal import model; print(len(model._EVENT_TESTS))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert done.stdout.strip() == "0"


def test_a_kind_is_compiled_when_first_checked_and_judges_as_before() -> None:
    event = {
        "schema_version": 1,
        "run_id": "r",
        "seq": 3,
        "event_id": "e3",
        "kind": "clock.read",
        "step_id": None,
        "parent_event_id": None,
        "recorded_at": "2026-12-02T00:00:00Z",
        "payload": {"source": "time.time", "value": 1.5},
        "prev_event_hash": None,
    }
    model.check_event(event)
    assert "clock.read" in model._EVENT_TESTS
    with pytest.raises(SchemaError, match="payload.source"):
        model.check_event({**event, "payload": {"source": 7, "value": 1}})
    with pytest.raises(SchemaError):
        model.check_event({**event, "kind": "no.such.kind"})
    assert "no.such.kind" not in model._EVENT_TESTS


def test_the_fork_server_warm_up_compiles_every_kind() -> None:
    model.compile_event_tests()
    assert set(model._EVENT_TESTS) == set(model.PAYLOAD_SPECS)

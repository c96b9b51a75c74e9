"""The smallest valid payloads, for tests that only need a journal to start somewhere.

``run_started()`` is the ``run.started`` payload the schema accepts with nothing in it; a test names
only what it cares about (``run_started(initial_state=deep)``, ``run_started(agent="m:a")``).
"""

from __future__ import annotations

from typing import Any


def run_started(**fields: Any) -> dict[str, Any]:
    """A minimal ``run.started`` payload; ``fields`` replace or add payload fields."""
    return {
        "agent": "a:b",
        "environment": {},
        "harness": {},
        "reducer_version": "1",
        "snapshot_every": 0,
        "initial_state": {},
        **fields,
    }

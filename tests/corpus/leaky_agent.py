"""The refund-desk agent, but one that leaves state behind and refuses to run where an earlier run left any.

Replayed (``ReplaySpec(agent="tests.corpus.leaky_agent:agent")``) over the refund-desk
journals through one fork server: if anything of one journal's child reached the next
(a file in its cwd, a global of a module the server preloaded, a global of this module,
an environment variable) the second replay fails instead of matching.
"""

from __future__ import annotations

import os
from typing import Any

import replay_tui.harness as preloaded  # imported by the fork server before it forks
from fixtures.corpus.agents import agent as refund_desk

LEFTOVER_FILE = "left-behind-by-an-earlier-journal.txt"
SECRET_VARIABLE = "FORKSERVER_TEST_SECRET"
runs_in_this_process = 0


def leftovers() -> list[str]:
    """What an earlier run (or the parent) left where this run can see it."""
    found = []
    if os.path.exists(LEFTOVER_FILE):
        found.append(f"file {LEFTOVER_FILE} in the cwd")
    if getattr(preloaded, "left_behind_by_agent", False):
        found.append("a global set on the preloaded replay_tui.harness module")
    if runs_in_this_process:
        found.append(f"{runs_in_this_process} earlier run(s) of this module")
    if os.environ.get("LEFT_BEHIND_BY_AGENT"):
        found.append("an environment variable")
    if os.environ.get(SECRET_VARIABLE):
        found.append(f"the parent's {SECRET_VARIABLE}")
    return found


def leave_state_behind() -> None:
    global runs_in_this_process
    runs_in_this_process += 1
    with open(LEFTOVER_FILE, "w") as handle:
        handle.write("left behind\n")
    preloaded.left_behind_by_agent = True  # type: ignore[attr-defined]
    os.environ["LEFT_BEHIND_BY_AGENT"] = "1"


def agent(harness: Any, task: Any) -> Any:
    found = leftovers()
    leave_state_behind()
    if found:
        raise RuntimeError("state left behind by an earlier journal: " + "; ".join(found))
    return refund_desk(harness, task)


def exits(harness: Any, task: Any) -> Any:
    """Dies mid-run with a status of its own: the runner must learn it (from the fork server)."""
    os._exit(7)

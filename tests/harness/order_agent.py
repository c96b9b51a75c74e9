"""An agent that prints a tool's dict result: its output depends on the order of the members it is handed."""

from __future__ import annotations

from typing import Any, Mapping

from replay_tui.harness import Harness, ToolSpec


def tools(options: Mapping[str, Any]) -> list[ToolSpec]:
    return [ToolSpec("build", lambda: {"z": 1, "a": 2})]  # built in non-sorted order


def agent(h: Harness, task: str) -> str:
    with h.step("build"):
        result = h.tool("build", {})
    return str(result)

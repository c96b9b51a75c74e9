"""The refund desk's tools, live, with a token in every result: a re-record must redact it with the rules of
the user's config, whatever the old journal's run.started says."""

from __future__ import annotations

import functools
from typing import Any, Callable, Mapping

from fixtures.corpus.agents import tools as refund_desk_tools
from replay_tui.harness import ToolSpec

LIVE_TOKEN = "ghp_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2"  # of the GitHub shape, never a real one


def _with_token(function: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(function)
    def call(**arguments: Any) -> Any:
        result = function(**arguments)
        return {**result, "token": LIVE_TOKEN} if isinstance(result, dict) else result

    return call


def tools(options: Mapping[str, Any]) -> list[ToolSpec]:
    return [
        ToolSpec(spec.name, _with_token(spec.function), spec.schema, spec.timeout_s)
        for spec in refund_desk_tools(options)
    ]

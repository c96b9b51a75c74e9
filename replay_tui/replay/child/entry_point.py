"""Import an agent entry point ``module:attr`` and say clearly why it failed."""

from __future__ import annotations

import importlib
from typing import Any


class AgentImportError(Exception):
    """The agent entry point could not be imported; ``__cause__`` holds the original error."""


def load_entry_point(agent: str) -> Any:
    """The object named by ``module:attr`` (``attr`` may be dotted)."""
    module_name, sep, attr = agent.partition(":")
    if not sep or not module_name or not attr:
        raise AgentImportError(f"agent entry point {agent!r} is not of the form module:attr")
    try:
        target: Any = importlib.import_module(module_name)
    except BaseException as error:  # SystemExit at import time is an import failure too
        if isinstance(error, KeyboardInterrupt):
            raise
        raise AgentImportError(
            f"cannot import agent module {module_name!r}: {type(error).__name__}: {error}"
        ) from error
    for part in attr.split("."):
        try:
            target = getattr(target, part)
        except AttributeError as error:
            raise AgentImportError(f"agent module {module_name!r} has no attribute {attr!r}") from error
    return target

"""The refund-desk agent after a long pause: a replay that is still running when a test kills its Ray worker."""

from __future__ import annotations

import time
from typing import Any

from fixtures.corpus.agents import agent as refund_desk


def agent(harness: Any, task: Any) -> Any:
    time.sleep(120)
    return refund_desk(harness, task)

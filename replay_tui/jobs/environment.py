"""The current environment fingerprint (thread job): the code, runtime and lockfile a replay
would run now, to compare with the recorded one. The fingerprint lives in journal/, so the app
computes it in-process; no child is needed."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..journal.progress import CancelCheck, ProgressCallback
from .core import Job


@dataclass(frozen=True)
class EnvironmentRequest:
    base_dir: Path


class EnvironmentJob(Job[EnvironmentRequest, dict[str, Any]]):
    name = "environment"

    def run(self, request: EnvironmentRequest, progress: ProgressCallback, cancelled: CancelCheck) -> dict[str, Any]:
        from ..journal.environment import config_free_fingerprint  # loaded when a replay report asks

        return config_free_fingerprint(request.base_dir)

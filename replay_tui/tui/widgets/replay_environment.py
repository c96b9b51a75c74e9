"""Recorded environment fingerprint versus the code a replay runs now.

The fingerprint lives in ``journal/environment.py`` and is computed by the environment job
in this process. Only the fields that do not need the agent's harness config (tools, prompts,
flags) can be computed here; the others are listed as not compared.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...jobs import JobError, run_job
from ...jobs.environment import EnvironmentJob, EnvironmentRequest

#: Fields computed without the agent's harness config (journal/environment.py's CONFIG_FREE).
COMPARED = ("code_revision", "runtime", "lockfile_hash", "locale", "timezone")


@dataclass(frozen=True)
class EnvironmentComparison:
    """What differs between the recorded fingerprint and the current one."""

    differences: list[tuple[str, str, str]]  # (field, recorded, current)
    not_compared: list[str]
    error: str | None = None

    def lines(self) -> list[str]:
        if self.error:
            return [f"environment: could not compute the current fingerprint: {self.error}"]
        lines = [f"{name}: recorded {recorded} · now {current}" for name, recorded, current in self.differences]
        if not lines:
            lines = ["no difference in " + ", ".join(COMPARED)]
        if self.not_compared:
            lines.append("not compared (they need the agent's harness config): " + ", ".join(self.not_compared))
        return lines


def current_environment(base_dir: Path) -> dict[str, Any]:
    """The current values of ``COMPARED`` for code under ``base_dir`` (raises RuntimeError)."""
    try:
        return run_job(EnvironmentJob(), EnvironmentRequest(base_dir))
    except (JobError, OSError) as error:
        raise RuntimeError(str(error)) from None


def brief(value: Any) -> str:
    """A fingerprint value in a few words (hashes shortened)."""
    if isinstance(value, dict):
        if "commit" in value:
            commit = value.get("commit")
            return f"{commit[:12] if commit else 'no git'}{' (dirty)' if value.get('dirty') else ''}"
        if "hash" in value:
            return f"{value.get('source')} {str(value.get('hash'))[:19]}…"
        if "version" in value and "implementation" in value:
            return (
                f"{value.get('implementation')} {value.get('version')} {value.get('platform')}/{value.get('machine')}"
            )
        if "utc_offset_s" in value:
            return f"{value.get('name')} (UTC{int(value.get('utc_offset_s') or 0) / 3600:+g}h)"
        return json.dumps(value, sort_keys=True)
    text = str(value)
    return text[:19] + "…" if text.startswith("sha256:") else text


def compare_environment(recorded: Any, base_dir: Path) -> EnvironmentComparison:
    """Compare the recorded fingerprint (run.started ``environment``) with the current one."""
    recorded = recorded if isinstance(recorded, dict) else {}
    try:
        current = current_environment(base_dir)
    except (RuntimeError, ValueError) as error:
        return EnvironmentComparison([], [], str(error))
    differences = []
    for name in COMPARED:
        if name not in recorded:
            differences.append((name, "not recorded", brief(current.get(name))))
        elif recorded[name] != current.get(name):
            differences.append((name, brief(recorded[name]), brief(current.get(name))))
    not_compared = sorted(name for name in recorded if name not in COMPARED)
    return EnvironmentComparison(differences, not_compared)

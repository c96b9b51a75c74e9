"""Verify the hash chain in a child process, so a long check never competes with
the UI for the interpreter lock (the check reads and hashes every line)."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

# The check runs niced (and so do any processes it starts), so on a busy machine the
# UI process gets the CPU first and keys stay fast while a long journal is verified.
CHILD_NICENESS = 10
_CHILD = (
    f"import json, os, sys\nos.nice({CHILD_NICENESS})\n"
    "from replay_tui.journal import verify_journal\n"
    "print(json.dumps(verify_journal(sys.argv[1]).to_json()))\n"
)


@dataclass(frozen=True)
class ChainResult:
    status: str  # verified | absent | broken | error | cancelled
    summary: str
    fault_seq: int | None = None


class ChainCheck:
    """One verify_journal run in a child Python; ``cancel`` kills it."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._process: subprocess.Popen[bytes] | None = None
        self._cancelled = False

    def run(self) -> ChainResult:
        """Blocking: call from a thread worker."""
        if self._cancelled:
            return ChainResult("cancelled", "not checked")
        self._process = subprocess.Popen(
            [sys.executable, "-c", _CHILD, str(self.path)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        out, err = self._process.communicate()
        if self._cancelled:
            return ChainResult("cancelled", "not checked")
        if self._process.returncode != 0:
            last = (err.decode(errors="replace").strip().splitlines() or ["no output"])[-1]
            return ChainResult("error", f"cannot verify: {last}")
        return result_of(json.loads(out))

    def cancel(self) -> None:
        self._cancelled = True
        if self._process is not None and self._process.poll() is None:
            self._process.kill()


def result_of(report: dict) -> ChainResult:
    """The header's one-line verdict from a VerifyReport.to_json() object."""
    fault = report.get("fault")
    summary = report.get("summary")  # verify's own one-liner: faults, "not closed", "sealed by key"
    if fault:
        where = f"seq {fault['seq']}" if fault.get("seq") is not None else f"line {fault.get('line')}"
        return ChainResult("broken", summary or f"✗ {fault['kind'].replace('_', ' ')} at {where}", fault.get("seq"))
    if report.get("chain") == "absent":
        return ChainResult("absent", summary or f"no hash chain ({report.get('dialect')} dialect)")
    return ChainResult("verified", summary or f"✓ verified ({report.get('events', 0):,} events)")

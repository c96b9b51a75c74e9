"""Verify the hash chain in a child process, so a long check never competes with
the UI for the interpreter lock (the check reads and hashes every line)."""

from __future__ import annotations

import asyncio
import json
import sys
from dataclasses import dataclass
from pathlib import Path

_CHILD = (
    "import json, sys\n"
    "from replay_tui.journal import verify_journal\n"
    "print(json.dumps(verify_journal(sys.argv[1]).to_json()))\n"
)


@dataclass(frozen=True)
class ChainResult:
    status: str  # verified | absent | broken | error
    summary: str
    fault_seq: int | None = None


async def check_chain(path: Path) -> ChainResult:
    """Run verify_journal on ``path`` in a child Python; kill the child if cancelled."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-c", _CHILD, str(path), stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    try:
        out, err = await process.communicate()
    except asyncio.CancelledError:
        process.kill()
        await process.wait()
        raise
    if process.returncode != 0:
        last = (err.decode(errors="replace").strip().splitlines() or ["no output"])[-1]
        return ChainResult("error", f"cannot verify: {last}")
    report = json.loads(out)
    fault = report.get("fault")
    if fault:
        where = f"seq {fault['seq']}" if fault.get("seq") is not None else f"line {fault.get('line')}"
        return ChainResult("broken", f"✗ {fault['kind'].replace('_', ' ')} at {where}", fault.get("seq"))
    if report.get("chain") == "absent":
        return ChainResult("absent", f"no hash chain ({report.get('dialect')} dialect)")
    return ChainResult("verified", f"✓ verified ({report.get('events', 0):,} events)")

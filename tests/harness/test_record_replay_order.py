"""Record and replay hand the agent the same value: members in the journal's order, whatever order the tool built."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from replay_tui.harness import record_run

REPO = Path(__file__).resolve().parents[2]
CONFIG = """
[harness]
snapshot_every = 100

[[plugins]]
id = "tools"
type = "python-tools"
options = { provider = "tests.harness.order_agent:tools" }
"""


def test_an_agent_that_prints_a_tool_result_replays_to_a_match(tmp_path: Path) -> None:
    config = tmp_path / "order.toml"
    config.write_text(CONFIG)
    journal = tmp_path / "order.jsonl"
    outcome = record_run(config, "tests.harness.order_agent:agent", ["go"], journal=journal)
    assert outcome.status == "ok", outcome
    assert json.loads(journal.read_text().splitlines()[-1])["payload"]["output"] == "{'a': 2, 'z': 1}"
    done = subprocess.run(
        [sys.executable, "-m", "replay_tui", "replay", str(journal), "--json", "--agent-path", str(REPO)],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(done.stdout)["status"] == "match"

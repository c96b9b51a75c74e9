"""The README's "Recording" example runs as written and replays from its journal."""

from __future__ import annotations

import re
import subprocess
import sys

from replay_tui.harness import JsonlSink, run_agent
from replay_tui.harness.replay_support import RecordedObservations, harness_for_recording, sources_for
from replay_tui.journal import verify_journal
from replay_tui.journal.model import OBSERVATION_KINDS

from ..docs import README, blocks, section
from .helpers import events_of, logical


def test_the_readme_agent_records_and_replays(tmp_path, monkeypatch):
    found = blocks(section(README, "## Recording"))
    python = next(body for lang, body in found if lang == "python" and body.startswith("# my_agent.py"))
    toml = next(body for lang, body in found if lang == "toml" and body.startswith("# my_agent.toml"))
    (tmp_path / "my_agent.py").write_text(python)
    (tmp_path / "my_agent.toml").write_text(toml)
    agent_lines = python[python.index("def agent") :].strip().splitlines()
    assert len(agent_lines) <= 10

    command = next(
        line for lang, body in found if lang == "" for line in body.splitlines() if line.startswith("python -c")
    )
    code = re.search(r'python -c "(.*)"$', command).group(1)
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "status='ok'" in done.stdout and "It is sunny in Lisbon." in done.stdout
    journal = tmp_path / "lisbon.jsonl"
    assert verify_journal(journal).ok
    recorded = events_of(journal)
    assert [e.kind for e in recorded].count("clock.read") == 2

    monkeypatch.syspath_prepend(str(tmp_path))
    source = RecordedObservations(recorded)
    harness = harness_for_recording(
        recorded[0],
        sink=JsonlSink(tmp_path / "replay.jsonl", run_id=recorded[0].run_id),
        observation_sources=sources_for(source, OBSERVATION_KINDS),
    )
    outcome = run_agent("my_agent:agent", harness, ["Lisbon"])
    assert outcome.output == recorded[-1].payload["output"]
    assert [logical(e) for e in events_of(tmp_path / "replay.jsonl")] == [logical(e) for e in recorded]

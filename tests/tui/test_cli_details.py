"""Small things a new user meets on the command line: verify of a corpus directory, verify --json on a
missing file, usage errors without an isolation line, replay and verify naming the same line, and the
bundled demo opening with the agent shipped in the package."""

from __future__ import annotations

import json
import shutil
from argparse import Namespace
from pathlib import Path

import pytest
from test_launch import REPO, run_cli

from replay_tui.replay.parent.outcome import ReplayOutcome
from replay_tui.replay.parent.runner import FAILED
from replay_tui.tui import launch

FIXTURES = REPO / "fixtures" / "journals"


def test_verify_of_a_corpus_directory_says_so_and_suggests_replay(tmp_path: Path) -> None:
    for name in ("crm.jsonl", "inventory.jsonl"):
        shutil.copyfile(FIXTURES / name, tmp_path / name)
    done = run_cli("verify", str(tmp_path))
    assert done.returncode == 2
    assert "corpus of 2 independent journals" in done.stderr and f"replay-tui replay {tmp_path}" in done.stderr
    assert "another run" not in done.stderr + done.stdout
    as_json = run_cli("verify", str(tmp_path), "--json")
    assert as_json.returncode == 2 and "corpus" in json.loads(as_json.stdout)["error"]


def test_verify_json_on_a_missing_file_prints_json(tmp_path: Path) -> None:
    done = run_cli("verify", str(tmp_path / "nope.jsonl"), "--json")
    assert done.returncode == 2
    report = json.loads(done.stdout)
    assert report["ok"] is False and "nope.jsonl" in report["error"] and "no such file" in report["error"]


def test_a_usage_error_prints_no_isolation_line() -> None:
    outcome = ReplayOutcome(
        FAILED, "j.jsonl", "strict", error={"kind": "usage", "message": "--from-seq 99 is past the end"}
    )
    text = outcome.to_text()
    assert "past the end" in text and "isolation:" not in text and "refused network" not in text
    assert outcome.exit_code == 2


def test_replay_and_verify_name_the_same_malformed_line(tmp_path: Path) -> None:
    lines = (FIXTURES / "crm.jsonl").read_bytes().splitlines(keepends=True)
    broken = tmp_path / "broken.jsonl"
    broken.write_bytes(b"".join(lines[:3]) + b'{"broken": \n' + b"".join(lines[4:8]))
    verified = run_cli("verify", str(broken))
    replayed = run_cli("replay", str(broken))
    assert verified.returncode == replayed.returncode == 2 or (verified.returncode, replayed.returncode) == (1, 2)
    assert "line 4" in verified.stdout + verified.stderr
    assert "line 4" in replayed.stdout + replayed.stderr
    assert "line 3" not in replayed.stdout + replayed.stderr and "line 5" not in replayed.stdout + replayed.stderr


def test_the_bundled_demo_replays_with_the_packaged_agent(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, object] = {}

    def fake_run(self) -> None:  # type: ignore[no-untyped-def]
        seen["agent"] = self.options.replay_agent
        seen["journal"] = self.journal.path

    monkeypatch.setattr("replay_tui.tui.app.ReplayApp.run", fake_run)
    args = Namespace(journal=None, seq=None, theme=None, follow=False, agent=None)
    assert launch.launch_app(args) == 0
    assert seen["agent"] == launch.DEMO_AGENT and Path(str(seen["journal"])).name == launch.DEMO_JOURNAL
    args = Namespace(journal=str(FIXTURES / "crm.jsonl"), seq=None, theme=None, follow=False, agent=None)
    assert launch.launch_app(args) == 0 and seen["agent"] is None  # another journal: as recorded

"""Valid events nested as deep as the reader accepts (1,024 levels) replay, diff and render without recursion errors."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
from replay_helpers import wait_for_replay, wait_until
from tui_helpers import SIZE, settle

from replay_tui.harness import record_run
from replay_tui.journal import Journal, JournalWriter, call_key_of, hash_value, verify_journal
from replay_tui.tui.app import ReplayApp
from replay_tui.tui.screens.compare_app import CompareApp

from ..replay.helpers import rechained_copy
from .agent import DEEP, nested
from .conftest import HERE, REPO
from .test_hostile_app import screen_text

LEVELS = 1_015  # + event, payload and field: the line nests just under the reader's limit of 1,024


def write_deep(path: Path, leaf: Any, levels: int = LEVELS) -> Path:
    with JournalWriter(path, run_id="run-deep", fsync="never") as writer:
        writer.append(
            "run.started",
            {
                "agent": "m:a",
                "environment": {"deep": nested(levels, leaf)},
                "harness": {"version": "0", "plugins": [], "config_hash": None},
                "reducer_version": "1",
                "snapshot_every": 50,
                "initial_state": {},
            },
        )
        arguments = {"a": nested(levels, leaf)}
        key = call_key_of("t", arguments)
        writer.append("tool.call", {"call_id": "c", "call_key": key, "tool": "t", "arguments": arguments}, step_id="s1")
        writer.append(
            "tool.result",
            {"call_id": "c", "call_key": key, "tool": "t", "result": nested(levels, leaf), "duration_ms": 1},
            step_id="s1",
        )
        writer.append("run.ended", {"status": "ok", "output": nested(levels, leaf)})
    return path


@pytest.fixture
def deep_pair(tmp_path: Path) -> tuple[Path, Path]:
    return write_deep(tmp_path / "deep-a.jsonl", 1), write_deep(tmp_path / "deep-b.jsonl", 2)


@pytest.fixture
def deep_divergence(tmp_path: Path) -> Path:
    """A real recording of the deep agent, then a copy whose tool arguments nest 1,000 levels: replay diverges there."""
    recorded = tmp_path / "recorded.jsonl"
    outcome = record_run(HERE / "deep.toml", "tests.hostile.agent:deep_agent", ["go"], journal=recorded)
    assert outcome.status == "ok", outcome

    def deepen(events):
        for event in events:
            if event["kind"] == "tool.call":
                event["payload"]["arguments"] = {"tree": nested(DEEP, 2)}
                event["payload"]["call_key"] = call_key_of(event["payload"]["tool"], event["payload"]["arguments"])
            yield event

    return rechained_copy(recorded, tmp_path / "deep-edit.jsonl", deepen)


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "replay_tui", *args], cwd=REPO, capture_output=True, text=True, timeout=180
    )


def test_the_deep_journals_are_valid(deep_pair: tuple[Path, Path], deep_divergence: Path) -> None:
    for path in (*deep_pair, deep_divergence):
        assert verify_journal(path).ok


def test_diff_of_deep_journals(deep_pair: tuple[Path, Path]) -> None:
    a, b = deep_pair
    result = run_cli("diff", str(a), str(b))
    assert result.returncode == 1, result.stderr
    assert "First difference: A seq=2 / B seq=2" in result.stdout and "root['arguments']['a'][0]['k']" in result.stdout
    assert "Recursion" not in result.stdout + result.stderr
    as_json = run_cli("diff", "--json", str(a), str(b))
    assert as_json.returncode == 1 and orjson.loads(as_json.stdout)["identical"] is False
    same = run_cli("diff", str(a), str(a))
    assert same.returncode == 0 and "No difference" in same.stdout


@pytest.mark.parametrize(
    "args",
    [
        ["stats"],
        ["stats", "--json"],
        ["scan"],
        ["verify"],
        ["export", "--format", "md", "-o", "-"],
        ["export", "--format", "html", "-o", "-"],
        ["export", "--format", "otlp", "-o", "-"],
    ],
)
def test_every_read_command_on_a_deep_journal(deep_pair: tuple[Path, Path], args: list[str]) -> None:
    result = run_cli(args[0], str(deep_pair[0]), *args[1:])
    assert result.returncode == 0, result.stderr
    assert "internal error" not in result.stderr and "Recursion" not in result.stdout + result.stderr


@pytest.mark.parametrize("levels", [256, LEVELS])
def test_an_otlp_export_of_a_deep_journal_imports_back_to_the_same_payloads(tmp_path: Path, levels: int) -> None:
    """orjson writes 255 levels: a journal nested 256 deep or more was 'internal error: TypeError: Recursion
    limit reached', exit 70, from export --format otlp (Markdown and HTML worked)."""
    source = write_deep(tmp_path / "deep.jsonl", 7, levels)
    exported = tmp_path / "deep.otlp.jsonl"
    result = run_cli("export", str(source), "--format", "otlp", "-o", str(exported))
    assert result.returncode == 0, result.stderr
    back = tmp_path / "back.jsonl"
    result = run_cli("import", str(exported), "-o", str(back))
    assert result.returncode == 0, result.stderr
    with Journal(source) as original, Journal(back) as imported:
        original.index()
        imported.index()
        want = [hash_value(e.payload["result"]) for e in original.events() if e.kind == "tool.result"]  # type: ignore[union-attr]
        got = [hash_value(e.payload["result"]) for e in imported.events() if e.kind == "tool.result"]  # type: ignore[union-attr]
    assert got == want and len(want) == 1  # (hashed: comparing 1,015 levels with == runs out of stack)


def test_replay_reports_a_divergence_in_a_deep_payload(deep_divergence: Path) -> None:
    result = run_cli("replay", str(deep_divergence))
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Replay divergence at seq=" in result.stdout and "root['arguments']['tree']" in result.stdout
    assert "Recursion" not in result.stdout + result.stderr
    as_json = run_cli("replay", "--json", str(deep_divergence))
    report = orjson.loads(as_json.stdout)
    assert report["status"] == "diverged" and report["divergence"]["diff_lines"]


@pytest.mark.asyncio
async def test_the_app_renders_deep_events(deep_pair: tuple[Path, Path]) -> None:
    app = ReplayApp(Journal(deep_pair[0]))
    async with app.run_test(size=SIZE) as pilot:
        screen = await settle(pilot)
        for _ in range(4):  # each event in the detail, the panes and the tree
            await pilot.press("j")
            await settle(pilot)
            assert screen_text(app)
        await pilot.press("F")  # unfold everything: a thousand nested lines
        await pilot.pause()
        detail = screen.query_one("#detail-json")
        assert len(detail.lines) > 2 * LEVELS
        assert app.is_running


@pytest.mark.asyncio
async def test_the_app_compares_deep_journals(deep_pair: tuple[Path, Path]) -> None:
    app = CompareApp(*deep_pair)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(
            pilot,
            lambda: "aligning" not in str(app.screen.query_one("#compare-summary").render()),
            what="the alignment",
        )
        assert "First differing" in str(app.screen.query_one("#compare-summary").render())
        await pilot.press("down")
        await pilot.pause()
        assert app.is_running


@pytest.mark.asyncio
async def test_the_app_shows_a_divergence_in_a_deep_payload(deep_divergence: Path, monkeypatch: Any) -> None:
    monkeypatch.chdir(REPO)
    app = ReplayApp(Journal(deep_divergence))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("r")
        panel = await wait_for_replay(pilot, timeout_s=120)
        assert panel.last is not None and panel.last.outcome.status == "diverged", panel.last.outcome.to_text()
        await pilot.press("d")
        await wait_until(pilot, lambda: app.screen.__class__.__name__ == "DivergenceScreen", what="the divergence")
        view = app.screen
        await wait_until(pilot, lambda: view.position is not None, what="state and chain")
        expected = view.query_one("#divergence-expected-json")
        assert len(expected.lines) > DEEP
        assert "root['arguments']['tree']" in str(view.query_one("#divergence-diff-text").render())
        assert app.is_running


def test_replay_serves_a_deep_recorded_observation(tmp_path: Path) -> None:
    recorded = tmp_path / "recorded.jsonl"
    assert record_run(HERE / "deep.toml", "tests.hostile.agent:deep_agent", ["go"], journal=recorded).status == "ok"

    def deepen(events):
        for event in events:
            if event["kind"] == "tool.result":
                event["payload"]["result"] = {"tree": nested(DEEP, 1)}  # the agent only checks it is not empty
            yield event

    result = run_cli("replay", str(rechained_copy(recorded, tmp_path / "deep-result.jsonl", deepen)))
    assert result.returncode == 0, result.stdout

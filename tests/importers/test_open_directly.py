"""Foreign traces given where a journal goes: detected by content, imported once into the sha256 cache."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from replay_tui.cli import main
from replay_tui.store.sources import imports_cache_dir, resolve_source
from replay_tui.tui.launch import resolve_journal
from tests.journal_factory import run_started

from .conftest import SAMPLES

ALL_SAMPLES = ["weather.otlp.jsonl", "weather.agents.jsonl", "weather.eval", "weather.cassette.yaml"]


@pytest.mark.parametrize("sample", ALL_SAMPLES)
def test_every_format_opens_as_a_cached_journal(sample: str) -> None:
    resolved = resolve_source(str(SAMPLES / sample))
    assert resolved.imported is not None and resolved.imported["file_name"] == sample
    assert resolved.path.is_file() and resolved.path.is_relative_to(imports_cache_dir())
    again = resolve_source(str(SAMPLES / sample))
    assert (
        again.path == resolved.path and again.path.stat().st_mtime_ns == resolved.path.stat().st_mtime_ns
    )  # the cache


def test_journals_and_missing_paths_pass_through(tmp_path: Path) -> None:
    journal = Path(__file__).resolve().parents[2] / "fixtures" / "journals" / "crm.jsonl"
    assert resolve_source(str(journal)).path == journal and resolve_source(str(journal)).imported is None
    assert resolve_source(str(tmp_path / "nope.jsonl")).path == tmp_path / "nope.jsonl"
    assert not imports_cache_dir().exists()


def test_commands_take_foreign_traces(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["verify", str(SAMPLES / "weather.otlp.jsonl")]) == 0
    assert "hash chain verifies" in capsys.readouterr().out
    assert main(["stats", str(SAMPLES / "weather.eval")]) == 0
    assert "model" in capsys.readouterr().out


def test_a_bad_trace_is_one_line_from_any_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cut = tmp_path / "cut.otlp.jsonl"
    cut.write_bytes((SAMPLES / "weather.otlp.jsonl").read_bytes()[:500])
    assert main(["stats", str(cut)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(cut) in err and "cut short" in err
    assert not any(imports_cache_dir().rglob("*.jsonl"))  # nothing half-written is left in the cache


@pytest.mark.asyncio
async def test_the_app_header_says_where_the_run_came_from() -> None:
    from replay_tui.journal import Journal
    from replay_tui.tui.app import ReplayApp

    from ..tui.tui_helpers import SIZE, settle  # noqa: PLC0415 (the app's helpers load Textual)

    path = resolve_journal(str(SAMPLES / "weather.otlp.jsonl"))
    app = ReplayApp(Journal(path))
    async with app.run_test(size=SIZE) as pilot:
        screen = await settle(pilot)
        header = screen.header
        for _ in range(300):  # the chain check runs in a worker and reports by message
            await app.workers.wait_for_complete()
            if header.chain[0] != "checking" and header.environment.startswith("imported"):
                break
            await pilot.pause(0.05)
        assert header.environment.startswith("imported from weather.otlp.jsonl (otlp; integrity from import on)")
        assert "replayable (model and tools)" in header.environment
        assert header.chain[0] == "verified"


@pytest.mark.asyncio
async def test_an_inspect_run_with_state_and_notes_walks_in_the_app() -> None:
    from replay_tui.journal import Journal
    from replay_tui.tui.app import ReplayApp
    from replay_tui.tui.format import summary_of

    from ..tui.tui_helpers import SIZE, settle  # noqa: PLC0415 (the app's helpers load Textual)

    journal = Journal(resolve_journal(str(SAMPLES / "weather.eval")))
    app = ReplayApp(journal)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        for _ in range(13):  # every event, the state panes and the tree follow the cursor
            await pilot.press("down")
        await settle(pilot)
        await app.workers.wait_for_complete()
    notes = [journal.event(position) for position in range(len(journal)) if journal.event(position).kind == "note"]
    assert [summary_of(note) for note in notes] == ["score (includes): C"]


def test_detection_reads_keys_not_words_inside_values(tmp_path: Path) -> None:
    from replay_tui.importers import detect_format
    from replay_tui.journal.writer import JournalWriter

    journal = tmp_path / "talks-about-otlp.jsonl"
    with JournalWriter(journal, run_id="r") as writer:
        writer.append(
            "run.started",
            run_started(
                agent="m:a",
                reducer_version="none",
                snapshot_every=10,
                initial_state={"note": '{"resourceSpans": [], "object": "trace"}'},
            ),
        )
    assert detect_format(journal) == "journal" and resolve_source(str(journal)).path == journal
    pretty = tmp_path / "pretty.json"
    pretty.write_text(json.dumps(json.loads((SAMPLES / "weather.otlp.jsonl").read_text().splitlines()[0]), indent=2))
    assert detect_format(pretty) == "otlp"


def test_an_unwritable_cache_is_one_clear_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    blocked = tmp_path / "not-a-directory"
    blocked.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))
    assert main(["stats", str(SAMPLES / "weather.otlp.jsonl")]) == 2
    err = capsys.readouterr().err
    assert "a writable import cache" in err and "replay-tui import SRC -o OUT.jsonl" in err and err.count("\n") == 1


def test_the_import_cache_is_under_the_one_cache_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``$REPLAY_TUI_CACHE_DIR`` moves every cache (objects, prefixes, follow and imports), not only some."""
    root = tmp_path / "replay-tui-cache"
    monkeypatch.setenv("REPLAY_TUI_CACHE_DIR", str(root))
    opened = resolve_source(str(SAMPLES / "weather.otlp.jsonl"))
    assert opened.path.is_relative_to(root / "imports"), opened.path

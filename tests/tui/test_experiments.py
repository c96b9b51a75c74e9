"""Experiments from the app (x): model-live and tools-live on the CRM fixture, through
the real child; the comparison screen opens on the recorded and the new journal."""

from __future__ import annotations

from pathlib import Path

import pytest
from replay_helpers import CONFIGS, fixture_copy, wait_for_replay, wait_until
from tui_helpers import SIZE, make_app, settle

from replay_tui.tui.screens.compare import CompareScreen
from replay_tui.tui.screens.experiments import ExperimentsScreen

pytestmark = pytest.mark.asyncio


async def run_experiment(pilot, mode: str, config: Path, out: Path) -> CompareScreen:  # type: ignore[no-untyped-def]
    app = pilot.app
    await pilot.press("x")
    dialog = app.screen
    assert isinstance(dialog, ExperimentsScreen)
    assert config.resolve() in dialog.configs  # fixtures/configs is found from the journal's project
    if mode == "tools-live":
        dialog.query_one("#mode-tools-live").value = True
        await pilot.pause()
        assert "tools run live" in str(dialog.query_one("#experiments-mode-help").render())
    dialog.query_one("#experiments-config").value = str(config)
    dialog.query_one("#experiments-out").value = str(out)
    dialog.query_one("#experiments-timeout").focus()
    await pilot.press("enter")
    replays = await wait_for_replay(pilot)
    assert replays.last.request.mode == mode
    await wait_until(
        pilot, lambda: isinstance(app.screen, CompareScreen) and app.screen.alignment is not None, what="the comparison"
    )
    return app.screen


async def test_model_live_opens_the_comparison_on_the_first_differing_decision(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(Path(__file__).resolve().parents[2])
    journal = fixture_copy("crm.jsonl", tmp_path)
    out = tmp_path / "crm.model-live.jsonl"
    app = make_app(journal)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        compare = await run_experiment(pilot, "model-live", CONFIGS / "crm-new-model.toml", out)
        outcome = app.screen_stack[0].replays.last.outcome
        assert outcome.experiment["mode"] == "model-live" and outcome.out == str(out) and out.exists()
        assert outcome.live_calls  # the new model was asked
        # Focused: the first differing decision, the step-01 model answer.
        pair = compare.focused_pair
        assert pair is not None and pair.kind == "model.response" and pair.a.seq == 7 and pair.status == "changed"
        table = compare.query_one("DataTable")
        assert compare.rows[table.cursor_row] is pair
        summary = str(compare.query_one("#compare-summary").render())
        assert "First differing decision: A seq=7 / B seq=7 (step-01): model.response" in summary
        assert "115 differences (114 after it)" in summary
        # The payloads of the focused pair, the changed answer highlighted on both sides.
        a_lines = compare.query_one("#compare-a-json").lines
        assert [line.change for line in a_lines if line.pointer == "/response/content"] == ["changed"]
        await pilot.press("n")
        assert compare.rows[table.cursor_row].status != "same" and table.cursor_row > compare.rows.index(pair)
        await pilot.press("f")
        assert compare.rows[table.cursor_row] is pair
        await pilot.press("escape")
        assert app.screen is app.screen_stack[0]
        await pilot.press("c")  # opens the comparison again
        await wait_until(pilot, lambda: isinstance(app.screen, CompareScreen), what="the comparison")


async def test_tools_live_on_the_recorded_model_answers_matches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(Path(__file__).resolve().parents[2])
    journal = fixture_copy("crm.jsonl", tmp_path)
    out = tmp_path / "crm.tools-live.jsonl"
    app = make_app(journal)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        compare = await run_experiment(pilot, "tools-live", CONFIGS / "crm.toml", out)
        outcome = app.screen_stack[0].replays.last.outcome
        assert outcome.experiment["mode"] == "tools-live" and outcome.experiment["identical"]
        assert len(outcome.live_calls) == 27  # every customer_query ran live
        assert compare.focused_pair is None
        assert "No difference" in str(compare.query_one("#compare-summary").render())


async def test_the_experiment_dialog_refuses_bad_choices(tmp_path: Path) -> None:
    journal = fixture_copy("crm.jsonl", tmp_path)
    app = make_app(journal)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("x")
        dialog = app.screen
        error = dialog.query_one("#experiments-error")
        dialog.query_one("#experiments-timeout").focus()
        await pilot.press("enter")
        assert "choose a harness config" in str(error.render())
        dialog.query_one("#experiments-config").value = str(tmp_path / "missing.toml")
        await pilot.press("enter")
        assert "no such config file" in str(error.render())
        dialog.query_one("#experiments-config").value = str(CONFIGS / "crm.toml")
        dialog.query_one("#experiments-out").value = str(journal)
        await pilot.press("enter")
        assert "exists already" in str(error.render())
        await pilot.press("escape")
        assert not app.screen_stack[0].replays.running


async def test_a_config_the_child_cannot_load_is_reported_not_raised(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from replay_tui.tui.screens.replay_report import ReplayReportScreen, report_sections

    monkeypatch.chdir(Path(__file__).resolve().parents[2])
    journal = fixture_copy("crm.jsonl", tmp_path)
    bad = tmp_path / "bad.toml"
    bad.write_text("[[plugins]]\nid = 'model'\ntype = 'no-such-plugin-type'\n")
    app = make_app(journal)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("x")
        dialog = app.screen
        dialog.query_one("#experiments-config").value = str(bad)
        dialog.query_one("#experiments-out").value = str(tmp_path / "never.jsonl")
        dialog.query_one("#experiments-timeout").focus()
        await pilot.press("enter")
        replays = await wait_for_replay(pilot)
        assert replays.last.outcome.status == "error" and replays.last.outcome.error["kind"] == "usage"
        await wait_until(pilot, lambda: isinstance(app.screen, ReplayReportScreen), what="the report")
        error_lines = dict(report_sections(app.screen.result))["Child error"]
        assert "no-such-plugin-type" in " ".join(error_lines)
        assert not (tmp_path / "never.jsonl").exists()

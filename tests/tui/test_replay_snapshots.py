"""Snapshots of the replay views: a passing replay, the step-23 divergence view, and
the comparison after a model-live experiment.

Fixed terminal size, no blinking cursor on screen (no Input is focused when the
picture is taken), fixture journals copied under their own names, and every
elapsed time masked (``replay_format.elapsed_text``). Update with
``--snapshot-update`` after a deliberate change, and look at the pictures first.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from replay_helpers import CONFIGS, fixture_copy, wait_for_replay, wait_until
from tui_helpers import SIZE, make_app, settle

from replay_tui.tui.screens.compare import CompareScreen
from replay_tui.tui.screens.experiments import ExperimentsScreen
from replay_tui.tui.widgets import replay_format

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def masked_elapsed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(replay_format, "elapsed_text", lambda seconds: "‹elapsed›")
    monkeypatch.chdir(REPO)


async def idle(pilot) -> None:  # type: ignore[no-untyped-def]
    for _ in range(300):
        if not any(worker.is_running for worker in pilot.app.workers):
            break
        await pilot.pause(0.02)
    await pilot.pause(0.2)


async def open_experiments(pilot) -> ExperimentsScreen:  # type: ignore[no-untyped-def]
    """Press x and return the dialog once it is mounted: the key only pushes it, and its fields are
    composed afterwards (under load, after the press returned)."""
    await pilot.press("x")
    await wait_until(
        pilot,
        lambda: isinstance(pilot.app.screen, ExperimentsScreen) and pilot.app.screen.is_mounted,
        what="the experiments dialog",
    )
    return pilot.app.screen


def test_passing_replay(snap_compare, tmp_path: Path) -> None:
    journal = fixture_copy("crm.jsonl", tmp_path)

    async def replay(pilot) -> None:  # type: ignore[no-untyped-def]
        await settle(pilot)
        await idle(pilot)
        await pilot.press("r")
        await wait_for_replay(pilot)
        await pilot.press("j")
        await idle(pilot)

    assert snap_compare(make_app(journal), terminal_size=SIZE, run_before=replay)


def test_step_23_divergence_view(snap_compare, tmp_path: Path) -> None:
    journal = fixture_copy("crm-incident.jsonl", tmp_path)

    async def diverge(pilot) -> None:  # type: ignore[no-untyped-def]
        await settle(pilot)
        await idle(pilot)
        await pilot.press("r")
        await wait_for_replay(pilot)
        await pilot.press("d")
        await wait_until(
            pilot, lambda: getattr(pilot.app.screen, "position", None) is not None, what="the divergence view"
        )
        await idle(pilot)

    assert snap_compare(
        make_app(journal, replay_agent="fixtures.agents.crm:agent"), terminal_size=SIZE, run_before=diverge
    )


def test_model_live_comparison(snap_compare, tmp_path: Path) -> None:
    journal = fixture_copy("crm.jsonl", tmp_path)
    out = tmp_path / "crm.model-live.jsonl"

    async def experiment(pilot) -> None:  # type: ignore[no-untyped-def]
        await settle(pilot)
        await idle(pilot)
        dialog = await open_experiments(pilot)
        dialog.query_one("#experiments-config").value = str(CONFIGS / "crm-new-model.toml")
        dialog.query_one("#experiments-out").value = str(out)
        dialog.query_one("#experiments-timeout").focus()
        await pilot.press("enter")
        await wait_for_replay(pilot)
        await wait_until(
            pilot,
            lambda: isinstance(pilot.app.screen, CompareScreen) and pilot.app.screen.alignment is not None,
            what="the comparison",
        )
        await idle(pilot)

    assert snap_compare(make_app(journal), terminal_size=SIZE, run_before=experiment)


def test_tools_live_comparison(snap_compare, tmp_path: Path) -> None:
    journal = fixture_copy("crm.jsonl", tmp_path)
    out = tmp_path / "crm.tools-live.jsonl"

    async def experiment(pilot) -> None:  # type: ignore[no-untyped-def]
        await settle(pilot)
        await idle(pilot)
        dialog = await open_experiments(pilot)
        dialog.query_one("#mode-tools-live").value = True
        dialog.query_one("#experiments-config").value = str(CONFIGS / "crm.toml")
        dialog.query_one("#experiments-out").value = str(out)
        dialog.query_one("#experiments-timeout").focus()
        await pilot.press("enter")
        await wait_for_replay(pilot)
        await wait_until(
            pilot,
            lambda: isinstance(pilot.app.screen, CompareScreen) and pilot.app.screen.alignment is not None,
            what="the comparison",
        )
        await idle(pilot)

    assert snap_compare(make_app(journal), terminal_size=SIZE, run_before=experiment)

"""Every Textual built-in theme works: at start (``--theme``) and when chosen from the command palette."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.command import CommandPalette
from textual.theme import BUILTIN_THEMES
from tui_helpers import SIZE, make_app, palette_highlights, palette_query, settle, wait_until

from replay_tui.tui.themes import CUSTOM_VARIABLE_FALLBACKS

pytestmark = pytest.mark.asyncio


@pytest.mark.parametrize("name", sorted(BUILTIN_THEMES))
async def test_builtin_theme_at_start_draws_the_timeline(incident_path: Path, name: str) -> None:
    app = make_app(incident_path, theme=name)
    async with app.run_test(size=SIZE) as pilot:
        screen = await settle(pilot)
        assert app.theme == name and app.return_code is None
        assert screen.timeline.count > 0
        for variable in CUSTOM_VARIABLE_FALLBACKS:
            assert app.theme_variables[variable]  # derived from the theme's own colors


async def test_switching_to_every_builtin_theme_at_runtime(incident_path: Path) -> None:
    app = make_app(incident_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        for name in sorted(BUILTIN_THEMES):
            app.theme = name
            await pilot.pause()
            assert app.is_running and app.return_code is None, name
            assert app.screen.query_one("#timeline").styles.background is not None


async def test_choosing_a_builtin_theme_from_the_palette(incident_path: Path) -> None:
    app = make_app(incident_path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        # the palette gathers its hits in the background: wait for the hit, not for a fixed time
        await pilot.press("ctrl+p")
        await wait_until(pilot, lambda: isinstance(app.screen, CommandPalette), "the command palette")
        await pilot.press(*"Theme")
        await wait_until(pilot, lambda: palette_highlights(app, "theme"), "a theme command in the palette")
        await pilot.press("enter")
        await wait_until(pilot, lambda: palette_query(app) == "", "the theme picker (a new, empty palette)")
        await pilot.press(*"nord")
        await wait_until(pilot, lambda: palette_highlights(app, "nord"), "nord in the theme picker")
        await pilot.press("enter")
        await wait_until(pilot, lambda: app.theme == "nord", "the nord theme")
        assert app.is_running and app.return_code is None
        await settle(pilot)
        assert app.return_code is None

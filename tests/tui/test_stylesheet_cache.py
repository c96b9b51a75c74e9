"""Parsed stylesheets kept between starts (tui/stylesheet_cache.py): a second start parses nothing and styles
every widget as the first did; a cache file that is not the user's alone, or not one, is never loaded."""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import pytest
from textual.css.stylesheet import Stylesheet, StylesheetParseError
from tui_helpers import SIZE, make_app, settle

from replay_tui.tui.stylesheet_cache import CachedStylesheet


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("REPLAY_TUI_CACHE_DIR", str(folder))
    return folder / "stylesheets"


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Every sheet Textual itself parsed (the cache's misses)."""
    seen: list[object] = []
    parse = Stylesheet._parse_rules

    def counted(self: Stylesheet, css: str, read_from: object, *args: object, **kwargs: object) -> object:
        seen.append(read_from)
        return parse(self, css, read_from, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Stylesheet, "_parse_rules", counted)
    return seen


async def styles_of_a_run(path: Path) -> dict[str, str]:
    """Each node's rules as drawn, and the sheets' files written once the run is over."""
    app = make_app(path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        drawn = {
            f"{index}:{node.__class__.__name__}#{node.id}": repr(sorted(node.styles.get_rules().items()))
            for index, node in enumerate(app.screen.walk_children(with_self=True))
        }
    app.keep_stylesheets(now=True)
    return drawn


@pytest.mark.asyncio
async def test_a_second_start_parses_no_sheet_and_styles_every_widget_alike(
    incident_path: Path, cache: Path, parses: list[object]
) -> None:
    first = await styles_of_a_run(incident_path)
    parsed_first = len(parses)
    assert parsed_first > 10  # ours and every widget class's DEFAULT_CSS
    (kept,) = cache.iterdir()
    assert kept.stat().st_mode & 0o777 == 0o600
    parses.clear()
    second = await styles_of_a_run(incident_path)
    assert parses == []
    assert second == first


@pytest.mark.asyncio
async def test_a_cache_others_may_write_is_not_loaded(incident_path: Path, cache: Path, parses: list[object]) -> None:
    first = await styles_of_a_run(incident_path)
    (kept,) = cache.iterdir()
    kept.chmod(0o666)
    parses.clear()
    assert await styles_of_a_run(incident_path) == first
    assert len(parses) > 10


@pytest.mark.asyncio
@pytest.mark.parametrize("content", [b"", b"not a pickle", pickle.dumps({"key": "not bytes"}), pickle.dumps([1])])
async def test_a_cache_file_that_is_not_one_is_parsed_past_and_written_again(
    incident_path: Path, cache: Path, parses: list[object], content: bytes
) -> None:
    first = await styles_of_a_run(incident_path)
    (kept,) = cache.iterdir()
    kept.write_bytes(content)
    os.chmod(kept, 0o600)
    parses.clear()
    assert await styles_of_a_run(incident_path) == first
    assert len(parses) > 10
    assert isinstance(pickle.loads(kept.read_bytes()), dict)


def test_a_sheet_with_errors_is_never_kept(tmp_path: Path) -> None:
    sheet = CachedStylesheet(folder=tmp_path)
    sheet.add_source("Screen { color: not-a-colour; }", read_from=("bad.tcss", ""))
    with pytest.raises(StylesheetParseError):
        sheet.parse()
    sheet.keep()
    assert list(tmp_path.iterdir()) == []


def test_each_theme_s_variables_have_a_file_of_their_own(tmp_path: Path) -> None:
    for colour in ("red", "blue"):
        sheet = CachedStylesheet(variables={"accent": colour}, folder=tmp_path)
        sheet.add_source("Screen { color: $accent; }", read_from=("theme.tcss", ""))
        sheet.parse()
        sheet.keep()
    assert len(list(tmp_path.iterdir())) == 2
    again = CachedStylesheet(variables={"accent": "blue"}, folder=tmp_path)
    again.add_source("Screen { color: $accent; }", read_from=("theme.tcss", ""))
    again.parse()
    (rule,) = again.rules
    assert rule.styles.color.hex == "#0000FF"

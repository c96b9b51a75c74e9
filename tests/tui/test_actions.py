"""The action registry: one table feeds the bindings, the help screen and the palette, and a
user keymap file rebinds keys by action id."""

from __future__ import annotations

from pathlib import Path

import pytest
from tui_helpers import SIZE, make_app, settle

from replay_tui.tui.actions import (
    KeymapError,
    action_target,
    all_actions,
    bindings_for,
    default_keymap_path,
    help_rows,
    load_keymap,
)
from replay_tui.tui.app import ReplayApp
from replay_tui.tui.screens.help import HelpScreen, help_text
from replay_tui.tui.screens.main import MainScreen


def test_every_bound_action_has_a_method_and_a_help_line() -> None:
    ids = [action.id for action in all_actions()]
    assert len(ids) == len(set(ids)), "action ids are unique"
    for owner, cls in (("screen", MainScreen), ("app", ReplayApp)):
        for action, binding in zip(
            [a for a in all_actions() if a.owner == owner and a.keys], bindings_for(owner), strict=True
        ):
            assert binding.id == action.id  # what a keymap rebinds
            if action.target:  # a controller's: the screen's one dispatcher calls it
                assert owner == "screen" and binding.action == f"controller({action.target!r})"
            else:
                assert binding.action == action.id
            assert callable(getattr(cls, f"action_{binding.action.split('(')[0]}", None)), binding.action
    helped = {what for _keys, what in help_rows({})}
    assert all(action.help in helped for action in all_actions())


@pytest.mark.asyncio
async def test_every_controller_target_and_message_reaches_a_method(incident_path: Path) -> None:
    """An entry naming "controller.method" resolves on the mounted screen (keys and palette), and every
    ControllerMessage type is handled by exactly one controller."""
    from replay_tui.tui.messages import ControllerMessage

    app = make_app(incident_path)
    async with app.run_test(size=SIZE) as pilot:
        screen = await settle(pilot)
        targets = [action for action in all_actions() if action.target]
        assert targets, "the table names controllers"
        for action in targets:
            assert callable(action_target(action.target, screen.controllers)), action.target
        palette = {command.title: command.callback for command in app.get_system_commands(screen)}
        assert palette["Replay"] == screen.replays.replay and palette["Search"] == screen.finder.search
        assert set(screen._routes) == set(ControllerMessage.__subclasses__())
        await pilot.press("colon", *"12", "enter")  # a key through the dispatcher to the finder
        await settle(pilot)
        assert screen.journal.event(screen.timeline.cursor).seq == 12


def test_keymap_file(tmp_path: Path) -> None:
    path = tmp_path / "keymap.toml"
    assert load_keymap(path) == {}, "no file: the defaults"
    with pytest.raises(KeymapError, match="no such keymap file"):
        load_keymap(path, required=True)
    path.write_text('[keymap]\nsearch = "ctrl+f"\nreplay = ["r", "f5"]\n')
    assert load_keymap(path) == {"search": "ctrl+f", "replay": "r,f5"}
    path.write_text('[keymap]\nsearhc = "ctrl+f"\n')
    with pytest.raises(KeymapError, match=r"keymap.toml: \[keymap\] 'searhc' is not an action"):
        load_keymap(path)
    path.write_text("[keymap]\nsearch = 3\n")
    with pytest.raises(KeymapError, match="expected keys like"):
        load_keymap(path)
    path.write_text("[keymap\n")
    with pytest.raises(KeymapError, match="not valid TOML"):
        load_keymap(path)
    assert default_keymap_path({"XDG_CONFIG_HOME": str(tmp_path)}) == tmp_path / "replay-tui" / "keymap.toml"
    assert default_keymap_path({"REPLAY_TUI_KEYMAP": str(path)}) == path


def test_a_bad_keymap_file_stops_the_launch_with_its_name(
    tmp_path: Path, incident_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from replay_tui.cli import main

    keymap = tmp_path / "keys.toml"
    keymap.write_text('[keymap]\nnope = "x"\n')
    monkeypatch.setenv("REPLAY_TUI_KEYMAP", str(keymap))
    assert main([str(incident_path)]) == 2
    assert f"{keymap}: [keymap] 'nope' is not an action" in capsys.readouterr().err


@pytest.mark.asyncio
async def test_a_rebound_key_works_and_the_help_and_palette_say_so(incident_path: Path) -> None:
    app = make_app(incident_path, keymap={"next_error": "ctrl+e", "help": "f1"})
    async with app.run_test(size=SIZE) as pilot:
        screen = await settle(pilot)
        start = screen.timeline.cursor
        await pilot.press("e")  # the default key no longer does it
        await settle(pilot)
        assert screen.timeline.cursor == start
        await pilot.press("ctrl+e")
        await settle(pilot)
        assert screen.journal.event(screen.timeline.cursor).kind == "tool.result"
        commands = {command.title: command.help for command in app.get_system_commands(screen)}
        assert commands["Next error"].endswith("(ctrl+e)")
        await pilot.press("f1")
        assert isinstance(app.screen, HelpScreen)
        assert "ctrl+e" in help_text(app.user_keymap)


def test_a_message_two_controllers_claim_is_refused() -> None:
    from replay_tui.tui.controllers import routes
    from replay_tui.tui.messages import JumpTo

    class Claims:
        def handlers(self):  # type: ignore[no-untyped-def]
            return {JumpTo: lambda message: None}

    assert list(routes(Claims())) == [JumpTo]
    with pytest.raises(ValueError, match="JumpTo is handled by two controllers"):
        routes(Claims(), Claims())

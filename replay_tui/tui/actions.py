"""The one table of the app's keys: it feeds ``BINDINGS``, the help screen (``?``) and the
command palette, and users rebind any entry by its id in a keymap file.

How to add an action (one entry):

1. Add an ``Action`` to the right section of ``SECTIONS`` below: a unique ``id`` (also the
   method name without ``action_``), the default ``keys`` (Textual key names, comma separated),
   a short ``title`` (footer and palette) and a ``help`` line (help screen and palette).
2. Say who does it. ``owner`` is where the key is bound: ``"screen"`` is the main screen
   (``screens/main.py``), ``"app"`` is ``ReplayApp``, ``"timeline"`` names keys the timeline
   widget binds itself, and ``"widget"`` keys that only appear in the help (no binding, no palette).
   When one of the main screen's controllers does it, ``target`` names the method,
   ``"controller.method"`` (the controllers are ``MainScreen.controllers``: ``replays.replay``,
   ``finder.search``); otherwise write ``action_<id>`` on the owner.

That is all: the main screen's and the app's ``BINDINGS``, the help text and the palette are
built from this table. ``show=False`` keeps a binding out of the footer; ``palette=False``
keeps it out of the palette.

Users rebind keys in ``$XDG_CONFIG_HOME/replay-tui/keymap.toml`` (or the file named by
``REPLAY_TUI_KEYMAP``), one ``id = "keys"`` line under ``[keymap]``, like harlequin's keymaps::

    [keymap]
    search = "ctrl+f"
    replay = "r,f5"

The ids are the Textual binding ids, so ``App.set_keymap`` applies them.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Literal, NamedTuple

from textual.binding import Binding, BindingType

Owner = Literal["screen", "app", "timeline", "widget"]
KEYMAP_ENV = "REPLAY_TUI_KEYMAP"

# How Textual's key names read on screen.
_KEY_GLYPHS = {
    "colon": ":",
    "slash": "/",
    "ampersand": "&",
    "apostrophe": "'",
    "question_mark": "?",
    "escape": "escape",
    "pagedown": "page down",
    "pageup": "page up",
}


class Action(NamedTuple):
    """One user-facing action: its binding, its help line and its palette entry. (A NamedTuple: a frozen
    dataclass compiled six methods when the app was imported.)"""

    id: str
    keys: str
    title: str
    help: str
    owner: Owner = "screen"
    show: bool = True
    palette: bool = True
    label: str = ""  # how the keys read in the help; derived from ``keys`` when empty
    palette_title: str = ""  # the palette's title when the footer's is too short to search for
    target: str = ""  # "controller.method" when a controller of the main screen does it

    def key_label(self, keys: str | None = None) -> str:
        if self.label and keys is None:
            return self.label
        return " / ".join(_KEY_GLYPHS.get(key.strip(), key.strip()) for key in (keys or self.keys).split(","))

    def binding(self) -> Binding:
        """The key binding; a controller's action goes through the screen's one ``action_controller``."""
        action = f"controller({self.target!r})" if self.target else self.id
        return Binding(self.keys, action, self.title, show=self.show, id=self.id)


SECTIONS: tuple[tuple[str, tuple[Action, ...]], ...] = (
    (
        "Moving",
        (
            Action(
                "cursor",
                "j,k,down,up",
                "Next / previous event",
                "next / previous event",
                "widget",
                label="j / k / ↓ / ↑",
            ),
            Action("first", "g,home", "First event", "first event", "timeline"),
            Action("last", "G,end", "Last event", "last event", "timeline"),
            Action("page", "pagedown,space,pageup", "Page", "a page down / up", "widget"),
            Action("goto", "colon", "Go to seq", "go to a seq", target="finder.goto"),
            Action(
                "goto_time",
                "T",
                "Go to time",
                "go to a time: +MM:SS from the run's start, HH:MM[:SS] that day, or a full RFC 3339 time",
                "timeline",
            ),
            Action(
                "scroll_sideways",
                "left,right,h,l",
                "Sideways",
                "scroll the timeline's summaries left / right (seq, kind and step stay); in a state pane "
                "or the event, long lines",
                "widget",
                label="← / → (h / l)",
            ),
            Action(
                "toggle_wrap",
                "o",
                "Wrap",
                "wrap long rows or lines, or one line each (←/→ scroll), in the timeline, a state pane or the event",
                "timeline",
                palette_title="Wrap long rows",
            ),
            Action(
                "panes",
                "tab,shift+tab",
                "Next pane",
                "next / previous pane (timeline, tree, state before, state after, event)",
                "widget",
            ),
        ),
    ),
    (
        "Finding",
        (
            Action(
                "search",
                "slash",
                "Search",
                "search: words and field filters (below); all must match",
                target="finder.search",
            ),
            Action(
                "search_next",
                "n",
                "Next hit",
                "next search hit (wraps)",
                palette_title="Next search hit",
                target="finder.search_next",
            ),
            Action(
                "search_previous",
                "N",
                "Previous hit",
                "previous search hit (wraps)",
                palette_title="Previous search hit",
                target="finder.search_previous",
            ),
            Action(
                "filter",
                "ampersand",
                "Filter",
                "filter: show only the events that match (escape shows all)",
                palette_title="Filter the timeline",
                target="finder.filter",
            ),
            Action(
                "next_error",
                "e",
                "Next error",
                "next error (tool error, model error, failed run, unreadable line)",
                target="finder.next_error",
            ),
            Action("previous_error", "E", "Previous error", "previous error", target="finder.previous_error"),
            Action(
                "divergence",
                "d",
                "First divergence",
                "first divergence of the last replay: jump there and open the divergence view",
                target="replays.divergence",
            ),
            Action(
                "watch_next",
                "w",
                "Watch path / next change",
                "watch the state path under the cursor in a state pane; jump to its next change",
                palette_title="Watch path: next change",
                target="finder.watch_next",
            ),
            Action(
                "watch_previous",
                "W",
                "Previous change",
                "previous change of the watched path",
                palette_title="Watch path: previous change",
                target="finder.watch_previous",
            ),
            Action(
                "cancel_search",
                "escape",
                "Cancel / clear",
                "cancel a replay; else stop a search or filter; else clear the filter; else the highlight",
                show=False,
                palette_title="Clear filter or highlight",
                target="finder.escape",
            ),
        ),
    ),
    (
        "Replay (the agent runs in a network-isolated child process, never in the app)",
        (
            Action(
                "replay",
                "r",
                "Replay",
                "strict replay of this journal: progress, elapsed time; escape cancels",
                target="replays.replay",
            ),
            Action(
                "replay_dialog",
                "R",
                "Replay with…",
                "replay with a chosen agent entry point, import path and timeout",
                show=False,
                target="replays.replay_dialog",
            ),
            Action(
                "experiments",
                "x",
                "Experiment",
                "experiment: model-live or tools-live with a chosen harness config, then compare",
                target="replays.experiments",
            ),
            Action(
                "replay_report",
                "v",
                "Replay report",
                "report of the last run: isolation, environment differences, child stderr",
                show=False,
                target="replays.report",
            ),
            Action(
                "compare_last",
                "c",
                "Compare experiment",
                "compare the recorded and the experiment's trajectories",
                show=False,
                target="replays.compare_last",
            ),
        ),
    ),
    (
        "Time and grouping",
        (
            Action(
                "toggle_time",
                "i",
                "Time column",
                "time column: offset from the run's start and how long each "
                "event took (a tool's duration, else the gap since the event before)",
                "timeline",
            ),
            Action(
                "toggle_fold_steps",
                "z",
                "Fold by step",
                "fold / unfold the timeline by step: one row per run of a step's events, with their count and duration",
                "timeline",
            ),
        ),
    ),
    (
        "Copying (to the terminal's clipboard, OSC 52)",
        (
            Action(
                "copy_value",
                "y",
                "Copy value",
                "copy the value under the cursor (state panes, event), or in the timeline the event's payload, as JSON",
                "app",
                show=False,
            ),
            Action(
                "copy_path",
                "Y",
                "Copy JSON path",
                "copy the JSON path (RFC 6901 pointer) of the value under the cursor in a state pane or the event",
                "app",
                show=False,
            ),
            Action(
                "reveal_secret",
                "u",
                "Reveal secret",
                "values the secret scan flags are masked in every pane: u "
                "unmasks the one under the cursor on purpose (the header then says secrets shown), u again masks it",
                "widget",
            ),
            Action(
                "copy_line",
                "ctrl+y",
                "Copy raw line",
                "copy the event's line as the journal holds it",
                "app",
                show=False,
            ),
        ),
    ),
    (
        "Panes",
        (
            Action(
                "fold", "enter,f", "Fold", "fold or unfold the value under the cursor (state panes, event)", "widget"
            ),
            Action(
                "unfold_all",
                "F",
                "Unfold event",
                "unfold everything in the event",
                show=False,
                palette_title="Unfold the event",
            ),
            Action(
                "tree_select",
                "enter",
                "Select",
                "in the tree: select that event in the timeline; expanding a node loads its effects",
                "widget",
                label="enter (tree)",
            ),
        ),
    ),
    (
        "Following and walkthroughs",
        (
            Action(
                "toggle_follow",
                "f",
                "Follow",
                "follow the journal as it grows (sticks to the end until you move up; G sticks again)",
                palette_title="Follow the journal",
                target="follower.toggle",
            ),
            Action(
                "toggle_bookmark",
                "m",
                "Bookmark",
                "bookmark the event under the cursor, or remove its bookmark",
                target="bookmarks.toggle_bookmark",
            ),
            Action(
                "edit_note",
                "a",
                "Note",
                "add or edit the note on the event under the cursor",
                target="bookmarks.edit_note",
            ),
            Action(
                "next_bookmark",
                "apostrophe",
                "Next bookmark",
                "go to the next bookmark",
                target="bookmarks.next_bookmark",
            ),
            Action(
                "presenter",
                "p",
                "Present",
                "presenter mode: the bookmarks in order, each note large, its causal chain (→ ← escape)",
                palette_title="Presenter mode",
                target="bookmarks.present",
            ),
            Action("stats", "s", "Stats", "stats: kinds, model usage, tool latency, errors, longest steps"),
            Action(
                "export_report",
                "",
                "Export incident report",
                "write the incident report (HTML or Markdown) next to the journal or elsewhere",
                label="ctrl+p → Export",
                target="exporter.ask",
            ),
        ),
    ),
    (
        "Other",
        (
            Action(
                "next_theme",
                "t",
                "Next theme",
                "next theme (dark, light, high-contrast); ctrl+p → theme to pick any",
                "app",
            ),
            Action("command_palette", "ctrl+p", "Palette", "command palette: every action above", "widget"),
            Action("help", "question_mark", "Help", "this help", "app"),
            Action("quit", "q", "Quit", "quit", "app", palette=False),
        ),
    ),
)


def all_actions() -> Iterator[Action]:
    for _heading, actions in SECTIONS:
        yield from actions


def bindings_for(owner: Owner) -> list[BindingType]:
    """The ``BINDINGS`` of the main screen (``"screen"``) or of the app (``"app"``)."""
    return [action.binding() for action in all_actions() if action.owner == owner and action.keys]


def action_target(target: str, controllers: Mapping[str, object]) -> Callable[[], object]:
    """The controller method a ``"controller.method"`` target names."""
    name, _, method_name = target.partition(".")
    method: Callable[[], object] = getattr(controllers[name], method_name)
    return method


def action_callback(action: Action, targets: Mapping[str, object]) -> Callable[[], object]:
    """What running ``action`` calls: its controller's method, else ``action_<id>`` on its owner.
    ``targets`` holds the owners by name and the main screen's controllers."""
    if action.target:
        return action_target(action.target, targets)
    method: Callable[[], object] = getattr(targets[action.owner], f"action_{action.id}")
    return method


def palette_actions() -> list[Action]:
    """The actions the command palette lists, in help order."""
    return [action for action in all_actions() if action.palette and action.owner in ("screen", "app", "timeline")]


def palette_title(action: Action) -> str:
    return action.palette_title or action.title


def palette_help(action: Action, keymap: Mapping[str, str]) -> str:
    keys = keymap.get(action.id)
    shown = action.key_label(keys) if (keys or action.keys) else ""
    return f"{action.help[:1].upper()}{action.help[1:]}" + (f" ({shown})" if shown else "")


def help_rows(keymap: Mapping[str, str]) -> list[tuple[str, str]]:
    """(keys, what) rows for the help screen; a heading has an empty ``what``."""
    rows: list[tuple[str, str]] = []
    for heading, actions in SECTIONS:
        rows.append((heading, ""))
        rows.extend((action.key_label(keymap.get(action.id)), action.help) for action in actions)
    return rows


# -- user keymaps ----------------------------------------------------------------------------------


class KeymapError(ValueError):
    """A keymap file that cannot be used; the message names the file and what is wrong."""


def default_keymap_path(environ: Mapping[str, str] | None = None) -> Path:
    env = os.environ if environ is None else environ
    if env.get(KEYMAP_ENV):
        return Path(env[KEYMAP_ENV]).expanduser()
    config = Path(env.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    return config / "replay-tui" / "keymap.toml"


def load_keymap(path: Path, *, required: bool = False) -> dict[str, str]:
    """``{action id: keys}`` from a TOML file's ``[keymap]`` table; {} when the file is absent
    and not ``required``. Every id must be a rebindable action and every value a key string."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        if required:
            raise KeymapError(f"{path}: no such keymap file") from None
        return {}
    except (OSError, UnicodeDecodeError) as error:
        raise KeymapError(f"{path}: cannot be read ({error})") from None
    import tomllib  # only when a keymap file exists: most starts have none

    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise KeymapError(f"{path}: not valid TOML ({error})") from None
    table = document.get("keymap", {})
    if not isinstance(table, dict):
        raise KeymapError(f'{path}: [keymap] must be a table of action = "keys" lines')
    known = {action.id for action in all_actions() if action.owner in ("screen", "app") and action.keys}
    keymap: dict[str, str] = {}
    for name, value in table.items():
        if name not in known:
            raise KeymapError(
                f"{path}: [keymap] {name!r} is not an action that can be rebound; known: " + ", ".join(sorted(known))
            )
        if isinstance(value, list) and all(isinstance(key, str) for key in value):
            value = ",".join(value)
        if not isinstance(value, str) or not value.strip() or any(not key.strip() for key in value.split(",")):
            raise KeymapError(f'{path}: [keymap] {name}: expected keys like "ctrl+f" or "r,f5", got {value!r}')
        keymap[name] = value.replace(" ", "")
    return keymap

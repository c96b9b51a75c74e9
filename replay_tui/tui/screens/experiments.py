"""`x`: an experiment with exactly one live dependency group, run in the child.

``model-live`` asks the chosen config's model plugin and serves tool results from
the journal; ``tools-live`` serves model answers from the journal and runs the
config's tools. The new run is written to a new journal (never the open one);
when it ends the comparison screen opens on the two trajectories.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import time
from pathlib import Path

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label, RadioButton, RadioSet, Select, Static

from ...jobs.replay import ReplayRequest
from ...replay.modes import MODEL_LIVE, TOOLS_LIVE
from .replay_dialog import parse_timeout

#: Where an experiment journal goes when no path is given (a private folder, see ``experiment_dir``).
DEFAULT_PLACE = "a private temp folder, removed on exit"
_experiment_dir: Path | None = None
MODE_HELP = {
    MODEL_LIVE: "the config's model answers live; tool results, clock and randomness come from the journal",
    TOOLS_LIVE: "model answers come from the journal; the config's tools run live",
}


def find_configs(journal: Path, cwd: Path) -> list[Path]:
    """Harness configs near the journal and the project: configs/*.toml, fixtures/configs/*.toml."""
    folders = [journal.parent, journal.parent.parent / "configs", cwd / "configs", cwd / "fixtures" / "configs"]
    found: list[Path] = []
    for folder in folders:
        if folder.is_dir():
            for path in sorted(folder.glob("*.toml")):
                resolved = path.resolve()
                if resolved not in found:
                    found.append(resolved)
    return found


def experiment_dir() -> Path:
    """This app run's own folder for experiment journals.

    A fixed name in the shared temp dir could be planted (a symlink to the victim's files) or taken by another
    user or run; ``mkdtemp`` makes a fresh name, mode 0700, so only this user reaches it. Removed at exit."""
    global _experiment_dir
    if _experiment_dir is None or not _experiment_dir.is_dir():
        _experiment_dir = Path(tempfile.mkdtemp(prefix="replay-tui-experiments-"))
        atexit.register(shutil.rmtree, _experiment_dir, ignore_errors=True)
    return _experiment_dir


def default_out(journal: Path, mode: str) -> Path:
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    return experiment_dir() / f"{journal.name.split('.')[0]}.{mode}.{stamp}.{os.getpid()}.jsonl"


def check_request(config: str, out: str, journal: Path) -> str | None:
    """What is wrong with the choices, or None."""
    if not config:
        return "choose a harness config (.toml) whose plugins go live"
    path = Path(config).expanduser()
    if not path.is_file():
        return f"{config}: no such config file"
    if out:
        target = Path(out).expanduser()
        if target.exists():
            return f"{out} exists already: the experiment writes a new journal, choose another path"
        if target.resolve() == journal.resolve():
            return "the experiment never writes the open journal: choose another path"
        if not target.parent.is_dir():
            return f"{target.parent}: no such directory"
    return None


class ExperimentsScreen(ModalScreen[ReplayRequest | None]):
    BINDINGS = [Binding("escape", "cancel", "Cancel")]
    DEFAULT_CSS = """
    ExperimentsScreen { align: center middle; background: $background 60%; }
    ExperimentsScreen #experiments-box {
        width: 100; height: auto; max-width: 100%; max-height: 100%;
        border: round $accent; background: $panel; padding: 0 1;
    }
    ExperimentsScreen Label { margin-top: 1; color: $foreground-muted; }
    ExperimentsScreen #experiments-box Label { width: 100%; }
    ExperimentsScreen Input, ExperimentsScreen Select { background: $surface; }
    ExperimentsScreen RadioSet { width: 100%; }
    ExperimentsScreen #experiments-mode-help { color: $foreground-muted; height: auto; }
    ExperimentsScreen #experiments-error { color: $error; height: auto; }
    """

    def __init__(self, journal: Path, request: ReplayRequest, configs: list[Path]) -> None:
        super().__init__()
        self.journal = journal
        self.request = request
        self.configs = configs

    def compose(self) -> ComposeResult:
        with Vertical(id="experiments-box") as box:
            box.border_title = f"Experiment on {self.journal.name}: one dependency group live"
            with RadioSet(id="experiments-mode", compact=True):
                yield RadioButton("model-live: a new model on recorded tool results", value=True, id="mode-model-live")
                yield RadioButton("tools-live: recorded model answers on live tools", id="mode-tools-live")
            yield Static(MODE_HELP[MODEL_LIVE], id="experiments-mode-help", markup=False)
            yield Label("Harness config whose plugins go live")
            options = [
                (str(path.relative_to(Path.cwd())) if path.is_relative_to(Path.cwd()) else str(path), str(path))
                for path in self.configs
            ]
            yield Select(
                options,
                prompt="configs found near the journal",
                id="experiments-config-choice",
                allow_blank=True,
                compact=True,
            )
            yield Input(placeholder="path/to/config.toml", id="experiments-config", compact=True)
            yield Label("Agent entry point (empty = as recorded)")
            yield Input(value=self.request.agent or "", placeholder="module:attr", id="experiments-agent", compact=True)
            yield Label(f"New journal (empty = {DEFAULT_PLACE}; name a path to keep it)")
            yield Input(placeholder="path/to/NAME.jsonl", id="experiments-out", compact=True)
            yield Label("Timeout in seconds")
            yield Input(value=f"{self.request.timeout_s:g}", id="experiments-timeout", compact=True)
            yield Static("", id="experiments-error", markup=False)
            yield Static("enter in a field runs the experiment · escape cancels", markup=False)

    @property
    def mode(self) -> str:
        return TOOLS_LIVE if self.query_one("#mode-tools-live", RadioButton).value else MODEL_LIVE

    def on_radio_set_changed(self, event: RadioSet.Changed) -> None:
        self.query_one("#experiments-mode-help", Static).update(MODE_HELP[self.mode])

    def on_select_changed(self, event: Select.Changed) -> None:
        if isinstance(event.value, str):
            self.query_one("#experiments-config", Input).value = event.value

    def on_input_submitted(self, event: Input.Submitted) -> None:
        mode = self.mode
        config = self.query_one("#experiments-config", Input).value.strip()
        out = self.query_one("#experiments-out", Input).value.strip()
        agent = self.query_one("#experiments-agent", Input).value.strip()
        timeout = parse_timeout(self.query_one("#experiments-timeout", Input).value)
        error = self.query_one("#experiments-error", Static)
        problem = check_request(config, out, self.journal)
        if problem is None and timeout is None:
            problem = "the timeout is a number of seconds above 0, e.g. 600"
        if problem is None and agent and ":" not in agent.strip(":"):
            problem = f"'{agent}' is not an entry point: write module:attr"
        if problem is not None:
            error.update(problem)
            return
        if out:
            target = Path(out).expanduser().resolve()
        else:
            target = default_out(self.journal, mode)
        config_path = str(Path(config).expanduser().resolve())
        self.dismiss(
            ReplayRequest(
                mode=mode,
                agent=agent or None,
                agent_path=list(self.request.agent_path),
                model_config=config_path if mode == MODEL_LIVE else None,
                tools_config=config_path if mode == TOOLS_LIVE else None,
                out=str(target),
                timeout_s=timeout or self.request.timeout_s,
            )
        )

    def action_cancel(self) -> None:
        self.dismiss(None)

"""The per-user directories replay-tui keeps its own state and settings in (XDG base directories).

``state_root()`` holds what replay-tui made and must be able to find again: annotations that could not go
beside their journal, the list of corpus indexes it built. ``config_root()`` holds the user's settings
(``config.toml``, ``keymap.toml``). ``cache_root()`` holds what can be made again: fetched objects, imports,
parsed stylesheets.
"""

from __future__ import annotations

import os
from pathlib import Path


def state_root() -> Path:
    """``$XDG_STATE_HOME/replay-tui``, else ``~/.local/state/replay-tui``."""
    return Path(os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state") / "replay-tui"


def config_root() -> Path:
    """``$XDG_CONFIG_HOME/replay-tui``, else ``~/.config/replay-tui``."""
    return Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "replay-tui"


def cache_root() -> Path:
    """``$REPLAY_TUI_CACHE_DIR``, else ``$XDG_CACHE_HOME/replay-tui``, else ``~/.cache/replay-tui``."""
    explicit = os.environ.get("REPLAY_TUI_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "replay-tui"

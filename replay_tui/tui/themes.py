"""Load the bundled themes by name: from the wheel's copy or the checkout's themes/."""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

from textual.theme import BUILTIN_THEMES, Theme

import replay_tui

DEFAULT_THEME = "dark"


def themes_dir() -> Path:
    """``replay_tui/_bundled/themes`` in an installed wheel, else the repository's ``themes/``."""
    package = Path(replay_tui.__file__).parent
    for candidate in (package / "_bundled" / "themes", package.parent / "themes"):
        if (candidate / "replay.tcss").is_file():
            return candidate
    raise FileNotFoundError(f"no themes directory next to {package} (looked for _bundled/themes and ../themes)")


class BundledTheme(NamedTuple):  # not a frozen dataclass: that compiled six methods at import
    theme: Theme
    extra_tcss: Path | None


@lru_cache(maxsize=1)
def bundled_themes() -> dict[str, BundledTheme]:
    """Every ``<name>.json`` in the themes directory, as Textual themes."""
    directory = themes_dir()
    found: dict[str, BundledTheme] = {}
    for path in sorted(directory.glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        extra = data.pop("tcss", None)
        theme = Theme(**data)
        found[theme.name] = BundledTheme(theme, directory / extra if extra else None)
    return found


# Custom variables replay.tcss uses, and the Textual variable each falls back to when the active theme
# (one of Textual's own, say) does not define it. Every built-in theme generates these.
CUSTOM_VARIABLE_FALLBACKS = {
    "timeline-cursor-background": "block-cursor-background",
    "timeline-cursor-foreground": "block-cursor-foreground",
    "mark-redacted": "secondary",
    "mark-divergent": "error",
    "json-key": "primary",
    "json-string": "success",
    "json-number": "warning",
}


def theme_variable_defaults(generated: dict[str, str]) -> dict[str, str]:
    """Values for our custom variables taken from a theme's generated color system, so any theme works."""
    return {name: generated[source] for name, source in CUSTOM_VARIABLE_FALLBACKS.items() if source in generated}


def stylesheet_paths() -> list[Path]:
    """The shared stylesheet followed by each theme's extra rules (scoped by class)."""
    directory = themes_dir()
    extras = [t.extra_tcss for t in bundled_themes().values() if t.extra_tcss is not None]
    return [directory / "replay.tcss", *extras]


def known_theme_names() -> list[str]:
    return [*bundled_themes(), *sorted(BUILTIN_THEMES)]


def check_theme_name(name: str) -> str | None:
    """None if ``name`` can be used, else a message listing the choices."""
    if name in bundled_themes() or name in BUILTIN_THEMES:
        return None
    return f"unknown theme {name!r}; bundled themes: {', '.join(bundled_themes())} (Textual's own also work: {', '.join(sorted(BUILTIN_THEMES))})"

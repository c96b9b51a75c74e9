"""replay-tui's own settings: ``$REPLAY_TUI_CONFIG``, else ``$XDG_CONFIG_HOME/replay-tui/config.toml``.

The settings of the reading side (the harness config is the recording side's)::

    [audit]
    log = "/var/log/replay-tui/reads.ndjson"   # every open of a journal appends a line (opt in)

    [retention]
    older_than = "15d"                          # replay-tui prune's default age

``$REPLAY_TUI_AUDIT_LOG`` names the audit log too (and wins over the file). A file that cannot be read
or holds a wrong key is an error naming it: a mistyped audit setting must not turn the audit off.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple

from ..journal import JournalError
from ..journal.user_dirs import config_root

CONFIG_ENV = "REPLAY_TUI_CONFIG"
AUDIT_ENV = "REPLAY_TUI_AUDIT_LOG"
#: What replay-tui prune removes when neither --older-than nor [retention] older_than says.
DEFAULT_OLDER_THAN = "15d"
_KEYS = {"audit": {"log"}, "retention": {"older_than"}}


class SettingsError(JournalError):
    """The settings file cannot be read or holds a wrong key; names the file."""


class Settings(NamedTuple):
    """The settings in force and the file they came from. A NamedTuple, not a frozen dataclass (3 M
    instructions at import): every command and the app's first frame read them."""

    source: Path
    audit_log: Path | None = None
    older_than: str | None = None


def settings_path() -> Path:
    explicit = os.environ.get(CONFIG_ENV)
    return Path(explicit).expanduser() if explicit else config_root() / "config.toml"


def load_settings() -> Settings:
    """The settings in force (the environment's audit log over the file's)."""
    path = settings_path()
    settings = _read(path)
    audit = os.environ.get(AUDIT_ENV)
    if audit:
        settings = Settings(settings.source, Path(audit).expanduser(), settings.older_than)
    return settings


def _read(path: Path) -> Settings:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        if os.environ.get(CONFIG_ENV):
            raise SettingsError(f"{path}: no such settings file (named by ${CONFIG_ENV})") from None
        return Settings(path)
    except (OSError, UnicodeDecodeError) as error:
        raise SettingsError(f"{path}: cannot be read: {getattr(error, 'strerror', None) or error}") from None
    import tomllib  # only when there is a file: every command reads the settings, most machines have none

    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise SettingsError(f"{path}: invalid TOML: {error}") from None
    for table, keys in _KEYS.items():
        section = document.get(table, {})
        if not isinstance(section, dict):
            raise SettingsError(f"{path}: [{table}] must be a table")
        unknown = set(section) - keys
        if unknown:
            raise SettingsError(f"{path}: unknown key(s) {sorted(unknown)} in [{table}]; expected {sorted(keys)}")
        for key in keys:
            if key in section and (not isinstance(section[key], str) or not section[key]):
                raise SettingsError(f"{path}: [{table}] {key} must be a non-empty string")
    log = document.get("audit", {}).get("log")
    audit_log = path.parent / Path(log).expanduser() if log else None  # a relative path: beside the file
    return Settings(path, audit_log, document.get("retention", {}).get("older_than"))

"""The hosts a live plugin config names: the only places an experiment may connect to.

Every enabled plugin's ``options`` are walked; a URL (``https://api.example.com/v1``)
gives ``host:port`` (the scheme's default port when none is written), a ``host`` /
``hostname`` key gives the host with its sibling ``port`` if any, and a ``hosts``
list is taken as written. Read with ``tomllib`` only: nothing is imported or started.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any, Iterator
from urllib.parse import urlsplit

DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}


class HostsConfigError(ValueError):
    """The live plugin config cannot be read."""


def hosts_in_config(path: str | Path) -> list[str]:
    """``host:port`` / ``host`` entries for the guard's allow-list, in order of appearance."""
    path = Path(path)
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise HostsConfigError(f"{path}: cannot read the live plugin config: {error.strerror or error}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise HostsConfigError(f"{path}: invalid TOML: {error}") from None
    found: list[str] = []
    for entry in raw.get("plugins") or []:
        if isinstance(entry, dict) and entry.get("enabled", True) and isinstance(entry.get("options"), dict):
            for host in _hosts_in(entry["options"]):
                if host not in found:
                    found.append(host)
    return found


def _hosts_in(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        for key, item in value.items():
            if key in ("host", "hostname") and isinstance(item, str) and item:
                port = value.get("port")
                yield f"{item}:{port}" if isinstance(port, int) else item
            elif key == "hosts" and isinstance(item, list):
                yield from (entry for entry in item if isinstance(entry, str) and entry)
            else:
                yield from _hosts_in(item)
    elif isinstance(value, list):
        for item in value:
            yield from _hosts_in(item)
    elif isinstance(value, str) and "://" in value:
        parts = urlsplit(value)
        if parts.hostname:
            try:
                port = parts.port or DEFAULT_PORTS.get(parts.scheme)
            except ValueError:
                port = None
            host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
            yield f"{host}:{port}" if port else host

"""The environment fingerprint recorded in run.started (the harness records it, the app and
replay compare it: it lives here, at the bottom, so neither needs the other).

It says which code, runtime, dependencies, prompts and tools produced a run, so
a replay that diverges can be told apart from one that runs different code. It
never reads an environment variable's value into the record.
"""

from __future__ import annotations

import functools
import hashlib
import locale
import os
import platform
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from .hashing import hash_value

LOCKFILES = (
    "uv.lock",
    "poetry.lock",
    "pdm.lock",
    "pylock.toml",
    "Pipfile.lock",
    "requirements.lock",
    "requirements.txt",
)


def code_revision(directory: Path) -> dict[str, Any]:
    """Git commit and dirty flag of the checkout holding ``directory`` (nulls outside git)."""

    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(["git", *args], cwd=directory, capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    status = git("status", "--porcelain", "--untracked-files=no") if commit else None
    return {"vcs": "git" if commit else None, "commit": commit, "dirty": bool(status) if status is not None else None}


def lockfile_hash(directory: Path) -> dict[str, Any]:
    """Hash of the first lockfile found upwards from ``directory``; without one, of the
    installed distributions (name==version, sorted)."""
    for folder in (directory, *directory.parents):
        for name in LOCKFILES:
            candidate = folder / name
            if candidate.is_file():
                return {"source": name, "hash": "sha256:" + hashlib.sha256(candidate.read_bytes()).hexdigest()}
    return {"source": "installed-distributions", "hash": _installed_hash(_path_state())}


def _path_state() -> tuple[tuple[str, int], ...]:
    """The import path with each directory's modification time: installing, upgrading or removing a
    distribution adds or removes an entry in its directory, which changes that time."""
    state = []
    for entry in sys.path:
        try:
            state.append((entry, os.stat(entry or ".").st_mtime_ns))
        except OSError:
            continue
    return tuple(state)


@functools.lru_cache(maxsize=4)
def _installed_hash(path_state: tuple[tuple[str, int], ...]) -> str:
    """Reading every distribution's metadata takes about 0.25 s: once per process while the import path
    and its directories stay as they were (each recording used to pay it again)."""
    from importlib import metadata  # here: it costs every process that imports the journal (replay children too)

    installed = sorted(
        {
            f"{dist.metadata['Name']}=={dist.version}".lower()
            for dist in metadata.distributions()
            if dist.metadata["Name"]
        }
    )
    return hash_value(installed)


def prompt_bundle_hash(paths: Iterable[Path], base: Path) -> str | None:
    """Hash over every prompt file (directories are walked), keyed by relative path."""
    files: dict[str, str] = {}
    for path in paths:
        path = path if path.is_absolute() else base / path
        for file in sorted(path.rglob("*")) if path.is_dir() else [path]:
            if file.is_file():
                files[str(file.relative_to(base) if file.is_relative_to(base) else file)] = (
                    "sha256:" + hashlib.sha256(file.read_bytes()).hexdigest()
                )
    return hash_value(files) if files else None


#: The fields computed without the agent's harness config (tools, prompts, flags need it).
CONFIG_FREE = ("code_revision", "runtime", "lockfile_hash", "locale", "timezone")


def runtime() -> dict[str, Any]:
    return {
        "implementation": platform.python_implementation(),
        "version": platform.python_version(),
        "platform": sys.platform,
        "machine": platform.machine(),
    }


def current_locale() -> str:
    language, encoding = locale.getlocale()
    return f"{language or 'C'}.{encoding or locale.getpreferredencoding(False)}"


def current_timezone() -> dict[str, Any]:
    offset = -(time.altzone if time.localtime().tm_isdst > 0 else time.timezone)
    return {"name": time.tzname[time.localtime().tm_isdst > 0], "utc_offset_s": offset}


def fingerprint(
    *,
    base_dir: Path,
    tool_schemas: Mapping[str, Any],
    prompt_bundle: Iterable[str | Path] = (),
    feature_flags: Mapping[str, Any] | None = None,
    plugins: list[dict[str, str]] | None = None,
) -> dict[str, Any]:
    return {
        "code_revision": code_revision(base_dir),
        "runtime": runtime(),
        "lockfile_hash": lockfile_hash(base_dir),
        "prompt_bundle_hash": prompt_bundle_hash([Path(p) for p in prompt_bundle], base_dir),
        "tool_schema_hash": hash_value(dict(tool_schemas)),
        "locale": current_locale(),
        "timezone": current_timezone(),
        "feature_flags": dict(feature_flags or {}),
        "plugin_versions": {plugin["id"]: plugin["version"] for plugin in plugins or []},
    }


def config_free_fingerprint(base_dir: Path) -> dict[str, Any]:
    """The ``CONFIG_FREE`` fields for code under ``base_dir``: what a viewer can compare with a recording."""
    return {
        "code_revision": code_revision(base_dir),
        "runtime": runtime(),
        "lockfile_hash": lockfile_hash(base_dir),
        "locale": current_locale(),
        "timezone": current_timezone(),
    }

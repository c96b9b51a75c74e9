"""Parsed stylesheets kept between starts, as Python keeps bytecode.

Textual parses every stylesheet on every start (ours, and the ``DEFAULT_CSS`` of each widget class on
screen) with a tokenizer and parser in pure Python: about 12 ms of the first frame, a sixth of what the app
adds to a bare Textual app. What a parse makes depends only on the text, where it was read from, how it is
ranked and the theme's variables, so ``CachedStylesheet`` keeps each parse in the user's cache and later
starts load it instead (about 0.1 ms a sheet). A sheet with errors is never kept: it is parsed, and its
errors shown, every time.

The cache is one file per Textual installation and theme (the variables' digest), in ``cache_root()``: a map
from a sheet's key to its rules, each pickled on its own, so a start unpickles only the sheets it shows.
Pickle runs code when it loads, so the file is loaded only when it is a regular file owned by this user
that no one else may write (as ssh treats its keys); anything else, or anything that fails to load, is
no cache: the sheets are parsed and the file written again. Writing is atomic (a rename), so two apps
starting together leave one whole file.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import stat
import threading
from pathlib import Path

import textual
from textual.css.model import RuleSet
from textual.css.stylesheet import Stylesheet
from textual.css.types import CSSLocation

from ..journal.user_dirs import cache_root

#: A cache file larger than this is not read (a few dozen sheets take tens of kB).
MAX_CACHE_BYTES = 4 << 20
#: Sheets kept per file: past this, the file starts again with the sheets of the current run.
MAX_SHEETS = 256


class CachedStylesheet(Stylesheet):
    """Textual's ``Stylesheet`` whose parses are kept in ``folder`` (default ``cache_root()``) between runs."""

    def __init__(self, *, variables: dict[str, str] | None = None, folder: Path | None = None) -> None:
        super().__init__(variables=variables)
        self._folder = folder
        self._file: CacheFile | None = None

    def set_variables(self, variables: dict[str, str]) -> None:
        super().set_variables(variables)
        self.keep()  # what the old theme parsed, before its file is let go
        self._file = None

    def keep(self) -> None:
        """Write the sheets parsed since the file was read (nothing when there are none)."""
        if self._file is not None:
            self._file.write()

    def _parse_rules(
        self,
        css: str,
        read_from: CSSLocation,
        is_default_rules: bool = False,
        tie_breaker: int = 0,
        scope: str = "",
    ) -> list[RuleSet]:
        memory_key = (css, read_from, is_default_rules, tie_breaker, scope)
        if memory_key in self._parse_cache:
            return self._parse_cache[memory_key]
        cache = self._cache_file()
        key = sheet_key(css, read_from, is_default_rules, tie_breaker, scope)
        rules = cache.rules(key)
        if rules is not None:
            self._parse_cache[memory_key] = rules
            return rules
        rules = super()._parse_rules(css, read_from, is_default_rules, tie_breaker, scope)
        if not any(rule.errors for rule in rules):
            cache.add(key, rules)
        return rules

    def _cache_file(self) -> CacheFile:
        if self._file is None:
            if self._folder is None:
                self._folder = cache_root() / "stylesheets"
            self._file = CacheFile(self._folder / f"textual-{textual_digest()}-{variables_digest(self._variables)}")
        return self._file


def textual_digest() -> str:
    """Which Textual the rules were made by: the names, sizes and times of its CSS modules, which an upgrade
    replaces (``textual.__version__`` asks the package metadata: 30 ms, more than the parse it would save)."""
    css = Path(textual.__file__).parent / "css"
    files = sorted((entry.name, entry.stat().st_size, entry.stat().st_mtime_ns) for entry in os.scandir(css))
    return hashlib.sha256(repr((str(css), files)).encode()).hexdigest()[:16]


def sheet_key(css: str, read_from: CSSLocation, is_default_rules: bool, tie_breaker: int, scope: str) -> str:
    """What a parse depends on besides the variables (those name the file)."""
    described = repr((read_from, is_default_rules, tie_breaker, scope)).encode() + b"\0" + css.encode()
    return hashlib.sha256(described).hexdigest()


def variables_digest(variables: dict[str, str]) -> str:
    return hashlib.sha256(repr(sorted(variables.items())).encode()).hexdigest()[:32]


class CacheFile:
    """One cache file: read when first asked, written when it has sheets it did not have (from a thread, while
    the UI may parse more: the lock keeps the map whole)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._sheets: dict[str, bytes] | None = None
        self._added = False
        self._lock = threading.Lock()

    def rules(self, key: str) -> list[RuleSet] | None:
        pickled = self._loaded().get(key)
        if pickled is None:
            return None
        try:
            rules = pickle.loads(pickled)
        except Exception:  # a cache that cannot be read is no cache
            rules = None
        if not isinstance(rules, list) or not all(isinstance(rule, RuleSet) for rule in rules):
            del self._loaded()[key]
            return None
        return rules

    def add(self, key: str, rules: list[RuleSet]) -> None:
        try:
            pickled = pickle.dumps(rules, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception:  # a rule Textual made that does not pickle: parsed every time
            return
        sheets = self._loaded()
        with self._lock:
            if len(sheets) >= MAX_SHEETS:
                sheets.clear()
            sheets[key] = pickled
            self._added = True

    def write(self) -> None:
        with self._lock:
            if not self._added or self._sheets is None:
                return
            self._added = False
            data = pickle.dumps(self._sheets, protocol=pickle.HIGHEST_PROTOCOL)
        from ..journal.private import make_private_dirs, write_private

        try:
            make_private_dirs(self.path.parent)
            write_private(self.path, data)
        except OSError:
            pass  # no cache this time: the next start parses again

    def _loaded(self) -> dict[str, bytes]:
        if self._sheets is None:
            self._sheets = _read_sheets(self.path)
        return self._sheets


def _read_sheets(path: Path) -> dict[str, bytes]:
    """The file's map of pickled sheets, or an empty one when it is missing, not ours alone, or not one."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return {}
    try:
        status = os.fstat(descriptor)
        if not _trusted(status) or status.st_size > MAX_CACHE_BYTES:
            return {}
        with os.fdopen(descriptor, "rb", closefd=False) as handle:
            data = handle.read(MAX_CACHE_BYTES + 1)
        sheets = pickle.loads(data)
    except Exception:
        return {}
    finally:
        os.close(descriptor)
    if not isinstance(sheets, dict) or not all(
        isinstance(key, str) and isinstance(value, bytes) for key, value in sheets.items()
    ):
        return {}
    return sheets


def _trusted(status: os.stat_result) -> bool:
    """A regular file of this user's that neither its group nor others may write."""
    return (
        stat.S_ISREG(status.st_mode)
        and status.st_uid == os.geteuid()
        and not status.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
    )

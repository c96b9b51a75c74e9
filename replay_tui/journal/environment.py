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
import re
import stat
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
    """Git commit and dirty flag of the checkout holding ``directory`` (nulls outside git).

    One ``git status`` gives both (its porcelain v2 header names the commit); it takes no optional lock, so
    sessions recording side by side never wait on each other's index refresh."""
    try:
        done = subprocess.run(
            ["git", "--no-optional-locks", "status", "--porcelain=v2", "--branch", "--untracked-files=no"],
            cwd=directory,
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.TimeoutExpired):
        done = None
    if done is None or done.returncode != 0:
        return {"vcs": None, "commit": None, "dirty": None}
    lines = done.stdout.splitlines()
    commit = next((line[len("# branch.oid ") :] for line in lines if line.startswith("# branch.oid ")), None)
    if commit is None or commit == "(initial)":  # a repository without a commit: as rev-parse HEAD failing
        return {"vcs": None, "commit": None, "dirty": None}
    return {"vcs": "git", "commit": commit, "dirty": any(not line.startswith("#") for line in lines)}


def process_code_revision(directory: Path) -> dict[str, Any]:
    """``code_revision`` once per process and checkout, while the checkout's ``HEAD`` and index stay as they
    were: a service records every session with the code it imported, and each session ran ``git status``
    (a child process, about 5 ms of CPU) to say so again. A commit, a checkout or a change staged since is
    seen; a file edited and not staged is not (the modules a running process imported do not change with it)."""
    stamp = _git_stamp(directory)
    if stamp is None:
        stamp = _no_checkout_stamp(directory)
    if stamp is None:  # git is pointed elsewhere by the environment: ask it every time, as before
        return code_revision(directory)
    return dict(_cached_code_revision(str(directory), stamp))


def _no_checkout_stamp(directory: Path) -> tuple[Any, ...] | None:
    """What changes when a folder outside any checkout comes to be inside one: the modification times of the
    folder and of each folder above it (a ``git init`` or a clone makes a ``.git`` in one of them). A service
    deployed without its ``.git`` (a container image) ran ``git status`` for every session to be told no. None
    when ``GIT_DIR`` or ``GIT_WORK_TREE`` tell git where to look instead of the folders."""
    if "GIT_DIR" in os.environ or "GIT_WORK_TREE" in os.environ:
        return None
    try:
        folder = directory.absolute()
    except OSError:
        return None
    return ("no checkout", *((str(candidate), _mtime(str(candidate))) for candidate in (folder, *folder.parents)))


@functools.lru_cache(maxsize=16)
def _cached_code_revision(directory: str, stamp: tuple[Any, ...]) -> dict[str, Any]:
    return code_revision(Path(directory))


def _git_stamp(directory: Path) -> tuple[Any, ...] | None:
    """What changes when a checkout's commit or index does: the modification times of its git directory's
    ``HEAD``, index and packed refs, and of the branch ``HEAD`` names. None when no git directory is found."""
    try:
        found = _git_dirs(directory)
        if found is None:
            return None
        git_dir, common = found
        head = (git_dir / "HEAD").read_text().strip()
        stamps: list[Any] = [str(git_dir), head]
        paths = [git_dir / "HEAD", git_dir / "index", common / "packed-refs"]
        if head.startswith("ref:"):
            paths.append(common / head[len("ref:") :].strip())
        for path in paths:
            try:
                info = os.stat(path)
                stamps.append((info.st_mtime_ns, info.st_size, info.st_ino))
            except OSError:
                stamps.append(None)
        return tuple(stamps)
    except OSError:
        _GIT_DIRS.clear()  # a git directory removed or moved: found again next time
        return None


#: Each directory's git directory and common directory, once found (``_git_dirs``).
_GIT_DIRS: dict[str, tuple[Path, Path]] = {}


def _git_dirs(directory: Path) -> tuple[Path, Path] | None:
    """The git directory of the checkout holding ``directory`` and its common directory (a worktree's refs
    live there), remembered once found: resolving the path and walking up to ``.git`` was most of the stamp's
    cost. Not found is not remembered (a ``git init`` later is seen)."""
    known = _GIT_DIRS.get(str(directory))
    if known is not None:
        return known
    found = _find_git_dirs(directory.resolve())
    if found is not None:
        if len(_GIT_DIRS) >= 64:
            _GIT_DIRS.clear()
        _GIT_DIRS[str(directory)] = found
    return found


def _find_git_dirs(folder: Path) -> tuple[Path, Path] | None:
    for candidate in (folder, *folder.parents):
        dot_git = candidate / ".git"
        if dot_git.is_dir():
            return dot_git, dot_git
        if dot_git.is_file():  # a worktree: "gitdir: PATH", its refs in the common directory
            text = dot_git.read_text().strip()
            if not text.startswith("gitdir:"):
                return None
            git_dir = (candidate / text[len("gitdir:") :].strip()).resolve()
            common_file = git_dir / "commondir"
            common = (git_dir / common_file.read_text().strip()).resolve() if common_file.is_file() else git_dir
            return git_dir, common
    return None


def lockfile_hash(directory: Path) -> dict[str, Any]:
    """Hash of the first lockfile found upwards from ``directory``; without one, of the
    installed distributions (name==version, sorted)."""
    for folder in map(str, (directory, *directory.parents)):
        try:
            folder_mtime = os.stat(folder).st_mtime_ns
        except OSError:
            folder_mtime = None
        if folder_mtime is not None and _NO_LOCKFILE.get(folder) == folder_mtime:
            continue  # searched and found none, and no entry was added or removed since
        for name in LOCKFILES:
            candidate = os.path.join(folder, name)
            try:
                info = os.stat(candidate)
            except OSError:
                continue
            if stat.S_ISREG(info.st_mode):
                digest = _file_digest(candidate, (info.st_mtime_ns, info.st_size, info.st_ino))
                if digest is not None:
                    return {"source": name, "hash": digest}
        if folder_mtime is not None:
            if len(_NO_LOCKFILE) >= 256:
                _NO_LOCKFILE.clear()
            _NO_LOCKFILE[folder] = folder_mtime
    return {"source": "installed-distributions", "hash": _installed_hash(_distribution_listing())}


#: Folders searched for a lockfile and found without one, with their modification time then: creating a
#: lockfile changes it. A service's sessions made the seven stats of every folder up to the root each time.
_NO_LOCKFILE: dict[str, int] = {}


@functools.lru_cache(maxsize=16)
def _file_digest(path: str, stamp: tuple[int, int, int]) -> str | None:
    """``sha256:`` of a lockfile, read again only when its modification time, size or inode changes."""
    try:
        with open(path, "rb") as handle:
            return "sha256:" + hashlib.file_digest(handle, "sha256").hexdigest()
    except OSError:
        return None


#: Where a distribution's metadata lives on a directory of the import path (as importlib.metadata finds it).
_INFO_SUFFIXES = (".dist-info", ".egg-info")


def _distribution_listing() -> tuple[Any, ...] | None:
    """What decides the installed set, cheaply (a directory listing per import path entry): the metadata
    entries of each directory, with the modification time of those whose name carries no version (an old
    ``name.egg-info`` is rewritten in place). None where ``importlib.metadata`` must search instead: a path
    entry that is not a plain directory (a zip, an ``.egg``), or a distribution finder of its own on
    ``sys.meta_path``. A directory is listed again only when its modification time changed (an install or a
    removal adds or removes an entry): a service records every session, and listing site-packages each time
    was half of a session's set-up."""
    from importlib.machinery import PathFinder

    if any(
        getattr(finder, "find_distributions", None) is not None for finder in sys.meta_path if finder is not PathFinder
    ):
        return None
    listing = []
    for entry in sys.path:
        root = entry or "."
        if root.lower().endswith(".egg"):
            if os.path.exists(root):
                return None
            continue
        try:
            info = os.stat(root)
        except OSError:
            continue
        if not stat.S_ISDIR(info.st_mode):
            return None
        infos = _metadata_entries(root, info.st_mtime_ns)
        if infos is not None:
            listing.append((root, infos))
    return tuple(listing)


#: Each directory listed: its modification time then, and its metadata entries (``_distribution_listing``).
_LISTED: dict[str, tuple[int, tuple[tuple[str, int], ...]]] = {}


def _metadata_entries(root: str, mtime_ns: int) -> tuple[tuple[str, int], ...] | None:
    """The metadata entries of directory ``root`` (name, and for one without a version its modification time),
    from the last listing while neither the directory nor those unversioned entries changed."""
    known = _LISTED.get(root)
    if (
        known is not None
        and known[0] == mtime_ns
        and all(_mtime(os.path.join(root, child)) == stamp for child, stamp in known[1] if stamp)
    ):
        return known[1]
    try:
        children = os.listdir(root)
    except OSError:
        return None
    infos = tuple(
        sorted(
            # (the "-" of ".egg-info" is no version: only the name before the suffix is looked at)
            (child, 0 if "-" in child.rpartition(".")[0] else _mtime(os.path.join(root, child)))
            for child in children
            if child.lower().endswith(_INFO_SUFFIXES)
        )
    )
    if len(_LISTED) >= 64:
        _LISTED.clear()
    _LISTED[root] = (mtime_ns, infos)
    return infos


def _mtime(path: str) -> int:
    """``path``'s modification time (ns); 0 when it cannot be read (gone, or not there yet)."""
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return 0


def _installed_hash(listing: tuple[Any, ...] | None) -> str:
    """The hash of every installed distribution's ``name==version`` (lowercased, sorted): once per process
    while ``listing`` stays as it was (each recording used to pay it again; a service's sessions share it)."""
    return _hash_of_listing(listing) if listing is not None else _hash_of_search(_path_state())


@functools.lru_cache(maxsize=4)
def _hash_of_listing(listing: tuple[Any, ...]) -> str:
    """Each distribution's name and version read from the head of its metadata file (``_metadata_fields``),
    not parsed whole by ``email``: the set ``importlib.metadata`` gives, in about 10 ms instead of 200."""
    fields = [_metadata_fields(os.path.join(root, child)) for root, infos in listing for child, _ in infos]
    return _hash_of_fields(fields)


@functools.lru_cache(maxsize=4)
def _hash_of_search(path_state: tuple[tuple[str, int], ...]) -> str:
    from importlib import metadata  # here: it costs every process that imports the journal (replay children too)

    return _hash_of_fields([(dist.metadata["Name"], dist.metadata["Version"]) for dist in metadata.distributions()])


def _hash_of_fields(fields: list[tuple[str | None, str | None]]) -> str:
    """The hash of the sorted ``name==version`` strings, by the fast canonical path (a list of strings has the
    same canonical bytes either way: 0.05 ms instead of 1.2 for 250 of them)."""
    return hash_value(sorted({f"{name}=={version}".lower() for name, version in fields if name}), parsed=True)


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


#: A header line as ``email``'s parser knows one (a continuation starts with a blank).
_HEADER_LINE = re.compile(rb"(From |[\041-\071\073-\176]*:|[\t ])")
#: A metadata file is read from its start in blocks of this size, only as far as its name and version.
_HEAD_BLOCK = 2048
#: What ``_quick_fields`` says of a file that is empty: the next place a distribution's metadata may be is read.
_EMPTY = "empty"
#: What ``_quick_fields`` says of a file it could read wrong: ``importlib.metadata`` reads it instead.
_ODD = "odd"


def _metadata_fields(info: str) -> tuple[str | None, str | None]:
    """``Name`` and ``Version`` of the distribution whose metadata directory (or old egg-info file) is ``info``,
    read from the METADATA (or PKG-INFO) header lines. A file this quick reading could get wrong (a folded
    header, a line ended by a CR alone, a value not in ASCII) is read by ``importlib.metadata`` itself."""
    for candidate in (os.path.join(info, "METADATA"), os.path.join(info, "PKG-INFO"), info):
        try:
            fields = _quick_fields(candidate)
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError):
            continue
        except OSError:
            break
        if isinstance(fields, tuple):
            return fields
        if fields == _ODD:
            return _importlib_fields(info)
    return None, None  # no file, only empty ones, or one that cannot be read


def _quick_fields(path: str) -> tuple[str | None, str | None] | str:
    """``Name`` and ``Version`` from the header lines at the start of metadata file ``path``, read only as far
    as they are (the first recording in a process reads every installed distribution's file, about 250 here,
    and their headers alone are 2 kB each on average, a licence's text among them: 14 ms read and decoded
    whole, about 5 ms this way); ``_EMPTY`` or ``_ODD`` (see there). Raises what reading ``path`` raises."""
    descriptor = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        data = os.read(descriptor, _HEAD_BLOCK)
        if not data:
            return _EMPTY
        found: dict[bytes, bytes] = {}
        start = 0
        while len(found) < 2:
            end = data.find(b"\n", start)
            # a line's end, and for a name or version the first byte of the line after it (a fold?), must be read
            while end < 0 or end + 1 >= len(data):
                block = os.read(descriptor, _HEAD_BLOCK)
                if not block:
                    break
                data += block
                end = data.find(b"\n", start)
            line = data[start:] if end < 0 else data[start:end]
            if line.endswith(b"\r"):  # CRLF, as universal newlines read it (a few wheels are written so)
                line = line[:-1]
            if b"\r" in line:  # a CR alone ends a line too, for email's parser
                return _ODD
            if not line or not _HEADER_LINE.match(line):
                break  # the end of the headers, for email's parser too
            name, colon, value = line.partition(b":")
            key = name.lower()
            if colon and key in (b"name", b"version") and key not in found:
                if data[end + 1 : end + 2] in (b" ", b"\t") or not value.isascii():
                    return _ODD
                found[key] = value.lstrip(b" \t")
            if end < 0:
                break
            start = end + 1
    finally:
        os.close(descriptor)
    return _decoded(found.get(b"name")), _decoded(found.get(b"version"))


def _decoded(value: bytes | None) -> str | None:
    return value.decode() if value is not None else None  # ASCII: checked as it was read


def _importlib_fields(info: str) -> tuple[str | None, str | None]:
    """What ``importlib.metadata`` reads for the distribution at ``info``: the slow way, for the odd header."""
    from importlib import metadata

    try:
        message = metadata.PathDistribution(Path(info)).metadata
    except ValueError:  # not UTF-8 (UnicodeDecodeError): no distribution this reading can name
        return None, None
    return message["Name"], message["Version"]


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
        "code_revision": process_code_revision(base_dir),
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

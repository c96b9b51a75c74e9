"""Journals on object storage: ``s3://``, ``gs://``, ``az://``, ``http(s)://`` and ``file://`` URLs.

Every command reads local files, so a URL is first brought into a local cache through
fsspec and then read like any journal:

* an **object** is downloaded in streamed chunks (fsspec reads it with range requests)
  into ``$XDG_CACHE_HOME/replay-tui/objects/``, keyed by its ETag (or, where the store
  gives none, by the sha256 of its bytes), so a second replay or a re-open reads the copy;
* a **prefix** (rotated ``.jsonl.gz`` shards, or a corpus) is mirrored object by object
  into a directory keyed by the URL, each object re-fetched only when its ETag changed;
* a **growing object** is followed by polling (``ObjectFollower``): new bytes are fetched
  with a range request and appended to a local file, which the app's follow mode tails.

Credentials come only from the environment and the store's usual config files (the
client libraries' default chains). A URL carrying credentials (``user:secret@`` or a
signed query string) is refused, and no message ever prints a URL's query or userinfo.
The clients are optional extras: ``replay-tui[s3]``, ``[gcs]``, ``[azure]``, ``[http]``.
"""

from __future__ import annotations

import hashlib
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import orjson

from ..journal.private import copy_private, make_private_dirs, private_opener, write_private
from ..journal.urls import EXTRAS, SCHEMES, StorageError, check_url, filesystem, is_url, shown
from ..journal.urls import explain as _explain
from ..journal.user_dirs import cache_root

__all__ = ["EXTRAS", "SCHEMES", "StorageError", "check_url", "filesystem", "is_url", "shown"]

JOURNAL_SUFFIXES = (".jsonl", ".jsonl.gz")
CHUNK_BYTES = 1 << 20


def _digest(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


def _etag(info: dict[str, Any]) -> str | None:
    for key in ("ETag", "etag", "e_tag", "md5_checksum", "generation"):
        value = info.get(key)
        if value:
            return str(value).strip('"')
    return None


@dataclass(frozen=True)
class Fetched:
    """A URL brought into the local cache."""

    url: str
    local: Path
    kind: str  # "object" or "prefix"
    objects: int
    downloaded: int  # objects actually transferred (0: everything came from the cache)

    def to_json(self) -> dict[str, Any]:
        return {
            "url": shown(self.url),
            "local": str(self.local),
            "kind": self.kind,
            "objects": self.objects,
            "downloaded": self.downloaded,
        }


def fetch(url: str, *, progress: Callable[[int, int], None] | None = None) -> Fetched:
    """Bring ``url`` (an object, or a prefix of journal objects) into the local cache."""
    fs, path = filesystem(url)
    try:
        info = fs.info(path)
    except Exception as error:  # every client has its own exception tree
        raise _explain(url, error) from None
    if info.get("type") == "directory":
        return _fetch_prefix(url, fs, path, progress)
    local, downloaded = _fetch_object(url, fs, path, info, progress)
    return Fetched(url, local, "object", 1, int(downloaded))


def _fetch_object(
    url: str, fs: Any, path: str, info: dict[str, Any], progress: Callable[[int, int], None] | None
) -> tuple[Path, bool]:
    name = _safe_name(path)
    objects = cache_root() / "objects"
    etag = _etag(info)
    size = int(info.get("size") or 0)
    if etag is not None:
        target = objects / _digest(shown(url), etag, str(size)) / name
        if target.is_file() and target.stat().st_size == size:
            return target, False
    make_private_dirs(objects)
    partial = objects / f".partial-{os.getpid()}-{threading.get_ident()}-{_digest(url)[:16]}"
    hasher = hashlib.sha256()
    done = 0
    try:
        with (
            fs.open(path, "rb", block_size=4 * CHUNK_BYTES) as source,
            open(partial, "wb", opener=private_opener) as out,
        ):
            while chunk := source.read(CHUNK_BYTES):
                out.write(chunk)
                hasher.update(chunk)
                done += len(chunk)
                if progress is not None:
                    progress(done, size)
    except Exception as error:
        partial.unlink(missing_ok=True)
        raise _explain(url, error) from None
    key = _digest(shown(url), etag, str(size)) if etag is not None else "sha256-" + hasher.hexdigest()
    target = objects / key / name
    make_private_dirs(target.parent)
    os.replace(partial, target)
    return target, True


def _fetch_prefix(url: str, fs: Any, path: str, progress: Callable[[int, int], None] | None) -> Fetched:
    """Mirror the journal objects under a prefix; unchanged objects (same ETag) are not fetched again."""
    try:
        found = fs.find(path, detail=True)
    except Exception as error:
        raise _explain(url, error) from None
    members = {key: info for key, info in found.items() if key.endswith(JOURNAL_SUFFIXES)}
    if not members:
        raise StorageError(f"{shown(url)}: the prefix holds no .jsonl or .jsonl.gz object")
    root = cache_root() / "prefixes" / _digest(shown(url))
    manifest_path = root / ".manifest.json"
    try:
        manifest: dict[str, str] = orjson.loads(manifest_path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        manifest = {}
    base = path.rstrip("/")
    downloaded = 0
    wanted = set()
    for number, (key, info) in enumerate(sorted(members.items()), 1):
        relative = key[len(base) :].lstrip("/") if key.startswith(base) else _safe_name(key)
        parts = [part for part in relative.split("/") if part not in ("", ".", "..")]
        target = root.joinpath(*parts)
        wanted.add(str(target.relative_to(root)))
        stamp = f"{_etag(info)}:{info.get('size')}"
        if manifest.get(relative) == stamp and target.is_file():
            continue
        local, _ = _fetch_object(f"{url.rstrip('/')}/{relative}", fs, key, info, None)
        make_private_dirs(target.parent)
        copy_private(local, target)
        manifest[relative] = stamp
        downloaded += 1
        if progress is not None:
            progress(number, len(members))
    for stale in [p for p in root.rglob("*") if p.is_file() and p.name != ".manifest.json"]:
        if str(stale.relative_to(root)) not in wanted:
            stale.unlink()  # an object deleted upstream leaves the mirror too
    make_private_dirs(root)
    write_private(manifest_path, orjson.dumps({key: value for key, value in manifest.items() if key in wanted}))
    return Fetched(url, root, "prefix", len(members), downloaded)


def _safe_name(path: str) -> str:
    name = path.rstrip("/").rpartition("/")[2]
    return name if name not in ("", ".", "..") else "journal.jsonl"


class ObjectFollower:
    """Poll a growing object and append its new bytes to a local file the app can tail.

    Object stores have no append: a writer re-uploads the object as it grows. Each poll
    reads the object's size; when it grew, the new range is fetched, together with the
    last bytes the copy already holds, so a replaced (not appended) object is noticed and
    fetched whole, which the reader then reports as a replacement.
    """

    OVERLAP = 64

    def __init__(self, url: str, *, interval_s: float = 1.0, on_error: Callable[[str], None] | None = None) -> None:
        self.url = url
        self.interval_s = interval_s
        self.on_error = on_error
        self.fs, self.path = filesystem(url)
        self.local = cache_root() / "follow" / _digest(shown(url)) / _safe_name(self.path)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.polls = 0

    def start(self) -> Path:
        """Copy the object as it is now, then poll in a daemon thread; returns the local file."""
        make_private_dirs(self.local.parent)
        self._whole()
        self._thread = threading.Thread(target=self._loop, name="replay-tui-object-follower", daemon=True)
        self._thread.start()
        return self.local

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                self.poll()
            except StorageError as error:
                if self.on_error is not None:
                    self.on_error(str(error))

    def poll(self) -> int:
        """One check; returns the number of bytes appended (-1 when the copy was rewritten whole)."""
        self.polls += 1
        try:
            self.fs.invalidate_cache(self.path)
            size = int(self.fs.info(self.path).get("size") or 0)
            have = self.local.stat().st_size if self.local.exists() else 0
            if size == have:
                return 0
            if size < have:
                self._whole()
                return -1
            start = max(0, have - self.OVERLAP)
            data = self.fs.cat_file(self.path, start=start, end=size)
        except StorageError:
            raise
        except Exception as error:
            raise _explain(self.url, error) from None
        with open(self.local, "rb+") as copy:
            copy.seek(start)
            if copy.read(have - start) != data[: have - start]:
                self._whole()
                return -1
            copy.seek(have)
            copy.write(data[have - start :])
        return size - have

    def _whole(self) -> None:
        partial = self.local.with_name(self.local.name + ".partial")
        try:
            with (
                self.fs.open(self.path, "rb", block_size=4 * CHUNK_BYTES) as source,
                open(partial, "wb", opener=private_opener) as out,
            ):
                while chunk := source.read(CHUNK_BYTES):
                    out.write(chunk)
        except Exception as error:
            partial.unlink(missing_ok=True)
            raise _explain(self.url, error) from None
        os.replace(partial, self.local)

"""Shipping closed journal files to object storage (any fsspec URL) in the background.

The writer hands over each file that will not change again (``JournalWriter(on_closed=...)``): a shard
rotated out, and the last shard or the single file when the journal closes. ``Shipper.submit`` only
appends one ``queued`` line to the ledger and wakes a background thread: the agent never waits on the
network. The thread then, for each file:

1. hashes it (size, sha256) and reads its run id;
2. uploads it to ``ship_to`` under the same relative name (``run.jsonl``, ``run/run.000001.jsonl.gz``),
   unless the manifest line says an identical copy is there already;
3. verifies the upload: the object's size, then its ETag against the file's MD5 when they are equal
   (S3's single-part uploads), else the sha256 of the object read back;
4. writes the file's manifest line (name, size, sha256, run id, time) as the object
   ``<ship_to>/.replay-tui-manifest/<name>.json`` (object stores have no append, and one object per
   file lets many hosts ship into one prefix without a lock);
5. appends ``shipped`` to the ledger and, unless ``keep_local``, removes the local file (a shard directory
   goes once the journal is closed and its last shard is gone).

A failure (network, credentials, a failed verification) is logged (logger ``replay_tui.shipping``) and
written to the ledger, and the file is tried again after a backoff (doubling from ``retry_initial_s`` to
``retry_max_s``). The ledger, ``.replay-tui-shipping.ndjson`` beside the journals, outlives the process:
the next shipper on that directory (the next session a restarted service records) resumes every file
queued and not yet shipped. A local file is removed only after its upload was verified, so a store that
fails any share of the uploads loses nothing. A name the store holds with other bytes is refused (logged,
never overwritten, kept locally). At exit the process waits up to ``exit_wait_s`` for the queue to drain.

fsspec is imported only when shipping is configured.
"""

from __future__ import annotations

import atexit
import hashlib
import heapq
import itertools
import logging
import random
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from .identity import run_id_of
from .private import append_line, read_lines
from .urls import StorageError, explain, filesystem, is_url, shown
from .writer import utc_now

LEDGER_NAME = ".replay-tui-shipping.ndjson"
MANIFEST_PREFIX = ".replay-tui-manifest"
QUEUED, FAILED, SHIPPED, REMOVED, REFUSED, LOST = "queued", "failed", "shipped", "removed", "refused", "lost"
log = logging.getLogger("replay_tui.shipping")

#: The options of the jsonl transport that configure shipping, and their defaults.
DEFAULTS: Mapping[str, Any] = {
    "keep_local": False,
    "ship_retry_initial_s": 1.0,
    "ship_retry_max_s": 300.0,
    "ship_exit_wait_s": 10.0,
}


@dataclass(frozen=True)
class ShipOptions:
    ship_to: str
    keep_local: bool = False
    retry_initial_s: float = 1.0
    retry_max_s: float = 300.0
    exit_wait_s: float = 10.0

    @classmethod
    def from_options(cls, options: Mapping[str, Any], where: str) -> ShipOptions | None:
        """The shipping part of transport options (None without ``ship_to``); ValueError naming ``where``."""
        ship_to = options.get("ship_to")
        if ship_to is None:
            extra = sorted(name for name in DEFAULTS if name in options)
            if extra:
                raise ValueError(f"{where}: {', '.join(extra)} without ship_to (the URL to ship closed journals to)")
            return None
        if not isinstance(ship_to, str) or not is_url(ship_to):
            raise ValueError(f"{where}: ship_to must be an object-storage URL such as 's3://bucket/prefix/'")
        keep_local = options.get("keep_local", DEFAULTS["keep_local"])
        if not isinstance(keep_local, bool):
            raise ValueError(f"{where}: keep_local must be true or false")
        numbers = {}
        for name in ("ship_retry_initial_s", "ship_retry_max_s", "ship_exit_wait_s"):
            value = options.get(name, DEFAULTS[name])
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                raise ValueError(f"{where}: {name} must be a number of seconds (0 or more)")
            numbers[name] = float(value)
        try:
            filesystem(ship_to)  # credentials in the URL, a missing client: said now, not at the first upload
        except StorageError as error:
            raise ValueError(f"{where}: ship_to {error}") from None
        return cls(
            ship_to,
            keep_local,
            numbers["ship_retry_initial_s"],
            max(numbers["ship_retry_max_s"], numbers["ship_retry_initial_s"]),
            numbers["ship_exit_wait_s"],
        )


def ledger_path(root: Path) -> Path:
    return root / LEDGER_NAME


def ledger_entries(root: Path) -> list[dict[str, Any]]:
    """The ledger's lines (a line that is not a JSON object is skipped)."""
    entries = []
    for line in read_lines(ledger_path(root)):
        try:
            entry = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if isinstance(entry, dict) and isinstance(entry.get("name"), str):
            entries.append(entry)
    return entries


def remote_url(ship_to: str, name: str) -> str:
    return f"{ship_to.rstrip('/')}/{name}"


def manifest_url(ship_to: str, name: str) -> str:
    """Where the manifest line of the shipped file ``name`` is kept."""
    return f"{ship_to.rstrip('/')}/{MANIFEST_PREFIX}/{name}.json"


class _Refused(Exception):
    """Not to be retried: a person has to look (the store holds other bytes under the name)."""


@dataclass
class _Item:
    name: str
    attempt: int = 0


class Shipper:
    """Ships the closed files of the journals under one local directory to one URL, in one daemon thread."""

    def __init__(self, root: Path, options: ShipOptions) -> None:
        self.root = root
        self.options = options
        self._condition = threading.Condition()
        self._queue: list[tuple[float, int, _Item]] = []
        self._order = itertools.count()
        self._known: set[str] = set()  # names queued in this process (resume skips them)
        self._closed_dirs: set[str] = set()  # shard directories whose last file was handed over
        self._in_flight = 1  # the ledger's resumption, first thing in the thread: drain waits for it too
        self._stopped = False
        self._fs: Any = None
        self._base = ""
        self._thread = threading.Thread(target=self._run, name=f"replay-tui-shipper {shown(options.ship_to)}")
        self._thread.daemon = True
        self._thread.start()

    # -- the writer's side (the agent's thread: no network, no hashing) ---------------------------------
    def submit(self, path: Path, last: bool = False) -> None:
        """Queue a closed file; never raises (a problem is logged: recording goes on)."""
        try:
            name = path.resolve().relative_to(self.root).as_posix()
            with self._condition:
                self._known.add(name)
                if last and "/" in name:
                    self._closed_dirs.add(name.rpartition("/")[0])
            append_line(
                ledger_path(self.root), orjson.dumps({"op": QUEUED, "name": name, "last": last, "at": utc_now()})
            )
            self._schedule(_Item(name), 0.0)
        except Exception as error:  # a full disk must not end the agent's run
            log.error("replay-tui shipping: cannot queue %s: %s", path, error)

    # -- waiting -------------------------------------------------------------------------------------
    def pending(self) -> int:
        with self._condition:
            return len(self._queue) + self._in_flight

    def drain(self, timeout: float) -> bool:
        """Wait until every queued file is shipped (or refused), at most ``timeout`` seconds; True when so."""
        deadline = time.monotonic() + timeout
        with self._condition:
            while self._queue or self._in_flight:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._condition.wait(left)
        return True

    def stop(self) -> None:
        with self._condition:
            self._stopped = True
            self._condition.notify_all()
        self._thread.join(timeout=5)

    # -- the background thread ---------------------------------------------------------------------------
    def _schedule(self, item: _Item, delay: float) -> None:
        with self._condition:
            heapq.heappush(self._queue, (time.monotonic() + delay, next(self._order), item))
            self._condition.notify_all()

    def _run(self) -> None:
        try:
            self._resume()
        except Exception as error:
            log.error("replay-tui shipping: cannot read the ledger %s: %s", ledger_path(self.root), error)
        finally:
            with self._condition:
                self._in_flight -= 1
                self._condition.notify_all()
        while True:
            with self._condition:
                while not self._stopped and (not self._queue or self._queue[0][0] > time.monotonic()):
                    self._condition.wait(None if not self._queue else self._queue[0][0] - time.monotonic())
                if self._stopped:
                    return
                _, _, item = heapq.heappop(self._queue)
                self._in_flight += 1
            try:
                self._attempt(item)
            finally:
                with self._condition:
                    self._in_flight -= 1
                    self._condition.notify_all()

    def _resume(self) -> None:
        """Queue again what an earlier process queued and did not ship (or shipped and did not remove)."""
        state: dict[str, str] = {}
        for entry in ledger_entries(self.root):
            name, op = entry["name"], entry.get("op")
            if op == QUEUED:
                state.setdefault(name, QUEUED)
                if entry.get("last") and "/" in name:
                    self._closed_dirs.add(name.rpartition("/")[0])
            elif op in (SHIPPED, REMOVED, REFUSED, LOST):
                state[name] = op
        for name, op in state.items():
            unfinished = op == QUEUED or (op == SHIPPED and not self.options.keep_local)
            with self._condition:
                if name in self._known or not unfinished or not (self.root / name).exists():
                    continue
                self._known.add(name)
            log.info("replay-tui shipping: resuming %s (queued by an earlier process)", name)
            self._schedule(_Item(name), 0.0)

    def _attempt(self, item: _Item) -> None:
        url = remote_url(self.options.ship_to, item.name)
        try:
            self._ship(item.name)
        except _Refused as refused:
            log.error("replay-tui shipping: %s: %s; kept at %s", shown(url), refused, self.root / item.name)
            self._note(REFUSED, item.name, error=str(refused))
        except Exception as error:
            item.attempt += 1
            doubled = self.options.retry_initial_s * 2 ** min(item.attempt - 1, 40)  # 2**40: past any maximum
            delay = min(doubled, self.options.retry_max_s)
            delay *= 0.5 + random.random() / 2  # hosts that failed together do not retry together
            reason = str(error if isinstance(error, StorageError) else explain(url, error))
            log.warning("replay-tui shipping: upload %d failed: %s; retrying in %.1f s", item.attempt, reason, delay)
            self._note(FAILED, item.name, error=reason, attempt=item.attempt, retry_in_s=round(delay, 3))
            self._schedule(item, delay)

    def _filesystem(self) -> Any:
        if self._fs is None:
            self._fs, self._base = filesystem(self.options.ship_to)
        return self._fs

    def _ship(self, name: str) -> None:
        local = self.root / name
        if not local.exists():
            if any(e.get("op") == SHIPPED and e["name"] == name for e in ledger_entries(self.root)):
                return  # shipped and removed by an earlier attempt
            log.error("replay-tui shipping: %s was removed before it could be shipped", local)
            self._note(LOST, name)
            return
        fs = self._filesystem()
        size, sha256, md5 = _digests(local)
        run_id = run_id_of(local)
        remote = f"{self._base.rstrip('/')}/{name}"
        manifest = f"{self._base.rstrip('/')}/{MANIFEST_PREFIX}/{name}.json"
        there = _read_manifest(fs, manifest)
        if there is not None and there.get("sha256") != sha256:
            raise _Refused(f"the store holds {name} with other bytes (sha256 {there.get('sha256')}); not overwritten")
        if not _verified(fs, remote, size, sha256, md5):  # not there yet (or an earlier attempt's bad copy)
            fs.makedirs(remote.rpartition("/")[0], exist_ok=True)
            fs.put_file(str(local), remote)
            if not _verified(fs, remote, size, sha256, md5):
                raise StorageError(f"{shown(remote_url(self.options.ship_to, name))}: the upload did not verify")
        if there is None:
            line = {"name": name, "size": size, "sha256": sha256, "run_id": run_id, "shipped_at": utc_now()}
            fs.makedirs(manifest.rpartition("/")[0], exist_ok=True)
            fs.pipe_file(manifest, orjson.dumps(line) + b"\n")
        url = remote_url(self.options.ship_to, name)
        self._note(SHIPPED, name, size=size, sha256=sha256, url=shown(url), run_id=run_id)
        log.info("replay-tui shipping: %s -> %s (%d bytes, verified)", local, shown(url), size)
        if not self.options.keep_local:
            local.unlink()
            self._note(REMOVED, name)
            directory = name.rpartition("/")[0]
            if directory and directory in self._closed_dirs:
                try:
                    (self.root / directory).rmdir()  # the last of a closed shard directory
                except OSError:
                    pass  # shards still waiting for their turn

    def _note(self, op: str, name: str, **fields: Any) -> None:
        try:
            append_line(ledger_path(self.root), orjson.dumps({"op": op, "name": name, **fields, "at": utc_now()}))
        except OSError as error:
            log.error("replay-tui shipping: cannot write the ledger %s: %s", ledger_path(self.root), error)


def _digests(path: Path) -> tuple[int, str, str]:
    """(size, sha256, md5) in one pass; the MD5 only to compare with an S3 ETag."""
    sha256, md5 = hashlib.sha256(), hashlib.md5(usedforsecurity=False)
    size = 0
    with open(path, "rb") as source:
        while chunk := source.read(1 << 20):
            sha256.update(chunk)
            md5.update(chunk)
            size += len(chunk)
    return size, sha256.hexdigest(), md5.hexdigest()


def _read_manifest(fs: Any, manifest: str) -> dict[str, Any] | None:
    try:
        data = fs.cat_file(manifest)
    except FileNotFoundError:
        return None
    try:
        line = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    return line if isinstance(line, dict) else None


def _verified(fs: Any, remote: str, size: int, sha256: str, md5: str) -> bool:
    """The object holds exactly the file's bytes: its size, then its ETag (the MD5 of a single-part
    upload) or, when that differs, the sha256 of the object read back."""
    try:
        fs.invalidate_cache(remote)
        info = fs.info(remote)
    except FileNotFoundError:
        return False
    if int(info.get("size") or 0) != size:
        return False
    etag = str(info.get("ETag") or info.get("etag") or "").strip('"')
    if etag == md5:
        return True
    digest = hashlib.sha256()
    with fs.open(remote, "rb") as stored:
        while chunk := stored.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest() == sha256


_shippers: dict[tuple[Path, ShipOptions], Shipper] = {}
_registry_lock = threading.Lock()


def shipper_for(root: Path, options: ShipOptions) -> Shipper:
    """The process's shipper for the journals under ``root`` (made, and resuming the ledger, on first use)."""
    key = (root.resolve(), options)
    with _registry_lock:
        shipper = _shippers.get(key)
        if shipper is None:
            if not _shippers:
                _drain_at_exit()
            shipper = _shippers[key] = Shipper(key[0], options)
        return shipper


def _drain_at_exit() -> None:
    """Drain when the interpreter exits, while it can still run the store's client: before
    ``concurrent.futures`` refuses new work ("cannot schedule new futures after interpreter shutdown",
    which the S3 client's DNS lookups and file reads need). Both are threading exit hooks, run newest
    first: importing concurrent.futures.thread first makes ours the newer. (``threading._register_atexit``
    is the hook concurrent.futures itself uses; plain ``atexit`` runs after it, too late.)"""
    import concurrent.futures.thread  # noqa: F401 (its exit hook must be registered before ours)

    register = getattr(threading, "_register_atexit", None)
    if register is None:  # another Python: the hook the language documents, which may come too late
        atexit.register(stop_all)
        return
    register(stop_all)


def stop_all(timeout: float | None = None) -> bool:
    """Drain every shipper (each at most its ``exit_wait_s``, or ``timeout``) and stop it; True when all drained.
    Files left over stay in the ledger for the next process."""
    with _registry_lock:
        shippers = list(_shippers.values())
        _shippers.clear()
    drained = True
    for shipper in shippers:
        wait = shipper.options.exit_wait_s if timeout is None else timeout
        if not shipper.drain(wait):
            drained = False
            log.warning(
                "replay-tui shipping: %d file(s) under %s not shipped yet; the next process resumes them",
                shipper.pending(),
                shipper.root,
            )
        shipper.stop()
    return drained

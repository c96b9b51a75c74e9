"""Append-only journal writer: canonical lines, hash chain, fsync policy, rotation.

This is the only code that writes journal bytes. The harness event bus owns one
writer and is the only caller, so seq assignment and the chain stay in one place.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import io
import os
import re
import shutil
import time
from collections.abc import Generator
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Literal

import orjson

from .canonical import canonical_json, canonical_json_of_parsed, canonical_string
from .hashing import sha256_hex
from .model import CHAIN_CHECKPOINT, RUN_ENDED, RUN_SEALED, SCHEMA_VERSION, SEAL_KINDS, Event, event_id_for, new_event
from .private import make_private_dirs, private_opener

if TYPE_CHECKING:
    from .seal import Signer

# Only a run.sealed may follow run.ended; a checkpoint after a seal would sign a seal.
_NO_CHECKPOINT_AFTER = SEAL_KINDS | {RUN_ENDED}

_RUN_SEALED_JSON = canonical_string(RUN_SEALED)
# An event's canonical body (no event_hash) with its parts spliced in as canonical JSON, keys in JCS order.
_ENVELOPE = (
    b'{"event_id":%s,"kind":%s,"parent_event_id":%s,"payload":%s,"prev_event_hash":%s,'
    b'"recorded_at":%s,"run_id":%s,"schema_version":%d,"seq":%d,"step_id":%s}'
)

#: An event for ``append_spliced_all``: its kind, payload, parent id, step id and time, each as canonical JSON.
SplicedEvent = tuple[bytes, bytes, bytes, bytes, bytes]

FsyncPolicy = Literal["never", "always", "close"]
DEFAULT_ROTATE_BYTES = 128 * 1024 * 1024
SHARD_PATTERN = "{stem}.{index:06d}.jsonl"
#: The name of a shard ``SHARD_PATTERN`` made, plain or gzipped.
SHARD_NAME = re.compile(r"\.\d{6}\.jsonl(\.gz)?$")


@functools.lru_cache(maxsize=1024)
def rfc3339_second(seconds: int) -> str:
    """``2026-12-01T03:04:05``: a Unix second in UTC, formatted once (a datetime's isoformat per event was
    ~1 µs of every append; the importers stamp whole runs of events from the same seconds)."""
    return datetime.fromtimestamp(seconds, UTC).isoformat(timespec="seconds").removesuffix("+00:00")


def utc_now() -> str:
    """RFC 3339 UTC to the microsecond (``2026-12-01T03:04:05.123456Z``)."""
    seconds, nanoseconds = divmod(time.time_ns(), 1_000_000_000)
    return f"{rfc3339_second(seconds)}.{nanoseconds // 1000:06d}Z"


class JournalWriter:
    """Writes events with seq, event_id and hashes filled in.

    With ``rotate_bytes`` set, ``path`` is a directory of numbered shards; each
    closed shard is gzipped. Without it, ``path`` is one ``.jsonl`` file.

    ``payloads_are_parsed_json``: the caller promises every payload came out of a
    JSON round trip (only JSON types, no NaN or infinity), as the harness's are;
    the writer then takes the fast canonical path, which is exact for such values.
    ``start_after=(seq, event_hash)`` continues an existing chain in a new file:
    the first event written gets seq + 1 and links to that hash.

    With a ``signer`` (seal.Signer), closing the writer appends a ``run.sealed``
    event signing the chain head, and ``checkpoint_every=N`` appends a
    ``chain.checkpoint`` after every N events, so a cut journal keeps a signed prefix.

    ``on_closed(path, last)`` is called with each file that will not change again: a shard once rotated
    out (and gzipped), and (``last``) the last shard or the single file when the writer closes, after its
    seal. It runs in the writer's thread, so it only hands the path on (journal/shipping.py uploads it in
    the background).

    Every file and directory the writer creates is owner-only (0600, 0700; journal/private.py).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        run_id: str,
        fsync: FsyncPolicy = "close",
        rotate_bytes: int | None = None,
        compress_closed_shards: bool = True,
        now: Callable[[], str] = utc_now,
        payloads_are_parsed_json: bool = False,
        start_after: tuple[int, str] | None = None,
        signer: Signer | None = None,
        checkpoint_every: int | None = None,
        flush_lines: bool = True,
        on_closed: Callable[[Path, bool], None] | None = None,
    ) -> None:
        self.path = Path(path)
        self.on_closed = on_closed
        self.flush_lines = flush_lines  # False: a batch writer (an import) nobody tails; close() flushes
        self.run_id = run_id
        self.fsync = fsync
        self.rotate_bytes = rotate_bytes
        self.compress_closed_shards = compress_closed_shards
        self._now = now
        self._seq, self._prev_hash = start_after if start_after is not None else (0, None)  # type: tuple[int, str | None]
        self._canonical = canonical_json_of_parsed if payloads_are_parsed_json else canonical_json
        self._run_id_json: bytes | None = None  # append_canonical's envelope parts that repeat
        self._strings: dict[str | None, bytes] = {}
        self._prev_hash_json: tuple[str | None, bytes] = (None, b"null")
        self._shard_index = 0
        self._shard_bytes = 0
        self._last_kind: str | bytes | None = None  # the last event's kind (its JSON after append_spliced)
        self.seal_with(signer, checkpoint_every)
        if rotate_bytes is not None:
            make_private_dirs(self.path)
            if any(self.path.glob("*.jsonl*")):
                raise FileExistsError(f"{self.path} already holds journal shards; a writer never appends to an old run")
            self._file = self._open_next_shard()
        else:
            make_private_dirs(self.path.parent)
            self._file = self._create(self.path)

    def seal_with(self, signer: Signer | None, checkpoint_every: int | None = None) -> None:
        """Sign the chain head when closing (and every ``checkpoint_every`` events) with ``signer``."""
        if checkpoint_every is not None and (type(checkpoint_every) is not int or checkpoint_every <= 0):
            raise ValueError(f"checkpoint_every must be a positive integer, not {checkpoint_every!r}")
        self.signer = signer
        self.checkpoint_every = checkpoint_every if signer is not None else None

    @property
    def last_seq(self) -> int:
        return self._seq

    @property
    def last_hash(self) -> str | None:
        return self._prev_hash

    def append(
        self,
        kind: str,
        payload: dict[str, Any],
        *,
        step_id: str | None = None,
        parent_event_id: str | None = None,
        recorded_at: str | None = None,
        payload_json: bytes | None = None,
    ) -> Event:
        """Write one event. ``payload_json``: the payload's canonical JSON (``canonical_json_of_parsed``), when
        the caller made it already (the harness hashes a model request's): the envelope is spliced around it,
        not serialized, sorted and checked again with the payload inside."""
        seq = self._seq + 1
        event: dict[str, Any] = {
            "schema_version": SCHEMA_VERSION,
            "run_id": self.run_id,
            "seq": seq,
            "event_id": event_id_for(self.run_id, seq),
            "kind": kind,
            "step_id": step_id,
            "parent_event_id": parent_event_id,
            "recorded_at": recorded_at or self._now(),
            "payload": payload,
            "prev_event_hash": self._prev_hash,
        }
        if payload_json is None:
            body = self._canonical(event)
        else:
            string = self._string_json
            _, body = self._spliced_body(
                seq,
                string(kind),
                payload_json,
                parent_json=string(parent_event_id),
                step_json=string(step_id),
                recorded_at_json=canonical_string(event["recorded_at"]),
            )
        digest = sha256_hex(body)
        # "event_hash" sorts before every other envelope key, so the canonical
        # line is the body with the hash spliced in as the first member.
        line = b'{"event_hash":"' + digest.encode("ascii") + b'",' + body[1:] + b"\n"
        self._write(line)
        self._seq = seq
        self._prev_hash = digest
        self._last_kind = kind
        event["event_hash"] = digest
        if self.checkpoint_every and kind not in _NO_CHECKPOINT_AFTER and seq % self.checkpoint_every == 0:
            self._seal(CHAIN_CHECKPOINT)
        # Event's fields in their order (seq, kind, run_id, event_id, step_id, parent_event_id, recorded_at,
        # payload, prev_event_hash, event_hash, raw), without the frozen dataclass's __init__ (new_event)
        return new_event(
            seq,
            kind,
            self.run_id,
            event["event_id"],
            step_id,
            parent_event_id,
            event["recorded_at"],
            payload,
            event["prev_event_hash"],
            digest,
            event,
        )

    def append_canonical(
        self,
        kind: str,
        payload_json: bytes,
        *,
        step_id: str | None = None,
        parent_event_id: str | None = None,
        recorded_at: str | None = None,
    ) -> str:
        """``append`` for a payload given as its canonical JSON bytes (``canonical_json_of_parsed``):
        an importer prepares payloads before it knows their order. Returns the event id."""
        string = self._string_json
        self.append_spliced(
            string(kind),
            payload_json,
            parent_json=string(parent_event_id),
            step_json=string(step_id),
            recorded_at_json=string(recorded_at or self._now()),
        )
        return event_id_for(self.run_id, self._seq)

    def append_spliced(
        self, kind_json: bytes, payload_json: bytes, *, parent_json: bytes, step_json: bytes, recorded_at_json: bytes
    ) -> bytes:
        """``append_canonical`` with every envelope part given as canonical JSON (``canonical_string`` of
        it, or ``null``): an import's second pass writes events by the hundred thousand. Returns the event
        id as canonical JSON, the ``parent_json`` of the events that hang from it."""
        seq = self._seq + 1
        event_id_json, body = self._spliced_body(
            seq,
            kind_json,
            payload_json,
            parent_json=parent_json,
            step_json=step_json,
            recorded_at_json=recorded_at_json,
        )
        digest = sha256_hex(body)
        self._write(b'{"event_hash":"%s",%s\n' % (digest.encode("ascii"), body[1:]))
        self._seq = seq
        self._prev_hash = digest
        self._prev_hash_json = (digest, b'"%s"' % digest.encode("ascii"))  # "sha256:" and hex: no escapes
        self._last_kind = kind_json  # as JSON: read back only to seal (close) or checkpoint
        if (
            self.checkpoint_every
            and seq % self.checkpoint_every == 0
            and orjson.loads(kind_json) not in _NO_CHECKPOINT_AFTER
        ):
            self._seal(CHAIN_CHECKPOINT)
        return event_id_json

    def append_spliced_all(self, events: Generator[SplicedEvent, bytes, None]) -> None:
        """``append_spliced`` for each event a generator yields, in one loop: an import's second pass. The
        generator is sent each event's id as JSON (what ``append_spliced`` returns) before it yields the next."""
        try:
            event = next(events)
        except StopIteration:
            return
        if self.signer is not None or self.rotate_bytes is not None or self.flush_lines or self.fsync == "always":
            while True:  # checkpoints, shards, flushes: the one-event path does them
                kind, payload, parent, step, recorded_at = event
                event_id = self.append_spliced(
                    kind, payload, parent_json=parent, step_json=step, recorded_at_json=recorded_at
                )
                try:
                    event = events.send(event_id)
                except StopIteration:
                    return
        run_id_json, prev_json = self._splice_parts()
        id_head, write, sha256 = run_id_json[:-1], self._file.write, hashlib.sha256
        seq, written = self._seq, 0
        try:
            while True:  # append_spliced's lines, with its state in local names
                kind, payload, parent, step, recorded_at = event
                seq += 1
                event_id = b'%s:%d"' % (id_head, seq)
                body = _ENVELOPE % (
                    event_id,
                    kind,
                    parent,
                    payload,
                    prev_json,
                    recorded_at,
                    run_id_json,
                    SCHEMA_VERSION,
                    seq,
                    step,
                )
                digest = sha256(body).hexdigest().encode("ascii")
                line = b'{"event_hash":"sha256:%s",%s\n' % (digest, body[1:])
                write(line)
                written += len(line)
                prev_json = b'"sha256:%s"' % digest
                self._last_kind = kind
                event = events.send(event_id)
        except StopIteration:
            pass
        finally:
            if seq != self._seq:
                self._seq, self._shard_bytes = seq, self._shard_bytes + written
                self._prev_hash = prev_json[1:-1].decode("ascii")
                self._prev_hash_json = (self._prev_hash, prev_json)

    def _spliced_body(
        self,
        seq: int,
        kind_json: bytes,
        payload_json: bytes,
        *,
        parent_json: bytes,
        step_json: bytes,
        recorded_at_json: bytes,
    ) -> tuple[bytes, bytes]:
        """Event ``seq``'s id and canonical form without its hash, from its parts as canonical JSON: the
        envelope spelled out (no dict to sort and check per event), its keys in JCS order, seq a small int.
        Checked against the dict path's bytes by tests/importers/test_fast_paths.py and
        tests/harness/test_recording_fast_paths.py."""
        run_id_json, prev_hash_json = self._splice_parts()
        event_id_json = b'%s:%d"' % (run_id_json[:-1], seq)  # event_id_for's "run_id:seq" as JSON
        return event_id_json, _ENVELOPE % (
            event_id_json,
            kind_json,
            parent_json,
            payload_json,
            prev_hash_json,
            recorded_at_json,
            run_id_json,
            SCHEMA_VERSION,
            seq,
            step_json,
        )

    def _splice_parts(self) -> tuple[bytes, bytes]:
        """The run id and the last event's hash as canonical JSON, the parts every spliced envelope repeats."""
        if self._run_id_json is None:
            self._run_id_json = canonical_string(self.run_id)
        if self._prev_hash_json[0] is not self._prev_hash:  # ``append`` wrote the last event
            self._prev_hash_json = (self._prev_hash, self._string_json(self._prev_hash))
        return self._run_id_json, self._prev_hash_json[1]

    def _string_json(self, text: str | None) -> bytes:
        """Canonical JSON of an envelope string, remembered: ids, kinds, steps and times recur within a few events."""
        known = self._strings.get(text)
        if known is None:
            if len(self._strings) >= 256:
                self._strings.clear()
            known = self._strings[text] = b"null" if text is None else canonical_string(text)
        return known

    def _write(self, line: bytes) -> None:
        if self.rotate_bytes is not None and self._shard_bytes and self._shard_bytes + len(line) > self.rotate_bytes:
            self._close_shard()
            self._file = self._open_next_shard()
        # a line-flushing writer's file is unbuffered (``_create``): it may take part of a line (a full disk, a
        # signal), and the rest follows
        written = self._file.write(line)
        if written is not None and written < len(line):
            self._write_rest(memoryview(line)[written:])
        self._shard_bytes += len(line)
        if self.fsync == "always":
            os.fsync(self._file.fileno())

    def _write_rest(self, rest: memoryview) -> None:
        while rest:
            written = self._file.write(rest)
            rest = rest[written or 0 :]

    def _open_next_shard(self) -> io.BufferedWriter | io.FileIO:
        self._shard_index += 1
        self._shard_bytes = 0
        return self._create(self.path / SHARD_PATTERN.format(stem=self.path.name, index=self._shard_index))

    def _create(self, path: Path) -> io.BufferedWriter | io.FileIO:
        """A new journal file or shard (never an existing one). A line-flushing writer's file is unbuffered: one
        write(2) a line (a buffered write and its flush cost twice as much); a batch writer's lines go out in
        1 MiB writes, not 8 KiB ones (a tenth of an import's write cost)."""
        raw = io.FileIO(path, "xb", opener=private_opener)
        return raw if self.flush_lines else io.BufferedWriter(raw, 1 << 20)

    def _close_shard(self) -> None:
        self._file.flush()
        if self.fsync != "never":
            os.fsync(self._file.fileno())
        self._file.close()
        closed = Path(self._file.name)
        if self.compress_closed_shards:
            plain, closed = closed, closed.with_name(closed.name + ".gz")
            with (
                open(plain, "rb") as source,
                open(closed, "xb", opener=private_opener) as packed,
                gzip.GzipFile(str(closed), "wb", fileobj=packed) as target,
            ):
                shutil.copyfileobj(source, target)
            if self.fsync != "never":
                with open(closed, "rb") as done:
                    os.fsync(done.fileno())
            plain.unlink()
        if self.on_closed is not None:
            self.on_closed(closed, False)

    def _seal(self, kind: str) -> None:
        assert self.signer is not None and self._prev_hash is not None
        self.append(kind, self.signer.seal_payload(kind, self.run_id, self._seq, self._prev_hash))

    def close(self) -> None:
        if self._file.closed:
            return
        if self.signer is not None and self._seq and self._last_kind not in (RUN_SEALED, _RUN_SEALED_JSON):
            self._seal(RUN_SEALED)
        self._file.flush()
        if self.fsync != "never":
            os.fsync(self._file.fileno())
        self._file.close()
        if self.on_closed is not None:
            self.on_closed(Path(self._file.name), True)

    def __enter__(self) -> "JournalWriter":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

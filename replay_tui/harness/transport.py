"""The JSONL transport: the event sink of record mode.

The JSONL sink is a thin wrapper over ``replay_tui.journal.JournalWriter``, which
already owns canonical lines, flush-per-event, fsync policy, rotation and gzip of
closed shards. A path ending in ``.jsonl`` is one file; any other path is a
directory of shards rotated at ``rotate_bytes`` (default 128 MB).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..journal import Event, JournalWriter
from ..journal.writer import DEFAULT_ROTATE_BYTES, FsyncPolicy
from .plugins import PluginBase, PluginContext
from .seam import EventSink


class JsonlSink:
    """EventSink writing a journal. ``start_after=(seq, event_hash)`` continues a chain
    (snapshot resume into a new file): the first event written gets seq+1."""

    def __init__(
        self,
        path: str | Path,
        *,
        run_id: str,
        fsync: FsyncPolicy = "close",
        rotate_bytes: int | None = None,
        start_after: tuple[int, str] | None = None,
    ) -> None:
        self.path = Path(path)
        self.last_seal_seq: int | None = None  # a chain.checkpoint the writer added: see SealingSink
        if rotate_bytes is None and self.path.suffix != ".jsonl":
            rotate_bytes = DEFAULT_ROTATE_BYTES
        # Harness payloads are JSON round-tripped before they reach the sink, so the
        # writer may take the fast canonical path.
        self.writer = JournalWriter(
            self.path,
            run_id=run_id,
            fsync=fsync,
            rotate_bytes=rotate_bytes,
            payloads_are_parsed_json=True,
            start_after=start_after,
        )

    def emit(
        self,
        kind: str,
        payload: dict[str, Any],
        *,
        step_id: str | None,
        parent_event_id: str | None,
        payload_json: bytes | None = None,
    ) -> Event:
        """``payload_json``: the payload's canonical JSON when the harness has it (see ``JournalWriter.append``)."""
        event = self.writer.append(
            kind, payload, step_id=step_id, parent_event_id=parent_event_id, payload_json=payload_json
        )
        if self.writer.last_seq > event.seq:  # the writer signed the chain after it (checkpoint_every)
            self.last_seal_seq = self.writer.last_seq
        return event

    def close(self) -> None:
        self.writer.close()


class JsonlTransport(PluginBase):
    """Transport plugin (type ``jsonl``). Options: ``path`` (optional; the run's journal
    path is usually given at record time), ``fsync`` (never|always|close), ``rotate_bytes``."""

    extension = "transport"
    version = "1"

    def init(self, context: PluginContext) -> None:
        super().init(context)
        options = context.options
        fsync = options.get("fsync", "close")
        if fsync not in ("never", "always", "close"):
            raise ValueError(f"transport {context.plugin_id!r}: fsync must be never, always or close, not {fsync!r}")
        rotate = options.get("rotate_bytes")
        if rotate is not None and (type(rotate) is not int or rotate <= 0):
            raise ValueError(f"transport {context.plugin_id!r}: rotate_bytes must be a positive integer")
        self.fsync: FsyncPolicy = fsync
        self.rotate_bytes: int | None = rotate
        self.default_path = options.get("path")

    def open(self, run_id: str, path: str | None = None) -> EventSink:
        target = path or self.default_path
        if not target:
            raise ValueError(
                f"transport {self.context.plugin_id!r}: no journal path (give one at record time or options.path)"
            )
        target_path = Path(target)
        if not target_path.is_absolute() and path is None:
            target_path = self.context.base_dir / target_path
        return JsonlSink(target_path, run_id=run_id, fsync=self.fsync, rotate_bytes=self.rotate_bytes)

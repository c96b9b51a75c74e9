"""The JSONL transport: the event sink of record mode.

The JSONL sink is a thin wrapper over ``replay_tui.journal.JournalWriter``, which
already owns canonical lines, flush-per-event, fsync policy, rotation and gzip of
closed shards. A path ending in ``.jsonl`` is one file; any other path is a
directory of shards rotated at ``rotate_bytes`` (default 128 MB).

Shipping is an option of this plugin (``ship_to``, ``keep_local``, ...), not a config table of its own:
it is what this transport does with the files it closes, a config with two transports may ship them to
two places, and a replay or an experiment (which opens a ``JsonlSink`` itself) never ships.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from ..journal import Event, JournalWriter
from ..journal.shipping import ShipOptions, shipper_for
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
        on_closed: Callable[[Path, bool], None] | None = None,
    ) -> None:
        """``on_closed``: the writer's hook for each file it will not change again (the shipper's ``submit``)."""
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
            on_closed=on_closed,
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
    path is usually given at record time), ``fsync`` (never|always|close), ``rotate_bytes``;
    shipping: ``ship_to`` (an fsspec URL, e.g. ``s3://bucket/prefix/``), ``keep_local`` (false: a file
    is removed once its upload is verified), ``ship_retry_initial_s``, ``ship_retry_max_s`` and
    ``ship_exit_wait_s`` (see journal/shipping.py)."""

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
        # fsspec is imported only when ship_to is set
        self.ship: ShipOptions | None = ShipOptions.from_options(options, f"transport {context.plugin_id!r}")

    def open(self, run_id: str, path: str | None = None) -> EventSink:
        target = path or self.default_path
        if not target:
            raise ValueError(
                f"transport {self.context.plugin_id!r}: no journal path (give one at record time or options.path)"
            )
        target_path = Path(target)
        if not target_path.is_absolute() and path is None:
            target_path = self.context.base_dir / target_path
        on_closed = None
        if self.ship is not None:
            on_closed = shipper_for(target_path.parent, self.ship).submit
        return JsonlSink(
            target_path, run_id=run_id, fsync=self.fsync, rotate_bytes=self.rotate_bytes, on_closed=on_closed
        )

"""An import's journal written by another process: the importer orders and links the events, the writer
process chains, hashes and writes them (``JournalWriter``, as in one process), so both run at once.

The OTLP import's pass two is serial: the order and the links need every span, the chain needs every
event before it. Split in two it is a pipeline: this process makes the envelope parts of each event
(``builder.JournalBuilder``) and ``PipedWriter`` ships them, a few thousand at a time, to a process
running ``serve``, which hands them to its ``JournalWriter.append_spliced_all``. The journal is the same
bytes either way: the same writer writes it. An event id is the run id and the seq, so ``PipedWriter``
answers it at once, without waiting for the writer.

Frames on the pipes: a tag byte, the payload's length (8 bytes, little-endian), the payload. To the writer:
``O`` (open: marshal of (path, run id)), ``E`` (events: marshal of a list of ``SplicedEvent``), ``C`` (close).
From it: ``K`` (done: marshal of (last seq, last hash)) or ``F`` (failed: the exception, pickled).
"""

from __future__ import annotations

import fcntl
import marshal
import os
import pickle
import struct
import subprocess
from collections.abc import Generator
from pathlib import Path
from typing import IO

from ...journal.canonical import canonical_string
from ...journal.writer import SplicedEvent
from ..builder import local_writer

#: Events per frame: big enough that a frame's cost is nothing beside its events', small enough that two fit
#: in the pipe (``PIPE_BYTES``) and the memory stays bounded (a frame is about half a megabyte).
BATCH_EVENTS = 1000
#: The pipe's buffer, from Linux's default 64 KiB up to its limit for anyone (``/proc/sys/fs/pipe-max-size``): on
#: a loaded machine each time the import waits for the writer to drain the pipe it waits for its turn on a CPU
#: too, so the pipe holds a few frames (with 64 KiB, pass two took twice as long at load 8).
PIPE_BYTES = 1 << 20
_HEADER = struct.Struct("<cQ")
#: marshal's version 2: no back-references (the parts repeat: kinds, steps), so it writes them faster.
_MARSHAL_VERSION = 2


class WriterProcessFailed(Exception):
    """The writer process ended without its answer (killed, out of memory...): write the journal again here."""


def send_frame(pipe: IO[bytes], tag: bytes, payload: bytes = b"") -> None:
    pipe.write(_HEADER.pack(tag, len(payload)))
    pipe.write(payload)
    pipe.flush()


def receive_frame(pipe: IO[bytes]) -> tuple[bytes, bytes] | None:
    """(tag, payload) of the next frame; None at the end of the pipe (or in a frame cut short)."""
    header = pipe.read(_HEADER.size)
    if len(header) < _HEADER.size:
        return None
    tag, size = _HEADER.unpack(header)
    payload = pipe.read(size)
    return (tag, payload) if len(payload) == size else None


class PipedWriter:
    """``JournalWriter``'s spliced appends (what ``JournalBuilder`` calls), written by ``process`` (running
    ``serve``): the import's events go to it in frames while the import makes the next ones."""

    def __init__(self, process: subprocess.Popen[bytes], path: str | os.PathLike[str], run_id: str) -> None:
        assert process.stdin is not None and process.stdout is not None
        self._process, self._to, self._from = process, process.stdin, process.stdout
        if hasattr(fcntl, "F_SETPIPE_SZ"):  # Linux
            try:
                fcntl.fcntl(self._to.fileno(), fcntl.F_SETPIPE_SZ, PIPE_BYTES)
            except OSError:
                pass  # a lower limit: the default pipe, slower under load
        self._id_head = canonical_string(run_id)[:-1]  # event_id_for's "run_id:seq" as JSON, as the writer spells it
        self._seq = 0
        self._batch: list[SplicedEvent] = []
        self._closed = False
        self._mid_frame = False  # a send was interrupted (KeyboardInterrupt...): the stream is cut mid-frame
        self._call(b"O", marshal.dumps((os.path.abspath(path), run_id), _MARSHAL_VERSION))
        self._answer(b"K")  # opened (or the writer's error: the file exists...)

    @property
    def last_seq(self) -> int:
        return self._seq

    def append_spliced(
        self, kind_json: bytes, payload_json: bytes, *, parent_json: bytes, step_json: bytes, recorded_at_json: bytes
    ) -> bytes:
        self._batch.append((kind_json, payload_json, parent_json, step_json, recorded_at_json))
        self._seq += 1
        if len(self._batch) >= BATCH_EVENTS:
            self._flush()
        return b'%s:%d"' % (self._id_head, self._seq)

    def append_spliced_all(self, events: Generator[SplicedEvent, bytes, None]) -> None:
        try:
            event = next(events)
        except StopIteration:
            return
        batch, id_head, seq = self._batch, self._id_head, self._seq
        try:
            while True:
                batch.append(event)
                seq += 1
                if len(batch) >= BATCH_EVENTS:
                    self._seq = seq
                    self._flush()
                    batch = self._batch
                event = events.send(b'%s:%d"' % (id_head, seq))
        except StopIteration:
            pass
        finally:
            self._seq = seq

    def close(self) -> None:
        """Write what is left, close the journal (its fsync) and wait for the writer's answer."""
        if self._closed:
            return
        if self._mid_frame:  # the writer would read the rest of that frame from what comes next: end it
            self._closed = True
            self._process.kill()
            self._process.wait()
            return
        self._flush()
        self._closed = True
        self._call(b"C")
        self._answer(b"K")
        self._to.close()
        self._process.wait()

    def _flush(self) -> None:
        if self._batch:
            blob = marshal.dumps(self._batch, _MARSHAL_VERSION)
            self._batch = []
            self._call(b"E", blob)

    def _call(self, tag: bytes, payload: bytes = b"") -> None:
        """Send a frame; a writer that is gone answers why (its error), or is a ``WriterProcessFailed``."""
        self._mid_frame = True
        try:
            send_frame(self._to, tag, payload)
            self._mid_frame = False
        except (BrokenPipeError, ValueError):  # ValueError: the pipe was closed after a failure
            self._answer(b"K")  # raises the writer's error, or WriterProcessFailed
            raise WriterProcessFailed("the journal's writer process stopped reading") from None

    def _answer(self, expected: bytes) -> bytes:
        frame = receive_frame(self._from)
        if frame is not None and frame[0] == expected:
            return frame[1]
        self._closed = True
        self._process.kill()
        self._process.wait()
        if frame is not None and frame[0] == b"F":
            raise pickle.loads(frame[1])  # noqa: S301 (our own child's answer)
        raise WriterProcessFailed(f"the journal's writer process ended without its answer ({self._process.returncode})")


def serve(source: IO[bytes], answers: IO[bytes]) -> int:
    """The writer process's side: open, write and close one journal as ``PipedWriter`` asks. Returns at the
    end of ``source`` (nothing asked: the import wrote in its own process) or once the journal is closed."""
    frame = receive_frame(source)
    if frame is None:
        return 0
    tag, payload = frame
    try:
        if tag != b"O":
            raise ValueError(f"a writer process was sent {tag!r} before its journal")
        path, run_id = marshal.loads(payload)
        writer = local_writer(Path(path), run_id)
    except Exception as error:  # noqa: BLE001 (the importer raises it)
        _fail(answers, error)
        return 1
    send_frame(answers, b"K")
    try:
        while (frame := receive_frame(source)) is not None and frame[0] == b"E":
            writer.append_spliced_all(_each(marshal.loads(frame[1])))
        writer.close()
        if frame is None or frame[0] != b"C":  # the importer went away (it removes the journal), or sent garbage
            return 1
    except Exception as error:  # noqa: BLE001 (the importer raises it)
        _fail(answers, error)
        return 1
    send_frame(answers, b"K", marshal.dumps((writer.last_seq, writer.last_hash), _MARSHAL_VERSION))
    return 0


def _each(events: list[SplicedEvent]) -> Generator[SplicedEvent, bytes, None]:
    for event in events:  # not ``yield from``: the writer sends each event's id, which a list cannot take
        yield event


def _fail(answers: IO[bytes], error: Exception) -> None:
    try:
        answer = pickle.dumps(error)
    except Exception:  # noqa: BLE001 (an error that does not pickle is told by its text)
        answer = pickle.dumps(OSError(f"the journal's writer process failed: {error!r}"))
    try:
        send_frame(answers, b"F", answer)
    except OSError:
        pass

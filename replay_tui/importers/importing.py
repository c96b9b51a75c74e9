"""``import_trace``: a source (or several, joined) checked, its format detected (or taken), hashed in a thread
while its format's importer reads it, and imported by that format (``registry.py``)."""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path

from ..journal.collector import collector_paused
from ..journal.files import check_readable_path
from ..journal.hashing import file_sha256
from .detect import JOURNAL, detect_format
from .errors import TraceImportError
from .format import ImportedJournal, Input
from .join import Joined, refuse_unjoinable
from .registry import FORMATS, format_named

Source = str | os.PathLike[str]


class HashedMeanwhile:
    """``file_sha256`` in a thread from now on: an import reads the file meanwhile (the digest names the run
    only when it is written). ``result()`` waits for it; ``stop()`` ends it early (the import failed)."""

    def __init__(self, path: Path, known: str | None) -> None:
        self._stop = threading.Event()
        self._found: list[str | BaseException] = [] if known is None else [known]
        self._thread = threading.Thread(target=self._hash, args=(path,), name="replay-tui-sha256", daemon=True)
        if known is None:
            self._thread.start()

    def _hash(self, path: Path) -> None:
        try:
            self._found.append(file_sha256(path, self._stop))
        except BaseException as error:  # noqa: BLE001 (raised by result(), in the importer's thread)
            self._found.append(error)

    def result(self) -> str:
        if self._thread.is_alive():
            self._thread.join()
        found = self._found[0]
        if isinstance(found, BaseException):
            raise found
        return found

    def stop(self) -> None:
        self._stop.set()


def import_trace(
    src: Source | Sequence[Source], out: Source, *, format: str = "auto", sha256: str | None = None
) -> list[ImportedJournal]:
    """Convert ``src`` into ``out``; raises TraceImportError on bad input (nothing is left behind). Several
    sources (OTLP spans and the logs that carry their content, as two exporters write them) are joined
    into one journal (importers/join.py)."""
    sources = [Path(item) for item in ([src] if isinstance(src, (str, os.PathLike)) else src)]
    for path in sources:
        check_readable_path(path, "trace")  # a FIFO or a device: a JournalOpenError naming what it is
        if not path.is_file():
            raise TraceImportError(
                str(path), None, f"a trace file ({'a directory' if path.is_dir() else 'no such file'})"
            )
    if len(sources) > 1:
        return _import_joined(sources, Path(out), format)
    path = sources[0]
    chosen = detect_format(path) if format == "auto" else format
    if chosen == JOURNAL:
        raise TraceImportError(
            str(path), None, "a foreign trace; this is a replay-tui journal already (open it directly)"
        )
    known = format_named(chosen)
    if known is None:
        raise TraceImportError(
            str(path), None, f"one of the formats {', '.join(FORMATS)} (detected none; pass --format)"
        )
    hashed = HashedMeanwhile(path, sha256)
    try:
        with collector_paused():  # the parse makes containers by the million (a third of it was collection)
            return known.run(Input(path, hashed.result), Path(out))
    finally:
        hashed.stop()


def _import_joined(sources: list[Path], out: Path, format: str) -> list[ImportedJournal]:
    """Several sources of one trace as one input (``Joined``), imported as one file is."""
    formats = [detect_format(path) if format == "auto" else format for path in sources]
    known = refuse_unjoinable(sources, formats)
    folder = Path(tempfile.mkdtemp(prefix=".replay-tui-joining-", dir=out.parent))
    try:
        joined = Joined(sources, folder)
        try:
            with collector_paused():
                return known.run(Input(joined.path, lambda: joined.digest, joined.describe()), out)
        except TraceImportError as error:
            raise joined.located(error) from None
    finally:
        shutil.rmtree(folder, ignore_errors=True)

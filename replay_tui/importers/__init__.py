"""Foreign traces -> schema-v1 journals: OTLP (OTel GenAI), OpenAI Agents SDK, Inspect AI, vcrpy.

``import_trace(src, out)`` detects the format by content (or takes it), converts, and
writes one journal (``out``) or, for a log with several samples and epochs, a directory
``out`` of journals. Importers never import Textual or the harness; they sit above
``journal`` and write through its ``JournalWriter``. Each format is one module behind the
protocol of ``format.py``, listed in ``registry.py`` (``ADDING_A_FORMAT.md``).
"""

from __future__ import annotations

from ..journal.hashing import file_sha256
from .builder import IMPORTER_VERSION
from .detect import FORMATS, detect_format
from .errors import TraceImportError
from .format import ImportedJournal
from .importing import import_trace

__all__ = [
    "FORMATS",
    "IMPORTER_VERSION",
    "ImportedJournal",
    "TraceImportError",
    "detect_format",
    "file_sha256",
    "import_trace",
]

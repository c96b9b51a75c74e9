"""Every foreign format replay-tui imports, one line each (``format.Format``); the order settles a file two
formats would both claim (the first one's). Adding a format: ``ADDING_A_FORMAT.md``."""

from __future__ import annotations

from .agents_sdk import FORMAT as OPENAI_AGENTS
from .format import Format
from .inspect_log import FORMAT as INSPECT
from .otlp import FORMAT as OTLP
from .vcr import FORMAT as VCR

REGISTRY: tuple[Format, ...] = (
    OTLP,
    OPENAI_AGENTS,
    INSPECT,
    VCR,
)
#: The formats' names, in the registry's order (``replay-tui import --format``).
FORMATS = tuple(known.name for known in REGISTRY)


def format_named(name: str | None) -> Format | None:
    """The registered format called ``name`` (None for none)."""
    return next((known for known in REGISTRY if known.name == name), None)

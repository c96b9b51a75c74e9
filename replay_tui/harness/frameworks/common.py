"""What the three recorders share: OpenAI clients on the harness's httpx transport, and tool
results in the order the journal keeps them.

The key: read from ``OPENAI_API_KEY`` while recording (redaction keeps it out of the
journal and out of the request hash); a replay child gets an allowlisted environment with
no key and sends nothing, so a placeholder stands in.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from ...journal.canonical import CanonicalizationError
from ..harness import in_journal_order as _in_journal_order
from ..httpx_transport import async_http_client, http_client

if TYPE_CHECKING:
    from ..harness import Harness

PLACEHOLDER_KEY = "replay-tui-placeholder-key"


def api_key() -> str:
    return os.environ.get("OPENAI_API_KEY") or PLACEHOLDER_KEY


def openai_client(h: Harness, base_url: str) -> Any:
    """``openai.OpenAI`` recording through ``h`` (no retries: a retry would be a second exchange)."""
    from openai import OpenAI

    return OpenAI(api_key=api_key(), base_url=base_url, http_client=http_client(h), max_retries=0)


def async_openai_client(h: Harness, base_url: str) -> Any:
    """``openai.AsyncOpenAI`` twin of ``openai_client``."""
    from openai import AsyncOpenAI

    return AsyncOpenAI(api_key=api_key(), base_url=base_url, http_client=async_http_client(h), max_retries=0)


def in_journal_order(value: Any) -> Any:
    """The harness's ``in_journal_order`` for framework values: values with no JSON form pass through
    unchanged (the harness then records the tool as failing with a clear error)."""
    try:
        return _in_journal_order(value)
    except (TypeError, CanonicalizationError):
        return value

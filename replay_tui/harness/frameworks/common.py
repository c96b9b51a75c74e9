"""What the three recorders share: OpenAI clients on the harness's httpx transport, tool results in the
order the journal keeps them, and the errors a recording fails with when it cannot record a call.

The key: read from ``OPENAI_API_KEY`` while recording (redaction keeps it out of the
journal and out of the request hash); a replay child gets an allowlisted environment with
no key and sends nothing, so a placeholder stands in.
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING, Any

from ...journal.canonical import CanonicalizationError
from ..config import ConfigError
from ..harness import HarnessError
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


class UnrecordableCall(HarnessError):
    """A model call or tool call the recorder cannot see: recorded, it would go out unrecorded, and a replay
    would run it live. The recording fails with it, naming the call, instead of ending ``ok`` without it."""


class MissingCredentials(ConfigError):
    """The model's client has no API key to record with (``replay-tui record`` exits 2 on it)."""

    def __init__(self, message: str) -> None:
        super().__init__("credentials", message)


_KEY_VARIABLE = re.compile(r"\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*_(?:API_KEY|KEY|TOKEN)\b")
_KEY_MISSING = re.compile(r"must be set|environment variable|api[_ ]key", re.IGNORECASE)


def missing_key_problem(error: BaseException) -> str | None:
    """What a client's construction error says is missing, when it is an API key in the environment
    (``OpenAIError: The api_key client option must be set ... OPENAI_API_KEY``, PydanticAI's ``Set the
    `OPENAI_API_KEY` environment variable``); None for any other error."""
    text = str(error)
    found = _KEY_VARIABLE.search(text)
    if found is None or _KEY_MISSING.search(text) is None:
        return None
    return f"{found.group(0)} is not set: recording calls the model and needs its key (a replay needs none)"

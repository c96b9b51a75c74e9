"""Chat models whose calls the harness records, and the check that stops a recorded run before a model
call goes out unrecorded.

``chat_openai`` and ``chat_anthropic`` build the LangChain model you would build (``ChatOpenAI``,
``ChatAnthropic``, the options you pass), with both its sync and its async client sending through the
harness's httpx transport: ``invoke``, ``ainvoke``, ``stream``, ``astream`` (and LangGraph's token
streaming) are all recorded, streams passing through as they arrive. Nothing else changes: the request
bodies are the bytes LangChain sends unrecorded. No retries (a retry would be an exchange of its own).

In a recorded run, every chat model call is checked before it is made: a model whose client for that
call (sync or async) does not send through the run's harness stops the run with an error naming the
model, the node and the fix. Inside a recorded tool it is the other way round: the tool's result is
recorded whole and a replay does not run the tool, so a model call in it must not be recorded either.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from langchain_core.runnables.config import var_child_runnable_config
from langchain_openai import ChatOpenAI
from langchain_openai.chat_models.base import BaseChatOpenAI
from pydantic import SecretStr

from ...httpx_transport import async_http_client, http_client
from ..common import PLACEHOLDER_KEY, api_key
from ..versions import check_versions
from .patches import instrument
from .recorder import LIVE_TOOL, not_recorded, recording_in, recording_of

if TYPE_CHECKING:
    from ...harness import Harness

__all__ = ["anthropic_api_key", "chat_anthropic", "chat_openai", "check_model_call"]


def chat_openai(h: Harness, base_url: str | None, model: str, **options: Any) -> ChatOpenAI:
    """A ``ChatOpenAI`` recording through ``h``, sync and async (``options``: any other ``ChatOpenAI`` field)."""
    instrument()
    recording_of(h)  # the run uses the recorder: its graphs are recorded, with recorded(h) or without
    settings: dict[str, Any] = {"api_key": SecretStr(api_key()), "max_retries": 0, **options}
    return ChatOpenAI(
        model=model,
        base_url=base_url,
        http_client=http_client(h),
        http_async_client=async_http_client(h),
        **settings,
    )


def anthropic_api_key() -> str:
    """``ANTHROPIC_API_KEY`` while recording (redaction keeps it out of the journal); a placeholder in a replay
    child, which sends nothing."""
    return os.environ.get("ANTHROPIC_API_KEY") or PLACEHOLDER_KEY


def chat_anthropic(h: Harness, base_url: str | None, model: str, **options: Any) -> Any:
    """A ``ChatAnthropic`` (langchain-anthropic) recording through ``h``, sync and async. Its clients are the
    ones ``ChatAnthropic`` builds itself (key, base URL, timeout, headers), given the harness's transport."""
    import anthropic
    from langchain_anthropic import ChatAnthropic

    instrument()
    recording_of(h)
    check_versions("langchain-anthropic")
    settings: dict[str, Any] = {"api_key": SecretStr(anthropic_api_key()), "max_retries": 0, **options}
    chat = ChatAnthropic(model=model, base_url=base_url, **settings)  # type: ignore[call-arg]
    params = chat._client_params
    # ChatAnthropic takes no http client: its clients are cached properties, set here before first use
    chat.__dict__["_client"] = anthropic.Anthropic(**params, http_client=http_client(h))
    chat.__dict__["_async_client"] = anthropic.AsyncAnthropic(**params, http_client=async_http_client(h))
    return chat


def _sdk_client(model: Any, async_api: bool) -> Any:
    """The openai or anthropic SDK client a LangChain chat model makes this call with, or None (not a model
    the recorder knows)."""
    if isinstance(model, BaseChatOpenAI):
        return model.root_async_client if async_api else model.root_client
    anthropic_models = _anthropic_models()
    if anthropic_models is not None and isinstance(model, anthropic_models):
        chat: Any = model
        return chat._async_client if async_api else chat._client
    return None


def _anthropic_models() -> type | None:
    try:
        from langchain_anthropic import ChatAnthropic
    except ImportError:  # the extra is optional
        return None
    return ChatAnthropic


def records_through(model: Any, h: Harness, async_api: bool) -> bool:
    """Whether ``model``'s client for a sync (async) call sends through ``h``'s transport."""
    client = _sdk_client(model, async_api)
    transport = getattr(getattr(client, "_client", None), "_transport", None)
    return getattr(transport, "harness", None) is h


def check_model_call(model: Any, *, async_api: bool) -> None:
    """Stop a recorded run before ``model`` is called through a client that does not record (inside a
    recorded tool: through one that does). Does nothing outside a recorded run."""
    from ...harness import CURRENT_HARNESS

    h = CURRENT_HARNESS.get()
    if h is None:
        return
    recording = recording_in(h)
    if recording is not None:
        recording.check()
    records = records_through(model, h, async_api)
    tool = LIVE_TOOL.get()
    if tool is not None:
        if records:
            raise not_recorded(
                f"tool {tool!r} called {_describe(model)}, which records through the harness, while the tool ran: "
                "a recorded tool's result is recorded whole and a replay does not run it, so its model calls "
                "would be left over; give the tool a model that does not record, or make the model call a node"
            )
        return
    if records:
        return
    calls = "ainvoke/astream (its async client)" if async_api else "invoke/stream (its sync client)"
    known = _sdk_client(model, async_api) is not None
    fix = (
        "build it with chat_openai(h, ...) or chat_anthropic(h, ...), whose sync and async clients both record"
        if known
        else "the recorder records ChatOpenAI and ChatAnthropic (build them with chat_openai/chat_anthropic)"
    )
    raise not_recorded(
        f"{_describe(model)}{_where()} was called with {calls} in a recorded run, and that client does not "
        f"send through the harness: the call would go out unrecorded; {fix}"
    )


def _describe(model: Any) -> str:
    name = getattr(model, "model_name", None) or getattr(model, "model", None)
    return f"{type(model).__name__}(model={name!r})" if isinstance(name, str) else type(model).__name__


def _where() -> str:
    config = var_child_runnable_config.get() or {}
    node = (config.get("metadata") or {}).get("langgraph_node")
    return f" in node {node!r}" if isinstance(node, str) else ""

"""The model of a recorded PydanticAI run, as the user built it, sending through the harness's httpx transport.

PydanticAI's models talk to their API through an SDK client (``openai.AsyncOpenAI`` for
``OpenAIChatModel`` and ``OpenAIResponsesModel``, ``anthropic.AsyncAnthropic`` for ``AnthropicModel``,
the same clients for the providers built on them: DeepSeek, OpenRouter, Azure, Groq...). A run's model
is swapped for a copy whose provider holds a copy of that client with one change: its HTTP client's
transports are the harness's, each sending through the one the user's client had (its proxy, TLS and
pool settings), and the client's own settings (headers, timeout, redirects, hooks) are kept. The model
class, its name, settings, profile and the SDK's retries stay the user's: the request on the wire is
the one the user's model sends. A ``FallbackModel`` or a ``WrapperModel`` (``InstrumentedModel``...)
has each model it holds swapped the same way. A model whose calls do not go through such a client
(``FunctionModel``, ``TestModel``, Google's and Bedrock's SDKs) cannot be recorded: ``NotRecordable``
names it, and the run fails before it sends anything.
"""

from __future__ import annotations

import copy
import functools
import importlib
from types import ModuleType
from typing import TYPE_CHECKING, Any

from pydantic_ai.models import Model
from pydantic_ai.models.fallback import FallbackModel
from pydantic_ai.models.wrapper import WrapperModel

from ..httpx_transport import make_async_transport
from .pydantic_ai_results import NotRecordable

if TYPE_CHECKING:
    from ..harness import Harness

__all__ = ["recorded_model"]


def recorded_model(h: Harness, model: Model) -> Model:
    """``model``, or a copy of it that sends through ``h`` (see the module docstring)."""
    if isinstance(model, FallbackModel):
        fallback = copy.copy(model)
        fallback.models = [recorded_model(h, inner) for inner in model.models]
        return fallback
    if isinstance(model, WrapperModel):
        wrapper = copy.copy(model)
        wrapper.wrapped = recorded_model(h, model.wrapped)
        return wrapper
    provider: Any = model.provider
    client: Any = getattr(provider, "client", None) if provider is not None else None
    http: Any = getattr(client, "_client", None)
    module = _httpx_module_of(http)
    if provider is None or module is None or not callable(getattr(client, "copy", None)):
        raise NotRecordable(
            f"the model {type(model).__name__} ({model.model_name!r}) does not send through an OpenAI or Anthropic "
            "SDK client, so its calls would go out unrecorded: replay-tui records PydanticAI's OpenAIChatModel, "
            "OpenAIResponsesModel, AnthropicModel and the models of the providers built on those clients"
        )
    if getattr(http._transport, "harness", None) is h:  # sends through h already
        return model
    recorded_provider = copy.copy(provider)
    vars(recorded_provider).pop("_enter_lock", None)  # a lock bound to the loop the user's provider first ran on
    recorded_provider._client = client.copy(http_client=_recording_http_client(h, module, http))
    recorded_provider._own_http_client = None  # the user's provider owns the user's client; nothing here to close
    recorded_provider._http_client_factory = None
    recorded_provider._entered_count = 0
    recorded: Any = copy.copy(model)
    recorded._provider = recorded_provider
    return recorded  # type: ignore[no-any-return]


def _httpx_module_of(http: Any) -> ModuleType | None:
    """httpx2 or httpx, whichever ``http`` is an ``AsyncClient`` of (the SDKs subclass it), else None."""
    for name in ("httpx2", "httpx"):
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        if isinstance(http, module.AsyncClient):
            return module
    return None


def _recording_http_client(h: Harness, module: ModuleType, http: Any) -> Any:
    """An ``AsyncClient`` with ``http``'s settings whose transports (and mounts: proxies) are the harness's, each
    sending through the transport ``http`` had. Closing it leaves ``http``'s transports open: they are the user's."""

    def recording(transport: Any) -> Any:
        inner = _borrowed_class(module)(transport)
        return _once_class(module)(make_async_transport(h, httpx_module=module, inner=inner))

    return module.AsyncClient(
        transport=recording(http._transport),
        mounts={
            pattern.pattern: None if transport is None else recording(transport)
            for pattern, transport in http._mounts.items()
        },
        headers=http.headers,
        cookies=http.cookies,
        params=http.params,
        auth=http.auth,
        timeout=http.timeout,
        follow_redirects=http.follow_redirects,
        max_redirects=http.max_redirects,
        event_hooks=http.event_hooks,
        base_url=http.base_url,
        trust_env=False,  # the mounts above are the proxies the user's client found in the environment
    )


@functools.cache
def _borrowed_class(module: ModuleType) -> type:
    class Borrowed(module.AsyncBaseTransport):  # type: ignore[name-defined, misc]
        """The user's transport, used and never closed (its client closes it)."""

        def __init__(self, transport: Any) -> None:
            self.transport = transport

        async def handle_async_request(self, request: Any) -> Any:
            return await self.transport.handle_async_request(request)

        async def aclose(self) -> None:
            pass

    return Borrowed


@functools.cache
def _once_class(module: ModuleType) -> type:
    """The harness transport, with each response's stream read once: a second read raises ``StreamConsumed``, as
    httpx's own streams do. The openai SDK (3.x) reads a chat-completions stream again after ``[DONE]`` to drain
    it for the connection's reuse, and takes ``StreamConsumed`` as done; the harness's relayed stream read the
    live one again instead, recorded that error as the stream's cut, and raised it in a replay."""

    class Once(module.AsyncBaseTransport):  # type: ignore[name-defined, misc]
        def __init__(self, transport: Any) -> None:
            self.transport = transport
            self.harness = transport.harness

        async def handle_async_request(self, request: Any) -> Any:
            response = await self.transport.handle_async_request(request)
            response.stream = _read_once_class(module)(response.stream)
            return response

        async def aclose(self) -> None:
            await self.transport.aclose()

    return Once


@functools.cache
def _read_once_class(module: ModuleType) -> type:
    class ReadOnce(module.AsyncByteStream):  # type: ignore[name-defined, misc]
        def __init__(self, stream: Any) -> None:
            self.stream = stream
            self.started = False

        async def __aiter__(self) -> Any:
            if self.started:
                raise module.StreamConsumed()
            self.started = True
            async for chunk in self.stream:
                yield chunk

        async def aclose(self) -> None:
            await self.stream.aclose()

    return ReadOnce

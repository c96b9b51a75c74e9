"""Where each framework opens an MCP transport: routed through ``recorded_transport`` while a run is recorded or
replayed (``current_harness()``), untouched otherwise.

* OpenAI Agents SDK: ``MCPServerStdio.create_streams`` and ``MCPServerStreamableHttp.create_streams`` (the
  method the SDK's servers open their transport with); the server is named by its ``name``;
* PydanticAI (``MCPToolset``, on FastMCP's client): the ``stdio_client`` and ``streamable_http_client`` FastMCP's
  stdio and HTTP transports call; the server is named by the toolset's ``id`` (set while the toolset connects);
* ``langchain-mcp-adapters``: the ``stdio_client`` and ``streamable_http_client`` its sessions call; the server is
  named by its key in ``MultiServerMCPClient(connections)`` once ``record_mcp(client)`` has seen the client.

Elsewhere a server is named after what it runs (a script's stem, else the command) or where it listens.
"""

from __future__ import annotations

import contextvars
import functools
import importlib
import os
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from importlib import metadata
from typing import Any
from urllib.parse import urlsplit

from ...harness import CURRENT_HARNESS
from .session import recorded_transport

#: The name the framework gives the server it is connecting (set around the connection by the framework glue).
SERVER_NAME: contextvars.ContextVar[str | None] = contextvars.ContextVar("replay_tui_mcp_server", default=None)
#: ``langchain-mcp-adapters`` connections by what they start or reach -> their key (``record_mcp``).
_NAMED: dict[tuple[Any, ...], str] = {}
_PATCHED = "__replay_tui_mcp_original__"


def mcp_major() -> int:
    return int(metadata.version("mcp").split(".", 1)[0])


def transport_for(
    name: str | None, kind: str, open_live: Callable[[], AbstractAsyncContextManager[Any]], arity: int
) -> AbstractAsyncContextManager[Any]:
    """The transport a framework gets: recorded or replayed inside a run, its own outside one."""
    harness = CURRENT_HARNESS.get()
    if harness is None:
        return open_live()
    return recorded_transport(harness, name or "server", kind, open_live, arity)


def stdio_name(params: Any) -> str:
    """What a stdio server is called when nobody named it: the stem of the script it runs, else its command."""
    args = [str(arg) for arg in getattr(params, "args", None) or ()]
    script = next((arg for arg in args if os.path.splitext(arg)[1] in (".py", ".js", ".mjs", ".ts")), None)
    return os.path.splitext(os.path.basename(script))[0] if script else os.path.basename(str(params.command))


def url_name(url: Any) -> str:
    parts = urlsplit(str(url))
    return f"{parts.netloc}{parts.path}" or str(url)


def _stdio_dispatch(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def stdio_client(server: Any, *args: Any, **kwargs: Any) -> Any:
        name = SERVER_NAME.get() or _NAMED.get(_stdio_key(server)) or stdio_name(server)
        return transport_for(name, "stdio", lambda: original(server, *args, **kwargs), 2)

    setattr(stdio_client, _PATCHED, original)
    return stdio_client


def _http_dispatch(original: Callable[..., Any], arity: int) -> Callable[..., Any]:
    @functools.wraps(original)
    def streamable_http_client(url: Any, *args: Any, **kwargs: Any) -> Any:
        name = SERVER_NAME.get() or _NAMED.get(("http", str(url))) or url_name(url)
        return transport_for(name, "streamable-http", lambda: original(url, *args, **kwargs), arity)

    setattr(streamable_http_client, _PATCHED, original)
    return streamable_http_client


def _stdio_key(params: Any) -> tuple[Any, ...]:
    return (
        "stdio",
        str(getattr(params, "command", "")),
        tuple(str(arg) for arg in getattr(params, "args", None) or ()),
    )


def _route(module_name: str, attribute: str, dispatch: Callable[[Callable[..., Any]], Callable[..., Any]]) -> None:
    """Replace ``module.attribute`` (a transport function as that module bound it) by its dispatcher, once."""
    try:
        module = importlib.import_module(module_name)
    except ImportError:
        return
    original = getattr(module, attribute, None)
    if original is None or hasattr(original, _PATCHED):
        return
    setattr(module, attribute, dispatch(original))


def _route_agents_sdk() -> None:
    try:
        from agents.mcp import server as sdk
    except ImportError:
        return
    http_arity = 2 if mcp_major() >= 2 else 3
    for cls, kind, arity in (
        (sdk.MCPServerStdio, "stdio", 2),
        (sdk.MCPServerStreamableHttp, "streamable-http", http_arity),
    ):
        original = cls.__dict__["create_streams"]
        if hasattr(original, _PATCHED):
            continue

        def create_streams(self: Any, _original: Any = original, _kind: str = kind, _arity: int = arity) -> Any:
            return transport_for(str(self.name), _kind, lambda: _original(self), _arity)

        setattr(create_streams, _PATCHED, original)
        cls.create_streams = create_streams  # type: ignore[method-assign]


def _route_pydantic_ai() -> None:
    """A toolset names the server while it connects; a recorded one opens its stdio server per run (FastMCP's
    ``keep_alive`` off): a process kept from an earlier run would answer calls of a session this run never
    opened, which a replay of this run cannot have."""
    try:
        from fastmcp.client.transports import StdioTransport
        from pydantic_ai.mcp import MCPToolset
    except ImportError:
        return
    original = MCPToolset.__aenter__
    if hasattr(original, _PATCHED):
        return

    @functools.wraps(original)
    async def __aenter__(self: Any) -> Any:
        if CURRENT_HARNESS.get() is not None and isinstance(getattr(self.client, "transport", None), StdioTransport):
            self.client.transport.keep_alive = False
        token = SERVER_NAME.set(self.id or None)
        try:
            return await original(self)
        finally:
            SERVER_NAME.reset(token)

    setattr(__aenter__, _PATCHED, original)
    MCPToolset.__aenter__ = __aenter__  # type: ignore[method-assign]


def install() -> None:
    """Route every framework's MCP transports through the recorder (idempotent; the frameworks not installed
    are left out). Outside a recorded or replayed run nothing changes."""
    http_arity = 2 if mcp_major() >= 2 else 3
    _route_agents_sdk()
    _route_pydantic_ai()
    for module in ("fastmcp.client.transports.stdio", "langchain_mcp_adapters.sessions"):
        _route(module, "stdio_client", _stdio_dispatch)
    for module in ("fastmcp.client.transports.http", "langchain_mcp_adapters.sessions"):
        _route(module, "streamable_http_client", lambda original: _http_dispatch(original, http_arity))


def name_connections(client: Any) -> None:
    """Name the servers of a ``langchain-mcp-adapters`` ``MultiServerMCPClient`` by their keys."""
    for name, connection in (getattr(client, "connections", None) or {}).items():
        if connection.get("transport") == "stdio":
            key = ("stdio", str(connection.get("command", "")), tuple(str(arg) for arg in connection.get("args") or ()))
            _NAMED[key] = name
        elif "url" in connection:
            _NAMED[("http", str(connection["url"]))] = name


def is_mcp_tool(tool: Any) -> bool:
    """Whether a LangChain tool is one ``langchain-mcp-adapters`` made (its calls are recorded at the MCP seam, so a
    framework recorder must not record them again)."""
    coroutine = getattr(tool, "coroutine", None)
    return getattr(coroutine, "__module__", None) == "langchain_mcp_adapters.tools"

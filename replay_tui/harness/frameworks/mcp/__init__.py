"""Record and strictly replay the MCP servers an agent uses (``mcp``; see ../mcp.md).

    from replay_tui.harness.frameworks.mcp import record_mcp

    record_mcp()                  # once, before the run connects: every MCP session of a run is recorded
    record_mcp(client)            # langchain-mcp-adapters: also names its servers by their keys

Every framework drives ``mcp.ClientSession`` over a transport's pair of streams; the recorder sits between the
two (``session.py``), so the Agents SDK's ``mcp_servers``, PydanticAI's ``MCPToolset`` and
``langchain-mcp-adapters`` are recorded by one piece of code, and a strict replay answers their sessions from
the journal without starting a server. ``glue.py`` routes each framework's transport through it.
"""

from __future__ import annotations

from typing import Any

from .glue import install, is_mcp_tool, name_connections
from .session import MCPServerError, recorded_transport

__all__ = ["MCPServerError", "install", "is_mcp_tool", "record_mcp", "recorded_transport"]

DISTRIBUTIONS = ("mcp",)


def record_mcp(*clients: Any) -> None:
    """Record the MCP sessions every run in this process opens (``install``); each ``MultiServerMCPClient`` given
    has its servers named by their keys in the journal."""
    from ..versions import check_versions

    check_versions(*DISTRIBUTIONS)
    install()
    for client in clients:
        name_connections(client)

"""The MCP servers a ``tools-live`` experiment may reach (see ../mcp.md).

In ``tools-live`` the recorded model answers are served and every tool call runs live, MCP sessions included: a
stdio server is started in the replay's sandbox, an HTTP one is reached through the parent's broker, which
connects only to hosts the tools config names. This plugin names them:

    [[plugins]]
    id = "mcp"
    type = "replay_tui.harness.frameworks.mcp.live:MCPServers"
    options = { urls = ["http://127.0.0.1:8123/mcp"] }

It adds no tools (the framework's MCP tools are its own); in a strict replay nothing is started at all.
"""

from __future__ import annotations

from collections.abc import Mapping

from ...plugins import PluginBase, PluginContext, ToolSpec


class MCPServers(PluginBase):
    extension = "tools"
    version = "1"

    def init(self, context: PluginContext) -> None:
        super().init(context)
        urls = context.options.get("urls", [])
        if not isinstance(urls, list) or not all(isinstance(url, str) for url in urls):
            raise ValueError(f"plugin {context.plugin_id!r}: 'urls' must be a list of MCP server URLs")
        self.urls = list(urls)

    def tools(self) -> Mapping[str, ToolSpec]:
        return {}

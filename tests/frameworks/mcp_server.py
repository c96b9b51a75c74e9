"""A real MCP server for the MCP recorder tests, written with the ``mcp`` package's FastMCP.

``python tests/frameworks/mcp_server.py`` serves it over stdio; ``HTTPServer`` serves it over streamable HTTP on
127.0.0.1 in a thread of the test process. Every start and every tool call is appended to the file
``$MCP_TEST_LOG`` (one JSON object a line: ``{"event", "tool", "pid", "start", "end"}``), so a test sees what ran,
in which process, and when (the overlap of concurrent calls).

Tools, each showing one thing a client meets:

* ``lookup(query, limit)``: a structured result; its parameters are not in alphabetical order, so a schema whose
  members were sorted reaches the model changed;
* ``slow_echo(text, delay)``: waits, for concurrent calls;
* ``count_down(steps)``: progress notifications and a log message during the call;
* ``ask_model(question)``: asks the client's model (sampling);
* ``confirm(action)``: asks the user (elicitation);
* ``where_am_i()``: asks for the client's roots;
* ``broken()``: fails (an error result).
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
import time
from typing import Any

from mcp.server.fastmcp import Context, FastMCP
from mcp.types import SamplingMessage, TextContent
from pydantic import BaseModel


def log(**record: Any) -> None:
    path = os.environ.get("MCP_TEST_LOG")
    if path:
        try:
            with open(path, "a", encoding="utf-8") as out:
                out.write(json.dumps({"pid": os.getpid(), **record}) + "\n")
        except OSError:  # (a sandbox where nothing may be written: the server runs on)
            pass


async def lookup(query: str, limit: int = 2) -> dict[str, Any]:
    """Find customers whose name starts with the query."""
    log(event="call", tool="lookup")
    found = [{"id": "C-7", "name": "Acme GmbH", "tier": "gold"}, {"id": "C-9", "name": "Acme Ltd", "tier": "silver"}]
    return {"query": query, "matches": found[:limit], "total": 2}


async def server_pid() -> str:
    """Which process answers (a live server's answer differs from a recorded one)."""
    return f"pid {os.getpid()}"


async def slow_echo(text: str, delay: float = 0.3) -> str:
    """Say the text back after a while."""
    start = time.time()
    await asyncio.sleep(delay)
    log(event="call", tool="slow_echo", text=text, start=start, end=time.time())
    return f"echo: {text}"


async def count_down(steps: int, ctx: Context) -> str:  # type: ignore[type-arg]
    """Count down, reporting progress."""
    log(event="call", tool="count_down")
    for done in range(1, steps + 1):
        await ctx.report_progress(done, steps, f"step {done}")
    await ctx.info(f"counted {steps}")
    return f"counted down from {steps}"


async def ask_model(question: str, ctx: Context) -> str:  # type: ignore[type-arg]
    """Ask the client's model a question."""
    log(event="call", tool="ask_model")
    answer = await ctx.session.create_message(
        messages=[SamplingMessage(role="user", content=TextContent(type="text", text=question))], max_tokens=40
    )
    text = answer.content.text if isinstance(answer.content, TextContent) else str(answer.content)
    return f"the model said: {text}"


class Approval(BaseModel):
    approved: bool
    note: str = ""


async def confirm(action: str, ctx: Context) -> str:  # type: ignore[type-arg]
    """Ask the user to approve an action."""
    log(event="call", tool="confirm")
    answer = await ctx.elicit(message=f"Approve {action}?", schema=Approval)
    if answer.action == "accept" and answer.data is not None:
        return f"{action}: approved={answer.data.approved} ({answer.data.note})"
    return f"{action}: {answer.action}"


async def where_am_i(ctx: Context) -> str:  # type: ignore[type-arg]
    """The client's roots."""
    log(event="call", tool="where_am_i")
    roots = await ctx.session.list_roots()
    return ", ".join(str(root.uri) for root in roots.roots)


async def broken() -> str:
    """Always fails."""
    log(event="call", tool="broken")
    raise ValueError("the CRM is down")


TOOLS = (lookup, server_pid, slow_echo, count_down, ask_model, confirm, where_am_i, broken)


def build_server() -> FastMCP:
    """A new server with every tool (a FastMCP's HTTP session manager runs once: each HTTP server gets its own)."""
    built = FastMCP("crm-tools", log_level="WARNING")
    for tool in TOOLS:
        built.tool()(tool)
    return built


class HTTPServer:
    """The server over streamable HTTP on a free 127.0.0.1 port, in a thread; ``requests`` counts the HTTP requests
    it received (a replay must add none)."""

    def __init__(self) -> None:
        import socket

        import uvicorn

        self.requests = 0
        app = build_server().streamable_http_app()

        async def counted(scope: Any, receive: Any, send: Any) -> None:
            if scope["type"] == "http":
                self.requests += 1
            await app(scope, receive, send)

        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        config = uvicorn.Config(counted, log_level="warning", lifespan="on")
        self.uvicorn = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.uvicorn.run, kwargs={"sockets": [sock]}, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.uvicorn.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("the MCP HTTP server did not start")
            time.sleep(0.01)

    def close(self) -> None:
        self.uvicorn.should_exit = True
        self.thread.join(timeout=5)


if __name__ == "__main__":
    log(event="start")
    build_server().run("stdio")

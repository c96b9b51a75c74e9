"""The hooks the recorder puts into LangGraph and LangChain, once per process: the one place that touches
their internals (checked against the tested versions, ``versions.py``).

LangGraph has no per-run hook around a tool's execution or after a superstep, and LangChain's callbacks
see a chat model call but not the model; so a few methods are wrapped at class level. Each wrapper does
nothing more than the original outside a recorded run (no harness in the calling context), and in one it
works through the run's recorder (``recorder.py``):

* ``ToolNode._execute_tool_sync`` / ``_execute_tool_async``: the tool call recorded (``tools.py``);
* ``PregelLoop.tick`` / ``after_tick``: the recorder attached to the graph run before its first superstep,
  the state written after each (``state.py``);
* ``BaseChatModel._generate_with_cache`` / ``_agenerate_with_cache`` / ``stream`` / ``astream``: the
  check that the model's client records (``models.py``).

With ``langchain-mcp-adapters`` imported, the MCP recorder's routing is installed too (``../mcp``: the MCP
sessions are recorded at the MCP seam) and ToolNode hands the adapters' tools through (recording their calls
again would leave a replay serving the outer call and never making the session's).
"""

from __future__ import annotations

import functools
import sys
import threading
from typing import Any, Callable

from ..versions import check_versions

__all__ = ["DISTRIBUTIONS", "instrument", "record_mcp_sessions"]

DISTRIBUTIONS = ("langgraph", "langgraph-checkpoint-sqlite", "langchain-core", "langchain-openai")

_installed = False
_mcp_installed = False
_lock = threading.Lock()


def instrument() -> None:
    """Install the hooks (idempotent; every recorder entry point calls it)."""
    global _installed
    if not _installed:
        with _lock:
            if not _installed:
                check_versions(*DISTRIBUTIONS)
                _install()
                _installed = True
    if not _mcp_installed and "langchain_mcp_adapters" in sys.modules:
        record_mcp_sessions()


def record_mcp_sessions() -> None:
    """The MCP recorder for ``langchain-mcp-adapters``' sessions, its tools left to it. Only once the adapters are
    imported: ``install()`` imports every framework it routes, seconds of a replay's start for a graph with none."""
    global _mcp_installed
    with _lock:
        if _mcp_installed:
            return
        try:
            from ..mcp import install, is_mcp_tool
        except ImportError:  # (the mcp extra is not installed)
            return
        from .tools import tools_recorded_elsewhere

        install()
        tools_recorded_elsewhere(is_mcp_tool)
        _mcp_installed = True


def _install() -> None:
    from langchain_core.language_models.chat_models import BaseChatModel
    from langgraph.errors import GraphInterrupt
    from langgraph.prebuilt.tool_node import ToolNode
    from langgraph.pregel._loop import PregelLoop

    from . import models, state, tools

    execute_sync, execute_async = ToolNode._execute_tool_sync, ToolNode._execute_tool_async

    @functools.wraps(execute_sync)
    def _execute_tool_sync(self: Any, request: Any, input_type: Any, config: Any) -> Any:
        return tools.execute_recorded(self, request, input_type, config, execute_sync)

    @functools.wraps(execute_async)
    async def _execute_tool_async(self: Any, request: Any, input_type: Any, config: Any) -> Any:
        return await tools.aexecute_recorded(self, request, input_type, config, execute_async)

    ToolNode._execute_tool_sync = _execute_tool_sync  # type: ignore[method-assign]
    ToolNode._execute_tool_async = _execute_tool_async  # type: ignore[method-assign]

    tick, after_tick = PregelLoop.tick, PregelLoop.after_tick

    @functools.wraps(tick)
    def _tick(self: Any) -> bool:
        state.superstep_started(self)
        return tick(self)

    @functools.wraps(after_tick)
    def _after_tick(self: Any) -> None:
        superstep, tasks = self.step, list(self.tasks.values())
        try:
            after_tick(self)
        except GraphInterrupt:  # interrupt_after: the writes were applied, the checkpoint saved
            state.superstep_done(self, superstep, tasks)
            raise
        state.superstep_done(self, superstep, tasks)

    PregelLoop.tick = _tick  # type: ignore[method-assign]
    PregelLoop.after_tick = _after_tick  # type: ignore[method-assign]

    def checked(method: Callable[..., Any], *, async_api: bool) -> Callable[..., Any]:
        @functools.wraps(method)
        def call(self: Any, *args: Any, **kwargs: Any) -> Any:
            models.check_model_call(self, async_api=async_api)
            return method(self, *args, **kwargs)  # (a generator or coroutine: returned as the original's is)

        return call

    BaseChatModel._generate_with_cache = checked(BaseChatModel._generate_with_cache, async_api=False)  # type: ignore[method-assign]
    BaseChatModel._agenerate_with_cache = checked(BaseChatModel._agenerate_with_cache, async_api=True)  # type: ignore[method-assign]
    BaseChatModel.stream = checked(BaseChatModel.stream, async_api=False)  # type: ignore[method-assign]
    BaseChatModel.astream = checked(BaseChatModel.astream, async_api=True)  # type: ignore[method-assign]

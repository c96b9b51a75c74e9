"""Framework recorders: record and strictly replay agents whose loop, tools and state belong
to a framework (OpenAI Agents SDK, LangGraph, PydanticAI).

Each recorder is its own module and imports its framework when imported, so the harness
never needs the frameworks installed (they are the extras ``agents-sdk``, ``langgraph`` and
``pydantic-ai``). Every recorder writes through the Harness's public recording API only:
model calls through the httpx transport, tools through the framework's tool hook
(``record_tool_call``), framework state through ``record_state`` and checkpoints through
``write_snapshot``.
"""

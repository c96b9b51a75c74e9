"""A PydanticAI agent with an MCP server, written as PydanticAI's MCP docs write it (an ``MCPToolset`` among the
agent's toolsets, the server sampling the agent's model through ``sampling_model``); the only replay-tui line is
``capabilities=[recording()]``. With ``task["recorded"]`` false the same code runs unrecorded. The task names the
scripted model (``base_url``, ``mcp_model.py``), the question and the server (``mcp_server.py``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fastmcp.client.transports import StdioTransport
from pydantic_ai import Agent
from pydantic_ai.mcp import MCPToolset
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

from replay_tui.harness import Harness
from replay_tui.harness.frameworks.pydantic_ai import recording

from .pydantic_ai_agents import FAKE_OPENAI_KEY


async def crm_agent(h: Harness | None, task: Mapping[str, Any]) -> str:
    model = OpenAIChatModel("gpt-4.1", provider=OpenAIProvider(base_url=task["base_url"], api_key=FAKE_OPENAI_KEY))
    spec = task["server"]
    server: Any = spec["url"] if "url" in spec else StdioTransport(spec["command"], spec["args"], env=spec["env"])
    toolset = MCPToolset(server, id="crm", sampling_model=model)
    agent = Agent(model, toolsets=[toolset], instructions="Answer with the CRM tools.")
    result = await agent.run(task["question"], capabilities=[recording()] if task.get("recorded", True) else [])
    return str(result.output)

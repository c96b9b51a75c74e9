"""Agents SDK programs with a call the recorder cannot see: each recording fails naming it (never ``run ok``
with the call missing from the journal), and the one way to make a tool that runs agents recordable."""

from __future__ import annotations

from typing import Any, AsyncIterator, Mapping

from agents import Agent, LocalShellTool, Model, ModelResponse, Runner, function_tool, set_default_openai_client
from agents.mcp import MCPServer
from openai import AsyncOpenAI

from replay_tui.harness import Harness
from replay_tui.harness.frameworks.agents_sdk import recording, runs_agents

expert = Agent(name="Expert", instructions="You are the expert. Answer in one line.")


@function_tool
async def ask_expert(question: str) -> str:
    """Ask the expert agent."""
    result = await Runner.run(expert, question)  # an agent run inside a function tool's body
    return str(result.final_output)


@runs_agents
@function_tool
async def ask_expert_marked(question: str) -> str:
    """Ask the expert agent."""
    result = await Runner.run(expert, question)
    return str(result.final_output)


def _desk(tool: Any) -> Agent[Any]:
    return Agent(name="Desk", instructions="Ask the expert, then answer.", tools=[tool])


async def _run(task: Mapping[str, Any], agent: Agent[Any]) -> str:
    set_default_openai_client(AsyncOpenAI(base_url=task["base_url"]), use_for_tracing=False)
    result = await Runner.run(agent, task["question"])
    return str(result.final_output)


async def nested_in_tool(h: Harness, task: Mapping[str, Any]) -> str:
    with recording(h):
        return await _run(task, _desk(ask_expert))


async def nested_in_marked_tool(h: Harness, task: Mapping[str, Any]) -> str:
    with recording(h):
        return await _run(task, _desk(ask_expert_marked))


async def local_shell(h: Harness, task: Mapping[str, Any]) -> str:
    shell = Agent(name="Shell", instructions="Run commands.", tools=[LocalShellTool(executor=lambda request: "ok")])
    with recording(h):
        return await _run(task, shell)


class HomeMadeMCPServer(MCPServer):
    """An MCP server of the user's own, talking to whatever it likes: no mcp.ClientSession the recorder sees."""

    name = "files"

    async def connect(self) -> None:
        pass

    async def cleanup(self) -> None:
        pass

    async def list_tools(self, run_context: Any = None, agent: Any = None) -> list[Any]:
        raise AssertionError("never called: the recording fails first")

    async def call_tool(self, tool_name: str, arguments: Any, meta: Any = None) -> Any:
        raise AssertionError("never called")

    async def list_prompts(self) -> Any:
        raise AssertionError("never called")

    async def get_prompt(self, name: str, arguments: Any = None) -> Any:
        raise AssertionError("never called")


async def mcp_server(h: Harness, task: Mapping[str, Any]) -> str:
    with recording(h):
        return await _run(task, Agent(name="Files", instructions="Use the files.", mcp_servers=[HomeMadeMCPServer()]))


class HomeMadeModel(Model):
    """A model of the user's own, talking to whatever it likes: not an OpenAI client the recorder can record."""

    async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
        raise AssertionError("a recording never lets an unrecordable model answer")

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise AssertionError("a recording never lets an unrecordable model answer")


async def home_made_model(h: Harness, task: Mapping[str, Any]) -> str:
    with recording(h):
        return await _run(task, Agent(name="Other", instructions="Hi.", model=HomeMadeModel()))


async def default_client(h: Harness, task: Mapping[str, Any]) -> str:
    """On the SDK's own default client, which it builds at the first model call (``OPENAI_API_KEY`` then)."""
    with recording(h):
        result = await Runner.run(expert, task["question"])
    return str(result.final_output)


async def outside_the_block(h: Harness, task: Mapping[str, Any]) -> str:
    """The recording block closes before the second ``Runner.run``."""
    with recording(h):
        first = await _run(task, expert)
    second = await Runner.run(expert, "again?")
    return f"{first} {second.final_output}"

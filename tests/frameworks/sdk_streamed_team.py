"""Agents as tools on a streamed run, the sub-agents streaming too (examples/agent_patterns/
agents_as_tools_streaming.py): ``Runner.run_streamed`` of an orchestrator whose agent tools have ``on_stream``."""

from __future__ import annotations

from typing import Any, Mapping

from agents import AgentToolStreamEvent, Runner

from replay_tui.harness import Harness
from replay_tui.harness.frameworks.agents_sdk import recording

from . import sdk_team


async def handle_stream(event: AgentToolStreamEvent) -> None:
    STREAMED.append(f"{event['agent'].name}:{event['event'].type}")


STREAMED: list[str] = []
orchestrator = sdk_team.orchestrator_agent.clone(
    tools=[
        sdk_team.spanish_agent.as_tool(
            tool_name="translate_to_spanish",
            tool_description="Translate the user's message to Spanish",
            on_stream=handle_stream,
        ),
        sdk_team.french_agent.as_tool(
            tool_name="translate_to_french",
            tool_description="Translate the user's message to French",
            on_stream=handle_stream,
        ),
    ]
)


async def main(task: Mapping[str, Any]) -> dict[str, Any]:
    sdk_team._connect(task)
    STREAMED.clear()
    result = Runner.run_streamed(orchestrator, task["question"])
    kinds = [event.type async for event in result.stream_events()]
    return {"final": str(result.final_output), "events": len(kinds) > 0, "sub_events": sorted(set(STREAMED))}


async def recorded(h: Harness, task: Mapping[str, Any]) -> dict[str, Any]:
    with recording(h):
        return await main(task)

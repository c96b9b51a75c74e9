"""One-line changes to the Agents SDK pattern agents, for the divergence tests (``replay --agent``)."""

from __future__ import annotations

from typing import Any, Mapping

from agents import ItemHelpers, Runner

from replay_tui.harness import Harness
from replay_tui.harness.frameworks.agents_sdk import recording

from . import sdk_team, sdk_weather

# the weather desk is told a unit: one line of its instructions
_celsius = sdk_weather.agent.clone(instructions="You are a helpful agent. Use the tools; never guess. Use Celsius.")


async def weather_in_celsius(h: Harness, task: Mapping[str, Any]) -> str:
    with recording(h):
        sdk_weather._connect(task)
        result = await Runner.run(_celsius, input=task["question"])
        return str(result.final_output)


# the French translator, an agent tool of the orchestrator, is told to be formal: one line of a sub-agent
_formal = sdk_team.french_agent.clone(instructions=sdk_team.french_agent.instructions + " Be formal.")
_orchestrator = sdk_team.orchestrator_agent.clone(
    tools=[
        sdk_team.orchestrator_agent.tools[0],
        _formal.as_tool(tool_name="translate_to_french", tool_description="Translate the user's message to French"),
    ]
)


async def formal_french(h: Harness, task: Mapping[str, Any]) -> str:
    with recording(h):
        sdk_team._connect(task)
        orchestrator_result = await Runner.run(_orchestrator, task["question"])
        synthesizer_result = await Runner.run(sdk_team.synthesizer_agent, orchestrator_result.to_input_list())
        steps = [
            ItemHelpers.text_message_output(item)
            for item in orchestrator_result.new_items
            if item.type == "message_output_item"
        ]
        return f"{' | '.join(steps)} => {synthesizer_result.final_output}"

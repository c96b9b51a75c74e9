"""One-line changes to the three example agents, for the divergence tests (``replay --agent``)."""

from __future__ import annotations

from typing import Any, Mapping

from agents import SQLiteSession, function_tool
from langchain_core.tools import tool
from pydantic_ai import Agent

from fixtures.agents import agents_sdk_crm as sdk
from fixtures.agents import framework_crm as crm
from fixtures.agents import langgraph_crm as graph
from fixtures.agents import pydantic_ai_crm as pai
from replay_tui.harness import Harness
from replay_tui.harness.frameworks.agents_sdk import run_recorded as run_sdk
from replay_tui.harness.frameworks.pydantic_ai import run_recorded as run_pai

# -- Agents SDK: find_customer takes one more argument -------------------------------------


@function_tool
def find_customer(name: str, include_inactive: bool = False) -> dict[str, Any]:
    """Look a customer up by name."""
    return crm.find_customer(name)


_analyst = sdk.analyst.clone(tools=[find_customer, sdk.open_tickets])
_triage = sdk.triage.clone(handoffs=[_analyst])


async def agents_sdk_extra_argument(h: Harness, task: Mapping[str, Any]) -> str:
    session = SQLiteSession("crm-desk")
    result = await run_sdk(
        h,
        _triage,
        task["question"],
        base_url=task["base_url"],
        model=crm.MODEL,
        context=sdk.SupportDesk(),
        session=session,
    )
    return str(result.final_output)


# -- PydanticAI: other instructions --------------------------------------------------------

_other_prompt = Agent(
    name=pai.crm_agent.name,
    output_type=pai.TicketSummary,
    instructions=crm.INSTRUCTIONS + " Be brief.",
    retries=2,
    tools=[pai.find_customer, pai.open_tickets],
)


async def pydantic_ai_other_prompt(h: Harness, task: Mapping[str, Any]) -> dict[str, Any]:
    result = await run_pai(h, _other_prompt, task["question"], base_url=task["base_url"], model=crm.MODEL)
    return result.output.model_dump()


# -- LangGraph: open_tickets takes one more argument ---------------------------------------


@tool
def open_tickets(customer_id: str, since: str = "") -> list[dict[str, Any]]:
    """The open tickets of a customer, oldest first."""
    return crm.open_tickets(customer_id)


class ExtraArgumentGraph(graph.CRMGraph):
    def build(self, h: Harness, task: Mapping[str, Any]) -> Any:
        original, graph.TOOLS = graph.TOOLS, [graph.find_customer, open_tickets]
        try:
            return super().build(h, task)
        finally:
            graph.TOOLS = original


langgraph_extra_argument = ExtraArgumentGraph

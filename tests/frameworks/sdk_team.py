"""Multi-agent programs as the Agents SDK's own examples write them (examples/agent_patterns/agents_as_tools.py,
examples/customer_service/main.py, examples/agent_patterns/input_guardrails.py and output_guardrails.py,
examples/agent_patterns/parallelization.py), on the Responses API the SDK uses by default. Each program is a
plain ``async def NAME(task)``; its recorded entry point ``recorded_NAME`` adds only ``with recording(h):``.

Side effects a replay must not repeat leave marker files in the directory the task names: the tools, and
the seat booking handoff's ``on_handoff`` callback (which draws a random flight number into the context, as
the example does).
"""

from __future__ import annotations

import asyncio
import os
import random
import time
from typing import Any, Awaitable, Callable, Mapping

from agents import (
    Agent,
    GuardrailFunctionOutput,
    InputGuardrailTripwireTriggered,
    ItemHelpers,
    RunContextWrapper,
    Runner,
    TResponseInputItem,
    function_tool,
    handoff,
    input_guardrail,
    output_guardrail,
    set_default_openai_client,
)
from openai import AsyncOpenAI
from pydantic import BaseModel, Field

from replay_tui.harness import Harness
from replay_tui.harness.frameworks.agents_sdk import recording

_markers: str | None = None


def _mark(what: str) -> None:
    if _markers is not None:
        with open(os.path.join(_markers, f"{what}-{time.monotonic_ns()}"), "x"):
            pass


def _connect(task: Mapping[str, Any]) -> None:
    global _markers
    _markers = task.get("markers")
    set_default_openai_client(AsyncOpenAI(base_url=task["base_url"]), use_for_tracing=False)


# -- agents as tools ------------------------------------------------------------------------------------


@function_tool
def glossary(term: str) -> dict[str, str]:
    """How the house style translates a term."""
    _mark("glossary")
    return {"term": term, "french": "Bonjour", "note": "formal"}


spanish_agent = Agent(
    name="spanish_agent",
    instructions="You translate the user's message to Spanish",
    handoff_description="An english to spanish translator",
)
french_agent = Agent(
    name="french_agent",
    instructions="You translate the user's message to French. Look terms up in the glossary.",
    handoff_description="An english to french translator",
    tools=[glossary],
)
orchestrator_agent = Agent(
    name="orchestrator_agent",
    instructions=(
        "You are a translation agent. You use the tools given to you to translate."
        "If asked for multiple translations, you call the relevant tools in order."
        "You never translate on your own, you always use the provided tools."
    ),
    tools=[
        spanish_agent.as_tool(
            tool_name="translate_to_spanish",
            tool_description="Translate the user's message to Spanish",
        ),
        french_agent.as_tool(
            tool_name="translate_to_french",
            tool_description="Translate the user's message to French",
        ),
    ],
)
synthesizer_agent = Agent(
    name="synthesizer_agent",
    instructions="You inspect translations, correct them if needed, and produce a final concatenated response.",
)


async def translate(task: Mapping[str, Any]) -> str:
    _connect(task)
    orchestrator_result = await Runner.run(orchestrator_agent, task["question"])
    steps = [
        ItemHelpers.text_message_output(item)
        for item in orchestrator_result.new_items
        if item.type == "message_output_item"
    ]
    synthesizer_result = await Runner.run(synthesizer_agent, orchestrator_result.to_input_list())
    return f"{' | '.join(steps)} => {synthesizer_result.final_output}"


# -- handoff(...) objects, a context the tools and the handoff change -------------------------------------


class AirlineAgentContext(BaseModel):
    passenger_name: str | None = None
    confirmation_number: str | None = None
    seat_number: str | None = None
    flight_number: str | None = None


@function_tool(name_override="faq_lookup_tool", description_override="Lookup frequently asked questions.")
async def faq_lookup_tool(question: str) -> str:
    _mark("faq_lookup_tool")
    return "You are allowed to bring one bag on the plane."


@function_tool
async def update_seat(context: RunContextWrapper[AirlineAgentContext], confirmation_number: str, new_seat: str) -> str:
    """
    Update the seat for a given confirmation number.

    Args:
        confirmation_number: The confirmation number for the flight.
        new_seat: The new seat to update to.
    """
    _mark("update_seat")
    context.context.confirmation_number = confirmation_number
    context.context.seat_number = new_seat
    assert context.context.flight_number is not None, "Flight number is required"
    return f"Updated seat to {new_seat} for confirmation number {confirmation_number}"


async def on_seat_booking_handoff(context: RunContextWrapper[AirlineAgentContext]) -> None:
    _mark("on_seat_booking_handoff")
    context.context.flight_number = f"FLT-{random.randint(100, 999)}"


faq_agent = Agent[AirlineAgentContext](
    name="FAQ Agent",
    handoff_description="A helpful agent that can answer questions about the airline.",
    instructions="You are an FAQ agent. Use the faq lookup tool to answer the question.",
    tools=[faq_lookup_tool],
)
seat_booking_agent = Agent[AirlineAgentContext](
    name="Seat Booking Agent",
    handoff_description="A helpful agent that can update a seat on a flight.",
    instructions="You are a seat booking agent. Use the update seat tool to update the seat on the flight.",
    tools=[update_seat],
)
triage_agent = Agent[AirlineAgentContext](
    name="Triage Agent",
    handoff_description="A triage agent that can delegate a customer's request to the appropriate agent.",
    instructions="You are a helpful triaging agent. You can use your tools to delegate questions to other appropriate agents.",
    handoffs=[
        handoff(agent=faq_agent, tool_name_override="transfer_to_faq_agent"),
        handoff(
            agent=seat_booking_agent,
            on_handoff=on_seat_booking_handoff,
            tool_name_override="transfer_to_seat_booking_agent",
        ),
    ],
)


async def airline(task: Mapping[str, Any]) -> dict[str, Any]:
    _connect(task)
    context = AirlineAgentContext()
    result = await Runner.run(triage_agent, task["question"], context=context)
    return {"answer": str(result.final_output), "agent": result.last_agent.name, "context": context.model_dump()}


# -- guardrails, which the SDK runs beside the model call ----------------------------------------------


class MathHomeworkOutput(BaseModel):
    reasoning: str
    is_math_homework: bool


guardrail_agent = Agent(
    name="Guardrail check",
    instructions="Check if the user is asking you to do their math homework.",
    output_type=MathHomeworkOutput,
)


@input_guardrail
async def math_guardrail(
    context: RunContextWrapper[None], agent: Agent, input: str | list[TResponseInputItem]
) -> GuardrailFunctionOutput:
    result = await Runner.run(guardrail_agent, input, context=context.context)
    final_output = result.final_output_as(MathHomeworkOutput)
    return GuardrailFunctionOutput(output_info=final_output, tripwire_triggered=final_output.is_math_homework)


class MessageOutput(BaseModel):
    reasoning: str = Field(description="Thoughts on how to respond to the user's message")
    response: str = Field(description="The response to the user's message")


@output_guardrail
async def sensitive_data_check(
    context: RunContextWrapper, agent: Agent, output: MessageOutput
) -> GuardrailFunctionOutput:
    return GuardrailFunctionOutput(
        output_info={"phone": "650" in output.response}, tripwire_triggered="650" in output.response
    )


support_agent = Agent(
    name="Customer support agent",
    instructions="You are a customer support agent. You help customers with their questions.",
    input_guardrails=[math_guardrail],
    output_guardrails=[sensitive_data_check],
    output_type=MessageOutput,
)


async def guarded(task: Mapping[str, Any]) -> list[str]:
    _connect(task)
    answers = []
    for question in task["questions"]:
        try:
            result = await Runner.run(support_agent, question)
            answers.append(result.final_output.response)
        except InputGuardrailTripwireTriggered:
            answers.append("Sorry, I can't help you with your math homework.")
    return answers


# -- parallel runs ---------------------------------------------------------------------------------------

translation_picker = Agent(
    name="translation_picker",
    instructions="You pick the best Spanish translation from the given options.",
)


async def parallel(task: Mapping[str, Any]) -> str:
    _connect(task)
    msg = task["question"]
    res_1, res_2, res_3 = await asyncio.gather(
        Runner.run(spanish_agent, msg),
        Runner.run(spanish_agent, msg),
        Runner.run(spanish_agent, msg),
    )
    outputs = [ItemHelpers.text_message_outputs(res.new_items) for res in (res_1, res_2, res_3)]
    translations = "\n\n".join(outputs)
    best_translation = await Runner.run(translation_picker, f"Input: {msg}\n\nTranslations:\n{translations}")
    return str(best_translation.final_output)


# -- recorded: the documented line around each program ---------------------------------------------------


def _recorded(program: Callable[[Mapping[str, Any]], Awaitable[Any]]) -> Callable[[Harness, Mapping[str, Any]], Any]:
    async def agent(h: Harness, task: Mapping[str, Any]) -> Any:
        with recording(h):
            return await program(task)

    return agent


recorded_translate = _recorded(translate)
recorded_airline = _recorded(airline)
recorded_guarded = _recorded(guarded)
recorded_parallel = _recorded(parallel)

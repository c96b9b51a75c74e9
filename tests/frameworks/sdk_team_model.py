"""The loopback model's side of ``sdk_team``: what each agent of the team answers, told by its instructions."""

from __future__ import annotations

import json

from fixtures.agents.loopback_openai import Reply, Turn

#: Seconds each answer of the agents the tests time waits before it starts (0: at once).
DELAYS: dict[str, float] = {}


def team_policy(turn: Turn) -> Reply:
    agent = _agent_of(turn)
    delay = DELAYS.get(agent, 0.0)
    if agent == "orchestrator_agent":
        if not turn.calls:
            text = turn.user_text
            return Reply(
                calls=(("translate_to_spanish", {"input": text}), ("translate_to_french", {"input": text})), delay=delay
            )
        return Reply(
            text=f"Spanish: {turn.output_of('translate_to_spanish')}; French: {turn.output_of('translate_to_french')}"
        )
    if agent == "spanish_agent":
        return Reply(text="¡Buenos días!", delay=delay)
    if agent == "french_agent":
        if "glossary" not in turn.calls:
            return Reply(calls=(("glossary", {"term": "good morning"}),))
        return Reply(text=f"Bonjour ({turn.output_of('glossary')})")
    if agent == "synthesizer_agent":
        return Reply(text="¡Buenos días! / Bonjour")
    if agent == "Triage Agent":
        target = "transfer_to_seat_booking_agent" if "seat" in turn.user_text else "transfer_to_faq_agent"
        return Reply(calls=((target, {}),))
    if agent == "Seat Booking Agent":
        if "update_seat" not in turn.calls:
            return Reply(calls=(("update_seat", {"confirmation_number": "ABC123", "new_seat": "12A"}),))
        return Reply(text=f"Done: {turn.output_of('update_seat')}")
    if agent == "FAQ Agent":
        if "faq_lookup_tool" not in turn.calls:
            return Reply(calls=(("faq_lookup_tool", {"question": turn.user_text}),))
        return Reply(text=str(turn.output_of("faq_lookup_tool")))
    if agent == "Guardrail check":
        homework = "solve" in turn.user_text.lower()
        return Reply(text=json.dumps({"reasoning": "checked", "is_math_homework": homework}), delay=delay)
    if agent == "Customer support agent":
        return Reply(text=json.dumps({"reasoning": "known", "response": "Sacramento."}), delay=delay)
    if agent == "translation_picker":
        return Reply(text="Best: ¡Buenos días!")
    return Reply(text=f"no script for {agent!r}")


def _agent_of(turn: Turn) -> str:
    instructions = turn.instructions
    for prefix, agent in (
        ("You are a translation agent", "orchestrator_agent"),
        ("You translate the user's message to Spanish", "spanish_agent"),
        ("You translate the user's message to French", "french_agent"),
        ("You inspect translations", "synthesizer_agent"),
        ("You are a helpful triaging agent", "Triage Agent"),
        ("You are a seat booking agent", "Seat Booking Agent"),
        ("You are an FAQ agent", "FAQ Agent"),
        ("Check if the user is asking you to do their math homework", "Guardrail check"),
        ("You are a customer support agent", "Customer support agent"),
        ("You pick the best Spanish translation", "translation_picker"),
    ):
        if instructions.startswith(prefix):
            return agent
    return instructions[:40]

"""A chat service as a team writes one: FastAPI on uvicorn, an OpenAI client per request, and one recorded
session per request (the three lines of ``record_session`` are all the recording adds).

Configured by the environment: ``CHAT_JOURNALS`` (where each session's journal goes), ``CHAT_MODEL_URL``
(the model server), ``CHAT_ON_JOURNAL_ERROR`` (``fail`` or ``continue``).
"""

from __future__ import annotations

import os
from typing import Any

from fastapi import FastAPI
from fastapi.responses import JSONResponse
from openai import AsyncOpenAI
from pydantic import BaseModel

from replay_tui.harness import current_harness, record_session
from replay_tui.harness.config import config_from_mapping
from replay_tui.harness.httpx_transport import async_http_client

CONFIG = config_from_mapping(
    {"harness": {"on_journal_error": os.environ.get("CHAT_ON_JOURNAL_ERROR", "fail"), "snapshot_every": 50}}
)
AGENT = "tests.service.chat_service:answer"

app = FastAPI()


class Ask(BaseModel):
    session_id: str
    message: str


@app.post("/chat")
async def chat(ask: Ask) -> Any:
    task = {"message": ask.message, "model_url": os.environ["CHAT_MODEL_URL"]}
    try:
        async with record_session(
            CONFIG, directory=os.environ["CHAT_JOURNALS"], session_id=ask.session_id, agent=AGENT, input=task
        ) as h:
            reply = await h.session.run()
    except Exception as error:  # the service's own error handling: the request fails, the server goes on
        return JSONResponse({"error": f"{type(error).__name__}: {error}"}, status_code=500)
    return {"reply": reply, "recorded": h.unrecorded is None}


def ticket_number() -> int:
    """A helper deep in the service that draws a random number: its own session's, through current_harness()."""
    return current_harness().random.randint(1000, 9999)


async def lookup_order(order: str) -> dict[str, Any]:
    return {"order": order, "status": "shipped"}


async def answer(h: Any, task: dict[str, Any]) -> str:
    """The agent: ask the model, run the tool it asks for, ask again."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": task["message"]}]
    tools = [
        {
            "type": "function",
            "function": {"name": "lookup_order", "parameters": {"type": "object", "properties": {"order": {}}}},
        }
    ]
    # a client per session, closed with it (its connections too), as the SDK's docs close one
    async with AsyncOpenAI(
        api_key="sk-service-key", base_url=task["model_url"], http_client=async_http_client(h)
    ) as client:
        first = await client.chat.completions.create(model="m", messages=messages, tools=tools)
        message = first.choices[0].message
        messages.append(message.model_dump(exclude_none=True))
        for call in message.tool_calls or []:
            result = await h.arecord_tool_call(
                call.function.name, {"order": "A-1"}, lambda copy: lookup_order(copy["order"]), call_id=call.id
            )
            messages.append({"role": "tool", "tool_call_id": call.id, "content": str(result)})
        final = await client.chat.completions.create(model="m", messages=messages, tools=tools)
    return f"{final.choices[0].message.content} (ticket {ticket_number()})"

"""Agents that read streamed answers through the httpx transport with the real SDKs, and return what they
read: every text delta as the SDK yielded it, the tool-call arguments, and how the stream ended. A replay
must hand them the same, so their output is the test. The input is ``{base_url, ...}``."""

from __future__ import annotations

import asyncio
from typing import Any, Mapping

import anthropic
import openai

from replay_tui.harness import Harness
from replay_tui.harness.httpx_transport import async_http_client, http_client

MESSAGES = [{"role": "user", "content": "What is in the vault?"}]


def _openai(h: Harness, task: Mapping[str, Any], *, asynchronous: bool = False) -> Any:
    sdk, http = (openai.AsyncOpenAI, async_http_client) if asynchronous else (openai.OpenAI, http_client)
    return sdk(
        api_key="sk-test-stream",
        base_url=task["base_url"] + "/v1",
        http_client=http(h),
        max_retries=0,
        timeout=task.get("timeout", 30),
    )


def _read(chunk: Any, deltas: list[str]) -> str:
    """Note a chunk's text delta in ``deltas``; its tool-call argument fragments."""
    arguments = ""
    for choice in chunk.choices:
        if choice.delta.content is not None:
            deltas.append(choice.delta.content)
        for call in choice.delta.tool_calls or ():
            arguments += (call.function and call.function.arguments) or ""
    return arguments


def _ended(error: BaseException | None) -> str:
    return "end" if error is None else type(error).__name__


def chat(h: Harness, task: Mapping[str, Any]) -> dict[str, Any]:
    """Chat completions, sync: deltas, arguments, and the error the stream ended with."""
    deltas: list[str] = []
    arguments = ""
    error = None
    try:
        stream = _openai(h, task).chat.completions.create(model="gpt-4.1-mini", messages=MESSAGES, stream=True)
        for chunk in stream:
            arguments += _read(chunk, deltas)
            if task.get("stop_after") and len([d for d in deltas if d]) >= task["stop_after"]:
                stream.close()  # the caller stops reading
                break
    except Exception as caught:  # noqa: BLE001 (how the stream ended is the output)
        error = caught
    return {"deltas": deltas, "arguments": arguments, "ended": _ended(error)}


async def achat(h: Harness, task: Mapping[str, Any]) -> dict[str, Any]:
    """Chat completions, async; with ``cancel_after``, the reading task is cancelled after that many texts."""
    client = _openai(h, task, asynchronous=True)
    deltas: list[str] = []
    arguments = ""
    enough = asyncio.Event()

    async def read() -> None:
        nonlocal arguments
        stream = await client.chat.completions.create(model="gpt-4.1-mini", messages=MESSAGES, stream=True)
        async for chunk in stream:
            arguments += _read(chunk, deltas)
            if task.get("cancel_after") and len([d for d in deltas if d]) >= task["cancel_after"]:
                enough.set()

    reader = asyncio.create_task(read())
    error: BaseException | None = None
    if task.get("cancel_after"):
        done, _ = await asyncio.wait([reader, asyncio.create_task(enough.wait())], return_when=asyncio.FIRST_COMPLETED)
        if reader not in done:
            reader.cancel()
    try:
        await reader
    except BaseException as caught:  # noqa: BLE001 (CancelledError included: how the stream ended is the output)
        error = caught
    return {"deltas": deltas, "arguments": arguments, "ended": _ended(error)}


def messages(h: Harness, task: Mapping[str, Any]) -> dict[str, Any]:
    """Anthropic messages, sync, as raw events: text deltas, the tool input JSON, and the SDK's own final message."""
    client = anthropic.Anthropic(
        api_key="sk-ant-test-stream", base_url=task["base_url"], http_client=http_client(h), max_retries=0
    )
    deltas: list[str] = []
    arguments = ""
    with client.messages.stream(model="claude-sonnet-4-5", max_tokens=100, messages=MESSAGES) as stream:
        for event in stream:
            if event.type == "content_block_delta" and event.delta.type == "text_delta":
                deltas.append(event.delta.text)
            elif event.type == "content_block_delta" and event.delta.type == "input_json_delta":
                arguments += event.delta.partial_json
        final = stream.get_final_message()
    blocks = [block.model_dump(exclude_none=True) for block in final.content]
    return {"deltas": deltas, "arguments": arguments, "final": blocks, "ended": "end"}


def responses(h: Harness, task: Mapping[str, Any]) -> dict[str, Any]:
    """The Responses API, sync: text and argument deltas, and the whole texts the closing events repeat."""
    deltas: list[str] = []
    arguments = ""
    repeated: list[str] = []
    stream = _openai(h, task).responses.create(model="gpt-4.1-mini", input="What is in the vault?", stream=True)
    for event in stream:
        if event.type == "response.output_text.delta":
            deltas.append(event.delta)
        elif event.type == "response.function_call_arguments.delta":
            arguments += event.delta
        elif event.type == "response.output_text.done":
            repeated.append(event.text)
        elif event.type == "response.completed":
            for item in event.response.output:
                if item.type == "message":
                    repeated.extend(part.text for part in item.content if part.type == "output_text")
                elif item.type == "function_call":
                    repeated.append(item.arguments)
    return {"deltas": deltas, "arguments": arguments, "repeated": repeated, "ended": "end"}

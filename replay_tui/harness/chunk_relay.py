"""A model plugin's streamed chunks relayed for ``Harness.model`` / ``amodel`` as they arrive.

``streamed_payload`` / ``astreamed_payload`` hand each chunk's text to ``on_chunk`` as it arrives, redacted as it
passes (STREAMING.md); the model.response payload is what ``on_chunk`` was handed, with the error that cut
the stream, if any.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, Callable, Iterable, Iterator, Mapping
from typing import Any

from ..journal.model_response import tool_arguments
from ..journal.sse import assemble_stream
from .redaction import Redactor
from .seam import error_from_payload, error_to_payload
from .stream_redaction import ChannelRedactor, policy_for

OnChunk = Callable[[str], None]


class ChunkRelay:
    """A plugin's chunks as the caller is handed them: each chunk's text redacted as it passes (a tail
    held back moves to a later chunk, the last of it to the chunk that says the answer ended, or to one more
    chunk when none does). ``chunks`` are what was handed, for the record."""

    def __init__(self, redactor: Redactor) -> None:
        self._text = ChannelRedactor(policy_for(redactor))
        self._ended = False
        self.chunks: list[dict[str, Any]] = []

    def feed(self, chunk: Any) -> str:
        """The text to hand over for ``chunk`` (ValueError: not a chunk; the model's error)."""
        if not isinstance(chunk, Mapping):
            raise ValueError(f"a streamed chunk is an object, found {type(chunk).__name__}")
        content = chunk.get("content")
        if content is not None and not isinstance(content, str):
            raise ValueError(f"a streamed text delta is a string, found {type(content).__name__}")
        text = self._text.feed(content or "")
        if chunk.get("finish_reason") and not self._ended:
            self._ended = True
            text += self._text.finish()
        self.chunks.append({**chunk, "content": text})
        return text

    def finish(self) -> str | None:
        """The stream ended (or failed): the held tail, handed as one more chunk (None when none is needed)."""
        if self._ended:
            return None
        self._ended = True
        tail = self._text.finish()
        if not tail:
            return None
        self.chunks.append({"content": tail})
        return tail

    def payload(self, request_hash: str, error: BaseException | None = None) -> dict[str, Any]:
        """The model.response of what was handed over; a cut stream's tool arguments may be unfinished JSON."""
        response, stream = assemble_stream(self.chunks, parse_arguments=tool_arguments if error else None)
        payload: dict[str, Any] = {"request_hash": request_hash, "response": response, "stream": stream}
        if error is not None:
            payload["error"] = error_to_payload(error)
        return payload


def streamed_payload(
    redactor: Redactor, request_hash: str, chunks: Iterable[Any], on_chunk: OnChunk | None, raised: list[BaseException]
) -> dict[str, Any]:
    """Read a plugin's chunks, handing each text to ``on_chunk`` as it comes. An error of the model's ends the
    answer there (recorded, and raised as recorded); one of the caller's (``on_chunk`` raised, the run was
    interrupted) too, and it is put in ``raised`` for the harness to raise itself once the answer is written."""
    relay = ChunkRelay(redactor)
    iterator = iter(chunks)
    failure: Exception | None = None
    try:
        while True:
            try:
                text = relay.feed(next(iterator))
            except StopIteration:
                break
            except Exception as error:  # the model's: what arrived (the tail held back too) goes first
                failure = error
                break
            _hand(on_chunk, text)
        _hand(on_chunk, relay.finish())
    except BaseException as error:  # the caller's: on_chunk raised, or the run was interrupted
        raised.append(error)
        _close(iterator)
        return relay.payload(request_hash, error)
    return _payload(relay, request_hash, failure)


async def astreamed_payload(
    redactor: Redactor,
    request_hash: str,
    chunks: AsyncIterable[Any],
    on_chunk: OnChunk | None,
    raised: list[BaseException],
) -> dict[str, Any]:
    """``streamed_payload`` of an async plugin's chunks; the caller's task cancelled is the caller's error."""
    relay = ChunkRelay(redactor)
    iterator = chunks.__aiter__()
    failure: Exception | None = None
    try:
        while True:
            try:
                text = relay.feed(await iterator.__anext__())
            except StopAsyncIteration:
                break
            except Exception as error:
                failure = error
                break
            _hand(on_chunk, text)
        _hand(on_chunk, relay.finish())
    except BaseException as error:  # CancelledError among them
        raised.append(error)
        aclose = getattr(iterator, "aclose", None)
        if aclose is not None:
            import asyncio  # (only async code gets here: a sync agent never imports it)

            await asyncio.shield(aclose())
        return relay.payload(request_hash, error)
    return _payload(relay, request_hash, failure)


def _payload(relay: ChunkRelay, request_hash: str, error: Exception | None) -> dict[str, Any]:
    """The payload of a stream that ended by itself or by the model's ``error``."""
    try:
        return relay.payload(request_hash, error)
    except ValueError as malformed:  # a finished answer whose tool arguments are not JSON: the model's error
        return {"request_hash": request_hash, "response": None, "error": error_to_payload(malformed)}


def _hand(on_chunk: OnChunk | None, text: str | None) -> None:
    if on_chunk is not None and text is not None:
        on_chunk(text)


def _close(iterator: Iterator[Any]) -> None:
    close = getattr(iterator, "close", None)
    if close is not None:
        close()


def recorded_cut(payload: Mapping[str, Any]) -> BaseException:
    """The error a recorded answer ended with, as the agent saw it: a cancelled task's ``CancelledError`` is
    raised as one (so the agent's cancellation handling runs again), any other as ``error_from_payload``."""
    error = payload.get("error")
    if isinstance(error, Mapping) and error.get("type") == "asyncio.exceptions.CancelledError":
        import asyncio  # (a recorded cancellation: an async agent's)

        return asyncio.CancelledError(str(error.get("message") or ""))
    return error_from_payload(payload)

"""Recording levels: what a journal keeps of each model call (``[harness] level``).

``trace`` keeps everything: every request in full, every streamed answer chunk by chunk. ``info`` keeps
what a strict replay needs and what a person reads first, and leaves out the bulk:

* a ``model.request`` keeps its ``request_hash`` (the key a replay matches, computed from the full
  request as always) and a ``summary`` instead of the request: the model, how many messages of each
  role, the text of the user's messages, the tool names and which other parameters were set. A
  divergence at a request then shows which of these changed, not the diff of the whole request;
* a streamed ``model.response`` keeps its text and its events, with the chunks of each run of alike
  events joined into one (a replay hands the SDK the same text in fewer, longer deltas) and, for
  ``h.model`` streams, no chunk boundaries (one chunk). Reasoning an API sends back in the next request
  (signed or encrypted) is kept: without it the next request would differ and the journal would not
  replay.

Tool calls, tool results, clock reads, random draws, inputs, state and the run's end are the same at
both levels. A journal says its level in ``run.started`` (``payload.harness.level``), and the level of
each request is its form (``request`` or ``summary``), so one journal may hold both (a session switched
to ``trace`` while it ran). Matching a produced request against an ``info`` one compares the produced
request's summary (``matches_request``), so a replay works at both levels.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

INFO, TRACE = "info", "trace"
LEVELS = (INFO, TRACE)

#: The top-level request fields the summary names rather than counts.
_TOP = frozenset({"model", "messages", "system", "tools", "params", "headers"})


def recorded_level(run_started: Mapping[str, Any]) -> str:
    """The level a journal was recorded at, from its ``run.started`` payload. A journal written before
    levels existed kept everything: ``trace``."""
    harness = run_started.get("harness")
    level = harness.get("level") if isinstance(harness, Mapping) else None
    return level if level in LEVELS else TRACE


def summarize_request(request: Mapping[str, Any]) -> dict[str, Any]:
    """The ``summary`` an ``info`` journal keeps of a normalized model request."""
    messages = request.get("messages")
    messages = messages if isinstance(messages, list) else []
    roles: dict[str, int] = {}
    user_texts: list[str] = []
    for message in messages:
        role = str(message.get("role")) if isinstance(message, Mapping) else "?"
        roles[role] = roles.get(role, 0) + 1
        if role == "user" and isinstance(message, Mapping):
            user_texts.append(_text_of(message.get("content")))
    tools = request.get("tools")
    params = request.get("params")
    return {
        "model": request.get("model"),
        "messages": len(messages),
        "roles": roles,
        "user_messages": user_texts,
        "system": _text_of(request.get("system"))[:200] if request.get("system") is not None else None,
        "tools": sorted(_tool_name(tool) for tool in tools) if isinstance(tools, list) else [],
        "settings": sorted(set(request) - _TOP | (set(params) if isinstance(params, Mapping) else set())),
    }


def request_view(payload: Mapping[str, Any]) -> dict[str, Any]:
    """The request of a ``model.request`` as far as the journal holds it: the request, or what its summary
    says of it (its model), for readers that only need that."""
    request = payload.get("request")
    if isinstance(request, dict):
        return request
    summary = payload.get("summary")
    return {"model": summary.get("model")} if isinstance(summary, Mapping) else {}


def matches_request(recorded: Mapping[str, Any], produced: Mapping[str, Any]) -> bool:
    """Whether a produced model.request payload (a full request) equals a recorded one at the recorded one's
    level: as it is against a ``trace`` payload, through its summary against an ``info`` one."""
    if "summary" in recorded and "request" not in recorded and isinstance(produced.get("request"), Mapping):
        return dict(recorded) == info_request(produced)
    return dict(recorded) == dict(produced)


def info_request(payload: Mapping[str, Any]) -> dict[str, Any]:
    """A ``model.request`` payload at ``info``: its hash and its summary."""
    request = payload.get("request")
    if not isinstance(request, Mapping):
        return dict(payload)
    kept = {key: value for key, value in payload.items() if key != "request"}
    kept["summary"] = summarize_request(request)
    return kept


def info_response(payload: dict[str, Any]) -> dict[str, Any]:
    """A ``model.response`` payload at ``info``: a relayed stream's alike events joined, a harness stream's
    boundaries dropped (everything else as it is). A payload with neither is returned itself, not a copy: the
    transport hands the SDK the live response only when the payload written is the one it made (a copy made
    every session's answers be rebuilt from the record, as if the journal held something else)."""
    stream = payload.get("stream")
    kept_stream = (
        {key: value for key, value in stream.items() if key != "boundaries"}
        if isinstance(stream, Mapping) and "boundaries" in stream
        else None
    )
    response = payload.get("response")
    http = response.get("http") if isinstance(response, Mapping) else None
    joined = join_alike_events(http["sse"]) if isinstance(http, Mapping) and isinstance(http.get("sse"), list) else None
    if kept_stream is None and joined is None:
        return payload
    changed = dict(payload)
    if kept_stream is not None:
        changed["stream"] = kept_stream
    if joined is not None:
        changed["response"] = {**response, "http": {**http, "sse": joined}}  # type: ignore[dict-item]
    return changed


def join_alike_events(events: list[Any]) -> list[Any]:
    """A relayed stream's events with each run of alike text events joined into one: the same event (name,
    data with its text fields empty, the fields' order) whose slices add up. Events that differ in any
    other field (an id, a finish reason, usage) stay apart; a Responses API ``sequence_number`` is the
    first's."""
    joined: list[Any] = []
    for item in events:
        last = joined[-1] if joined else None
        if (
            isinstance(item, Mapping)
            and isinstance(last, dict)
            and item.get("slices")
            and last.get("slices")
            and len(item["slices"]) == len(last["slices"])
            and _alike(last, item)
        ):
            last["slices"] = [a + b for a, b in zip(last["slices"], item["slices"])]
            continue
        joined.append(dict(item) if isinstance(item, Mapping) else item)
    return joined


def _alike(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    if a.get("event") != b.get("event") or set(a) != set(b):
        return False
    if any(a.get(key) != b.get(key) for key in a if key not in ("data", "slices")):
        return False
    return bool(_without_sequence(a.get("data")) == _without_sequence(b.get("data")))


def _without_sequence(data: Any) -> Any:
    if isinstance(data, Mapping) and "sequence_number" in data:
        return {key: value for key, value in data.items() if key != "sequence_number"}
    return data


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, Mapping) and "text" in part)
    return "" if content is None else str(content)


def _tool_name(tool: Any) -> str:
    if isinstance(tool, Mapping):
        function = tool.get("function")
        name = function.get("name") if isinstance(function, Mapping) else tool.get("name")
        return str(name)
    return str(tool)

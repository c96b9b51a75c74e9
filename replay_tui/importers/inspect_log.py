"""Inspect AI eval logs (``.eval`` zip or ``.json``) -> one run per sample and epoch.

Sample events map as follows: ``sample_init`` is the input (and its state the initial
state); ``model`` is a model call (its input is read through ``input_refs`` into the
sample's ``events_data.messages`` pool when the log deduplicates messages); ``tool`` is a
tool call and result; ``state`` and ``store`` are state transitions (they already carry
JSON Patch changes; store paths sit under ``/store``); ``attachment://`` references are
resolved from the sample's attachments; every other event is a note. ``span_begin`` and
``span_end`` only structure the others and are left out.
"""

from __future__ import annotations

import re
import zipfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import orjson

from .errors import TraceImportError
from .messages import message
from .records import (
    EndRecord,
    InputRecord,
    ModelRecord,
    NoteRecord,
    Record,
    StateRecord,
    ToolRecord,
)

ZSTD = 93  # the zip compression method of current .eval logs
ATTACHMENT = "attachment://"
STRUCTURE_EVENTS = frozenset({"span_begin", "span_end"})
_SAMPLE_MEMBER = re.compile(r"^samples/(.+)_epoch_(\d+)\.json$")


def samples(path: Path) -> Iterator[tuple[str, dict[str, Any], dict[str, Any]]]:
    """(where, sample, eval header) for each sample of the log, in log order."""
    if zipfile.is_zipfile(path):
        yield from _zip_samples(path)
        return
    try:
        log = orjson.loads(path.read_bytes())
    except orjson.JSONDecodeError as error:
        raise TraceImportError(
            str(path), f"character {error.pos}", f"an Inspect AI JSON log (cut short or not JSON: {error.msg})"
        ) from None
    if not isinstance(log, dict) or not isinstance(log.get("eval"), dict):
        raise TraceImportError(str(path), None, "an Inspect AI log (a JSON object with eval and samples)")
    for index, sample in enumerate(log.get("samples") or ()):
        if not isinstance(sample, dict):
            raise TraceImportError(str(path), f"samples[{index}]", "a sample object")
        yield f"samples[{index}]", sample, log


def _zip_samples(path: Path) -> Iterator[tuple[str, dict[str, Any], dict[str, Any]]]:
    with zipfile.ZipFile(path) as archive:
        names = archive.namelist()
        if "header.json" not in names and "_journal/start.json" not in names:
            raise TraceImportError(
                str(path), "header.json", "the member header.json of an Inspect .eval log (the zip is missing it)"
            )
        header = _member(path, archive, "header.json" if "header.json" in names else "_journal/start.json")
        listed = _listed_samples(path, archive, names)
        present = [name for name in names if _SAMPLE_MEMBER.match(name)]
        for name in listed:
            if name not in names:
                raise TraceImportError(
                    str(path), name, "a sample member that summaries.json lists (the zip is missing it)"
                )
        for name in listed or present:
            yield name, _member(path, archive, name), header


def _listed_samples(path: Path, archive: zipfile.ZipFile, names: list[str]) -> list[str]:
    if "summaries.json" not in names:
        return []
    summaries = _member(path, archive, "summaries.json")
    if not isinstance(summaries, list):
        raise TraceImportError(str(path), "summaries.json", "a list of sample summaries")
    return [f"samples/{item.get('id')}_epoch_{item.get('epoch')}.json" for item in summaries if isinstance(item, dict)]


def _member(path: Path, archive: zipfile.ZipFile, name: str) -> Any:
    info = archive.getinfo(name)
    if info.compress_type == ZSTD:
        try:
            import zipfile_zstd  # type: ignore[import-untyped, unused-ignore]  # noqa: F401  (teaches zipfile the zstd method)
        except ImportError:
            raise TraceImportError(
                str(path), name, "zstd support to read it: pip install 'replay-tui[inspect]'"
            ) from None
    try:
        return orjson.loads(archive.read(name))
    except orjson.JSONDecodeError as error:
        raise TraceImportError(str(path), name, f"a JSON member (cut short or not JSON: {error.msg})") from None
    except (zipfile.BadZipFile, OSError, EOFError) as error:
        raise TraceImportError(str(path), name, f"a readable zip member ({error})") from None


def resolve_attachments(value: Any, attachments: Mapping[str, Any], where: str, path: Path) -> Any:
    if isinstance(value, str):
        if value.startswith(ATTACHMENT):
            key = value[len(ATTACHMENT) :]
            if key not in attachments:
                raise TraceImportError(str(path), where, f"an attachments entry for {value}")
            return attachments[key]
        return value
    if isinstance(value, list):
        return [resolve_attachments(item, attachments, where, path) for item in value]
    if isinstance(value, dict):
        return {key: resolve_attachments(item, attachments, where, path) for key, item in value.items()}
    return value


def inspect_messages(messages: Any) -> list[dict[str, Any]]:
    normalized = []
    for item in messages if isinstance(messages, list) else ():
        if not isinstance(item, Mapping):
            continue
        calls = [
            {"id": call.get("id"), "name": call.get("function"), "arguments": call.get("arguments") or {}}
            for call in item.get("tool_calls") or ()
        ]
        normalized.append(
            message(str(item.get("role") or "user"), _content(item.get("content")), calls, item.get("tool_call_id"))
        )
    return normalized


def _content(content: Any) -> Any:
    if isinstance(content, list):
        texts = [
            str(part.get("text", "")) for part in content if isinstance(part, Mapping) and part.get("type") == "text"
        ]
        others = [part for part in content if not (isinstance(part, Mapping) and part.get("type") == "text")]
        if others:
            return [{"type": "text", "content": text} for text in texts] + others
        return "".join(texts) if texts else None
    return content


def sample_records(path: Path, where: str, sample: dict[str, Any]) -> tuple[list[Record], Any]:
    """The records of one sample, and its initial state."""
    attachments = sample.get("attachments") or {}
    pool = resolve_attachments(
        (sample.get("events_data") or {}).get("messages") or [], attachments, f"{where}: events_data", path
    )
    records: list[Record] = []
    initial_state: Any = None
    for index, raw in enumerate(sample.get("events") or ()):
        event_where = f"{where}: events[{index}]"
        if not isinstance(raw, dict):
            raise TraceImportError(str(path), event_where, "an event object")
        kind = raw.get("event")
        if kind in STRUCTURE_EVENTS:
            continue
        event = resolve_attachments(raw, attachments, event_where, path)
        source = {"member": where, "event_index": index, "uuid": event.get("uuid"), "event": kind}
        at = str(event["timestamp"]).replace("+00:00", "Z") if event.get("timestamp") else None
        if kind == "sample_init":
            state = event.get("state")
            initial_state = state if initial_state is None else initial_state
            described = event.get("sample") or {}
            question = described.get("input")
            if isinstance(question, list):
                users = [item["content"] for item in inspect_messages(question) if item["role"] == "user"]
                question = users[-1] if users else question
            context = {
                "sample_id": described.get("id", sample.get("id")),
                "epoch": sample.get("epoch"),
                "target": described.get("target"),
            }
            records.append(InputRecord(question, source, context=context, at=at))
        elif kind == "model":
            records.append(_model(event, pool, source, at))
        elif kind == "tool":
            records.append(_tool(event, source, at))
        elif kind == "state":
            records.append(StateRecord(list(event.get("changes") or []), source, at=at))
        elif kind == "store":
            changes = [
                {
                    **change,
                    "path": "/store" + str(change.get("path", "")),
                    **({"from": "/store" + str(change["from"])} if "from" in change else {}),
                }
                for change in event.get("changes") or ()
                if isinstance(change, dict)
            ]
            records.append(StateRecord(changes, source, at=at))
        else:
            records.append(
                NoteRecord(_note_text(kind, event), source, data={k: v for k, v in event.items() if k != "uuid"}, at=at)
            )
    error = sample.get("error")
    output = (sample.get("output") or {}).get("completion")
    records.append(
        EndRecord(
            "error" if error else "ok",
            output,
            error,
            at=str(sample.get("completed_at") or "").replace("+00:00", "Z") or None,
        )
    )
    return records, initial_state


def _model(event: dict[str, Any], pool: list[Any], source: dict[str, Any], at: str | None) -> ModelRecord:
    raw_input = event.get("input") or []
    for start, end in event.get("input_refs") or ():
        raw_input = list(raw_input) + list(pool[start:end])
    request: dict[str, Any] = {"model": event.get("model"), "messages": inspect_messages(raw_input)}
    if event.get("tools"):
        request["tools"] = event["tools"]
    if event.get("tool_choice") is not None:
        request["tool_choice"] = event["tool_choice"]
    config = {name: value for name, value in (event.get("config") or {}).items() if value is not None}
    if config:
        request["params"] = config
    output = event.get("output") or {}
    choices = output.get("choices") or []
    response: dict[str, Any] | None = None
    if choices:
        [reply] = inspect_messages([choices[0].get("message") or {}])
        response = {
            "content": reply["content"],
            "tool_calls": reply.get("tool_calls", []),
            "finish_reason": choices[0].get("stop_reason"),
            "usage": dict(output.get("usage") or {}),
        }
    failure = event.get("error")
    error = {"type": "ModelError", "message": str(failure), "code": None, "timeout": False} if failure else None
    missing = "" if response is not None or error is not None else "no model output captured"
    return ModelRecord(request, response, source, error=error, at=at, content_complete=not missing, missing=missing)


def _tool(event: dict[str, Any], source: dict[str, Any], at: str | None) -> ToolRecord:
    failure = event.get("error")
    error = None
    if isinstance(failure, dict):
        error = {
            "type": str(failure.get("type") or "ToolError"),
            "message": str(failure.get("message") or ""),
            "code": None,
            "timeout": failure.get("type") == "timeout",
        }
    raw = event.get("arguments")
    arguments: dict[str, Any] = raw if isinstance(raw, dict) else {"value": raw}
    duration = event.get("working_time")
    return ToolRecord(
        str(event.get("id")),
        str(event.get("function")),
        arguments,
        source,
        result=event.get("result"),
        error=error,
        duration_ms=round(float(duration) * 1000, 3) if isinstance(duration, (int, float)) else None,
        at=at,
    )


def _note_text(kind: Any, event: Mapping[str, Any]) -> str:
    if kind == "score":
        score = event.get("score") or {}
        return f"score ({event.get('scorer') or 'scorer'}): {score.get('value')}"
    if kind == "error":
        return f"error: {(event.get('error') or {}).get('message')}"
    if kind in ("info", "logger"):
        detail = event.get("data") if kind == "info" else (event.get("message") or {}).get("message")
        return f"{kind}: {detail}"
    return str(kind)

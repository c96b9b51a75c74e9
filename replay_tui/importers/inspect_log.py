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

from .errors import TraceImportError, not_json
from .format import Format, Head, ImportedJournal, Input
from .messages import message
from .plain import TextBudget, plain_json, plain_record, shown
from .records import EndRecord, InputRecord, ModelRecord, NoteRecord, Record, StateRecord, ToolRecord
from .runs import Run, write_runs

NAME = "inspect"

ZSTD = 93  # the zip compression method of current .eval logs
ATTACHMENT = "attachment://"
STRUCTURE_EVENTS = frozenset({"span_begin", "span_end"})
_SAMPLE_MEMBER = re.compile(r"^samples/(.+)_epoch_(\d+)\.json$")
#: A .json log is read whole; bigger files are refused.
MAX_JSON_LOG_BYTES = 1 << 30
#: A zip member is inflated up to this size, no further (what it declares and what it holds).
MAX_MEMBER_BYTES = 256 * 2**20
#: Messages in one model call's input once ``input_refs`` are followed.
MAX_INPUT_MESSAGES = 100_000
#: The JSON Patch operations Inspect writes (``copy`` never: it could double the state at each step).
PATCH_OPS = frozenset({"add", "remove", "replace", "move", "test"})


def samples(path: Path) -> Iterator[tuple[str, dict[str, Any], dict[str, Any]]]:
    """(where, sample, eval header) for each sample of the log, in log order."""
    if zipfile.is_zipfile(path):
        yield from _zip_samples(path)
        return
    size = path.stat().st_size
    if size > MAX_JSON_LOG_BYTES:
        raise TraceImportError(
            str(path),
            None,
            f"an Inspect AI JSON log of at most {MAX_JSON_LOG_BYTES >> 30} GiB (it has {size >> 20} MiB)",
        )
    try:
        log = orjson.loads(path.read_bytes())
    except orjson.JSONDecodeError as error:
        raise not_json(str(path), f"character {error.pos}", "an Inspect AI JSON log", error.msg) from None
    if not isinstance(log, dict) or not isinstance(log.get("eval"), dict):
        raise TraceImportError(str(path), None, "an Inspect AI log (a JSON object with eval and samples)")
    listed = log.get("samples")
    if listed is not None and not isinstance(listed, list):
        raise TraceImportError(str(path), "samples", "a list of samples")
    for index, sample in enumerate(listed or ()):
        if not isinstance(sample, dict):
            raise TraceImportError(str(path), f"samples[{index}]", "a sample object")
        yield f"samples[{index}]", sample, log


def _zip_samples(path: Path) -> Iterator[tuple[str, dict[str, Any], dict[str, Any]]]:
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as error:
        raise TraceImportError(str(path), None, f"an Inspect .eval zip that opens ({shown(error, 80)})") from None
    with archive:
        names = archive.namelist()
        if "header.json" not in names and "_journal/start.json" not in names:
            raise TraceImportError(
                str(path), "header.json", "the member header.json of an Inspect .eval log (the zip is missing it)"
            )
        header = _member(path, archive, "header.json" if "header.json" in names else "_journal/start.json")
        if not isinstance(header, dict) or not isinstance(header.get("eval", {}), dict):
            raise TraceImportError(str(path), "header.json", "an Inspect log header (a JSON object with eval)")
        listed = _listed_samples(path, archive, names)
        present = [name for name in names if _SAMPLE_MEMBER.match(name)]
        for name in listed:
            if name not in names:
                raise TraceImportError(
                    str(path), name, "a sample member that summaries.json lists (the zip is missing it)"
                )
        for name in listed or present:
            sample = _member(path, archive, name)
            if not isinstance(sample, dict):
                raise TraceImportError(str(path), name, "a sample object")
            yield name, sample, header


def _listed_samples(path: Path, archive: zipfile.ZipFile, names: list[str]) -> list[str]:
    if "summaries.json" not in names:
        return []
    summaries = _member(path, archive, "summaries.json")
    if not isinstance(summaries, list):
        raise TraceImportError(str(path), "summaries.json", "a list of sample summaries")
    return [f"samples/{item.get('id')}_epoch_{item.get('epoch')}.json" for item in summaries if isinstance(item, dict)]


def _member(path: Path, archive: zipfile.ZipFile, name: str) -> Any:
    """A JSON member, read no further than ``MAX_MEMBER_BYTES`` whatever it declares (a zip bomb stops there)."""
    info = archive.getinfo(name)
    if info.file_size > MAX_MEMBER_BYTES:
        raise TraceImportError(
            str(path),
            shown(name, 80),
            f"a member of at most {MAX_MEMBER_BYTES >> 20} MiB uncompressed "
            f"(it declares {info.file_size / 2**20:,.0f} MiB: a zip bomb?)",
        )
    if info.compress_type == ZSTD:
        try:
            import zipfile_zstd  # type: ignore[import-untyped, unused-ignore]  # noqa: F401  (teaches zipfile the zstd method)
        except ImportError:
            raise TraceImportError(
                str(path), name, "zstd support to read it: pip install 'replay-tui[inspect]'"
            ) from None
    try:
        with archive.open(info) as member:
            data = member.read(MAX_MEMBER_BYTES + 1)
        if len(data) > MAX_MEMBER_BYTES:
            raise TraceImportError(
                str(path), shown(name, 80), f"a member of at most {MAX_MEMBER_BYTES >> 20} MiB uncompressed"
            )
        return orjson.loads(data)
    except orjson.JSONDecodeError as error:
        raise not_json(str(path), shown(name, 80), "a JSON member", shown(error.msg, 80)) from None
    except (zipfile.BadZipFile, OSError, EOFError, NotImplementedError, RuntimeError, ValueError) as error:
        # a bad CRC, a size that lies, an unknown compression method or an encrypted member
        raise TraceImportError(str(path), shown(name, 80), f"a readable zip member ({shown(error, 80)})") from None


def resolve_attachments(value: Any, attachments: Mapping[str, Any], where: str, path: Path) -> Any:
    """``value`` with each ``attachment://`` reference replaced by its attachment, once: an attachment
    that is itself a reference stays as it is written (a loop cannot be followed)."""
    if isinstance(value, str):
        if value.startswith(ATTACHMENT):
            key = value[len(ATTACHMENT) :]
            if key not in attachments:
                raise TraceImportError(str(path), where, f"an attachments entry for {shown(value, 80)}")
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


def sample_records(
    path: Path, where: str, sample: dict[str, Any], budget: TextBudget | None = None
) -> tuple[list[Record], Any]:
    """The records of one sample, and its initial state; ``budget``: the text the whole import may still write."""
    attachments = sample.get("attachments") or {}
    if not isinstance(attachments, dict):
        raise TraceImportError(str(path), f"{where}: attachments", "an object of attachments")
    events_data = sample.get("events_data") or {}
    if not isinstance(events_data, dict) or not isinstance(events_data.get("messages") or [], list):
        raise TraceImportError(str(path), f"{where}: events_data", "an object with a messages list")
    pool = resolve_attachments(events_data.get("messages") or [], attachments, f"{where}: events_data", path)
    events = sample.get("events") or []
    if not isinstance(events, list):
        raise TraceImportError(str(path), f"{where}: events", "a list of events")
    records: list[Record] = []
    initial_state: Any = None
    for index, raw in enumerate(events):
        event_where = f"{where}: events[{index}]"
        if not isinstance(raw, dict):
            raise TraceImportError(str(path), event_where, "an event object")
        kind = raw.get("event")
        if not isinstance(kind, str):
            raise TraceImportError(str(path), event_where, "an event whose event field names its kind (a string)")
        if kind in STRUCTURE_EVENTS:
            continue
        event = resolve_attachments(raw, attachments, event_where, path)
        try:
            record, state = _event(path, event_where, where, index, kind, event, pool, sample)
        except TraceImportError:
            raise
        except (AttributeError, TypeError, ValueError, KeyError, IndexError) as failure:
            raise TraceImportError(
                str(path), event_where, f"an Inspect {shown(kind)} event of the logged shape ({shown(failure, 80)})"
            ) from None
        if kind == "sample_init" and initial_state is None:
            initial_state = plain_json(state, path, f"{event_where}: state")
        records.append(plain_record(record, path, event_where, budget))
    failed = sample.get("error")
    output = _object(sample.get("output"))
    end = EndRecord(
        "error" if failed else "ok",
        output.get("completion"),
        failed,
        at=str(sample.get("completed_at") or "").replace("+00:00", "Z") or None,
    )
    records.append(plain_record(end, path, f"{where}: the sample's end", budget))
    return records, initial_state


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _event(
    path: Path,
    event_where: str,
    where: str,
    index: int,
    kind: Any,
    event: dict[str, Any],
    pool: list[Any],
    sample: dict[str, Any],
) -> tuple[Record, Any]:
    """The record of one sample event (and, for sample_init, the state it starts from)."""
    source = {"member": where, "event_index": index, "uuid": event.get("uuid"), "event": kind}
    stamp = event.get("timestamp")
    at = str(stamp).replace("+00:00", "Z") if isinstance(stamp, str) and stamp else None
    if kind == "sample_init":
        described = _object(event.get("sample"))
        question = described.get("input")
        if isinstance(question, list):
            users = [item["content"] for item in inspect_messages(question) if item["role"] == "user"]
            question = users[-1] if users else question
        context = {
            "sample_id": described.get("id", sample.get("id")),
            "epoch": sample.get("epoch"),
            "target": described.get("target"),
        }
        return InputRecord(question, source, context=context, at=at), event.get("state")
    if kind == "model":
        return _model(event, pool, source, at), None
    if kind == "tool":
        return _tool(event, source, at), None
    if kind == "state":
        return StateRecord(_patch(event.get("changes"), "", path, event_where), source, at=at), None
    if kind == "store":
        return StateRecord(_patch(event.get("changes"), "/store", path, event_where), source, at=at), None
    note = NoteRecord(_note_text(kind, event), source, data={k: v for k, v in event.items() if k != "uuid"}, at=at)
    return note, None


def _patch(changes: Any, prefix: str, path: Path, where: str) -> list[dict[str, Any]]:
    """A state or store event's changes as a JSON Patch on the run's state (store paths under ``/store``)."""
    if changes is None:
        return []
    if not isinstance(changes, list):
        raise TraceImportError(str(path), f"{where}: changes", "a JSON Patch: a list of operations")
    patch = []
    for number, change in enumerate(changes):
        at = f"{where}: changes[{number}]"
        if not isinstance(change, dict) or change.get("op") not in PATCH_OPS:
            raise TraceImportError(str(path), at, f"a JSON Patch operation ({', '.join(sorted(PATCH_OPS))})")
        for field in ("path", "from") if change["op"] == "move" else ("path",):
            if not isinstance(change.get(field), str):
                raise TraceImportError(str(path), at, f"a JSON Pointer string as {field}")
        if change["op"] in ("add", "replace", "test") and "value" not in change:
            raise TraceImportError(str(path), at, f"a value for the {change['op']} operation")
        moved = {"from": prefix + change["from"]} if "from" in change and isinstance(change["from"], str) else {}
        patch.append({**change, "path": prefix + change["path"], **moved})
    return patch


def _model(event: dict[str, Any], pool: list[Any], source: dict[str, Any], at: str | None) -> ModelRecord:
    raw_input = list(event.get("input") or [])
    for start, end in event.get("input_refs") or ():
        if type(start) is not int or type(end) is not int:
            raise ValueError("input_refs: pairs of message indexes")
        raw_input.extend(pool[start:end])
        if len(raw_input) > MAX_INPUT_MESSAGES:
            raise ValueError(f"at most {MAX_INPUT_MESSAGES:,} input messages once input_refs are followed")
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


#: Inspect writes its JSON logs indented by two: the log's own ``eval`` block, at the top level.
_TOP_LEVEL_EVAL = re.compile(rb'\n  "eval": \{')


def sniff(head: Head) -> bool:
    """An ``.eval`` zip (its header or its samples), or a JSON log: ``eval`` at the top level of the first record,
    or (pretty-printed) a document that starts with ``version`` and holds that block."""
    if head.zip_names:
        return "header.json" in head.zip_names or any(
            name.startswith(("_journal/", "samples/")) for name in head.zip_names
        )
    if head.record is not None:
        return isinstance(head.record.get("eval"), dict)
    return head.document_key == b"version" and _TOP_LEVEL_EVAL.search(head.text) is not None


def import_inspect(source: Input, out: Path) -> list[ImportedJournal]:
    """One journal per sample and epoch (a directory ``out`` of them when there are several)."""
    path = source.path
    digest = source.digest()
    runs: list[Run] = []
    budget = TextBudget()  # shared by every sample: attachments can repeat one text in each
    for where, sample, log in samples(path):
        records, initial_state = sample_records(path, where, sample, budget)
        spec = log.get("eval") or {}
        sample_id, epoch = sample.get("id"), sample.get("epoch")
        detail = {
            "member": where,
            "sample_id": sample_id,
            "epoch": epoch,
            "task": spec.get("task"),
            "eval_id": spec.get("eval_id"),
            "model": spec.get("model"),
        }
        started = str(sample.get("started_at") or "").replace("+00:00", "Z") or None
        runs.append(
            Run(
                f"sample-{sample_id}-epoch-{epoch}",
                f"inspect-{digest[:12]}-{sample_id}-{epoch}",
                records,
                detail,
                initial_state=initial_state,
                started_at=started,
            )
        )
    if not runs:
        raise TraceImportError(str(path), None, "at least one sample in the Inspect AI log")
    return write_runs(path, out, NAME, digest, runs)


FORMAT = Format(NAME, sniff, import_inspect)

"""What ToolNode hands the graph for one tool call, as the journal keeps it, and back.

A tool's return value reaches the model as the ``ToolMessage`` LangChain makes of it: a string as it is,
a list of content blocks as it is, anything else as ``json.dumps`` (or ``str``) of it. The journal keeps
that message, not the tool's return value, so a pydantic model, a dataclass or a dict reaches the model
exactly as it does unrecorded, and the graph gets the same message in record and in replay:

* a ``ToolMessage``: ``{"content", "status"}``, with ``"artifact"`` when the tool gave one and whatever
  else the tool set itself (``name``, ``tool_call_id``, ``additional_kwargs``, ``response_metadata``).
  The journal writes objects with their members sorted; where that would change a value the graph
  gets (a content block, an artifact whose keys are in another order), ``"<field>_json"`` beside it
  holds the JSON text in the order the tool made it, and a replay hands over that text's order;
* a ``Command``: ``{"command": {"graph", "update", "goto"}}``, its update as ordered ``[key, value]``
  pairs, each value tagged ``{"messages": JSON text}``, ``{"message": JSON text}`` or ``{"json": JSON
  text}``, and ``goto`` as node names and ``{"send": node, "arg": value}``;
* a list of those (a tool that returned several): ``{"outputs": [...]}``.

Anything else (a ``Command`` that resumes, an artifact with no JSON form...) is refused while recording
with ``UnrecordableOutput``, which names the tool and what it returned. In a replay the record comes from
the journal, which is hostile: a shape this module does not write is a journal error at that seq.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import orjson
from langchain_core.messages import BaseMessage, ToolMessage, message_to_dict, messages_from_dict
from langgraph.types import Command, Send

from ....journal.canonical import CanonicalizationError, canonical_json_of_parsed
from ....journal.errors import SchemaError

__all__ = ["UnrecordableOutput", "output_from_record", "output_record"]

#: ToolMessage fields kept besides content and status when the tool set them (the rest are LangChain's own).
_MESSAGE_EXTRAS = ("artifact", "name", "tool_call_id", "additional_kwargs", "response_metadata")
_MESSAGE_RECORD = (
    'a ToolMessage {"content": text or a list of texts and objects, "status": "success" or "error", ...}, '
    '{"command": ...} or {"outputs": [...]}'
)


class UnrecordableOutput(TypeError):
    """A tool gave ToolNode something the recorder cannot keep so that a replay hands back the same."""


def output_record(call: Mapping[str, Any], output: Any) -> dict[str, Any]:
    """The journal's record of what ToolNode's execution of ``call`` gave back."""
    if isinstance(output, ToolMessage):
        return _message_record(call, output)
    if isinstance(output, Command):
        return {"command": _command_record(call, output)}
    if isinstance(output, list) and output and all(isinstance(item, (ToolMessage, Command)) for item in output):
        return {"outputs": [output_record(call, item) for item in output]}
    raise UnrecordableOutput(f"tool {call['name']!r} gave ToolNode a {type(output).__name__}: {_NOT_KEPT}")


_NOT_KEPT = "the recorder keeps a ToolMessage, a Command or a list of them"


def _message_record(call: Mapping[str, Any], message: ToolMessage) -> dict[str, Any]:
    record: dict[str, Any] = {"status": message.status}
    _put_json(record, "content", message.content, call, "content")
    defaults = {"name": call["name"], "tool_call_id": call.get("id"), "additional_kwargs": {}, "response_metadata": {}}
    for field in _MESSAGE_EXTRAS:
        value = getattr(message, field)
        if value is None or (field in defaults and value == defaults[field]):
            continue
        _put_json(record, field, value, call, f"the ToolMessage's {field}")
    return record


def _put_json(record: dict[str, Any], field: str, value: Any, call: Mapping[str, Any], what: str) -> None:
    """``record[field] = value``, plus ``record[field + "_json"]`` (the JSON text in the value's own member
    order) when the journal's sorted members would hand back another order."""
    text = _json_text(value, call, what)
    record[field] = orjson.loads(text)
    if text != canonical_json_of_parsed(record[field]):
        if not isinstance(value, str):  # (a string's JSON is its canonical form)
            record[f"{field}_json"] = text.decode()


def _json_text(value: Any, call: Mapping[str, Any], what: str) -> bytes:
    try:
        text = orjson.dumps(value)
        canonical_json_of_parsed(orjson.loads(text))  # numbers the journal cannot hold are refused here
    except (TypeError, CanonicalizationError) as error:
        raise UnrecordableOutput(
            f"tool {call['name']!r}: {what} ({type(value).__name__}) has no JSON form the journal can keep "
            f"({error}); give the ToolMessage JSON values (strings, numbers, lists, dicts)"
        ) from None
    return text


def _command_record(call: Mapping[str, Any], command: Command[Any]) -> dict[str, Any]:
    name = call["name"]
    if command.resume is not None:
        raise UnrecordableOutput(f"tool {name!r} returned a Command that resumes an interrupt: not recorded")
    if command.graph not in (None, Command.PARENT):
        raise UnrecordableOutput(f"tool {name!r} returned a Command for graph {command.graph!r}: not recorded")
    update = command.update
    if isinstance(update, Mapping):
        pairs: Any = [[key, _value_record(name, value)] for key, value in update.items()]
    elif isinstance(update, (list, tuple)) and all(isinstance(pair, tuple) and len(pair) == 2 for pair in update):
        pairs = [[key, _value_record(name, value)] for key, value in update]
    elif update is None:
        pairs = None
    else:
        raise UnrecordableOutput(
            f"tool {name!r} returned a Command whose update is a {type(update).__name__}: "
            "the recorder keeps an update given as a dict or as (key, value) pairs"
        )
    return {
        "graph": command.graph,
        "update": pairs,
        "update_is_dict": isinstance(update, Mapping),
        "goto": _goto_record(name, command.goto),
    }


def _value_record(tool: str, value: Any) -> dict[str, str]:
    if isinstance(value, BaseMessage):
        return {"message": orjson.dumps(message_to_dict(value)).decode()}
    if isinstance(value, list) and value and all(isinstance(item, BaseMessage) for item in value):
        return {"messages": orjson.dumps([message_to_dict(item) for item in value]).decode()}
    return {"json": _json_text(value, {"name": tool}, "a value of its Command's update").decode()}


def _goto_record(tool: str, goto: Any) -> Any:
    if isinstance(goto, str):
        return goto
    if isinstance(goto, Send):
        return {"send": goto.node, "arg": _value_record(tool, goto.arg)}
    if isinstance(goto, (list, tuple)):
        return [_goto_record(tool, item) for item in goto]
    raise UnrecordableOutput(f"tool {tool!r} returned a Command whose goto is a {type(goto).__name__}")


# -- back, from the journal --------------------------------------------------------------


class _Unusable(ValueError):
    """The record's ``field`` is not what ``output_record`` writes (raised while reading it back)."""

    def __init__(self, field: str, expected: str, found: Any) -> None:
        super().__init__(field)
        self.field, self.expected, self.found = field, expected, found

    def schema_error(self, seq: int | None) -> SchemaError:
        return SchemaError(f"payload.result{self.field}", self.expected, self.found, seq=seq)


def output_from_record(call: Mapping[str, Any], record: Any) -> Any:
    """What ToolNode hands the graph for ``record`` (``output_record``'s inverse). Raises ``_Unusable``
    (``schema_error(seq)`` gives the journal error) for a shape ``output_record`` does not write."""
    return _output(call, record, "")


def _output(call: Mapping[str, Any], record: Any, where: str) -> Any:
    if isinstance(record, Mapping) and "command" in record:
        return _command(record["command"], f"{where}.command")
    if isinstance(record, Mapping) and "outputs" in record:
        outputs = record["outputs"]
        if not isinstance(outputs, list) or not outputs:
            raise _Unusable(f"{where}.outputs", "a list of ToolMessage and Command records", outputs)
        return [_output(call, item, f"{where}.outputs[{index}]") for index, item in enumerate(outputs)]
    if not isinstance(record, Mapping):
        raise _Unusable(where, _MESSAGE_RECORD, record)
    content = _ordered(record, "content", where)
    parts_ok = isinstance(content, list) and all(isinstance(part, (str, Mapping)) for part in content)
    status = record.get("status", "success")
    if not (isinstance(content, str) or parts_ok) or status not in ("success", "error"):
        raise _Unusable(where, _MESSAGE_RECORD, record)
    fields: dict[str, Any] = {"name": call["name"], "tool_call_id": call.get("id")}
    for field in _MESSAGE_EXTRAS:
        if field in record:
            fields[field] = _ordered(record, field, where)
    try:
        return ToolMessage(content=content, status=status, **fields)
    except (TypeError, ValueError):  # (pydantic's ValidationError is a ValueError)
        raise _Unusable(where, _MESSAGE_RECORD, record) from None


def _ordered(record: Mapping[str, Any], field: str, where: str) -> Any:
    """``record[field]``, in the member order of ``record[field + "_json"]`` when there is one (which must be
    the same value: the viewer shows the field, and a replay must not hand over something else)."""
    value = record.get(field)
    text = record.get(f"{field}_json")
    if text is None:
        return value
    ordered = _parsed(text, f"{where}.{field}_json")
    if ordered != value:
        raise _Unusable(f"{where}.{field}_json", f"the JSON text of {field} (the same value)", text)
    return ordered


def _parsed(text: Any, where: str) -> Any:
    if not isinstance(text, str):
        raise _Unusable(where, "JSON text", text)
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        raise _Unusable(where, "JSON text", text) from None


def _command(record: Any, where: str) -> Command[Any]:
    if not isinstance(record, Mapping) or record.get("graph") not in (None, Command.PARENT):
        raise _Unusable(where, 'a Command record {"graph": null or "__parent__", "update", "goto"}', record)
    pairs = record.get("update")
    update: Any = None
    if pairs is not None:
        if not isinstance(pairs, list) or not all(
            isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], str) for pair in pairs
        ):
            raise _Unusable(f"{where}.update", "a list of [key, value] pairs", pairs)
        items = [(key, _value(value, f"{where}.update[{index}][1]")) for index, (key, value) in enumerate(pairs)]
        update = dict(items) if record.get("update_is_dict", True) else items
    return Command(graph=record.get("graph"), update=update, goto=_goto(record.get("goto", ()), f"{where}.goto"))


def _value(record: Any, where: str) -> Any:
    if not isinstance(record, Mapping) or len(record) != 1:
        raise _Unusable(where, 'one of {"messages": JSON}, {"message": JSON}, {"json": JSON}', record)
    ((tag, text),) = record.items()
    value = _parsed(text, f"{where}.{tag}")
    if tag == "json":
        return value
    if tag not in ("message", "messages"):
        raise _Unusable(where, 'one of {"messages": JSON}, {"message": JSON}, {"json": JSON}', record)
    try:
        messages = messages_from_dict(value if tag == "messages" else [value])
    except Exception:  # a hostile journal's value may fail anywhere in LangChain's loading
        raise _Unusable(f"{where}.{tag}", "LangChain messages as message_to_dict writes them", value) from None
    return messages if tag == "messages" else messages[0]


def _goto(record: Any, where: str) -> Any:
    if isinstance(record, str):
        return record
    if isinstance(record, Mapping) and set(record) == {"send", "arg"} and isinstance(record["send"], str):
        return Send(record["send"], _value(record["arg"], f"{where}.arg"))
    if isinstance(record, Sequence):
        return [_goto(item, f"{where}[{index}]") for index, item in enumerate(record)]
    raise _Unusable(where, 'a node name, {"send": node, "arg": value} or a list of them', record)

"""A PydanticAI tool's return value as the journal records it, and the value a replay rebuilds from it.

PydanticAI puts a tool's return in front of the model as text (``ToolReturnPart.model_response_str``: a
``str`` as it is, anything else as its JSON, in the key order it has) or as parts (files beside the
text). The journal is canonical JSON, which sorts object members, so a return is recorded as that JSON
*text*: ``{"json": "...", "as": ..., "type": ...}`` (``{"text": ...}`` for a plain ``str``). The value
handed back to PydanticAI is rebuilt from the record, in the recording as in a replay, so both give the
agent the same value, and it is the value the tool returned as the tool's code sees it:

* ``as: "return_type"``: validated into the tool function's return annotation (a pydantic model, a
  dataclass, a ``list[Weather]``...), so ``ToolReturnPart.content`` is a ``Weather`` in both;
* ``as: "content"``: PydanticAI's own ``tool_return_content_ta`` (files become ``BinaryContent`` again,
  objects stay dicts in their recorded order), for a tool without an annotation that rebuilds it.

A rebuilt value is kept only when what PydanticAI would send for it (its text, its parts, its object
form) is what it sends for the tool's own value; a value that no form rebuilds exactly fails the
recording naming the tool, never a replay that sends the model something else. ``CallDeferred`` and
``ApprovalRequired`` (the tool defers to a person or another system) are outcomes, recorded as
``{"deferred": kind, "metadata": ...}`` and raised again in both; ``ModelRetry`` and ``ToolFailed`` are
errors the harness records, raised again as themselves in a replay.
"""

from __future__ import annotations

import functools
import inspect
import typing
from typing import Any, Mapping

import pydantic
import pydantic_core
from pydantic_ai.exceptions import ApprovalRequired, CallDeferred, ModelRetry, ToolFailed
from pydantic_ai.messages import (
    ToolReturn,
    ToolReturnPart,
    is_multi_modal_content,
    tool_return_content_ta,
    tool_return_ta,
)

from ..harness import HarnessError
from ..seam import RecordedToolError

__all__ = ["NotRecordable", "recorded_form", "rebuilt_error", "served_value", "json_arguments"]

#: The recorded error types raised again as themselves in a replay (anything else: the harness's stand-in,
#: which keeps the recorded type's name).
_RAISED_AGAIN = {f"{cls.__module__}.{cls.__qualname__}": cls for cls in (ModelRetry, ToolFailed)}


@functools.cache
def _tool_return_adapter() -> pydantic.TypeAdapter[ToolReturn[Any]]:
    return pydantic.TypeAdapter(ToolReturn)


class NotRecordable(HarnessError):
    """A call the recorder cannot record so that a replay gives the agent what it got: the recording stops."""


def json_arguments(arguments: Mapping[str, Any]) -> dict[str, Any]:
    """A tool's validated arguments as JSON (pydantic models, dates and the like in their JSON form)."""
    dumped = tool_return_ta.dump_python(dict(arguments), mode="json", by_alias=True)
    return dict(dumped)


def recorded_form(tool: str, value: Any, function: Any) -> dict[str, Any]:
    """What the journal records for ``value``, returned by ``tool`` (its function ``function``, or None)."""
    if type(value) is str:
        return {"text": value}
    default = "tool_return" if isinstance(value, ToolReturn) else "content"
    form = {"json": _json_text(tool, value), "as": default, "type": type(value).__qualname__}
    ways = ("return_type", default) if _return_adapter(function) is not None else (default,)
    for way in ways:
        if _rebuilds({**form, "as": way}, value, function):
            return {**form, "as": way}
    raise NotRecordable(
        f"tool {tool!r} returned a {type(value).__qualname__} that PydanticAI would not send the model the same "
        "way once rebuilt from its JSON: a replay could not hand the agent what it got. Return a pydantic model, "
        "a dataclass, JSON values or PydanticAI's own content types"
    )


def served_value(tool: str, recorded: Any, function: Any) -> Any:
    """The value PydanticAI gets for a recorded result (the recording's own, or a replay's from the journal).
    Raises ``CallDeferred``/``ApprovalRequired`` for a recorded deferral; ValueError for a shape this module
    does not write."""
    if not isinstance(recorded, Mapping):
        raise ValueError("not an object")
    if set(recorded) == {"text"} and type(recorded["text"]) is str:
        return recorded["text"]
    if "deferred" in recorded:
        raise _deferral(recorded)
    text, way = recorded.get("json"), recorded.get("as")
    if type(text) is not str:
        raise ValueError("no JSON text")
    try:
        if way == "return_type":
            adapter = _return_adapter(function)
            if adapter is None:
                raise ValueError(f"the tool {tool!r} has no return annotation to rebuild its result with")
            return adapter.validate_json(text)
        if way == "tool_return":
            return _tool_return_adapter().validate_json(text)
        if way == "content":
            return tool_return_content_ta.validate_json(text)
    except pydantic.ValidationError as error:
        raise ValueError(str(error)) from None
    raise ValueError(f"an unknown way to rebuild it ({way!r})")


def deferral_form(error: CallDeferred | ApprovalRequired) -> dict[str, Any]:
    """A deferral the tool raised, as the journal records it."""
    kind = "approval" if isinstance(error, ApprovalRequired) else error.kind
    metadata = tool_return_ta.dump_python(error.metadata, mode="json") if error.metadata is not None else None
    return {"deferred": kind, "metadata": metadata}


def _deferral(recorded: Mapping[str, Any]) -> Exception:
    kind, metadata = recorded.get("deferred"), recorded.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        raise ValueError("deferral metadata is not an object")
    if kind == "approval":
        return ApprovalRequired(metadata)
    if kind in ("external", "question"):
        return CallDeferred(metadata, kind=kind)
    raise ValueError(f"an unknown deferral {kind!r}")


def rebuilt_error(error: BaseException) -> BaseException:
    """A recorded tool error as PydanticAI needs it: ``ModelRetry`` (the model is asked again) and ``ToolFailed``
    as themselves, anything else as the harness raised it."""
    if isinstance(error, RecordedToolError):
        cls = _RAISED_AGAIN.get(error.type_name)
        if cls is not None:
            return cls(error.message)
    return error


def _json_text(tool: str, value: Any) -> str:
    adapter = _tool_return_adapter() if isinstance(value, ToolReturn) else tool_return_ta
    try:
        return adapter.dump_json(value, by_alias=True).decode()
    except pydantic_core.PydanticSerializationError as error:
        raise NotRecordable(f"tool {tool!r} returned a {type(value).__qualname__} with no JSON form: {error}") from None


def _rebuilds(form: dict[str, Any], value: Any, function: Any) -> bool:
    try:
        rebuilt = served_value("", form, function)
    except (ValueError, TypeError):
        return False
    return bool(_model_facing(rebuilt) == _model_facing(value))


def _model_facing(value: Any) -> Any:
    """Everything PydanticAI can send a model for a tool's return ``value``: its text, its parts (files by their
    JSON), its object form; and for a ``ToolReturn`` the content beside it and the metadata the app reads."""
    if isinstance(value, ToolReturn):
        content = value.content
        return (
            "tool_return",
            _model_facing(value.return_value),
            None if content is None else tool_return_content_ta.dump_json(content),
            tool_return_ta.dump_json(value.metadata),
            value.tools,
        )
    part = ToolReturnPart(tool_name="tool", content=value, tool_call_id="call")
    items = [
        tool_return_content_ta.dump_json(item) if is_multi_modal_content(item) else item
        for item in part.content_items(mode="str")
    ]
    return part.model_response_str(), items, part.model_response_object()


def _return_adapter(function: Any) -> pydantic.TypeAdapter[Any] | None:
    """A TypeAdapter for the tool function's return annotation, or None when it names no type to rebuild."""
    if function is None:
        return None
    try:
        return _adapter_of(function)
    except TypeError:  # an unhashable function object
        return None


@functools.lru_cache(maxsize=1024)
def _adapter_of(function: Any) -> pydantic.TypeAdapter[Any] | None:
    try:
        annotation = typing.get_type_hints(function).get("return", inspect.Signature.empty)
    except Exception:  # a forward reference the tool's module cannot resolve, a builtin without hints
        return None
    if annotation in (inspect.Signature.empty, None, type(None), Any, object, str):
        return None
    try:
        return pydantic.TypeAdapter(annotation)
    except (pydantic.PydanticSchemaGenerationError, pydantic.PydanticUserError, TypeError):
        return None

"""The small JSONPath subset redaction rules use: ``$``, ``.name``, ``['name']``,
``[n]``, ``[*]``, ``.*`` and ``..name`` (any depth)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

_TOKEN = re.compile(
    r"""\.\.(?P<deep>[A-Za-z_][\w-]*)|\.(?P<name>[A-Za-z_][\w-]*|\*)|\[(?:(?P<index>-?\d+)|(?P<star>\*)|'(?P<quoted>[^']*)'|"(?P<dquoted>[^"]*)")\]"""
)


class JsonPathError(ValueError):
    pass


@dataclass(frozen=True)
class JsonPath:
    text: str
    steps: tuple[tuple[str, Any], ...]  # ("key", name) | ("index", n) | ("any", None) | ("deep", name)

    def replace(self, root: Any, value: Any) -> int:
        """Set every match to ``value`` in place; returns how many were replaced."""
        return _apply(root, self.steps, value)


def parse_jsonpath(text: str) -> JsonPath:
    if not text.startswith("$"):
        raise JsonPathError(f"JSONPath {text!r} must start with '$'")
    steps: list[tuple[str, Any]] = []
    position = 1
    while position < len(text):
        match = _TOKEN.match(text, position)
        if not match:
            raise JsonPathError(f"JSONPath {text!r}: unexpected {text[position:]!r} at offset {position}")
        if match["deep"]:
            steps.append(("deep", match["deep"]))
        elif match["name"] == "*" or match["star"]:
            steps.append(("any", None))
        elif match["name"]:
            steps.append(("key", match["name"]))
        elif match["index"] is not None:
            steps.append(("index", int(match["index"])))
        else:
            steps.append(("key", match["quoted"] if match["quoted"] is not None else match["dquoted"]))
        position = match.end()
    if not steps:
        raise JsonPathError("JSONPath '$' alone would replace the whole payload")
    return JsonPath(text, tuple(steps))


def _apply(node: Any, steps: tuple[tuple[str, Any], ...], value: Any) -> int:
    (step, arg), rest = steps[0], steps[1:]
    count = 0
    if step == "deep":
        count += _apply(node, (("key", arg),) + rest, value)
        children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else ()
        for child in children:
            count += _apply(child, steps, value)
        return count
    for slot in _slots(node, step, arg):
        if rest:
            count += _apply(node[slot], rest, value)
        else:
            node[slot] = value
            count += 1
    return count


def _slots(node: Any, step: str, arg: Any) -> list[Any]:
    if isinstance(node, dict):
        if step == "key":
            return [arg] if arg in node else []
        if step == "any":
            return list(node)
    elif isinstance(node, list):
        if step == "index":
            return [arg] if -len(node) <= arg < len(node) else []
        if step == "any":
            return list(range(len(node)))
    return []

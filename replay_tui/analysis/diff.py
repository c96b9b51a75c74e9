"""Which JSON paths differ between two values, as RFC 6901 pointers.

The state panes highlight by pointer and `w` watches a pointer, so every path
here is a JSON Pointer ("" is the whole value, "/customer/tier" a field).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from ..journal.pointer import parts_of as parts_of  # re-exported: older callers import it from here
from ..journal.pointer import pointer_of

ChangeKind = Literal["added", "removed", "changed"]

_REPORT_KIND: dict[str, ChangeKind] = {
    "values_changed": "changed",
    "type_changes": "changed",
    "dictionary_item_added": "added",
    "iterable_item_added": "added",
    "set_item_added": "added",
    "attribute_added": "added",
    "dictionary_item_removed": "removed",
    "iterable_item_removed": "removed",
    "set_item_removed": "removed",
    "attribute_removed": "removed",
}


def is_related(a: str, b: str) -> bool:
    """True when one pointer is the other or an ancestor of it."""
    return a == b or a.startswith(b + "/") or b.startswith(a + "/") or a == "" or b == ""


@dataclass(frozen=True)
class ValueDiff:
    """Pointers that were added, removed or changed going from one value to another."""

    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    changed: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        return not (self.added or self.removed or self.changed)

    @property
    def paths(self) -> tuple[str, ...]:
        return tuple(sorted({*self.added, *self.removed, *self.changed}))

    def kind_of(self, pointer: str) -> ChangeKind | None:
        """How ``pointer`` itself changed, or None if it did not (its children may have)."""
        if pointer in self.added:
            return "added"
        if pointer in self.removed:
            return "removed"
        if pointer in self.changed:
            return "changed"
        return None

    def touches(self, pointer: str) -> bool:
        """True if ``pointer``, something inside it or something holding it changed."""
        return any(is_related(pointer, path) for path in self.paths)

    def to_json(self) -> dict[str, list[str]]:
        return {"added": list(self.added), "removed": list(self.removed), "changed": list(self.changed)}


@dataclass(frozen=True)
class Change:
    """One difference found by ``walk_changes``: where (keys and indexes), what kind, the two values."""

    kind: ChangeKind
    parts: tuple[Any, ...]
    before: Any
    after: Any


def walk_changes(before: Any, after: Any) -> list[Change]:
    """The structural difference of two JSON values without recursion, so any nesting depth works.

    The fallback for values nested deeper than deepdiff (or ``==``) can recurse: dicts by key, lists by index
    (items past the shorter list are added or removed), anything else changed when its type or value differs.
    """
    found: list[Change] = []
    stack: list[tuple[tuple[Any, ...], Any, Any]] = [((), before, after)]
    while stack:
        parts, old, new = stack.pop()
        if isinstance(old, dict) and isinstance(new, dict):
            found.extend(Change("removed", (*parts, key), value, None) for key, value in old.items() if key not in new)
            found.extend(Change("added", (*parts, key), None, value) for key, value in new.items() if key not in old)
            stack.extend(((*parts, key), old[key], new[key]) for key in reversed(list(old)) if key in new)
        elif isinstance(old, list) and isinstance(new, list):
            common = min(len(old), len(new))
            found.extend(Change("removed", (*parts, index), old[index], None) for index in range(common, len(old)))
            found.extend(Change("added", (*parts, index), None, new[index]) for index in range(common, len(new)))
            stack.extend(((*parts, index), old[index], new[index]) for index in reversed(range(common)))
        elif type(old) is not type(new) or (not isinstance(old, (dict, list)) and old != new):
            found.append(Change("changed", parts, old, new))
    return found


def diff_values(before: Any, after: Any) -> ValueDiff:
    """The structural difference of two JSON values (order of list items matters)."""
    found: dict[ChangeKind, set[str]] = {"added": set(), "removed": set(), "changed": set()}
    try:
        if before == after:
            return ValueDiff()
        if type(before) is not type(after) or not isinstance(before, (dict, list)):
            return ValueDiff(changed=("",))  # the whole value changed, as deepdiff reports it (the first state's diff)
        from deepdiff import (
            DeepDiff,  # loaded on the first diff: it pulls in pydantic, and the first frame needs neither
        )

        tree = DeepDiff(before, after, view="tree", ignore_order=False, verbose_level=2)
        for report, levels in tree.items():
            kind = _REPORT_KIND.get(report)
            if kind is None:
                continue
            for level in levels:
                found[kind].add(pointer_of(level.path(output_format="list")))
    except RecursionError:  # nested deeper than deepdiff recurses (the reader accepts 1,024 levels)
        found = {"added": set(), "removed": set(), "changed": set()}
        for change in walk_changes(before, after):
            found[change.kind].add(pointer_of(change.parts))
    return ValueDiff(
        added=tuple(sorted(found["added"])),
        removed=tuple(sorted(found["removed"])),
        changed=tuple(sorted(found["changed"])),
    )

"""Which JSON paths differ between two values, as RFC 6901 pointers.

The state panes highlight by pointer and `w` watches a pointer, so every path
here is a JSON Pointer ("" is the whole value, "/customer/tier" a field).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Literal

from deepdiff import DeepDiff

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


def pointer_of(parts: Iterable[Any]) -> str:
    """RFC 6901 pointer for a list of keys and indexes."""
    return "".join("/" + str(part).replace("~", "~0").replace("/", "~1") for part in parts)


def parts_of(pointer: str) -> list[str]:
    """The reference tokens of a pointer ("" -> [])."""
    if not pointer:
        return []
    if not pointer.startswith("/"):
        raise ValueError(f"JSON pointer {pointer!r} must start with '/'")
    return [token.replace("~1", "/").replace("~0", "~") for token in pointer[1:].split("/")]


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


def diff_values(before: Any, after: Any) -> ValueDiff:
    """The structural difference of two JSON values (order of list items matters)."""
    if before == after:
        return ValueDiff()
    found: dict[ChangeKind, set[str]] = {"added": set(), "removed": set(), "changed": set()}
    tree = DeepDiff(before, after, view="tree", ignore_order=False, verbose_level=2)
    for report, levels in tree.items():
        kind = _REPORT_KIND.get(report)
        if kind is None:
            continue
        for level in levels:
            found[kind].add(pointer_of(level.path(output_format="list")))
    return ValueDiff(
        added=tuple(sorted(found["added"])),
        removed=tuple(sorted(found["removed"])),
        changed=tuple(sorted(found["changed"])),
    )

"""A deterministic RFC 6902 diff.

``jsonpatch.make_patch`` orders its operations by set iteration, which changes
with the string hash seed, so the same transition recorded in two processes
could get two different patches and a replay would see a false divergence. This
diff visits keys in sorted order and produces the same operations every time.
"""

from __future__ import annotations

from typing import Any

from ..journal import pointer

Patch = list[dict[str, Any]]


def diff(before: Any, after: Any, path: str = "") -> Patch:
    """Operations that turn ``before`` into ``after`` (both JSON values)."""
    return [] if _same(before, after) else _diff_changed(before, after, path)


def _diff_changed(before: Any, after: Any, path: str) -> Patch:
    """``diff`` of two values already found to differ (not compared again on the way down)."""
    if isinstance(before, dict) and isinstance(after, dict):
        return _diff_objects(before, after, path)
    if isinstance(before, list) and isinstance(after, list):
        return _diff_arrays(before, after, path)
    return [{"op": "replace", "path": path, "value": after}]


def _diff_objects(before: dict[str, Any], after: dict[str, Any], path: str) -> Patch:
    ops: Patch = []
    for key in sorted(before.keys() | after.keys()):
        if key not in after:
            ops.append({"op": "remove", "path": pointer.child(path, key)})
        elif key not in before:
            ops.append({"op": "add", "path": pointer.child(path, key), "value": after[key]})
        elif not _same(before[key], after[key]):  # a pointer only for what changed: most of a state did not
            ops.extend(_diff_changed(before[key], after[key], pointer.child(path, key)))
    return ops


def _same(before: Any, after: Any) -> bool:
    return type(before) is type(after) and before == after


def _diff_arrays(before: list[Any], after: list[Any], path: str) -> Patch:
    # A sliding window (drop k from the front, append) is the common shape; write
    # it as k removes at /0 and appends instead of rewriting every element.
    for shift in range(1, min(len(before), 8) + 1):
        rest = before[shift:]
        if rest == after[: len(rest)]:
            ops: Patch = [{"op": "remove", "path": f"{path}/0"} for _ in range(shift)]
            ops += [{"op": "add", "path": f"{path}/-", "value": item} for item in after[len(rest) :]]
            if len(ops) < len(before) + len(after):
                return ops
    ops = []
    common = min(len(before), len(after))
    for index in range(common):
        if not _same(before[index], after[index]):
            ops.extend(_diff_changed(before[index], after[index], f"{path}/{index}"))
    for index in range(common, len(after)):
        ops.append({"op": "add", "path": f"{path}/-", "value": after[index]})
    for index in range(len(before) - 1, common - 1, -1):
        ops.append({"op": "remove", "path": f"{path}/{index}"})
    return ops

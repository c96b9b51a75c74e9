"""RFC 6902 JSON Patch, applied with a bound on what it builds: the one home for applying a patch.

A ``state.transition``'s patch is journal content, so hostile: a 2.3 KB line of ``copy`` operations
doubles the state with each one (2.3 GB after 18), a ``copy``/``remove`` loop costs a walk of the
state per 80 bytes of patch, a chain of ``add`` operations nests the state past any reader's depth.
``apply_patch`` checks the state it builds *as it is built*, operation by operation: its size (in
bytes of compact JSON) against ``MAX_STATE_BYTES``, its depth against ``MAX_STATE_DEPTH``, and the work
spent measuring and copying against ``MAX_PATCH_WORK``; going over any of them is a ``PatchLimitError``
naming the operation, before the value is built. Verify ``--state``, the app's state panes, export, the
replay parent's state book, the importers and the harness all apply patches here.

The input is never modified: containers on the path of an operation are copied (once per patch) and
everything else is shared with the input, so a patch costs what it touches, not a copy of the state
(which ``jsonpatch.apply_patch(..., in_place=False)`` made). ``copy`` shares the copied value too:
nothing is ever changed in place that this patch did not make.

Where RFC 6902 and the ``jsonpatch`` package differ, the RFC is followed: ``copy`` from the root and
``add`` at the root of any document work, ``test`` compares JSON values (``true`` is not ``1``), ``move``
into its own child is refused under an array too; a patch is a list (never JSON text to parse).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import orjson

from .errors import quoted
from .segments import DEFAULT_MAX_LINE_BYTES

#: The largest state a patch may build: one whose snapshot (a ``state.snapshot`` line) the reader reads.
MAX_STATE_BYTES = DEFAULT_MAX_LINE_BYTES
#: The deepest state a patch may build: the reader reads 1,024 levels, and a snapshot line holds the state
#: two levels down (``{"payload": {"state": ...}}``).
MAX_STATE_DEPTH = 1022
#: Bytes a patch may spend measuring what it adds and removes and copying the containers on its paths:
#: a few times the largest state, so any patch a recorder writes fits and a loop of them is cut short.
MAX_PATCH_WORK = 8 * MAX_STATE_BYTES
#: orjson writes 255 levels; a value nested deeper is measured by the walk below.
_ORJSON_DEPTH = 255
_OPS = frozenset({"add", "remove", "replace", "move", "copy", "test"})


class PatchError(ValueError):
    """A patch that does not apply; the message names the operation (its index, op and path) and why."""


class PatchLimitError(PatchError):
    """A patch whose output would pass ``MAX_STATE_BYTES`` or ``MAX_STATE_DEPTH``, or whose work would pass
    ``MAX_PATCH_WORK``: refused before the value is built."""


class Patched(NamedTuple):
    """What a patch built: the new state and its size in bytes of compact JSON (pass it to the next
    ``apply_patch`` of this state, which then need not measure the state again)."""

    state: Any
    size: int


class _Limits:
    """The budgets of one application: the state's size and the work left."""

    __slots__ = ("max_bytes", "max_depth", "work")

    def __init__(self, max_bytes: int, max_depth: int, work: int) -> None:
        self.max_bytes, self.max_depth, self.work = max_bytes, max_depth, work

    def spend(self, amount: int, what: str) -> None:
        self.work -= amount
        if self.work < 0:
            raise _Over(f"{what} passes the work a patch may do ({_mib(MAX_PATCH_WORK)} of measuring and copying)")


class _Over(Exception):
    """A limit passed (turned into PatchLimitError naming the operation)."""


def json_size(value: Any, max_bytes: int = MAX_STATE_BYTES) -> int:
    """Bytes of ``value`` as compact JSON, or ``max_bytes + 1`` as soon as it is known to be larger."""
    try:
        return len(orjson.dumps(value))
    except orjson.JSONEncodeError:  # deeper than orjson writes (or not JSON): the walk
        return _walk(value, max_bytes, 1 << 30)[0]


def apply_patch(
    state: Any,
    patch: Any,
    *,
    size: int | None = None,
    max_bytes: int = MAX_STATE_BYTES,
    max_depth: int = MAX_STATE_DEPTH,
    max_work: int = MAX_PATCH_WORK,
) -> Patched:
    """``state`` with the RFC 6902 ``patch`` applied (``state`` itself is left as it was). ``size``: the state's
    size from the last ``Patched``, if known. Raises PatchError (PatchLimitError for a limit)."""
    if type(patch) is not list:
        raise PatchError(f"a patch is a JSON array of operations, found {_type_name(patch)}")
    limits = _Limits(max_bytes, max_depth, max_work)
    if size is None:
        size = _measure_or_refuse(state, limits, 0, "the state before the patch")
    applier = _Applier(state, size, limits)
    for index, operation in enumerate(patch):
        try:
            applier.apply(operation)
        except _Over as over:
            raise PatchLimitError(f"operation {index} ({_describe(operation)}): {over}") from None
        except (_Conflict, KeyError, IndexError, TypeError, ValueError) as error:
            raise PatchError(f"operation {index} ({_describe(operation)}): {error}") from None
    return Patched(applier.state, applier.size)


class _Conflict(Exception):
    """An operation that does not fit the document (a missing member, an index out of range, a bad path)."""


def _measure_or_refuse(value: Any, limits: _Limits, depth_above: int, what: str) -> int:
    """The size of ``value`` placed ``depth_above`` levels down; _Over if it or its depth passes a limit."""
    size, depth = _measure(value, limits.max_bytes, limits.max_depth - depth_above, limits, what)
    if size > limits.max_bytes:
        raise _Over(f"{what} is over {_mib(limits.max_bytes)} of JSON, more than a state may hold")
    if depth_above + depth > limits.max_depth:
        raise _Over(f"{what} nests {depth_above + depth} levels deep, past the {limits.max_depth} a state may")
    return size


def _measure(value: Any, max_bytes: int, max_depth: int, limits: _Limits, what: str) -> tuple[int, int]:
    """(size, depth) of ``value``; the size is cut off just past ``max_bytes`` and the depth past ``max_depth``.
    orjson at C speed when it can (it writes what it reads but 255 levels), else a walk; the bytes count as
    work either way."""
    kind = type(value)
    if kind is not dict and kind is not list:
        size = _scalar_size(value)
        limits.spend(size, what)
        return size, 0
    try:
        encoded = orjson.dumps(value)
    except orjson.JSONEncodeError:
        size, depth = _walk(value, max_bytes, max_depth)
        limits.spend(size, what)
        return size, depth
    limits.spend(len(encoded), what)
    if max_depth >= _ORJSON_DEPTH:
        return len(encoded), 1  # at most 255 levels deep: within any room this large
    return len(encoded), _walk(value, max_bytes, max_depth)[1]


def _walk(value: Any, max_bytes: int, max_depth: int) -> tuple[int, int]:
    """(size, depth) by an explicit walk (any depth), stopping once past ``max_bytes`` or ``max_depth``."""
    size, deepest = 0, 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, level = stack.pop()
        kind = type(item)
        if kind is dict:
            level += 1
            size += 1 + 2 * len(item) if item else 2  # braces, colons and commas
            for key, child in item.items():
                size += len(key.encode("utf-8", "surrogatepass")) + 2
                stack.append((child, level))
        elif kind is list:
            level += 1
            size += 1 + len(item) if item else 2
            stack.extend((child, level) for child in item)
        else:
            size += _scalar_size(item)
        if level > deepest:
            deepest = level
        if size > max_bytes or deepest > max_depth:
            return max(size, max_bytes + 1) if size > max_bytes else size, deepest
    return size, deepest


def _key_size(key: str) -> int:
    return len(key.encode("utf-8", "surrogatepass")) + 4


def _scalar_size(value: Any) -> int:
    if type(value) is str:
        return len(value.encode("utf-8", "surrogatepass")) + 2
    try:
        return len(orjson.dumps(value))
    except (orjson.JSONEncodeError, TypeError):
        return len(repr(value))


class _Applier:
    """One patch's application: the state so far, its size, and the containers this patch made (changed in
    place from then on; every other container is the input's, copied before its first change)."""

    def __init__(self, state: Any, size: int, limits: _Limits) -> None:
        self.state = state
        self.size = size
        self.limits = limits
        self.owned: dict[int, Any] = {}  # id -> container (held, so an id is never reused while this runs)

    def apply(self, operation: Any) -> None:
        if type(operation) is not dict:
            raise _Conflict(f"an operation is a JSON object, found {_type_name(operation)}")
        op = operation.get("op")
        if op not in _OPS:
            raise _Conflict(f"'op' must be one of {', '.join(sorted(_OPS))}")
        path = _tokens(operation.get("path"), "path")
        if op in ("add", "replace", "test") and "value" not in operation:
            raise _Conflict(f"a {op} operation needs a 'value'")
        if op == "add":
            self._add(path, operation["value"], "the added value")
        elif op == "remove":
            self._remove(path)
        elif op == "replace":
            # a member keeps its place among its siblings (as jsonpatch and every JSON reader show it)
            self._remove(path, replacing=True, keep_place=True)
            self._add(path, operation["value"], "the new value", replacing=True)
        elif op == "test":
            self._test(path, operation["value"])
        else:
            source = _tokens(operation.get("from"), "from")
            value = self._get(source)
            if op == "move":
                if source == path:
                    return
                if len(source) < len(path) and path[: len(source)] == source:
                    raise _Conflict("a value cannot be moved into its own child")
                self._remove(source)
                self._add(path, value, "the moved value")
            else:
                # in two places from now on (and maybe an ancestor of its target): neither is changed in place
                self.owned.clear()
                self._add(path, value, "the copied value")
                self.owned.clear()

    # -- reading -------------------------------------------------------------------------------
    def _get(self, path: list[str]) -> Any:
        node = self.state
        for depth, token in enumerate(path):
            node = _child(node, token, path, depth)
        return node

    def _test(self, path: list[str], expected: Any) -> None:
        actual = self._get(path)
        _measure(expected, self.limits.max_bytes, 1 << 30, self.limits, "the tested value")  # the compare's work
        if not json_equal(actual, expected):
            raise _Conflict(f"the value at {_pointer(path)} is not the tested value")

    # -- writing -------------------------------------------------------------------------------
    def _add(self, path: list[str], value: Any, what: str, *, replacing: bool = False) -> None:
        """Sizes count a member as its key, quotes, colon, value and comma, an item as its value and comma."""
        added = _measure_or_refuse(value, self.limits, len(path), what)  # before anything is built
        if not path:
            self.state, self.size = value, added
            return
        parent = self._parent(path)
        last = path[-1]
        if type(parent) is dict:
            if last in parent:  # add over a member replaces it (RFC 6902 4.1)
                self.size -= self._member_size(last, parent[last])
            grown = self.size + _key_size(last) + added
            self._check_size(grown, what)
            parent[last] = value
        else:
            index = len(parent) if last == "-" and not replacing else _index(parent, last, path, end_ok=True)
            grown = self.size + 1 + added
            self._check_size(grown, what)
            parent.insert(index, value)
        self.size = grown

    def _remove(self, path: list[str], *, replacing: bool = False, keep_place: bool = False) -> None:
        if not path:
            if replacing:
                return  # replace "" is the new value as the document
            raise _Conflict("the whole document cannot be removed")
        parent = self._parent(path)
        last = path[-1]
        if type(parent) is dict:
            if last not in parent:
                raise _Conflict(f"there is no member {quoted(last)} to {'replace' if replacing else 'remove'}")
            self.size -= self._member_size(last, parent[last])
            if keep_place:
                parent[last] = None  # its value leaves now; the add that follows sets the new one in this place
                self.size += self._member_size(last, None)
            else:
                del parent[last]
        else:
            index = _index(parent, last, path)
            self.size -= 1 + self._value_size(parent[index])
            del parent[index]

    def _member_size(self, key: str, value: Any) -> int:
        return _key_size(key) + self._value_size(value)

    def _value_size(self, value: Any) -> int:
        """The size of a value leaving the state (it was measured coming in: within the limits)."""
        return _measure(value, 1 << 62, 1 << 30, self.limits, "the removed value")[0]

    def _check_size(self, size: int, what: str) -> None:
        if size > self.limits.max_bytes:
            raise _Over(
                f"with {what} the state would be {_mib(size)} of JSON, over the {_mib(self.limits.max_bytes)} "
                "a state may hold (no snapshot line could hold it)"
            )

    def _parent(self, path: list[str]) -> Any:
        """The container ``path`` ends in, made this patch's own (copied on the way down where it is not)."""
        node = self._own(self.state)
        self.state = node
        for depth, token in enumerate(path[:-1]):
            child = _child(node, token, path, depth)
            owned = self._own(child)
            if owned is not child:
                if type(node) is dict:
                    node[token] = owned
                else:
                    node[int(token)] = owned
            node = owned
        if type(node) is not dict and type(node) is not list:
            raise _Conflict(f"{_pointer(path[:-1])} is {_type_name(node)}, not an object or an array")
        return node

    def _own(self, node: Any) -> Any:
        kind = type(node)
        if (kind is not dict and kind is not list) or id(node) in self.owned:
            return node
        self.limits.spend(len(node), "copying the containers on its path")
        copy = dict(node) if kind is dict else list(node)
        self.owned[id(copy)] = copy
        return copy


def _child(node: Any, token: str, path: list[str], depth: int) -> Any:
    if type(node) is dict:
        if token not in node:
            raise _Conflict(f"{_pointer(path[: depth + 1])} does not exist")
        return node[token]
    if type(node) is list:
        return node[_index(node, token, path[: depth + 1])]
    raise _Conflict(f"{_pointer(path[:depth])} is {_type_name(node)}, not an object or an array")


def _index(array: list[Any], token: str, path: Sequence[str], *, end_ok: bool = False) -> int:
    """An array index token (RFC 6901: "0", or digits without a leading zero) within bounds."""
    if not (token.isdecimal() and token.isascii()) or (token[0] == "0" and token != "0"):
        raise _Conflict(f"{quoted(token)} in {_pointer(path)} is not an array index")
    position = int(token)
    if position > len(array) or (position == len(array) and not end_ok):
        raise _Conflict(f"{_pointer(path)}: index {position} is out of range (the array has {len(array)} items)")
    return position


def _tokens(pointer: Any, field: str) -> list[str]:
    """The reference tokens of an RFC 6901 pointer ("" is the whole document)."""
    if type(pointer) is not str:
        raise _Conflict(f"'{field}' must be a JSON pointer (text), found {_type_name(pointer)}")
    if not pointer:
        return []
    if pointer[0] != "/":
        raise _Conflict(f"'{field}' {quoted(pointer)} does not start with '/'")
    tokens = pointer[1:].split("/")
    if "~" in pointer:
        for token in tokens:
            if "~" in token.replace("~0", "").replace("~1", ""):
                raise _Conflict(f"'{field}' {quoted(pointer)} holds a '~' that is not ~0 or ~1")
        tokens = [token.replace("~1", "/").replace("~0", "~") for token in tokens]
    return tokens


def json_equal(left: Any, right: Any) -> bool:
    """JSON equality (RFC 6902 ``test``): numbers by value, ``true`` never equal to ``1``; any depth."""
    stack = [(left, right)]
    while stack:
        a, b = stack.pop()
        if a is b:
            continue
        kind_a, kind_b = type(a), type(b)
        if kind_a is dict:
            if kind_b is not dict or a.keys() != b.keys():
                return False
            stack.extend((a[key], b[key]) for key in a)
        elif kind_a is list:
            if kind_b is not list or len(a) != len(b):
                return False
            stack.extend(zip(a, b))
        elif kind_a is bool or kind_b is bool:
            if kind_a is not kind_b or a != b:
                return False
        elif kind_a in (int, float) and kind_b in (int, float):
            if a != b:
                return False
        elif kind_a is not kind_b or a != b:
            return False
    return True


def _pointer(tokens: Sequence[str]) -> str:
    text = "".join("/" + token.replace("~", "~0").replace("/", "~1") for token in tokens)
    return quoted(text) if text else "the root"


def _describe(operation: Any) -> str:
    if type(operation) is not dict:
        return "not an object"
    op, path, source = operation.get("op"), operation.get("path"), operation.get("from")
    shown = f"{op if type(op) is str and op in _OPS else '?'}"
    if type(source) is str:
        shown += f" from {quoted(source, 40) if source else 'the root'}"
    if type(path) is str:
        shown += f" {'to' if type(source) is str else 'at'} {quoted(path, 40) if path else 'the root'}"
    return shown


def _type_name(value: Any) -> str:
    return {dict: "an object", list: "an array", str: "text", bool: "a boolean", int: "a number"}.get(
        type(value), "a number" if type(value) is float else "null" if value is None else type(value).__name__
    )


def _mib(size: int) -> str:
    return f"{size / 2**20:.1f} MiB" if size >= 2**20 else f"{size:,} bytes"

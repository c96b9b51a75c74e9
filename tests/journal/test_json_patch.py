"""RFC 6902 JSON Patch through the one bounded applier: what it builds agrees with jsonpatch (where the RFC
does), the input is never changed, and a patch whose output passes a limit is refused at its operation,
before the output is built (copy bombs, copy/remove loops, nesting past the reader)."""

from __future__ import annotations

import copy
import re
import time
import tracemalloc
from typing import Any

import jsonpatch
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replay_tui.journal.json_patch import (
    MAX_STATE_BYTES,
    MAX_STATE_DEPTH,
    PatchError,
    PatchLimitError,
    apply_patch,
    json_equal,
)

_scalars = st.none() | st.booleans() | st.integers(-3, 3) | st.sampled_from(["", "a", "b~/", "x" * 20])
_values = st.recursive(
    _scalars,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.sampled_from("abc"), children, max_size=3),
    max_leaves=12,
)


def _pointers(value: Any, prefix: str = "") -> list[str]:
    found = [prefix]
    if isinstance(value, dict):
        for key, child in value.items():
            found += _pointers(child, f"{prefix}/{key.replace('~', '~0').replace('/', '~1')}")
    elif isinstance(value, list):
        for index, child in enumerate(value):
            found += _pointers(child, f"{prefix}/{index}")
    return found


@st.composite
def _document_and_patch(draw: st.DrawFn) -> tuple[Any, list[dict[str, Any]]]:
    document = draw(st.dictionaries(st.sampled_from("abc"), _values, max_size=3))
    paths = _pointers(document)
    path = st.sampled_from(paths) | st.sampled_from([p + "/-" for p in paths] + [p + "/z" for p in paths] + ["/0"])
    source = st.sampled_from([p for p in paths if p]) if len(paths) > 1 else st.just("/missing")
    operation = st.one_of(
        st.builds(lambda p, v: {"op": "add", "path": p, "value": v}, path, _values),
        st.builds(lambda p: {"op": "remove", "path": p}, st.sampled_from(paths[1:] or ["/missing"])),
        st.builds(lambda p, v: {"op": "replace", "path": p, "value": v}, st.sampled_from(paths), _values),
        st.builds(lambda f, p: {"op": "move", "from": f, "path": p}, source, path),
        st.builds(lambda f, p: {"op": "copy", "from": f, "path": p}, source, path),
        st.builds(lambda p, v: {"op": "test", "path": p, "value": v}, st.sampled_from(paths), _values),
    )
    return document, draw(st.lists(operation, min_size=1, max_size=4))


def _rfc_and_jsonpatch_differ(document: Any, patch: list[dict[str, Any]]) -> bool:
    """The cases where jsonpatch departs from RFC 6902 (this applier follows the RFC)."""
    for operation in patch:
        if operation["op"] == "test":
            return True  # jsonpatch compares with Python's == (true equals 1)
        if operation["op"] == "move" and operation["path"].startswith(operation["from"] + "/"):
            return True  # into its own child: jsonpatch checks this under an object only
        if operation["op"] in ("add", "copy", "move") and operation["path"] == "":
            return True  # the whole document: jsonpatch refuses when the document is no object or array
    return False


@settings(max_examples=600, deadline=None)
@given(_document_and_patch())
def test_what_it_builds_agrees_with_jsonpatch(case: tuple[Any, list[dict[str, Any]]]) -> None:
    document, patch = case
    if _rfc_and_jsonpatch_differ(document, patch):
        return
    before = copy.deepcopy(document)
    try:
        expected = jsonpatch.apply_patch(copy.deepcopy(document), copy.deepcopy(patch))
    except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException, TypeError, KeyError, IndexError):
        with pytest.raises(PatchError):
            apply_patch(document, patch)
    else:
        built = apply_patch(document, patch)
        assert built.state == expected
        assert orjson.dumps(built.state) == orjson.dumps(expected)  # members in the same order: a replace keeps place
        assert abs(built.size - len(orjson.dumps(expected))) <= 4 * len(patch) + 4  # a comma per change at most
    assert document == before  # never changed in place, whatever the patch did


def test_a_replaced_member_keeps_its_place() -> None:
    """The state views show members in the journal's order: a replace must not move the member to the end."""
    built = apply_patch({"a": 0, "errors": 0, "z": 0}, [{"op": "replace", "path": "/errors", "value": 1}])
    assert list(built.state) == ["a", "errors", "z"]


def test_where_the_rfc_and_jsonpatch_differ_the_rfc_is_followed() -> None:
    assert apply_patch({"a": 1}, [{"op": "copy", "from": "", "path": "/x"}]).state == {"a": 1, "x": {"a": 1}}
    with pytest.raises(PatchError, match="not the tested value"):
        apply_patch({"a": 1}, [{"op": "test", "path": "/a", "value": True}])
    apply_patch({"a": 1.0}, [{"op": "test", "path": "/a", "value": 1}])  # numbers by value
    with pytest.raises(PatchError, match="into its own child"):
        apply_patch([[1]], [{"op": "move", "from": "/0", "path": "/0/0"}])
    with pytest.raises(PatchError, match="a JSON array of operations"):
        apply_patch({}, '[{"op": "add", "path": "/a", "value": 1}]')  # jsonpatch parses text as a patch


def test_errors_name_the_operation_and_why() -> None:
    with pytest.raises(PatchError, match=r"operation 1 \(remove at '/b'\): there is no member 'b' to remove"):
        apply_patch({"a": 1}, [{"op": "add", "path": "/c", "value": 1}, {"op": "remove", "path": "/b"}])
    with pytest.raises(PatchError, match=r"'01' in '/a/01' is not an array index"):
        apply_patch({"a": [1]}, [{"op": "add", "path": "/a/01", "value": 1}])
    with pytest.raises(PatchError, match="'op' must be one of"):
        apply_patch({}, [{"op": "nope", "path": ""}])


def _bounded(patch: list[dict[str, Any]], state: Any) -> tuple[PatchLimitError, float, int]:
    tracemalloc.start()
    started = time.process_time()
    try:
        with pytest.raises(PatchLimitError) as raised:
            apply_patch(state, patch)
        return raised.value, time.process_time() - started, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_copy_bomb_is_refused_at_the_operation_that_passes_the_limit() -> None:
    """Each pair of copies doubles /a: 2.3 GB after 18 of them before. Refused at the first that passes 16 MiB."""
    bomb = [{"op": "copy", "from": "/a", "path": f"/a/{name}"} for _ in range(40) for name in "xy"]
    error, seconds, peak = _bounded(bomb, {"a": {"seed": "s" * 1000}})
    assert re.match(r"operation 1\d \(copy from '/a' to '/a/[xy]'\): with the copied value the state", str(error))
    assert "over the 16.0 MiB" in str(error)
    assert seconds < 2 and peak < 48 * 2**20, (seconds, peak)


def test_a_copy_bomb_into_a_list_is_refused_too() -> None:
    error, seconds, peak = _bounded([{"op": "copy", "from": "", "path": "/-"}] * 60, ["s" * 1000])
    assert "over the 16.0 MiB" in str(error) and seconds < 2 and peak < 48 * 2**20, (seconds, peak)


def test_a_copy_and_remove_loop_is_cut_short_by_the_work_limit() -> None:
    """Each pair costs a walk of the 7 MB value and adds nothing: 200,000 pairs would take hours."""
    loop = [{"op": "copy", "from": "/a", "path": "/b"}, {"op": "remove", "path": "/b"}] * 200_000
    error, seconds, _ = _bounded(loop, {"a": list(range(1_000_000))})
    assert "passes the work a patch may do" in str(error) and seconds < 5, seconds


def test_nesting_past_what_a_snapshot_line_holds_is_refused() -> None:
    chain = [{"op": "add", "path": "/a" * depth, "value": {}} for depth in range(1, MAX_STATE_DEPTH + 5)]
    error, _, _ = _bounded(chain, {})
    assert f"operation {MAX_STATE_DEPTH - 1} " in str(error) and f"past the {MAX_STATE_DEPTH}" in str(error)
    deep: Any = {}
    for _ in range(300):
        deep = {"a": deep}
    with pytest.raises(PatchLimitError, match="nests"):  # a value too deep for orjson to measure, at a deep path
        apply_patch(
            {},
            [
                {"op": "add", "path": "/b" * 1, "value": {}},
                *chain[:800],
                {"op": "add", "path": "/a" * 800 + "/d", "value": deep},
            ],
        )


def test_a_state_at_the_limit_still_applies() -> None:
    big = {"text": "x" * (MAX_STATE_BYTES - 64)}
    built = apply_patch(big, [{"op": "add", "path": "/n", "value": 1}])
    assert built.state["n"] == 1 and built.size <= MAX_STATE_BYTES
    with pytest.raises(PatchLimitError):
        apply_patch(big, [{"op": "add", "path": "/more", "value": "y" * 100}])


def test_json_equal_is_json_equality() -> None:
    assert json_equal({"a": [1, 2.0, None]}, {"a": [1.0, 2, None]})
    assert not json_equal([True], [1]) and not json_equal({"a": 0}, {"a": False}) and not json_equal("1", 1)

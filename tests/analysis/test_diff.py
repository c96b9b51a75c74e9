"""Changed, added and removed JSON pointers between two values."""

from __future__ import annotations

from replay_tui.analysis.diff import ValueDiff, diff_values, is_related
from replay_tui.journal.pointer import parts_of, pointer_of


def test_changed_added_removed() -> None:
    diff = diff_values(
        {"a": 1, "b": [1, 2], "gone": True, "c": {"x": 1}}, {"a": 2, "b": [1, 2, 3], "c": {"x": "1"}, "new": 0}
    )
    assert diff.changed == ("/a", "/c/x")
    assert diff.added == ("/b/2", "/new")
    assert diff.removed == ("/gone",)
    assert diff.kind_of("/a") == "changed" and diff.kind_of("/c") is None
    assert diff.touches("/c") and not diff.touches("/zzz")


def test_equal_values_have_an_empty_diff() -> None:
    assert diff_values({"a": [1, {"b": None}]}, {"a": [1, {"b": None}]}).empty


def test_whole_value_replaced_is_the_root_pointer() -> None:
    assert diff_values(None, {"a": 1}) == ValueDiff(changed=("",))


def test_pointer_escaping_round_trips() -> None:
    assert pointer_of(["a/b", "t~", 0]) == "/a~1b/t~0/0"
    assert parts_of("/a~1b/t~0/0") == ["a/b", "t~", "0"]
    assert diff_values({"a/b": [1]}, {"a/b": []}).removed == ("/a~1b/0",)


def test_is_related() -> None:
    assert is_related("/a", "/a/b") and is_related("/a/b", "/a") and is_related("", "/x")
    assert not is_related("/a", "/ab")

"""The streaming `diff` gives the verdicts of the full alignment (replay.compare.align_journals)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_launch import REPO

from replay_tui.journal import open_journal
from replay_tui.replay.compare import align_journals
from replay_tui.replay.parent.journal_diff import diff_journals

FIXTURES = REPO / "fixtures" / "journals"


def edited_copy(source: Path, target: Path, edit) -> Path:  # type: ignore[no-untyped-def]
    """A copy with lines changed by ``edit`` (list of parsed events -> list); hashes are not redone (diff ignores them)."""
    events = [json.loads(line) for line in source.read_text().splitlines()]
    target.write_text("".join(json.dumps(event) + "\n" for event in edit(events)))
    return target


def change_argument(events):  # type: ignore[no-untyped-def]
    call = next(e for e in events[40:] if e["kind"] == "tool.call")
    call["payload"]["arguments"]["page"] = 999
    return events


def drop_an_observation(events):  # type: ignore[no-untyped-def]
    index = next(i for i, e in enumerate(events) if i > 60 and e["kind"] == "tool.result")
    return events[:index] + events[index + 1 :]


def verdicts(alignment):  # type: ignore[no-untyped-def]
    summary = alignment.summary()
    first = alignment.first_difference()
    return (
        alignment.identical,
        {
            key: summary[key]
            for key in ("a_events", "b_events", "aligned", "differences", "changed", "only_a", "only_b")
        },
        sorted(
            (p.a.seq if p.a else None, p.b.seq if p.b else None, p.status, p.differs_in) for p in alignment.differences
        ),
        first is not None,
    )


@pytest.mark.parametrize("case", ["same", "other-run", "changed-argument", "dropped-event"])
def test_streaming_diff_agrees_with_the_full_alignment(tmp_path: Path, case: str) -> None:
    a = FIXTURES / "crm.jsonl"
    b = {
        "same": lambda: a,
        "other-run": lambda: FIXTURES / "crm-incident.jsonl",
        "changed-argument": lambda: edited_copy(a, tmp_path / "b.jsonl", change_argument),
        "dropped-event": lambda: edited_copy(a, tmp_path / "b.jsonl", drop_an_observation),
    }[case]()
    with open_journal(a) as journal_a, open_journal(b) as journal_b:
        full = align_journals(journal_a, journal_b)
    with open_journal(a) as journal_a, open_journal(b) as journal_b:
        streamed = diff_journals(journal_a, journal_b)
    assert verdicts(streamed) == verdicts(full)
    assert streamed.identical == (case == "same")


def change_a_parent(events):  # type: ignore[no-untyped-def]
    response = next(e for e in events[70:] if e["kind"] == "model.response")
    response["parent_event_id"] = events[2]["event_id"]  # a pair long before, in another worker's run
    return events


def change_a_cause(events):  # type: ignore[no-untyped-def]
    transition = next(e for e in events[90:] if e["kind"] == "state.transition")
    transition["payload"]["cause_seq"] = 3
    return events


@pytest.mark.parametrize(
    "case", ["same", "other-run", "changed-argument", "dropped-event", "changed-parent", "changed-cause", "bad-line"]
)
@pytest.mark.parametrize("chunk", [7, 40])
def test_the_walk_in_worker_processes_gives_the_verdicts_of_the_walk_in_one(
    tmp_path: Path, case: str, chunk: int
) -> None:
    """Runs of a few positions (every parent and cause of a pair before a run is a question the parent process
    answers), against the same diff in one process: the same pairs, differences and order, the same error."""
    a = FIXTURES / "crm.jsonl"
    edits = {
        "changed-argument": change_argument,
        "dropped-event": drop_an_observation,
        "changed-parent": change_a_parent,
        "changed-cause": change_a_cause,
    }
    if case == "same":
        b = a
    elif case == "other-run":
        b = FIXTURES / "crm-incident.jsonl"
    elif case == "bad-line":
        lines = a.read_bytes().splitlines(keepends=True)
        b = tmp_path / "b.jsonl"
        b.write_bytes(b"".join(lines[:100]) + b'{"broken": \n' + b"".join(lines[101:]))
    else:
        b = edited_copy(a, tmp_path / "b.jsonl", edits[case])

    first, second = (b, a) if case == "changed-parent" else (a, b)  # the far parent on A's side: an open question

    def diffed(workers: int):  # type: ignore[no-untyped-def]
        with open_journal(first) as journal_a, open_journal(second) as journal_b:
            try:
                alignment = diff_journals(journal_a, journal_b, workers=workers, chunk_events=chunk)
            except Exception as error:  # noqa: BLE001 (the error is the result to compare)
                return type(error), str(error)
            return verdicts(alignment), [(p.a.seq if p.a else None, p.differs_in) for p in alignment.differences]

    alone = diffed(1)
    assert diffed(2) == alone
    if case in ("changed-parent", "changed-cause"):
        assert any(differs for _, differs in alone[1]), alone


def test_a_malformed_line_is_named_as_verify_names_it(tmp_path: Path) -> None:
    from replay_tui.cli import main

    lines = (FIXTURES / "crm.jsonl").read_bytes().splitlines(keepends=True)
    broken = tmp_path / "broken.jsonl"
    broken.write_bytes(b"".join(lines[:3]) + b'{"broken": \n' + b"".join(lines[4:]))
    with open_journal(FIXTURES / "crm.jsonl") as good, open_journal(broken) as bad:
        with pytest.raises(Exception) as raised:
            diff_journals(good, bad)
    assert "line 4" in str(raised.value) and "not valid JSON" in str(raised.value)
    assert main(["diff", str(FIXTURES / "crm.jsonl"), str(broken)]) == 2

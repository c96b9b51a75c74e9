"""The import's second pass writes through ``JournalWriter.append_spliced`` (envelope parts given as canonical
JSON): its lines must be the ones ``append`` writes, with a signer's checkpoints and seal too."""

from __future__ import annotations

from collections.abc import Generator
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from replay_tui.journal import JournalWriter
from replay_tui.journal.canonical import canonical_json, canonical_string
from replay_tui.journal.model import RUN_ENDED
from replay_tui.journal.seal import Signer
from replay_tui.journal.writer import SplicedEvent

KINDS = ["input.received", "model.request", "model.response", "note", "note", RUN_ENDED]
PARENTS = [None, 'run "x" \ue000:1', 'run "x" \ue000:2', None, "\u2028 odd", None]


def _fixed_now() -> str:
    return "2026-11-29T10:00:00.000000Z"


def _write(path: Path, spliced: bool, signer: Signer | None) -> bytes:
    run_id = 'run "x" \ue000'
    with JournalWriter(path, run_id=run_id, now=_fixed_now, signer=signer, checkpoint_every=2) as writer:
        for index, (kind, parent) in enumerate(zip(KINDS, PARENTS)):
            payload = {"n": index, "text": "\x00\ue000\U0001f600"}
            step = None if index % 3 == 0 else f"step-{index:02d}"
            if spliced:
                expected_id = canonical_string(f"{run_id}:{writer.last_seq + 1}")
                event_id = writer.append_spliced(
                    canonical_string(kind),
                    canonical_json(payload),
                    parent_json=b"null" if parent is None else canonical_string(parent),
                    step_json=b"null" if step is None else canonical_string(step),
                    recorded_at_json=canonical_string(_fixed_now()),
                )
                assert event_id == expected_id
            else:
                writer.append(kind, payload, step_id=step, parent_event_id=parent)
    return path.read_bytes()


def test_spliced_events_are_the_bytes_append_writes(tmp_path: Path) -> None:
    signer = Signer(Ed25519PrivateKey.from_private_bytes(bytes(range(32))))
    for sealed in (None, signer):
        plain = _write(tmp_path / f"append-{bool(sealed)}.jsonl", False, sealed)
        spliced = _write(tmp_path / f"spliced-{bool(sealed)}.jsonl", True, sealed)
        assert spliced == plain
    kinds = [line.split(b'"kind":')[1].split(b",")[0] for line in plain.splitlines()]
    # a checkpoint after every second seq until run.ended, one seal after it (never a second one)
    assert kinds.count(b'"chain.checkpoint"') == 4 and kinds[-1] == b'"run.sealed"'
    assert kinds.count(b'"run.sealed"') == 1


def _write_all(path: Path, signer: Signer | None) -> bytes:
    """The same events through ``append_spliced_all``: parents named by the ids the writer sends back."""
    run_id = 'run "x" \ue000'

    def events() -> Generator[SplicedEvent, bytes, None]:
        ids: list[bytes] = []
        for index, (kind, parent) in enumerate(zip(KINDS, PARENTS)):
            payload = {"n": index, "text": "\x00\ue000\U0001f600"}
            step = None if index % 3 == 0 else f"step-{index:02d}"
            # the events' own ids where the other writers name one (PARENTS holds ids of seq 1 and 2)
            parent_json = b"null" if parent is None else canonical_string(parent)
            if parent is not None and parent.endswith((":1", ":2")):
                parent_json = ids[int(parent[-1]) - 1]
            event_id = yield (
                canonical_string(kind),
                canonical_json(payload),
                parent_json,
                b"null" if step is None else canonical_string(step),
                canonical_string(_fixed_now()),
            )
            ids.append(event_id)

    with JournalWriter(path, run_id=run_id, now=_fixed_now, signer=signer, checkpoint_every=2) as writer:
        writer.append_spliced_all(events())
    return path.read_bytes()


def test_events_written_in_one_loop_are_the_bytes_append_writes(tmp_path: Path) -> None:
    signer = Signer(Ed25519PrivateKey.from_private_bytes(bytes(range(32))))
    for sealed in (None, signer):  # the loop of its own, and one event at a time (checkpoints, seal)
        plain = _write(tmp_path / f"append-{bool(sealed)}.jsonl", False, sealed)
        assert _write_all(tmp_path / f"all-{bool(sealed)}.jsonl", sealed) == plain
    with JournalWriter(tmp_path / "mixed.jsonl", run_id="r", now=_fixed_now) as writer:
        writer.append("note", {"n": 0})
        writer.append_spliced_all(_nothing())
        writer.append_spliced_all(_one_note())
        writer.append("note", {"n": 2}, recorded_at="t")
    with JournalWriter(tmp_path / "plain.jsonl", run_id="r", now=_fixed_now) as writer:
        writer.append("note", {"n": 0})
        writer.append("note", {"n": 1}, recorded_at="t")
        writer.append("note", {"n": 2}, recorded_at="t")
    assert (tmp_path / "mixed.jsonl").read_bytes() == (tmp_path / "plain.jsonl").read_bytes()


def _nothing() -> Generator[SplicedEvent, bytes, None]:
    yield from ()


def _one_note() -> Generator[SplicedEvent, bytes, None]:
    yield b'"note"', b'{"n":1}', b"null", b"null", b'"t"'

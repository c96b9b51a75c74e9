"""The agent state before and after any event, rebuilt from the journal alone.

State is the nearest earlier ``state.snapshot`` (or the ``initial_state`` of
``run.started``) with the RFC 6902 patches of the ``state.transition`` events in
between applied in seq order. No agent code runs. Every hash recorded on the way
(snapshot ``state_hash``, transition ``before_hash``/``after_hash``) is checked
against the rebuilt state, and every mismatch is returned to the caller.
"""

from __future__ import annotations

import copy
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Iterator, Literal

from ..journal import Event, Journal, JournalError, hash_value, json_patch
from ..journal.dialects import V1
from ..journal.model import RUN_STARTED, STATE_SNAPSHOT, STATE_TRANSITION
from ..journal.progress import CancelCheck
from .diff import ValueDiff, diff_values, is_related
from .search import iter_lines, iter_lines_backwards

_STATE_KINDS = (RUN_STARTED, STATE_SNAPSHOT, STATE_TRANSITION)
_STATE_MARKERS = tuple(kind.encode() for kind in _STATE_KINDS)


@dataclass(frozen=True)
class HashCheck:
    """One recorded hash compared with the hash of the rebuilt state."""

    seq: int
    what: Literal["before", "after", "snapshot"]
    expected: str
    actual: str

    @property
    def ok(self) -> bool:
        return self.expected == self.actual

    def describe(self) -> str:
        label = {"before": "before_hash", "after": "after_hash", "snapshot": "state_hash"}[self.what]
        if self.ok:
            return f"seq {self.seq}: {label} matches"
        return f"seq {self.seq}: recorded {label} {self.expected} but the rebuilt state hashes to {self.actual}"


@dataclass(frozen=True)
class StateAt:
    """The state around one event: ``before`` it and ``after`` it."""

    seq: int
    position: int
    before: Any
    after: Any
    base_seq: int | None  # the snapshot or run.started the state was rebuilt from
    checks: tuple[HashCheck, ...] = ()
    problems: tuple[str, ...] = ()  # a patch that did not apply, a missing base, a bad line
    diff: ValueDiff = field(default_factory=ValueDiff)

    @property
    def mismatches(self) -> tuple[HashCheck, ...]:
        return tuple(check for check in self.checks if not check.ok)

    @property
    def verified(self) -> bool:
        """True when at least one recorded hash was checked and none disagreed."""
        return bool(self.checks) and not self.mismatches and not self.problems

    @property
    def status(self) -> str:
        if self.problems:
            return "problem: " + self.problems[0]
        if self.mismatches:
            return "hash mismatch: " + self.mismatches[0].describe()
        if self.checks:
            return f"verified ({len(self.checks)} recorded hash(es) match)"
        return "not verified (no recorded state hash on the way)"


@dataclass
class _Checkpoint:
    state: Any
    base_seq: int | None
    checks: list[HashCheck]
    problems: list[str]


class StateHistory:
    """Rebuilds state at any position of one journal, with a small cache of results.

    Safe to call from a worker thread; calls are serialised by a lock because
    checkpoints are shared between neighbouring positions.
    """

    def __init__(self, journal: Journal, *, cache_size: int = 256) -> None:
        self.journal = journal
        self._cache: OrderedDict[int, _Checkpoint] = OrderedDict()  # position -> state *after* it
        self._cache_size = cache_size
        self._lock = threading.Lock()

    # -- public -----------------------------------------------------------
    def at(self, position: int, cancelled: CancelCheck | None = None) -> StateAt | None:
        """State before and after the event at ``position``; None if cancelled."""
        with self._lock:
            event = self.journal.try_event(position)
            seq = event.seq if isinstance(event, Event) else position + 1
            before = self._after(position - 1, cancelled) if position > 0 else _Checkpoint(None, None, [], [])
            if before is None:
                return None
            after = self._apply(before, position, event)
            self._remember(position, after)
            checks = tuple(after.checks)
            return StateAt(
                seq=seq,
                position=position,
                before=before.state,
                after=after.state,
                base_seq=after.base_seq,
                checks=checks,
                problems=tuple(after.problems),
                diff=diff_values(before.state, after.state),
            )

    # -- rebuilding -------------------------------------------------------
    def _after(self, position: int, cancelled: CancelCheck | None) -> _Checkpoint | None:
        """The state after ``position``: from a cached checkpoint or the nearest base."""
        cached = self._cache.get(position)
        if cached is not None:
            self._cache.move_to_end(position)
            return cached
        base_position = position
        while base_position >= 0:
            if base_position in self._cache:
                break
            if cancelled is not None and (position - base_position) % 512 == 0 and cancelled():
                return None
            if self._is_base(base_position):
                break
            base_position -= 1
        if base_position < 0:
            current = _Checkpoint(None, None, [], ["no run.started or state.snapshot before this event"])
            base_position = -1
        elif base_position in self._cache:
            current = self._cache[base_position]
        else:
            current = self._apply(_Checkpoint(None, None, [], []), base_position, self.journal.try_event(base_position))
        for step in range(base_position + 1, position + 1):
            if cancelled is not None and step % 512 == 0 and cancelled():
                return None
            if not self._may_touch_state(step):
                continue
            current = self._apply(current, step, self.journal.try_event(step))
        self._remember(position, current)
        return current

    def _apply(self, current: _Checkpoint, position: int, event: Event | JournalError) -> _Checkpoint:
        """The checkpoint after ``event``, given the one before it (never mutated)."""
        stepped = _step(current.state, current.base_seq, event)
        if stepped is None:
            return current
        state, base_seq, checks, problems = stepped
        if isinstance(event, Event) and event.kind != STATE_TRANSITION:  # a base starts its own trail
            return _Checkpoint(state, base_seq, checks, problems)
        # keep the recent trail, not the whole history
        return _Checkpoint(state, base_seq, current.checks[-32:] + checks, current.problems[-8:] + problems)

    def _is_base(self, position: int) -> bool:
        if not self._may_touch_state(position):
            return False
        event = self.journal.try_event(position)
        return isinstance(event, Event) and event.kind in (RUN_STARTED, STATE_SNAPSHOT)

    def _may_touch_state(self, position: int) -> bool:
        return _may_touch_state(self.journal, position)

    def _remember(self, position: int, checkpoint: _Checkpoint) -> None:
        self._cache[position] = checkpoint
        self._cache.move_to_end(position)
        while len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)


def _may_touch_state(journal: Journal, position: int) -> bool:
    """Cheap byte test so walking over thousands of events parses only state events."""
    if journal.dialect != V1:
        return True
    line = journal.line_bytes(position)
    return any(marker in line for marker in _STATE_MARKERS)


def _step(
    state: Any, base_seq: int | None, event: Event | JournalError
) -> tuple[Any, int | None, list[HashCheck], list[str]] | None:
    """What ``event`` does to the state rebuilt so far (``state``, from the base at ``base_seq``): the state and
    base after it, and the hash checks and problems it adds. None when it does not touch the state."""
    if isinstance(event, JournalError):
        return None
    payload = event.payload
    if event.kind == RUN_STARTED:
        return copy.deepcopy(payload.get("initial_state")), event.seq, [], []
    if event.kind == STATE_SNAPSHOT:
        recorded = payload.get("state")
        checks = [HashCheck(event.seq, "snapshot", str(payload.get("state_hash")), hash_value(recorded))]
        # The snapshot disagrees with what the patches built: keep that visible.
        disagrees = base_seq is not None and state != recorded
        problems = (
            [f"seq {event.seq}: snapshot differs from the state rebuilt from earlier patches"] if disagrees else []
        )
        return copy.deepcopy(recorded), event.seq, checks, problems
    if event.kind != STATE_TRANSITION:
        return None
    checks = [HashCheck(event.seq, "before", str(payload.get("before_hash")), hash_value(state))]
    try:  # bounded as it is applied (a copy bomb stops at the operation that passes the limit); state is kept
        after = json_patch.apply_patch(state, payload.get("patch", [])).state
    except json_patch.PatchError as error:
        return state, base_seq, checks, [f"seq {event.seq}: patch does not apply ({error})"]
    checks.append(HashCheck(event.seq, "after", str(payload.get("after_hash")), hash_value(after)))
    return after, base_seq, checks, []


#: Faults ``verify_states`` lists at the most (as ``verify --all`` does).
MAX_STATE_FAULTS = 10_000


@dataclass(frozen=True)
class StateReport:
    """Every recorded state hash of a journal checked against the state rebuilt from its patches."""

    checked: int  # recorded hashes compared
    faults: tuple[str, ...]  # mismatches and problems, in seq order

    @property
    def ok(self) -> bool:
        return not self.faults

    def to_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "checked": self.checked, "faults": list(self.faults)}


def verify_states(
    journal: Journal, *, all_faults: bool = False, cancelled: CancelCheck | None = None
) -> StateReport | None:
    """Rebuild the state from ``run.started`` through every snapshot and transition, in seq order, and check
    every recorded hash against it: what the viewer does around one event, for the whole journal. A journal's
    hashes and its patches are both written by whoever wrote it; only this tells whether the states its patches
    show are the ones its hashes name. Stops at the first fault unless ``all_faults``; None if cancelled."""
    state: Any = None
    base_seq: int | None = None
    checked, faults = 0, []
    for position in range(len(journal)):
        if cancelled is not None and position % 512 == 0 and cancelled():
            return None
        if not _may_touch_state(journal, position):
            continue
        stepped = _step(state, base_seq, journal.try_event(position))
        if stepped is None:
            continue
        state, base_seq, checks, problems = stepped
        checked += len(checks)
        faults += [check.describe() for check in checks if not check.ok] + problems
        if faults and (not all_faults or len(faults) >= MAX_STATE_FAULTS):
            break
    return StateReport(checked, tuple(faults[:MAX_STATE_FAULTS]))


def patch_touches(patch: Any, pointer: str) -> bool:
    """True if an RFC 6902 patch may change the value at ``pointer``."""
    if not isinstance(patch, list):
        return False
    for operation in patch:
        if not isinstance(operation, dict) or operation.get("op") == "test":
            continue
        for key in ("path", "from") if operation.get("op") == "move" else ("path",):
            path = operation.get(key)
            if isinstance(path, str) and is_related(path, pointer):
                return True
    return False


def iter_changes(
    journal: Journal,
    pointer: str,
    start: int,
    direction: int = 1,
    cancelled: CancelCheck | None = None,
) -> Iterator[int]:
    """Positions of state.transition events whose patch touches ``pointer``.

    Walks from ``start`` (exclusive) forwards (``direction`` 1) or backwards (-1)
    over the events indexed so far; byte-filters before parsing.
    """
    marker = STATE_TRANSITION.encode()
    lines = iter_lines(journal, start + 1, len(journal)) if direction > 0 else iter_lines_backwards(journal, start - 1)
    for count, (position, line) in enumerate(lines):
        if cancelled is not None and count % 4096 == 0 and cancelled():
            return
        if journal.dialect == V1 and marker not in line:
            continue
        event = journal.try_event(position)
        if (
            isinstance(event, Event)
            and event.kind == STATE_TRANSITION
            and patch_touches(event.payload.get("patch"), pointer)
        ):
            yield position


def find_change(
    journal: Journal, pointer: str, start: int, direction: int = 1, cancelled: CancelCheck | None = None
) -> int | None:
    """The next (or previous) position where the value at ``pointer`` changes."""
    return next(iter_changes(journal, pointer, start, direction, cancelled), None)

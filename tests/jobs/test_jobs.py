"""The jobs layer: child jobs run as ``python -m replay_tui.jobs NAME``, thread jobs in the
caller's thread; cancelling a child kills its whole process group; progress is throttled."""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from replay_tui.analysis.search import parse_query
from replay_tui.jobs import Job, JobCancelled, JobError, JobRun, run_job, throttled
from replay_tui.jobs.environment import EnvironmentJob, EnvironmentRequest
from replay_tui.jobs.export import ExportJob, ExportRequest
from replay_tui.jobs.registry import JOBS, child_job
from replay_tui.jobs.replay import ReplayJobRequest, ReplayRequest
from replay_tui.jobs.search import FilterJob, FilterRequest, SearchJob, SearchRequest
from replay_tui.jobs.secrets import SecretScanJob, SecretScanRequest
from replay_tui.jobs.verify import VerifyJob, VerifyRequest
from replay_tui.journal import Journal, verify_journal

sys.path.insert(0, str(Path(__file__).parents[1] / "analysis"))
from journal_factory import write_bulk, write_incident  # noqa: E402

from ..tui.replay_helpers import record_wobbly, slow_wobbly  # noqa: E402

REPO = Path(__file__).resolve().parents[2]

BIG_EVENTS = 60_000
DEADLINE_S = 30


@pytest.fixture(scope="module")
def big_journal(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_bulk(tmp_path_factory.mktemp("jobs") / "big.jsonl", BIG_EVENTS)


@pytest.fixture
def incident(tmp_path: Path) -> Path:
    return write_incident(tmp_path / "incident.jsonl")


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def group_members(pgid: int) -> list[int]:
    """Live (not zombie) processes whose process group is ``pgid``, read from /proc."""
    members = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[2]) == pgid and fields[0] != "Z":
            members.append(int(entry))
    return members


def test_child_jobs_give_the_same_answers_as_the_library(incident: Path, tmp_path: Path) -> None:
    chain = run_job(VerifyJob(), VerifyRequest(str(incident)))
    assert chain.status == "verified" and chain.summary == verify_journal(incident).to_json().get(
        "summary", chain.summary
    )
    assert run_job(SecretScanJob(), SecretScanRequest(str(incident), 10_000)) == []
    out = tmp_path / "report.md"
    summary = run_job(ExportJob(), ExportRequest(str(incident), str(out), "md"))
    assert summary.startswith(f"wrote {out}") and out.read_text().startswith("#")


def test_bad_input_is_a_job_error_naming_the_file(tmp_path: Path) -> None:
    missing = tmp_path / "missing.jsonl"
    with pytest.raises(JobError, match="missing.jsonl"):
        run_job(ExportJob(), ExportRequest(str(missing), str(tmp_path / "r.html"), "html"))
    with pytest.raises(JobError, match="missing.jsonl"):
        run_job(SecretScanJob(), SecretScanRequest(str(missing), 1))
    with pytest.raises(KeyError, match="not a child job"):
        child_job("search")  # thread jobs never run as children


@pytest.mark.parametrize("name", sorted(name for name, job in JOBS.items() if job.in_child))
def test_cancelling_a_child_job_mid_run_leaves_no_process_of_its_group(
    name: str, big_journal: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sandboxes: list[int] = []  # the replay's sandboxed child leads a process group of its own
    requests: dict[str, Any] = {
        "verify": lambda: VerifyRequest(str(big_journal)),
        "secret-scan": lambda: SecretScanRequest(str(big_journal), BIG_EVENTS),
        "export": lambda: ExportRequest(str(big_journal), str(tmp_path / "report.html"), "html"),
        "replay": lambda: slow_replay(tmp_path, monkeypatch, sandboxes.append),
    }
    started = threading.Event()
    groups: list[int] = []

    def on_started(pid: int) -> None:
        groups.append(pid)
        started.set()

    run = JobRun(JOBS[name], requests[name](), on_started=on_started)
    outcome: list[BaseException | object] = []
    thread = threading.Thread(target=lambda: outcome.append(_result_or_error(run)))
    thread.start()
    assert started.wait(DEADLINE_S), "the child said it started"
    pgid = groups[0]
    deadline = time.monotonic() + DEADLINE_S
    if name == "verify":  # verify starts a worker pool: wait until the group holds more than the child
        while len(group_members(pgid)) < 2 and thread.is_alive() and time.monotonic() < deadline:
            time.sleep(0.01)
    if name == "replay":  # until the agent runs in its sandbox
        while not sandboxes and thread.is_alive() and time.monotonic() < deadline:
            time.sleep(0.01)
    assert thread.is_alive(), "still running when cancelled"
    run.cancel()
    thread.join(DEADLINE_S)
    assert not thread.is_alive()
    assert isinstance(outcome[0], JobCancelled), outcome
    deadline = time.monotonic() + DEADLINE_S
    for group in (pgid, *sandboxes):
        while group_members(group) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert group_members(group) == [], f"processes of group {group} left after cancel"
    assert not (tmp_path / "report.html").exists(), "a cancelled export writes nothing"


def slow_replay(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, on_child: Callable[[int], None]) -> Any:
    """A replay of ~8 s: the wobbly agent sleeps 0.2 s per item in its sandbox."""
    journal = record_wobbly(tmp_path / "wobbly.jsonl", 40)
    slow_wobbly(monkeypatch, "0.2")
    return ReplayJobRequest.of(ReplayRequest(timeout_s=120), journal, str(REPO), on_child=on_child)


def _result_or_error(run: JobRun) -> object:
    try:
        return run.result()
    except BaseException as error:  # noqa: BLE001 - handed to the test thread
        return error


def test_progress_is_throttled_and_the_last_step_always_arrives() -> None:
    heard: list[tuple[int, int]] = []
    report = throttled(lambda done, total: heard.append((done, total)), every_s=60)
    for done in range(1, 1001):
        report(done, 1000)
    assert heard == [(1, 1000), (1000, 1000)]


def test_a_child_jobs_progress_reaches_the_caller_throttled(big_journal: Path) -> None:
    heard: list[tuple[int, int]] = []
    seqs = JobRun(
        SecretScanJob(),
        SecretScanRequest(str(big_journal), BIG_EVENTS),
        progress=lambda done, total: heard.append((done, total)),
        every_s=0.0,
    ).result()
    assert seqs == []
    assert heard and all(total == BIG_EVENTS for _done, total in heard)
    assert [done for done, _total in heard] == sorted(done for done, _total in heard)


def test_thread_jobs_search_filter_and_environment(incident: Path, tmp_path: Path) -> None:
    journal = Journal(incident)
    journal.index()
    query = parse_query("kind:tool.result")
    rows = run_job(FilterJob(), FilterRequest(journal, query))
    assert rows and all(journal.event(position).kind == "tool.result" for position in rows)
    assert run_job(SearchJob(), SearchRequest(journal, query, 0)) == rows[0]
    assert run_job(SearchJob(), SearchRequest(journal, query, rows[0], direction=-1)) == rows[-1]  # wraps
    with pytest.raises(JobCancelled):
        run_job(FilterJob(), FilterRequest(journal, query), cancelled=lambda: True)
    fingerprint = run_job(EnvironmentJob(), EnvironmentRequest(tmp_path))
    assert set(fingerprint) == {"code_revision", "runtime", "lockfile_hash", "locale", "timezone"}
    journal.close()


class _Sleeper(Job[float, str]):
    name = "sleeper"

    def run(self, request: float, progress: Any, cancelled: Any) -> str:
        deadline = time.monotonic() + request
        while time.monotonic() < deadline:
            if cancelled():
                return "stopped"
            time.sleep(0.01)
        return "slept"


def test_a_thread_job_stops_when_cancelled_from_another_thread() -> None:
    run = JobRun(_Sleeper(), 30.0)
    threading.Timer(0.1, run.cancel).start()
    with pytest.raises(JobCancelled):
        run.result()
    assert run_job(_Sleeper(), 0.0) == "slept"


def test_the_app_compares_the_fields_the_fingerprint_computes() -> None:
    from replay_tui.journal.environment import CONFIG_FREE
    from replay_tui.tui.widgets.replay_environment import COMPARED

    assert COMPARED == CONFIG_FREE


LONG_RUN = REPO / "fixtures" / "journals" / "stocktake-long.jsonl"


def test_the_replay_job_runs_the_sandboxed_replay_in_its_child() -> None:
    """Its cancel: the parametrized test above (groups) and tests/jobs/test_replay_job.py (the outcome so far)."""
    from replay_tui.jobs.replay import ReplayJob, ReplayJobRequest
    from replay_tui.replay.protocol import ReplaySpec

    spec = ReplaySpec(journal=str(LONG_RUN), progress_interval_s=0)
    heard: list[tuple[int, int]] = []
    outcome = run_job(
        ReplayJob(),
        ReplayJobRequest(spec, timeout_s=120, cwd=str(REPO)),
        progress=lambda done, total: heard.append((done, total)),
    )
    assert outcome.status == "match", outcome.headline()
    assert heard and heard[-1][0] == heard[-1][1] == outcome.total

"""Stats over real journals: numbers, JSON and terminal output, cancellation, bounds."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from replay_tui.analysis.stats import Distribution, StatsCollector, Timeline, compute_stats
from replay_tui.analysis.stats_render import bar, sparkline
from replay_tui.cli import main
from replay_tui.journal import JournalWriter, open_journal

sys.path.insert(0, str(Path(__file__).parent))
from incident_sample import write_incident_journal  # noqa: E402

from tests.journal_factory import run_started


@pytest.fixture
def incident(tmp_path: Path) -> Path:
    return write_incident_journal(tmp_path / "crm-incident.jsonl", filler_steps=5)


def test_counts_tokens_latency_errors_and_steps(incident: Path) -> None:
    journal = open_journal(incident)
    stats = compute_stats(journal)
    journal.close()

    assert stats.events == 39 and stats.first_seq == 1 and stats.last_seq == 39
    assert stats.status == "error" and stats.agent == "fixtures.agents.crm:agent"
    assert stats.by_kind["model.request"] == 9 and stats.by_kind["tool.result"] == 8
    assert stats.by_kind["state.transition"] == 2

    totals = stats.model_totals
    assert totals.calls == 9 and totals.responses == 9
    assert totals.prompt_tokens == 5 * 300 + 812 + 990 + 1104 + 1201
    assert totals.completion_tokens == 5 * 20 + 41 + 37 + 39 + 25
    assert totals.total_tokens == totals.prompt_tokens + totals.completion_tokens
    assert set(stats.models) == {"gpt-4o-2024-08-06"}
    assert stats.model_latency_ms.max == 1200

    refund = stats.tools["payments_refund"]
    assert (refund.calls, refund.errors, refund.timeouts) == (2, 2, 1)
    assert refund.error_types == {"TimeoutError": 1, "PaymentRejected": 1}
    assert refund.latency_ms.quantile(0.5) == 240 and refund.latency_ms.max == 30000
    lookup = stats.tools["history_search"]
    assert sorted([30, 31, 32, 33, 34])[2] == lookup.latency_ms.quantile(0.5) == 32
    assert lookup.latency_ms.quantile(0.95) == 34
    assert lookup.result_bytes.max == len(b'{"hits":["ticket-0"]}')

    # step-02 holds the 30 s timeout: the longest by wall time; 5-event steps lead by count
    assert stats.longest_steps_by_span[0].step_id == "step-02"
    assert stats.longest_steps_by_span[0].span_ms == pytest.approx(900 + 5 + 30000, abs=1)  # response, call, result
    assert [s.events for s in stats.longest_steps_by_events[:2]] == [5, 5]
    assert stats.steps == 9 and not stats.steps_approximate
    assert sum(stats.timeline["events"]) == 39 and sum(stats.timeline["errors"]) == 2
    assert sum(stats.timeline["tokens"]) == totals.total_tokens
    assert stats.complete


def test_cli_json_is_one_object_with_the_same_numbers(incident: Path) -> None:
    out = _run_cli(["stats", str(incident), "--json"])
    data = json.loads(out)
    assert data["events"] == 39
    assert data["model"]["totals"]["total_tokens"] == 5849
    assert data["tools"]["payments_refund"]["timeouts"] == 1
    assert data["tools"]["payments_refund"]["latency_ms"]["p95"] == 30000
    assert data["steps"]["longest_by_span"][0]["step_id"] == "step-02"


def test_cli_text_draws_bars_and_sparklines(incident: Path) -> None:
    out = _run_cli(["stats", str(incident)])
    assert "Events by kind" in out and "model.request" in out
    assert "█" in out  # bars
    assert any(ch in out for ch in "▁▂▃▄▅▆▇")  # sparklines
    assert "payments_refund" in out and "TimeoutError ×1" in out
    assert "Longest steps" in out and "step-02" in out
    assert "Traceback" not in out


def test_cli_on_a_missing_journal_is_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["stats", str(tmp_path / "nope.jsonl")]) == 2
    err = capsys.readouterr().err
    assert "nope.jsonl" in err and "no such file" in err and "Traceback" not in err


def test_bad_line_is_counted_and_named_not_fatal(incident: Path, tmp_path: Path) -> None:
    damaged = tmp_path / "damaged.jsonl"
    lines = incident.read_bytes().splitlines(keepends=True)
    lines[10] = b'{"this is": "not an event"}\n'
    damaged.write_bytes(b"".join(lines))
    journal = open_journal(damaged)
    stats = compute_stats(journal)
    journal.close()
    assert stats.unreadable == 1 and stats.events == 38
    assert "line 11" in stats.unreadable_examples[0]


@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_a_journal_read_only_in_part_exits_2(
    incident: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], as_json: bool
) -> None:
    """A journal followed by blank lines past what the reader reads in a row (it stops there): stats said
    its numbers and exited 0. A broken line in the middle keeps part of it out too."""
    blanks = tmp_path / "blanks.jsonl"
    blanks.write_bytes(incident.read_bytes() + b"\n" * 5000)
    damaged = tmp_path / "damaged.jsonl"
    lines = incident.read_bytes().splitlines(keepends=True)
    lines[10] = b'{"this is": "not an event"}\n'
    damaged.write_bytes(b"".join(lines))
    for path, unreadable in ((blanks, 1000), (damaged, 1)):
        assert main(["stats", str(path), *(["--json"] if as_json else [])]) == 2, path.name
        out, err = capsys.readouterr()
        if as_json:
            assert json.loads(out)["unreadable"]["count"] == unreadable
        else:
            assert f"{unreadable} line(s) could not be read, so the statistics cover part of it" in err
        assert "Traceback" not in err
    assert main(["stats", str(incident)]) == 0
    capsys.readouterr()


def test_cancel_stops_early_and_says_so(tmp_path: Path) -> None:
    path = write_incident_journal(tmp_path / "big.jsonl", filler_steps=3000)
    journal = open_journal(path)
    calls: list[tuple[int, int]] = []
    stats = compute_stats(
        journal, progress=lambda done, total: calls.append((done, total)), cancelled=lambda: len(calls) >= 1
    )
    assert not stats.complete
    assert stats.events == 4096 < len(journal)
    assert calls[0] == (4096, len(journal))
    full = compute_stats(journal, progress=lambda done, total: calls.append((done, total)))
    assert full.complete and calls[-1] == (len(journal), len(journal))
    journal.close()


def test_follow_mode_can_feed_events_as_they_arrive(incident: Path) -> None:
    journal = open_journal(incident)
    collector = StatsCollector(str(incident), journal.dialect)
    for position in range(20):
        collector.add(journal.event(position))
    assert collector.result().events == 20
    for position in range(20, len(journal)):
        collector.add(journal.event(position))
    assert collector.result().to_json() == compute_stats(journal).to_json() | {"path": str(incident)}
    journal.close()


def test_distribution_is_exact_then_bounded() -> None:
    small = Distribution()
    for value in (10, 20, 30, 40, 100):
        small.add(value)
    assert (small.quantile(0.5), small.quantile(0.95), small.max, small.exact) == (30, 100, 100, True)
    large = Distribution()
    for value in range(200_000):
        large.add(float(value))
    assert not large.exact and len(large._samples) == Distribution.CAP
    assert large.max == 199_999 and large.count == 200_000
    assert large.quantile(0.5) == pytest.approx(100_000, rel=0.02)
    assert large.quantile(0.95) == pytest.approx(190_000, rel=0.02)


def test_timeline_folds_into_a_fixed_number_of_buckets() -> None:
    timeline = Timeline(buckets=8, series=("events",))
    for seq in range(1, 101):
        timeline.add(seq, "events")
    used = timeline.used(100)["events"]
    assert len(used) <= 8 and sum(used) == 100 and timeline.width == 16


def test_open_steps_are_bounded_on_interleaved_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from replay_tui.analysis import stats as stats_module

    monkeypatch.setattr(stats_module, "OPEN_STEPS_CAP", 16)
    path = tmp_path / "many-steps.jsonl"
    with JournalWriter(path, run_id="r") as writer:
        writer.append("run.started", run_started())
        for index in range(200):
            writer.append("input.received", {"role": "user", "content": index}, step_id=f"s{index}")
            writer.append("input.received", {"role": "user", "content": index}, step_id=f"s{index}")
    journal = open_journal(path)
    collector = StatsCollector()
    for event in journal.events():
        collector.add(event)  # type: ignore[arg-type]
        assert len(collector._open_steps) <= 16
    stats = collector.result()
    assert stats.steps == 200 and [s.events for s in stats.longest_steps_by_events] == [2] * 10
    journal.close()


def test_bar_and_sparkline_scale_to_the_largest() -> None:
    assert bar(10, 10, width=4) == "████" and bar(5, 10, width=4) == "██" and bar(0, 10) == ""
    assert sparkline([0, 1, 2, 4]) == " ▂▄█" and sparkline([]) == ""


def _run_cli(argv: list[str]) -> str:
    completed = subprocess.run(
        [sys.executable, "-c", "import sys; from replay_tui.cli import main; sys.exit(main(sys.argv[1:]))", *argv],
        capture_output=True,
        text=True,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    return completed.stdout


FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "journals"


def test_recorded_crm_incident_fixture() -> None:
    journal = open_journal(FIXTURES / "crm-incident.jsonl")
    stats = compute_stats(journal)
    journal.close()
    assert stats.events == len(open_journal(FIXTURES / "crm-incident.jsonl")) and stats.unreadable == 0
    assert stats.by_kind["tool.call"] == sum(t.calls for t in stats.tools.values())
    assert stats.by_kind["model.request"] == stats.model_totals.calls
    # the recorded incident: one rate-limited customer query
    failing = {name: t for name, t in stats.tools.items() if t.errors}
    assert list(failing) == ["customer_query"]
    assert any("RateLimited" in kind for kind in failing["customer_query"].error_types)
    assert stats.first_error_seq is not None and "customer_query failed" in (stats.first_error or "")
    assert stats.model_totals.total_tokens > 0


def test_gzip_and_shard_directory_give_the_same_numbers(tmp_path: Path) -> None:
    plain = write_incident_journal(tmp_path / "plain.jsonl", filler_steps=40)
    shards = tmp_path / "shards"
    with JournalWriter(shards, run_id="run-crm-incident", rotate_bytes=20_000) as writer:
        for line in plain.read_bytes().splitlines():
            obj = json.loads(line)
            writer.append(
                obj["kind"],
                obj["payload"],
                step_id=obj["step_id"],
                parent_event_id=obj["parent_event_id"],
                recorded_at=obj["recorded_at"],
            )
    assert len(list(shards.glob("*.jsonl.gz"))) > 1
    results = []
    for path in (plain, shards):
        journal = open_journal(path)
        data = compute_stats(journal).to_json()
        journal.close()
        data.pop("path")
        results.append(data)
    assert results[0] == results[1]


def test_type_data_dialect_with_epoch_timestamps(tmp_path: Path) -> None:
    path = tmp_path / "other-harness.jsonl"
    lines = [
        {
            "type": "session_started",
            "event_id": "e1",
            "session_id": "s",
            "seq": 1,
            "ts": 1700000000.0,
            "data": {"agent": "bot"},
        },
        {
            "type": "model_response",
            "event_id": "e2",
            "session_id": "s",
            "seq": 2,
            "ts": 1700000001.0,
            "data": {"step_id": "s1", "content": "hi", "usage": {"input_tokens": 50, "output_tokens": 7}},
        },
        {
            "type": "tool_invocation",
            "event_id": "e3",
            "session_id": "s",
            "seq": 3,
            "ts": 1700000004.5,
            "data": {"step_id": "s1", "tool": "reset", "input": {}, "error": "gateway timeout", "duration_ms": 3000},
        },
        {
            "type": "session_ended",
            "event_id": "e4",
            "session_id": "s",
            "seq": 4,
            "ts": 1700000005.0,
            "data": {"status": "error"},
        },
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    journal = open_journal(path)
    stats = compute_stats(journal)
    journal.close()
    assert stats.events == 5 and stats.model_totals.total_tokens == 57
    assert stats.tools["reset"].errors == 1 and stats.tools["reset"].latency_ms.max == 3000
    assert stats.longest_steps_by_span[0].step_id == "s1" and stats.longest_steps_by_span[0].span_ms == 3500
    assert stats.duration_ms == 5000
    assert stats.first_error_seq == 4 and "reset failed" in (stats.first_error or "")


def test_distinct_names_are_capped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from replay_tui.analysis import stats as stats_module
    from replay_tui.journal import call_key_of

    monkeypatch.setattr(stats_module, "MAX_NAMES", 5)
    path = tmp_path / "many-tools.jsonl"
    with JournalWriter(path, run_id="r") as writer:
        writer.append("run.started", run_started())
        for index in range(50):
            tool = f"tool_{index}"
            writer.append(
                "tool.call", {"call_id": str(index), "call_key": call_key_of(tool, {}), "tool": tool, "arguments": {}}
            )
    journal = open_journal(path)
    stats = compute_stats(journal)
    journal.close()
    assert len(stats.tools) == 6 and stats.tools["(other)"].calls == 45
    assert sum(t.calls for t in stats.tools.values()) == 50

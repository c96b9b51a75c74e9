"""The corpus index: `replay-tui index` then `replay-tui query`, on the refund-desk corpus and a hostile journal."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from replay_tui.analysis.corpus_index import CorpusIndexError, build_index, journal_facts, run_query
from replay_tui.journal import JournalWriter
from tests.journal_factory import run_started

from .conftest import REPO, cli

pytest.importorskip("duckdb")

INVENTORY = REPO / "fixtures" / "journals" / "inventory.jsonl"


def run_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cli(*args), capture_output=True, text=True, cwd=cwd, timeout=300)


@pytest.fixture(scope="module")
def replayed_corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The corpus and the JSON report of a real `replay DIR --json` run over it."""
    from .conftest import BEFORE_HISTORY, BEFORE_PROMPT, CLEAN, copy_corpus

    root = copy_corpus(tmp_path_factory.mktemp("corpus") / "journals", CLEAN + BEFORE_HISTORY + BEFORE_PROMPT)
    report = root.parent / "replay.json"
    done = run_cli("replay", str(root), "--jobs", "2", "--json", "--glob", "*.replay.jsonl")
    assert done.returncode == 1, done.stderr  # the corpus holds divergences on purpose
    report.write_text(done.stdout)
    return root, report


def test_index_and_canned_questions_agree_with_the_replay_report(
    replayed_corpus: tuple[Path, Path], tmp_path: Path
) -> None:
    root, report = replayed_corpus
    database = tmp_path / "corpus.duckdb"
    built = run_cli(
        "index", str(root), "-o", str(database), "--glob", "*.replay.jsonl", "--replay-report", str(report), "--json"
    )
    assert built.returncode == 0, built.stderr
    summary = json.loads(built.stdout)
    assert summary["journals"] == 11 and summary["unreadable"] == 0
    assert summary["rows"]["tool_calls"] > 0 and summary["rows"]["steps"] > 0

    grouped = run_cli("query", str(database), "--by-signature", "--json")
    assert grouped.returncode == 0, grouped.stderr
    rows = json.loads(grouped.stdout)["rows"]
    expected = {
        (group["kind"], group["tool"], group["field"]): group["count"]
        for group in json.loads(report.read_text())["groups"]
    }
    assert {(kind, tool, field): count for kind, tool, field, count, _ in rows} == expected

    runs = run_query(database, "SELECT count(*), count(DISTINCT run_id), sum(total_tokens) > 0 FROM runs")
    assert runs.rows == [(11, 11, True)]
    matched = run_query(database, "SELECT count(*) FROM runs WHERE replay_status = 'match'")
    assert matched.rows[0][0] == json.loads(report.read_text())["matched"]


def test_failing_tools_and_slowest_steps_on_a_journal_with_errors(tmp_path: Path) -> None:
    corpus = tmp_path / "journals"
    corpus.mkdir()
    (corpus / "inventory.jsonl").write_bytes(INVENTORY.read_bytes())
    database = tmp_path / "corpus.duckdb"
    assert run_cli("index", str(corpus), "-o", str(database)).returncode == 0
    failing = run_cli("query", str(database), "--failing-tools")
    assert failing.returncode == 0, failing.stderr
    facts = journal_facts(INVENTORY)
    failed_tools = {row[4] for row in facts.tool_calls if row[7] is not None}
    assert failed_tools and all(tool in failing.stdout for tool in failed_tools)
    timeouts = run_query(database, "SELECT sum(tool_timeouts) FROM runs").rows[0][0]
    assert timeouts == sum(1 for row in facts.tool_calls if row[9])
    slow = run_query(database, "SELECT step_id, span_ms FROM steps ORDER BY span_ms DESC NULLS LAST LIMIT 1")
    longest = max((row for row in facts.steps if row[6] is not None), key=lambda row: row[6])
    assert slow.rows[0][0] == longest[2]
    assert "slowest" not in run_cli("query", str(database), "--slowest-steps").stderr


def test_hostile_text_is_stored_as_data_and_printed_escaped(tmp_path: Path) -> None:
    corpus = tmp_path / "journals"
    corpus.mkdir()
    hostile = "\x1b]0;pwned\x07\x1b[2J[link=https://evil.example]x[/link]\u202e"
    with JournalWriter(corpus / "hostile.jsonl", run_id="r-1") as writer:
        writer.append("run.started", run_started(agent="m:a"))
        writer.append(
            "tool.call",
            {"call_id": "c1", "call_key": "sha256:" + "0" * 64, "tool": hostile, "arguments": {}},
            step_id="s1",
        )
        writer.append(
            "tool.result",
            {
                "call_id": "c1",
                "call_key": "sha256:" + "0" * 64,
                "tool": hostile,
                "error": {"type": hostile, "message": "boom"},
                "duration_ms": 5,
            },
            step_id="s1",
        )
    database = tmp_path / "corpus.duckdb"
    assert run_cli("index", str(corpus), "-o", str(database)).returncode == 0
    assert run_query(database, "SELECT tool FROM tool_calls").rows == [(hostile,)]
    shown = run_cli("query", str(database), "SELECT tool, error_type FROM tool_calls")
    assert shown.returncode == 0, shown.stderr
    for raw in ("\x1b", "\x07", "\u202e"):
        assert raw not in shown.stdout


def test_bad_input_gets_clear_errors(tmp_path: Path) -> None:
    missing = run_cli("query", str(tmp_path / "nope.duckdb"), "--failing-tools")
    assert missing.returncode == 2 and "nope.duckdb: no such index" in missing.stderr
    assert "Traceback" not in missing.stderr
    corpus = tmp_path / "journals"
    corpus.mkdir()
    (corpus / "a.jsonl").write_bytes(INVENTORY.read_bytes())
    database = tmp_path / "corpus.duckdb"
    assert run_cli("index", str(corpus), "-o", str(database)).returncode == 0
    again = run_cli("index", str(corpus), "-o", str(database))
    assert again.returncode == 2 and "already exists" in again.stderr
    bad_sql = run_cli("query", str(database), "SELEC nonsense")
    assert bad_sql.returncode == 2 and "query failed" in bad_sql.stderr and "Traceback" not in bad_sql.stderr
    writes = run_cli("query", str(database), "DROP TABLE runs")
    assert writes.returncode == 2  # the index is opened read-only
    external = run_cli("query", str(database), f"SELECT * FROM read_csv('{INVENTORY}')")
    assert external.returncode == 2  # no file or network access beyond the index
    report = tmp_path / "report.json"
    report.write_text("[1, 2]")
    bad_report = run_cli("index", str(corpus), "-o", str(tmp_path / "other.duckdb"), "--replay-report", str(report))
    assert bad_report.returncode == 2 and "replay DIR --json" in bad_report.stderr
    with pytest.raises(CorpusIndexError):
        build_index([("a", corpus / "a.jsonl")], database)


def test_an_unreadable_journal_still_gets_a_row(tmp_path: Path) -> None:
    corpus = tmp_path / "journals"
    corpus.mkdir()
    (corpus / "broken.jsonl").write_bytes(b"not json at all\n")
    (corpus / "good.jsonl").write_bytes(INVENTORY.read_bytes())
    database = tmp_path / "corpus.duckdb"
    done = run_cli("index", str(corpus), "-o", str(database))
    assert done.returncode in (0, 1), done.stderr
    statuses = dict(run_query(database, "SELECT journal, status FROM runs").rows)
    assert set(statuses) == {"broken.jsonl", "good.jsonl"} and statuses["good.jsonl"] == "ok"


def test_the_shared_hostile_journal_indexes_and_prints_safely(tmp_path: Path) -> None:
    from tests.hostile.hostile_journal import assert_nothing_raw, write_hostile_journal

    corpus = tmp_path / "journals"
    corpus.mkdir()
    write_hostile_journal(corpus / "hostile.jsonl")
    database = tmp_path / "corpus.duckdb"
    built = run_cli("index", str(corpus), "-o", str(database))
    assert built.returncode == 0, built.stderr
    for question in ("--failing-tools", "--slowest-steps", "SELECT * FROM tool_calls", "SELECT * FROM runs"):
        shown = run_cli("query", str(database), question)
        assert shown.returncode == 0, shown.stderr
        assert_nothing_raw(shown.stdout, question)
        as_json = run_cli("query", str(database), question, "--json")
        assert_nothing_raw(as_json.stdout, question + " --json")
        json.loads(as_json.stdout)

"""Every command takes an s3:// URL: verify, replay, a corpus on Ray, the app, and following a growing object."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .conftest import JOURNALS, REPO, put

CRM = (JOURNALS / "crm.jsonl").read_bytes()
INCIDENT = (JOURNALS / "crm-incident.jsonl").read_bytes()
CORPUS = REPO / "fixtures" / "corpus" / "journals"


def run_cli(env: dict[str, str], *args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "replay_tui", *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=600
    )


def test_verify_and_replay_a_journal_in_a_bucket(s3_env: dict[str, str], bucket: str) -> None:
    put(s3_env, bucket, "runs/crm.jsonl", CRM)
    put(s3_env, bucket, "runs/crm-incident.jsonl", INCIDENT)
    url = f"s3://{bucket}/runs/crm.jsonl"
    verified = run_cli(s3_env, "verify", url)
    assert verified.returncode == 0, verified.stderr
    assert verified.stdout.startswith(f"{url}: OK.")  # named by its URL, not by the cache path
    replayed = run_cli(s3_env, "replay", url, "--json")
    assert replayed.returncode == 0, replayed.stderr
    assert json.loads(replayed.stdout)["status"] == "match"
    diverged = run_cli(
        s3_env, "replay", f"s3://{bucket}/runs/crm-incident.jsonl", "--agent", "fixtures.agents.crm:agent"
    )
    assert diverged.returncode == 1 and "seq=144" in diverged.stdout
    for output in (verified, replayed, diverged):
        assert s3_env["AWS_SECRET_ACCESS_KEY"] not in output.stdout + output.stderr


def test_bad_urls_get_one_line_naming_the_url(s3_env: dict[str, str], bucket: str) -> None:
    missing = run_cli(s3_env, "verify", "s3://no-such-bucket-anywhere/run.jsonl")
    assert missing.returncode == 2
    assert missing.stderr.strip() == "replay-tui: s3://no-such-bucket-anywhere/run.jsonl: no such bucket"
    cut = CRM[: CRM.index(b"\n", len(CRM) // 2) + 30]
    put(s3_env, bucket, "cut.jsonl", cut)
    truncated = run_cli(s3_env, "verify", f"s3://{bucket}/cut.jsonl")
    assert f"s3://{bucket}/cut.jsonl" in truncated.stdout + truncated.stderr
    assert "Traceback" not in truncated.stdout + truncated.stderr
    secret = run_cli(s3_env, "verify", "s3://AKIAEXAMPLE:hunter2-secret@bucket/run.jsonl")
    assert secret.returncode == 2 and "hunter2-secret" not in secret.stdout + secret.stderr


def test_a_corpus_under_a_prefix_replays_on_ray(s3_env: dict[str, str], bucket: str) -> None:
    pytest.importorskip("ray")
    for journal in sorted(CORPUS.glob("*.replay.jsonl")):
        put(s3_env, bucket, f"corpus/{journal.name}", journal.read_bytes())
    done = run_cli(s3_env, "replay", f"s3://{bucket}/corpus/", "--executor", "ray", "--jobs", "2", "--json")
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    local = run_cli(s3_env, "replay", str(CORPUS), "--jobs", "2", "--json", "--glob", "*.replay.jsonl")
    expected = json.loads(local.stdout)
    assert (report["matched"], report["failed"]) == (expected["matched"], expected["failed"]) == (6, 5)
    assert [(g["kind"], g["tool"], g["field"], g["count"]) for g in report["groups"]] == [
        (g["kind"], g["tool"], g["field"], g["count"]) for g in expected["groups"]
    ]


@pytest.mark.asyncio
async def test_the_app_opens_a_url_and_follows_a_growing_object(s3_env: dict[str, str], bucket: str) -> None:
    from replay_tui.journal import Journal
    from replay_tui.store.storage import ObjectFollower
    from replay_tui.tui.app import ReplayApp
    from replay_tui.tui.launch import resolve_journal

    put(s3_env, bucket, "crm.jsonl", CRM)
    opened = resolve_journal(f"s3://{bucket}/crm.jsonl")
    app = ReplayApp(Journal(opened))
    async with app.run_test(size=(160, 45)) as pilot:
        deadline = time.monotonic() + 60  # the app indexes in the background: wait for it, not a fixed 0.5 s
        while app.screen_stack[0].indexing:
            assert time.monotonic() < deadline, "the app did not index the S3 journal within 60 s"
            await pilot.pause(0.05)
        assert len(app.screen_stack[0].journal) == 175

    lines = CRM.splitlines(keepends=True)
    put(s3_env, bucket, "live.jsonl", b"".join(lines[:20]))
    follower = ObjectFollower(f"s3://{bucket}/live.jsonl", interval_s=0.2)
    local = follower.start()
    try:
        app = ReplayApp(Journal(local), follow=True)
        async with app.run_test(size=(160, 45)) as pilot:
            screen = app.screen_stack[0]
            deadline = time.monotonic() + 60
            while screen.indexing:
                assert time.monotonic() < deadline, "the app did not index the followed journal within 60 s"
                await pilot.pause(0.05)
            assert len(screen.journal) == 20
            put(s3_env, bucket, "live.jsonl", b"".join(lines[:120]))
            deadline = time.monotonic() + 20
            while len(screen.journal) < 120:
                assert time.monotonic() < deadline, f"the app saw {len(screen.journal)} of 120 events"
                await pilot.pause(0.1)
    finally:
        follower.stop()


def test_index_a_corpus_under_a_prefix(s3_env: dict[str, str], bucket: str, tmp_path: Path) -> None:
    pytest.importorskip("duckdb")
    for journal in sorted(CORPUS.glob("*.replay.jsonl")):
        put(s3_env, bucket, f"corpus/{journal.name}", journal.read_bytes())
    database = tmp_path / "corpus.duckdb"
    done = run_cli(s3_env, "index", f"s3://{bucket}/corpus/", "-o", str(database), "--glob", "*.replay.jsonl", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["journals"] == 11

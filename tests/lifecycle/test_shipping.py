"""Shipping closed shards and journals to S3 (moto's server on loopback) in the background.

A shipped corpus replays from its URL; a server that fails half the uploads loses nothing; a server that
holds every upload does not hold the agent; what one process could not ship the next one does.
"""

from __future__ import annotations

import hashlib
import json
import logging
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any, Iterator

import pytest

from replay_tui.harness import record_run
from replay_tui.harness.config import ConfigError, config_from_mapping
from replay_tui.journal import shipping
from replay_tui.journal.shipping import LEDGER_NAME, MANIFEST_PREFIX, ShipOptions, Shipper, ledger_entries
from tests.storage import conftest as storage_fixtures

from .conftest import REPO
from .s3_proxy import UploadProxy

QUESTION = __import__("fixtures.agents.crm", fromlist=["QUESTION"]).QUESTION
# moto's S3 server on loopback, credentials in the environment, a fresh bucket per test
s3_endpoint, s3_env, bucket = storage_fixtures.s3_endpoint, storage_fixtures.s3_env, storage_fixtures.bucket


@pytest.fixture(autouse=True)
def no_shipper_left() -> Iterator[None]:
    yield
    shipping.stop_all(timeout=0)


@pytest.fixture
def s3(s3_env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """S3 credentials in the environment, and the client's own retries off: every retry is the shipper's."""
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    monkeypatch.setenv("AWS_RETRY_MODE", "standard")
    return {**s3_env, "AWS_MAX_ATTEMPTS": "1", "AWS_RETRY_MODE": "standard"}


def through(proxy: UploadProxy, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL", proxy.url)
    import s3fs

    s3fs.S3FileSystem.clear_instance_cache()


def config(**transport: Any) -> Any:
    """The CRM agent's config, its jsonl transport shipping with ``transport`` options."""
    raw = tomllib.loads((REPO / "fixtures" / "configs" / "crm.toml").read_text())
    for plugin in raw["plugins"]:
        if plugin["type"] == "jsonl":
            plugin["options"] = {"fsync": "close", **transport}
    return config_from_mapping(raw, source="crm-shipping.toml", base_dir=REPO / "fixtures" / "configs")


def record(journal: Path, **transport: Any) -> None:
    record_run(config(**transport), "fixtures.agents.crm:agent", [QUESTION], journal=journal)


def objects(s3_env: dict[str, str], bucket: str, prefix: str) -> dict[str, bytes]:
    import boto3

    client = boto3.client("s3", endpoint_url=s3_env["AWS_ENDPOINT_URL"])
    listed = client.list_objects_v2(Bucket=bucket, Prefix=prefix).get("Contents", [])
    return {
        item["Key"][len(prefix) :]: client.get_object(Bucket=bucket, Key=item["Key"])["Body"].read() for item in listed
    }


@pytest.fixture
def handed_over(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """name -> sha256 of each file the writer handed to a shipper, read at that moment."""
    seen: dict[str, str] = {}
    submit = Shipper.submit

    def spy(self: Shipper, path: Path, last: bool = False) -> None:
        seen[path.resolve().relative_to(self.root).as_posix()] = hashlib.sha256(path.read_bytes()).hexdigest()
        submit(self, path, last)

    monkeypatch.setattr(Shipper, "submit", spy)
    return seen


def check_shipped(remote: dict[str, bytes], handed: dict[str, str]) -> None:
    """Every file handed over is in the store, byte for byte, with its manifest line."""
    for name, digest in handed.items():
        assert hashlib.sha256(remote[name]).hexdigest() == digest, name
        line = json.loads(remote[f"{MANIFEST_PREFIX}/{name}.json"])
        assert (line["name"], line["size"], line["sha256"]) == (name, len(remote[name]), digest)
        assert line["run_id"].startswith("run-")
    journals = {name for name in remote if not name.startswith(MANIFEST_PREFIX)}
    assert journals == set(handed)


def test_a_shipped_corpus_replays_from_its_url(
    tmp_path: Path, s3: dict[str, str], bucket: str, handed_over: dict[str, str]
) -> None:
    sessions = tmp_path / "sessions"
    ship_to = f"s3://{bucket}/corpus/"
    record(sessions / "one.jsonl", ship_to=ship_to)
    record(sessions / "two.jsonl", ship_to=ship_to)
    record(sessions / "sharded", ship_to=ship_to, rotate_bytes=40_000)
    assert shipping.stop_all(timeout=120)
    assert len([name for name in handed_over if name.startswith("sharded/")]) >= 4
    check_shipped(objects(s3, bucket, "corpus/"), handed_over)
    assert sorted(path.name for path in sessions.iterdir()) == [LEDGER_NAME, f"{LEDGER_NAME}.lock"]  # all shipped
    done = subprocess.run(
        [sys.executable, "-m", "replay_tui", "replay", ship_to, "--json", "--jobs", "2"],
        capture_output=True,
        text=True,
        env={**s3, "PYTHONPATH": str(REPO)},
        cwd=REPO,
        timeout=600,
    )
    report = json.loads(done.stdout)
    assert done.returncode == 0, done.stderr
    assert (report["matched"], report["failed"]) == (3, 0)


def test_a_server_that_fails_half_the_uploads_loses_nothing(
    tmp_path: Path,
    s3: dict[str, str],
    bucket: str,
    monkeypatch: pytest.MonkeyPatch,
    handed_over: dict[str, str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    sessions = tmp_path / "sessions"
    ship_to = f"s3://{bucket}/flaky/"
    proxy = UploadProxy(s3["AWS_ENDPOINT_URL"], policy=lambda number: 500 if number % 2 else None)
    with proxy.running(), caplog.at_level(logging.WARNING, logger="replay_tui.shipping"):
        through(proxy, monkeypatch)
        options = {"ship_to": ship_to, "ship_retry_initial_s": 0.05, "ship_retry_max_s": 0.2}
        record(sessions / "sharded", rotate_bytes=30_000, **options)
        record(sessions / "single.jsonl", **options)
        assert shipping.stop_all(timeout=120)
    assert proxy.failed >= len(handed_over) // 2 and proxy.passed >= len(handed_over)
    check_shipped(objects(s3, bucket, "flaky/"), handed_over)
    ledger = ledger_entries(sessions)
    failed = [entry for entry in ledger if entry["op"] == "failed"]
    assert failed and all("refused by the test proxy" in entry["error"] for entry in failed)
    assert {entry["name"] for entry in ledger if entry["op"] == "shipped"} == set(handed_over)
    assert {entry["name"] for entry in ledger if entry["op"] == "removed"} == set(handed_over)
    for entry in ledger:  # nothing was removed before its upload verified
        if entry["op"] == "removed":
            shipped_at = next(i for i, e in enumerate(ledger) if e["op"] == "shipped" and e["name"] == entry["name"])
            assert shipped_at < ledger.index(entry)
    assert any("upload 1 failed" in record.getMessage() for record in caplog.records)
    assert s3["AWS_SECRET_ACCESS_KEY"] not in json.dumps(ledger) + caplog.text


def test_a_store_that_holds_every_upload_does_not_hold_the_agent(
    tmp_path: Path, s3: dict[str, str], bucket: str, monkeypatch: pytest.MonkeyPatch, handed_over: dict[str, str]
) -> None:
    sessions = tmp_path / "sessions"
    proxy = UploadProxy(s3["AWS_ENDPOINT_URL"])
    with proxy.running():
        through(proxy, monkeypatch)
        proxy.gate.clear()  # every upload waits
        record(sessions / "sharded", ship_to=f"s3://{bucket}/held/", rotate_bytes=30_000)
        record(sessions / "single.jsonl", ship_to=f"s3://{bucket}/held/")  # the agent ran to its end twice
        assert len(handed_over) >= 4 and proxy.passed == 0
        assert all((sessions / name).exists() for name in handed_over)  # nothing removed while unshipped
        proxy.gate.set()
        assert shipping.stop_all(timeout=120)
    check_shipped(objects(s3, bucket, "held/"), handed_over)


RECORD_AND_EXIT = """
import sys, tomllib
sys.path.insert(0, {repo!r})
from tests.lifecycle.test_shipping import record
record(__import__("pathlib").Path({journal!r}), ship_to={ship_to!r}, rotate_bytes=30_000,
       ship_retry_initial_s=0.05, ship_retry_max_s=0.1, ship_exit_wait_s=1)
"""


def test_what_a_process_could_not_ship_the_next_one_does(
    tmp_path: Path, s3: dict[str, str], bucket: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    sessions = tmp_path / "sessions"
    ship_to = f"s3://{bucket}/later/"
    down = UploadProxy(s3["AWS_ENDPOINT_URL"], policy=lambda number: 503)
    with down.running():
        code = RECORD_AND_EXIT.format(repo=str(REPO), journal=str(sessions / "run"), ship_to=ship_to)
        done = subprocess.run(
            [sys.executable, "-c", code],
            env={**s3, "AWS_ENDPOINT_URL": down.url, "PYTHONPATH": str(REPO)},
            capture_output=True,
            text=True,
            cwd=REPO,
            timeout=300,
        )
    assert done.returncode == 0, done.stderr
    assert "not shipped yet; the next process resumes them" in done.stderr, done.stderr
    left = sorted(path.name for path in (sessions / "run").iterdir())
    assert len(left) >= 4 and down.failed >= 1, done.stderr[-3000:]
    assert {entry["op"] for entry in ledger_entries(sessions)} == {"queued", "failed"}
    local = {f"run/{name}": hashlib.sha256((sessions / "run" / name).read_bytes()).hexdigest() for name in left}

    shipper = shipping.shipper_for(sessions, ShipOptions(ship_to))  # the restarted service's first session
    assert shipper.drain(120)
    check_shipped(objects(s3, bucket, "later/"), local)
    assert not (sessions / "run").exists()  # every shard shipped, the closed journal's directory gone


def test_keep_local_keeps_the_files_and_a_name_taken_by_other_bytes_is_never_overwritten(
    tmp_path: Path, s3: dict[str, str], bucket: str, caplog: pytest.LogCaptureFixture
) -> None:
    sessions = tmp_path / "sessions"
    storage_fixtures.put(
        s3, bucket, f"kept/{MANIFEST_PREFIX}/taken.jsonl.json", b'{"name": "taken.jsonl", "sha256": "0000"}'
    )
    storage_fixtures.put(s3, bucket, "kept/taken.jsonl", b"someone else's journal\n")
    with caplog.at_level(logging.ERROR, logger="replay_tui.shipping"):
        record(sessions / "mine.jsonl", ship_to=f"s3://{bucket}/kept/", keep_local=True)
        record(sessions / "taken.jsonl", ship_to=f"s3://{bucket}/kept/", keep_local=True)
        assert shipping.stop_all(timeout=60)
    remote = objects(s3, bucket, "kept/")
    assert remote["mine.jsonl"] == (sessions / "mine.jsonl").read_bytes()
    assert remote["taken.jsonl"] == b"someone else's journal\n" and (sessions / "taken.jsonl").exists()
    assert [e["op"] for e in ledger_entries(sessions) if e["name"] == "taken.jsonl"] == ["queued", "refused"]
    assert "holds taken.jsonl with other bytes" in caplog.text


@pytest.mark.parametrize(
    "options, message",
    [
        ({"ship_to": "/var/journals"}, "ship_to must be an object-storage URL"),
        ({"ship_to": "s3://AKIA:secret@bucket/p/"}, "carries credentials"),
        ({"ship_to": "s3://bucket/p/", "keep_local": "yes"}, "keep_local must be true or false"),
        ({"ship_to": "s3://bucket/p/", "ship_retry_max_s": -1}, "ship_retry_max_s must be a number of seconds"),
        ({"keep_local": True}, "keep_local without ship_to"),
    ],
)
def test_shipping_options_are_checked_when_the_config_is_built(
    options: dict[str, Any], message: str, tmp_path: Path
) -> None:
    from replay_tui.harness import build_harness

    with pytest.raises((ConfigError, ValueError), match=message):
        with build_harness(config(**options), journal=tmp_path / "x.jsonl"):
            pass


def test_recording_without_ship_to_never_imports_fsspec(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "from fixtures.agents.crm import QUESTION\n"
        "from replay_tui.harness import record_run\n"
        "record_run('fixtures/configs/crm.toml', 'fixtures.agents.crm:agent', [QUESTION], "
        f"journal={str(tmp_path / 'run.jsonl')!r})\n"
        "print('fsspec' in sys.modules, 's3fs' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={"PYTHONPATH": str(REPO), "PATH": ""},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "False"] and (tmp_path / "run.jsonl").is_file()

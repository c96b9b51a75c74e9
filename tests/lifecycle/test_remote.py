"""Tags, prune and forget on a storage prefix (moto's S3 server on loopback), as on a local directory."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from replay_tui.cli import main
from replay_tui.journal import JournalWriter
from replay_tui.journal.shipping import MANIFEST_PREFIX, ShipOptions, Shipper
from replay_tui.store import storage
from replay_tui.store.retention import prune
from tests.storage import conftest as storage_fixtures

from .conftest import CRM, INVENTORY, copy

s3_endpoint, s3_env, bucket = storage_fixtures.s3_endpoint, storage_fixtures.s3_env, storage_fixtures.bucket


def keys(s3_env: dict[str, str], bucket: str) -> list[str]:
    import boto3

    listed = boto3.client("s3", endpoint_url=s3_env["AWS_ENDPOINT_URL"]).list_objects_v2(Bucket=bucket)
    return sorted(item["Key"] for item in listed.get("Contents", []))


@pytest.fixture
def shipped(tmp_path: Path, s3_env: dict[str, str], bucket: str) -> str:
    """A prefix holding two journals and a sharded one, each with its manifest lines, as shipping leaves it."""
    local = tmp_path / "sessions"
    copy(CRM, local / "crm.jsonl")
    copy(INVENTORY, local / "inventory.jsonl")
    with JournalWriter(local / "sharded", run_id="sharded-run", rotate_bytes=400) as writer:
        for index in range(30):
            writer.append("input.received", {"role": "user", "content": f"message {index}"})
    ship_to = f"s3://{bucket}/corpus/"
    shipper = Shipper(local.resolve(), ShipOptions(ship_to, keep_local=True))
    for path in sorted(local.rglob("*.jsonl*")):
        shipper.submit(path, path.name.endswith(".jsonl"))
    assert shipper.drain(60)
    shipper.stop()
    return ship_to


def test_prune_on_a_prefix_removes_whole_journals_and_their_manifest_lines_and_keeps_tagged_ones(
    shipped: str, s3_env: dict[str, str], bucket: str, capsys
) -> None:
    assert main(["tag", f"{shipped}crm.jsonl", "incident", "--note", "INC-9"]) == 0
    assert f"{shipped}crm.jsonl: tagged incident" in capsys.readouterr().out
    cached = storage.fetch(f"{shipped}inventory.jsonl").local
    report = prune(shipped, "15d", now=time.time() + 20 * 86400)
    assert report.exit_code == 0
    assert sorted(decision.journal.removeprefix(shipped) for decision in report.removed) == [
        "inventory.jsonl",
        "sharded",
    ]
    assert keys(s3_env, bucket) == [
        "corpus/.replay-tui-manifest/crm.jsonl.json",
        "corpus/.replay-tui-tags.json",
        "corpus/crm.jsonl",
    ]
    assert not cached.exists()  # the download of a pruned journal went with it


def test_forget_a_journal_in_a_bucket(shipped: str, s3_env: dict[str, str], bucket: str, capsys) -> None:
    assert main(["tag", f"{shipped}sharded", "incident"]) == 0
    cached = storage.fetch(f"{shipped}sharded/").local
    capsys.readouterr()
    assert main(["forget", f"{shipped}sharded"]) == 0
    out = capsys.readouterr().out
    assert f"removed journal: {shipped}sharded" in out and "removed tag:" in out
    assert "removed shipped manifest lines:" in out and "removed storage mirror:" in out
    assert not any(
        key.startswith(("corpus/sharded", f"corpus/{MANIFEST_PREFIX}/sharded")) for key in keys(s3_env, bucket)
    )
    assert "corpus/.replay-tui-tags.json" not in keys(s3_env, bucket) and not cached.exists()
    assert s3_env["AWS_SECRET_ACCESS_KEY"] not in out

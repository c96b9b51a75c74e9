"""Object storage through fsspec against a real S3-compatible server on loopback (moto)."""

from __future__ import annotations

from pathlib import Path

import pytest

from replay_tui.journal import JournalWriter, verify_journal
from replay_tui.store.storage import ObjectFollower, StorageError, fetch
from tests.journal_factory import run_started

from .conftest import JOURNALS, put

CRM = (JOURNALS / "crm.jsonl").read_bytes()


def test_an_object_is_fetched_once_then_read_from_the_cache(s3_env: dict[str, str], bucket: str) -> None:
    put(s3_env, bucket, "runs/crm.jsonl", CRM)
    first = fetch(f"s3://{bucket}/runs/crm.jsonl")
    assert first.kind == "object" and first.downloaded == 1 and first.local.read_bytes() == CRM
    assert str(Path(s3_env["XDG_CACHE_HOME"])) in str(first.local)
    again = fetch(f"s3://{bucket}/runs/crm.jsonl")
    assert again.downloaded == 0 and again.local == first.local
    put(s3_env, bucket, "runs/crm.jsonl", CRM + b"")  # same bytes, same ETag: still cached
    assert fetch(f"s3://{bucket}/runs/crm.jsonl").downloaded == 0
    changed = CRM.replace(b'"crm"', b'"crm"', 1)[:-1] + b"\n"
    put(s3_env, bucket, "runs/crm.jsonl", changed + b"")
    assert verify_journal(str(fetch(f"s3://{bucket}/runs/crm.jsonl").local)).ok


def test_gzip_shards_under_a_prefix_are_one_journal(s3_env: dict[str, str], bucket: str, tmp_path: Path) -> None:
    shards = tmp_path / "run"
    with JournalWriter(shards, run_id="sharded", rotate_bytes=4096) as writer:
        writer.append("run.started", run_started(agent="m:a"))
        for number in range(200):
            writer.append("input.received", {"role": "user", "content": f"message {number} " + "x" * 50})
        writer.append("run.ended", {"status": "ok", "output": None, "error": None})
    names = sorted(path.name for path in shards.iterdir())
    assert any(name.endswith(".jsonl.gz") for name in names)
    for path in shards.iterdir():
        put(s3_env, bucket, f"prefix/run/{path.name}", path.read_bytes())
    fetched = fetch(f"s3://{bucket}/prefix/run/")
    assert fetched.kind == "prefix" and fetched.objects == len(names)
    report = verify_journal(str(fetched.local))
    assert report.ok, report.to_text()
    assert fetch(f"s3://{bucket}/prefix/run/").downloaded == 0  # unchanged objects are not fetched again


def test_missing_bucket_missing_object_and_denied_access_name_the_url(
    s3_env: dict[str, str], bucket: str, forbidden_url: str
) -> None:
    with pytest.raises(StorageError, match=r"^s3://no-such-bucket-here/x\.jsonl: no such bucket"):
        fetch("s3://no-such-bucket-here/x.jsonl")
    with pytest.raises(StorageError, match=rf"^s3://{bucket}/missing\.jsonl: no such object"):
        fetch(f"s3://{bucket}/missing.jsonl")
    with pytest.raises(StorageError, match="access denied") as denied:
        fetch(forbidden_url)
    assert str(denied.value).startswith(forbidden_url)
    assert s3_env["AWS_SECRET_ACCESS_KEY"] not in str(denied.value)


@pytest.mark.parametrize(
    "url",
    [
        "s3://AKIAEXAMPLE:very-secret-value@bucket/run.jsonl",
        "https://user:very-secret-value@example.invalid/run.jsonl",
        "https://example.invalid/run.jsonl?X-Amz-Signature=very-secret-value&X-Amz-Credential=abc",
    ],
)
def test_credentials_on_the_command_line_are_refused_and_never_printed(url: str) -> None:
    with pytest.raises(StorageError, match="never on the command line") as refused:
        fetch(url)
    assert "very-secret-value" not in str(refused.value)


def test_an_object_cut_mid_line_is_a_truncated_tail(s3_env: dict[str, str], bucket: str) -> None:
    cut = CRM[: CRM.rindex(b"\n", 0, len(CRM) - 1) + 40]
    put(s3_env, bucket, "cut.jsonl", cut)
    report = verify_journal(str(fetch(f"s3://{bucket}/cut.jsonl").local))
    assert not report.ok or report.to_json().get("notes") or "truncated" in report.to_text()


def test_following_a_growing_object_appends_only_new_bytes(s3_env: dict[str, str], bucket: str) -> None:
    lines = CRM.splitlines(keepends=True)
    put(s3_env, bucket, "live.jsonl", b"".join(lines[:10]))
    follower = ObjectFollower(f"s3://{bucket}/live.jsonl", interval_s=3600)  # polled by hand below
    local = follower.start()
    try:
        assert local.read_bytes() == b"".join(lines[:10])
        inode = local.stat().st_ino
        assert follower.poll() == 0
        put(s3_env, bucket, "live.jsonl", b"".join(lines[:50]))
        assert follower.poll() == len(b"".join(lines[10:50]))
        assert local.read_bytes() == b"".join(lines[:50]) and local.stat().st_ino == inode
        put(s3_env, bucket, "live.jsonl", b"".join(lines[1:60]))  # replaced, not appended
        assert follower.poll() == -1
        assert local.read_bytes() == b"".join(lines[1:60])
    finally:
        follower.stop()

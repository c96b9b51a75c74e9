"""Secret scan: each detector, no false positives on our own ids and hashes, masking, CLI exits."""

from __future__ import annotations

import json
import random
import string
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from replay_tui.analysis.secrets import (
    flagged_seqs,
    is_sensitive_key,
    mask,
    scan_event,
    scan_journal,
    scan_string,
)
from replay_tui.journal import JournalWriter, call_key_of, hash_value, open_journal

sys.path.insert(0, str(Path(__file__).parent))
from incident_sample import PLANTED_SECRET, write_incident_journal

from tests.journal_factory import run_started

# Realistic shapes, built at run time so this file itself holds no token a scanner would flag.
KNOWN = {
    "aws-access-key-id": "AKIA" + "Q3EXAMPLE7ZT5LMN",
    "github-token": "ghp_" + "aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dE3fG5",
    "anthropic-key": "sk-ant-api03-" + "x7Yb2Kq9LmN4pR8sT1vW6zA3cE5gH0jK" * 3,
    "openai-key": "sk-proj-" + "Zq8Lm3Nx7Rt2Vb6Yc1Ws4Ke9Gh5Jd0Pa",
    "slack-token": "xoxb-" + "2048193746-5520918374651-Hk3Lm8Nq2Rs7Tv",
    "stripe-key": "sk_live_" + "51HxQ2aLkP9mZ3vB8nR4tY6w",
    "google-api-key": "AIza" + "SyD3kL9mN2pQ5rT8vW1xZ4bC7eF0gH3jK6m",
    "jwt": "eyJhbGciOiJIUzI1NiJ9" + ".eyJzdWIiOiJ1c2VyLTQyIiwiZXhwIjoxOH0" + ".Zk3Lm9Qx2Rv8Tn4Wb6Yc1Ea5Gd7Jh0Kp",
    "private-key": "-----BEGIN RSA " + "PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----",
    "bearer-token": "Bearer " + "abc.def-ghi_jkl~mno123456",
    "url-password": "postgres://app:" + "s3cr3tPassw0rd@db.internal:5432/crm",
    "basic-auth": "Authorization: Basic " + "YWRtaW46aHVudGVyMg==",
    "sendgrid-key": "SG." + "aB3dE5gH7jK9mN1pQ3sT5v" + "." + "wX7yZ9bC1dE3fG5hJ7kL9mN1pQ3sT5vW7yZ9bC1dE3f",
    "npm-token": "npm_" + "aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dE3fGh",
    "twilio-key": "SK" + "0123456789abcdef" * 2,
}


@pytest.mark.parametrize("name,value", sorted(KNOWN.items()))
def test_known_formats_are_found_anywhere_in_a_string(name: str, value: str) -> None:
    hit = scan_string(f"config dump: {value} (end)", key="text")
    assert hit is not None and hit[0] == f"format:{name}"
    assert value not in hit[1] and value[:12] not in hit[1]


@pytest.mark.parametrize(
    "key",
    [
        "password",
        "api_key",
        "apiKey",
        "x_api_key",
        "x-api-key",
        "X-Api-Key",
        "clientSecret",
        "client_secret",
        "raw_token",
        "token",
        "refresh_token",
        "Authorization",
        "aws_secret_access_key",
        "private_key",
        "db_passwd",
        "cookie",
    ],
)
def test_sensitive_key_names(key: str) -> None:
    assert is_sensitive_key(key)
    assert scan_string("hunter2-correct-horse", key) == (
        "key-name",
        mask("hunter2-correct-horse"),
        f"under key {key!r}",
    )


@pytest.mark.parametrize(
    "key",
    [
        "max_tokens",
        "prompt_tokens",
        "completion_tokens",
        "total_tokens",
        "tokenizer",
        "token_type",
        "next_page_token",
        "secret_name",
        "author",
        "authority",
        "password_policy",
        "api_key_id",
        "call_key",
        "request_hash",
    ],
)
def test_names_that_only_talk_about_secrets_are_not_flagged(key: str) -> None:
    assert not is_sensitive_key(key)


@pytest.mark.parametrize(
    "value",
    [
        "[REDACTED]",
        "<redacted>",
        "***",
        "********",
        "REDACTED:sha256",
        "sha256:" + "ab" * 32,
        "${DB_PASSWORD}",
        "{{ secrets.TOKEN }}",
    ],
)
def test_redacted_values_under_sensitive_keys_are_fine(value: str) -> None:
    assert scan_string(value, "password") is None


@pytest.mark.parametrize("length,rate", [(20, 0.7), (24, 0.85), (32, 0.95), (40, 0.95), (64, 0.99)])
def test_random_tokens_are_found_by_entropy(length: int, rate: float) -> None:
    """A random token occasionally looks ordinary; the thresholds keep misses rare from 24 characters on.
    Seeded, so the test is deterministic (and identical across xdist workers)."""
    generator = random.Random(length)
    alphabet = string.ascii_letters + string.digits + "-_"
    tokens = ["".join(generator.choice(alphabet) for _ in range(length)) for _ in range(400)]
    found = sum(scan_string(token, "note") is not None for token in tokens)
    assert found / len(tokens) >= rate


@pytest.mark.parametrize(
    "value",
    [
        hash_value({"a": 1}),  # our own sha256: values
        call_key_of("order_lookup", {"order_id": "A-1009"}),
        str(uuid.UUID("5f0d6532-0dc0-49d9-bc15-dd092ceadcee")),
        uuid.UUID("eef3778d-4316-4a3b-b67c-fc80da761c28").hex,
        "0x" + "f" * 40,
        "run-crm-incident:12",
        "2026-11-03T09:30:00.123456Z",
        "fixtures.agents.crm:agent",
        "/usr/lib/python3.11/site-packages/replay_tui/journal/reader.py",
        "https://api.example.com/v1/customers/C-77/orders?limit=50",
        "ThisIsAVeryLongCamelCaseIdentifierName",
        "customer_lookup_v2_handler",
        "claude-3-5-sonnet-20241022",
        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        "Please refund order A-1009, it arrived broken and the box was wet.",
        # code, which coding agents' journals are full of
        "H5P.get_link_creation_order",
        "'TF2_OnIsHolidayActive',",
        "'curle_ftp_weird_227_format',",
        "url = 'https://ssrg.nicta.com.au/publications/nictaabstracts/Kuz_KLW_10.abstract.pml'",
        "token = Name.Namespace",
        "Token: '#d8dee9',",
        "SERVER_AUTH = '1.3.6.1.5.5.7.3.1'",
        "self, private_key: ed25519.Ed25519PrivateKey, f_priv: _FragList",
        "point = backend._lib.EC_KEY_get0_public_key(ec_cdata)",
    ],
)
def test_ids_hashes_and_prose_are_not_flagged(value: str) -> None:
    assert scan_string(value, "text") is None


def test_random_ids_under_id_keys_are_not_flagged() -> None:
    call_id = "call_" + "Zx8f3kQ2mN7pL1vR9tY4wB6s"
    assert scan_string(call_id, "text") is not None  # the same value in free text would be
    for key in ("id", "call_id", "tool_call_id", "requestId", "idempotency_key", "etag"):
        assert scan_string(call_id, key) is None


def test_mask_never_shows_the_value() -> None:
    value = "sk-proj-Zq8Lm3Nx7Rt2Vb6Yc1Ws4Ke9Gh5Jd0Pa"
    shown = mask(value)
    assert shown == f"sk-p…Pa ({len(value)} chars)"
    assert mask("short") == "***** (5 chars)"


def test_incident_journal_finds_the_planted_key_with_seq_and_path(tmp_path: Path) -> None:
    journal = open_journal(write_incident_journal(tmp_path / "crm.jsonl", filler_steps=5))
    report = scan_journal(journal)
    journal.close()
    assert not report.clean and report.total_findings == 1
    (finding,) = report.findings
    assert finding.seq == 30 and finding.kind == "tool.call"
    assert finding.path == "payload.arguments.headers.x-api-key"
    assert finding.detector == "format:openai-key"
    assert PLANTED_SECRET not in finding.masked and PLANTED_SECRET not in report.to_text()
    assert report.flagged_seqs == {30}


def test_every_detector_with_json_paths(tmp_path: Path) -> None:
    path = tmp_path / "leaky.jsonl"
    aws_secret = "wJalrXUtnFEMI/K7MDENG/" + "bPxRfiCY3kL9mQ2vZ8nT"
    with JournalWriter(path, run_id="leaky") as writer:
        writer.append("run.started", run_started(environment={"DATABASE_URL": KNOWN["url-password"]}))
        writer.append(
            "input.received", {"role": "user", "content": "no secrets here, just a question about order A-1009"}
        )
        request = {
            "model": "m",
            "messages": [{"role": "system", "content": f"use {KNOWN['github-token']} for the repo"}],
        }
        writer.append("model.request", {"request_hash": hash_value(request), "request": request})
        writer.append(
            "tool.call",
            {
                "call_id": "c1",
                "call_key": call_key_of("t", {}),
                "tool": "t",
                "arguments": {"config": {"clientSecret": "not-redacted-value"}},
            },
        )
        writer.append(
            "tool.result",
            {
                "call_id": "c1",
                "call_key": call_key_of("t", {}),
                "tool": "t",
                "result": {"rows": [{"blob": aws_secret}]},
                "duration_ms": 3,
            },
        )
        writer.append("run.ended", {"status": "ok", "output": {"password": "[REDACTED]"}})
    journal = open_journal(path)
    report = scan_journal(journal)
    journal.close()
    got = {(f.seq, f.path, f.detector) for f in report.findings}
    assert got == {
        (1, "payload.environment.DATABASE_URL", "format:url-password"),
        (3, "payload.request.messages[0].content", "format:github-token"),
        (4, "payload.arguments.config.clientSecret", "key-name"),
        (5, "payload.result.rows[0].blob", "entropy"),
    }
    assert report.flagged_seqs == {1, 3, 4, 5}


def test_clean_journal_has_no_findings(tmp_path: Path) -> None:
    sys.path.insert(0, str(Path(__file__).parents[1] / "journal"))
    from sample import write_sample_journal

    journal = open_journal(write_sample_journal(tmp_path / "clean.jsonl", steps=20))
    assert flagged_seqs(journal) == frozenset()
    journal.close()


def test_scan_event_serves_follow_mode(tmp_path: Path) -> None:
    journal = open_journal(write_incident_journal(tmp_path / "crm.jsonl"))
    findings = [f for event in journal.events() for f in scan_event(event)]  # type: ignore[arg-type]
    journal.close()
    assert [(f.seq, f.detector) for f in findings] == [(10, "format:openai-key")]


def test_cancel(tmp_path: Path) -> None:
    journal = open_journal(write_incident_journal(tmp_path / "big.jsonl", filler_steps=2500))
    report = scan_journal(journal, cancelled=lambda: True)
    assert not report.complete and report.events == 4096
    journal.close()


def _cli(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "import sys; from replay_tui.cli import main; sys.exit(main(sys.argv[1:]))", *argv],
        capture_output=True,
        text=True,
        check=False,
    )


def test_cli_exit_codes_and_masking(tmp_path: Path) -> None:
    leaky = write_incident_journal(tmp_path / "crm.jsonl")
    before = leaky.read_bytes()
    result = _cli("scan", str(leaky))
    assert result.returncode == 1
    assert "seq      10" in result.stdout and "payload.arguments.headers.x-api-key" in result.stdout
    assert PLANTED_SECRET not in result.stdout + result.stderr
    data = json.loads(_cli("scan", str(leaky), "--json").stdout)
    assert data["total_findings"] == 1 and data["findings"][0]["seq"] == 10 and not data["clean"]
    assert leaky.read_bytes() == before  # the journal is never written

    sys.path.insert(0, str(Path(__file__).parents[1] / "journal"))
    from sample import write_sample_journal

    clean = _cli("scan", str(write_sample_journal(tmp_path / "clean.jsonl")))
    assert clean.returncode == 0 and "clean" in clean.stdout

    missing = _cli("scan", str(tmp_path / "missing.jsonl"))
    assert missing.returncode == 2 and "missing.jsonl" in missing.stderr and "Traceback" not in missing.stderr

    damaged = tmp_path / "damaged.jsonl"
    damaged.write_bytes(clean_bytes := (tmp_path / "clean.jsonl").read_bytes())
    damaged.write_bytes(clean_bytes.replace(b'"seq":3,', b'"seq":"three",', 1))
    unreadable = _cli("scan", str(damaged))
    assert unreadable.returncode == 2 and "line 3" in unreadable.stdout and "incomplete" in unreadable.stderr


FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "journals"


def test_harness_recorded_fixtures_have_no_false_positives() -> None:
    """Real journals: ids, hashes, timestamps, tool results and redacted values must all pass."""
    scanned = 0
    for path in sorted(FIXTURES.glob("*.jsonl")):
        journal = open_journal(path)
        report = scan_journal(journal)
        journal.close()
        assert report.clean, (path.name, [f.to_text() for f in report.findings[:5]])
        scanned += report.events
    assert scanned > 1000


def test_type_data_dialect_is_scanned_too(tmp_path: Path) -> None:
    path = tmp_path / "other-harness.jsonl"
    lines = [
        {
            "type": "session_started",
            "event_id": "e1",
            "session_id": "s",
            "seq": 1,
            "ts": "2026-01-01T00:00:00Z",
            "data": {"agent": "bot"},
        },
        {
            "type": "tool_invocation",
            "event_id": "e2",
            "session_id": "s",
            "seq": 2,
            "ts": "2026-01-01T00:00:01Z",
            "data": {"tool": "reset", "input": {"user": "u1", "api_key": "live-key-123456789"}, "output": {"ok": True}},
        },
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    journal = open_journal(path)
    report = scan_journal(journal)
    journal.close()
    assert [(f.seq, f.kind, f.path, f.detector) for f in report.findings] == [
        (2, "tool.call", "payload.arguments.api_key", "key-name")
    ]


def test_ignore_patterns_leave_out_reviewed_paths(tmp_path: Path) -> None:
    leaky = write_incident_journal(tmp_path / "crm.jsonl")
    journal = open_journal(leaky)
    assert scan_journal(journal, ignore=["payload.arguments.headers.*"]).clean
    assert scan_journal(journal, ignore=["**.x-api-key"]).ignored == 1
    assert not scan_journal(journal, ignore=["payload.arguments.*"]).clean  # * is one segment, not two
    journal.close()
    result = _cli("scan", str(leaky), "--ignore", "**.headers.x-api-key")
    assert result.returncode == 0 and "1 finding(s) matched --ignore patterns" in result.stdout


@pytest.mark.parametrize(
    "text,name",
    [
        ("export DB_PASSWORD=" + "hunter2xyz", "DB_PASSWORD"),
        ("GET /v1/orders?api_key=" + "abcdef123456&limit=5", "api_key"),
        ('{"client_secret": "' + 'cs_9f8e7d6c5b"}', "client_secret"),  # a JSON document kept as a string
        ("Cookie: " + "session=abcdef123456", "Cookie"),
    ],
)
def test_sensitive_names_assigned_inside_text(text: str, name: str) -> None:
    hit = scan_string(text, "body")
    assert hit is not None and hit[0] == "assignment" and hit[2] == f"{name!r} set in text"


@pytest.mark.parametrize(
    "text",
    [
        "token: [REDACTED]",
        "next_page_token=abc123def",
        "max_tokens=100",
        "token_type: bearer",
        "api_key=${API_KEY}",
        "Basic information about the order",
        "password: ********",
        "Note: the key is in the vault",
        "primary_key: id_1234567",
    ],
)
def test_harmless_assignments_in_text(text: str) -> None:
    assert scan_string(text, "body") is None


def test_a_line_nested_past_the_recursion_limit(tmp_path: Path) -> None:
    """The reader accepts 1,024 levels; scan and mask must not hit Python's recursion limit."""
    from replay_tui.analysis.secrets import MASK_MAX_DEPTH, mask_secrets

    path = tmp_path / "deep.jsonl"
    with JournalWriter(path, run_id="deep") as writer:
        writer.append("run.started", run_started())
    deep = "[" * 1015 + json.dumps(KNOWN["github-token"]) + "]" * 1015
    line = json.dumps(
        {
            "schema_version": 1,
            "run_id": "deep",
            "seq": 2,
            "event_id": "deep:2",
            "kind": "input.received",
            "step_id": None,
            "parent_event_id": None,
            "recorded_at": "2026-01-01T00:00:00Z",
            "payload": {"role": "user", "content": "DEEP"},
            "prev_event_hash": None,
        }
    ).replace('"DEEP"', deep)
    with path.open("a") as handle:
        handle.write(line + "\n")
    journal = open_journal(path)
    report = scan_journal(journal)
    event = journal.event(1)
    journal.close()
    assert [(f.seq, f.detector) for f in report.findings] == [(2, "format:github-token")]
    assert report.findings[0].path == "payload.content" + "[0]" * 1015
    masked, count = mask_secrets(event.payload)
    assert count == 0 and json.dumps(masked).count("[") <= MASK_MAX_DEPTH  # cut off, with a placeholder string
    assert f"nested deeper than {MASK_MAX_DEPTH} levels" in json.dumps(masked)

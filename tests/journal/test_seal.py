"""Signed seals: keygen, the harness writer sealing with a configured key, verify --key, and every forgery."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import orjson
import pytest

from replay_tui.cli import main
from replay_tui.harness import record_run
from replay_tui.journal import JournalWriter, verify_journal
from replay_tui.journal.seal import load_private_key, load_public_key

from .sample import write_sample_journal

REPO = Path(__file__).resolve().parents[2]
PROBE_CONFIG = REPO / "tests" / "replay" / "agents" / "probe.toml"
PROBE_AGENT = "tests.replay.agents.probe:agent"


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Two real key pairs written by `replay-tui keygen`."""
    folder = tmp_path_factory.mktemp("keys")
    for name in ("alice", "mallory"):
        assert main(["keygen", str(folder / name)]) == 0
    return {"alice": folder / "alice", "mallory": folder / "mallory"}


def _events(path: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


def _rewrite(target: Path, events: list[dict[str, Any]], *, signer_key: Path | None = None) -> Path:
    """Events re-chained through the real writer (a forger with the code but not the key)."""
    with JournalWriter(
        target, run_id=events[0]["run_id"], signer=load_private_key(signer_key) if signer_key else None
    ) as writer:
        for event in events:
            writer.append(
                event["kind"], event["payload"], step_id=event["step_id"], parent_event_id=event["parent_event_id"]
            )
    return target


def test_keygen_writes_a_private_key_only_its_owner_reads(keys: dict[str, Path], capsys) -> None:
    private, public = keys["alice"], keys["alice"].with_name("alice.pub")
    assert stat.S_IMODE(os.stat(private).st_mode) == 0o600
    assert b"PRIVATE KEY" in private.read_bytes() and b"PUBLIC KEY" in public.read_bytes()
    assert main(["keygen", str(private)]) == 2  # never overwritten
    assert "exists" in capsys.readouterr().err
    assert main(["verify", str(private), "--key", str(private)]) == 2  # a private key is not a --key
    assert "give the .pub file" in capsys.readouterr().err


def test_the_harness_seals_a_recording_and_verify_checks_it(tmp_path: Path, keys: dict[str, Path], capsys) -> None:
    config = tmp_path / "probe.toml"
    config.write_text(
        PROBE_CONFIG.read_text().replace("[harness]\n", f'[harness]\nsigning_key = "{keys["alice"]}"\n', 1)
    )
    journal = tmp_path / "sealed.jsonl"
    record_run(config, PROBE_AGENT, ["how much stock is there?"], journal=journal)
    events = _events(journal)
    assert [event["kind"] for event in events[-2:]] == ["run.ended", "run.sealed"]
    key_id = events[-1]["payload"]["key_id"]
    assert key_id.startswith("ed25519:") and len(key_id) == len("ed25519:") + 16

    public = str(keys["alice"]) + ".pub"
    report = verify_journal(journal, public_key=load_public_key(public))
    assert report.ok and report.closed and report.sealed_by == [key_id]
    assert [seal.status for seal in report.seals] == ["verified"]
    assert main(["verify", str(journal), "--key", public]) == 0
    assert f"Sealed by key {key_id}: every seal's signature verifies" in capsys.readouterr().out
    assert main(["verify", str(journal)]) == 0  # without --key: says it is sealed, and by whom
    assert f"Sealed by key {key_id} (signatures not checked" in capsys.readouterr().out
    assert main(["verify", str(journal), "--json", "--key", public]) == 0
    assert f"sealed by key {key_id} ✓" in json.loads(capsys.readouterr().out)["summary"]

    # A strict replay of a sealed journal still matches: the seal is not an event of the run.
    from tests.replay.helpers import replay

    outcome = replay(journal, agent=PROBE_AGENT)
    assert outcome.status == "match" and outcome.consumed == outcome.total == len(events) - 1, outcome.to_text()


@pytest.fixture()
def sealed(tmp_path: Path, keys: dict[str, Path]) -> Path:
    return write_sample_journal(
        tmp_path / "sealed.jsonl", steps=3, signer=load_private_key(keys["alice"]), checkpoint_every=5
    )


def _verify(path: Path, keys: dict[str, Path], name: str = "alice"):
    return verify_journal(path, public_key=load_public_key(str(keys[name]) + ".pub"), all_faults=True)


def test_checkpoints_and_the_final_seal_verify(sealed: Path, keys: dict[str, Path]) -> None:
    kinds = [event["kind"] for event in _events(sealed)]
    assert kinds.count("chain.checkpoint") == 3 and kinds[-2:] == ["run.ended", "run.sealed"]
    report = _verify(sealed, keys)
    assert report.ok, report.to_text()
    assert [seal.kind for seal in report.seals] == ["chain.checkpoint"] * 3 + ["run.sealed"]


def test_a_rewritten_chain_is_caught_by_the_signature(tmp_path: Path, sealed: Path, keys: dict[str, Path]) -> None:
    events = [event for event in _events(sealed) if event["kind"] not in ("chain.checkpoint", "run.sealed")]
    events[4]["payload"]["result"] = {"rows": 999}  # the edit
    forged = _rewrite(tmp_path / "forged.jsonl", events)
    # The forger copies the original seal, and even points it at the new chain head.
    original_seal = _events(sealed)[-1]["payload"]
    with JournalWriter(
        tmp_path / "tail.jsonl", run_id="run-test", start_after=(len(events), _events(forged)[-1]["event_hash"])
    ) as writer:
        writer.append(
            "run.sealed", {**original_seal, "head_seq": len(events), "head_hash": _events(forged)[-1]["event_hash"]}
        )
    forged.write_bytes(forged.read_bytes() + (tmp_path / "tail.jsonl").read_bytes())
    assert verify_journal(forged).ok  # the chain alone cannot tell: it was re-hashed end to end
    report = _verify(forged, keys)
    assert [fault.kind for fault in report.faults] == ["bad_seal"]
    assert "signature does not match" in report.faults[0].message and report.faults[0].seq == len(events) + 1


def test_a_seal_that_does_not_sign_the_event_before_it_is_a_fault_even_without_a_key(
    tmp_path: Path, sealed: Path
) -> None:
    events = _events(sealed)
    events = events[:3] + events[4:]  # drop one event; the copied seals still name the old heads
    forged = _rewrite(tmp_path / "forged.jsonl", events)
    report = verify_journal(forged, all_faults=True)
    assert report.faults and {fault.kind for fault in report.faults} == {"bad_seal"}


def test_a_dropped_tail_after_the_last_seal(tmp_path: Path, sealed: Path, keys: dict[str, Path]) -> None:
    lines = sealed.read_bytes().splitlines(keepends=True)
    cut = tmp_path / "cut.jsonl"
    cut.write_bytes(b"".join(lines[:9]))  # after the second checkpoint (seq 11) is gone: up to seq 9
    report = _verify(cut, keys)
    assert [fault.kind for fault in report.faults] == ["unsealed_tail"]
    assert "last seal is at seq 6" in report.faults[0].message and not report.closed
    nothing = tmp_path / "none.jsonl"
    nothing.write_bytes(b"".join(lines[:5]))  # before any seal
    assert [fault.kind for fault in _verify(nothing, keys).faults] == ["not_sealed"]
    unsealed = write_sample_journal(tmp_path / "plain.jsonl", steps=1)
    assert [fault.kind for fault in _verify(unsealed, keys).faults] == ["not_sealed"]
    assert verify_journal(unsealed).ok  # journals without seals stay valid


def test_a_seal_made_with_another_key(sealed: Path, keys: dict[str, Path]) -> None:
    report = _verify(sealed, keys, "mallory")
    assert [fault.kind for fault in report.faults] == ["wrong_key_seal"] * 4
    assert "not by the given key" in report.faults[0].message


def test_events_after_the_seal_are_a_fault(tmp_path: Path, sealed: Path, keys: dict[str, Path]) -> None:
    events = [event for event in _events(sealed) if event["kind"] != "chain.checkpoint"]
    seal = events.pop()
    last = _events(sealed)[-1]
    with JournalWriter(
        tmp_path / "more.jsonl", run_id="run-test", start_after=(last["seq"], last["event_hash"])
    ) as writer:
        writer.append("input.received", {"role": "user", "content": "and one more thing"})
    grown = tmp_path / "grown.jsonl"
    grown.write_bytes(sealed.read_bytes() + (tmp_path / "more.jsonl").read_bytes())
    report = _verify(grown, keys)
    assert [fault.kind for fault in report.faults] == ["event_after_end", "unsealed_tail"]
    assert "after the run.sealed" in report.faults[0].message and seal["kind"] == "run.sealed"


def test_the_harness_config_turns_on_checkpoints(tmp_path: Path, keys: dict[str, Path]) -> None:
    """``checkpoint_every`` in [harness] signs the chain head every N events while recording."""
    from replay_tui.harness.config import ConfigError

    def config_with(extra: str) -> Path:
        config = tmp_path / "probe.toml"
        config.write_text(PROBE_CONFIG.read_text().replace("[harness]\n", f"[harness]\n{extra}\n", 1))
        return config

    journal = tmp_path / "checkpointed.jsonl"
    record_run(
        config_with(f'signing_key = "{keys["alice"]}"\ncheckpoint_every = 4'), PROBE_AGENT, ["q"], journal=journal
    )
    kinds = [event["kind"] for event in _events(journal)]
    assert kinds.count("chain.checkpoint") >= 1 and kinds[-1] == "run.sealed"
    report = verify_journal(journal, public_key=load_public_key(str(keys["alice"]) + ".pub"))
    assert report.ok and {seal.status for seal in report.seals} == {"verified"}
    # the checkpoints are the writer's seals between the agent's events: a strict replay steps over them
    from tests.replay.helpers import replay

    outcome = replay(journal, agent=PROBE_AGENT)
    assert outcome.status == "match" and outcome.consumed == outcome.total == len(kinds) - 1, outcome.to_text()
    for extra, expected in (
        ("checkpoint_every = 4", "needs signing_key"),
        (f'signing_key = "{keys["alice"]}"\ncheckpoint_every = 0', "positive integer"),
        (f'signing_key = "{keys["alice"]}"\ncheckpoint_every = "4"', "positive integer"),
    ):
        never = tmp_path / "never.jsonl"
        with pytest.raises(ConfigError, match=expected):
            record_run(config_with(extra), PROBE_AGENT, ["q"], journal=never)
        assert not never.exists()


def test_a_bad_signing_key_is_a_config_error_before_anything_is_recorded(tmp_path: Path, keys: dict[str, Path]) -> None:
    from replay_tui.harness.config import ConfigError

    for key, expected in (
        ("missing-key", "cannot read the private key"),
        (f"{keys['alice']}.pub", "is not a PEM private key"),
    ):
        config = tmp_path / "probe.toml"
        config.write_text(PROBE_CONFIG.read_text().replace("[harness]\n", f'[harness]\nsigning_key = "{key}"\n', 1))
        journal = tmp_path / "never.jsonl"
        with pytest.raises(ConfigError, match=expected):
            record_run(config, PROBE_AGENT, ["q"], journal=journal)
        assert not journal.exists()


def test_the_app_header_line_names_the_seal_and_an_open_run(tmp_path: Path, sealed: Path) -> None:
    from replay_tui.jobs.verify import result_of  # what the app's chain check turns a verdict into

    key_id = _events(sealed)[-1]["payload"]["key_id"]
    verdict = result_of(json.loads(json.dumps(verify_journal(sealed).to_json())))
    assert verdict.status == "verified" and verdict.summary == f"✓ verified (18 events) · sealed by key {key_id}"
    lines = sealed.read_bytes().splitlines(keepends=True)
    cut = tmp_path / "cut.jsonl"
    cut.write_bytes(b"".join(lines[:9]))
    verdict = result_of(verify_journal(cut).to_json())
    assert verdict.summary == f"✓ verified (9 events) · not closed · sealed by key {key_id}"

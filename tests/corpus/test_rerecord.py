"""Re-record: replay to the divergence, continue live into a new journal, old bytes untouched."""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path

import pytest

from replay_tui.harness import JsonlSink
from replay_tui.journal import open_journal, verify_journal
from replay_tui.replay.compare import align_journals, read_events
from replay_tui.replay.parent.rerecord import PrefixCheckingSink, PrefixMismatch

from ..replay.helpers import rechained_copy
from . import leaky_tools
from .conftest import BEFORE_HISTORY, CLEAN, REPO, cli, copy_corpus

JOURNALS = REPO / "fixtures" / "journals"
CRM_CONFIG = REPO / "fixtures" / "configs" / "crm.toml"
REFUND_CONFIG = REPO / "fixtures" / "corpus" / "refund-desk.toml"
REFUND_AGENT = "fixtures.corpus.agents:agent"
LEAKY_CONFIG = Path(__file__).with_name("refund-desk-leaky.toml")


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cli("replay", *args), cwd=REPO, capture_output=True, text=True, timeout=300)


def rerecord_cli(
    journal: Path, out: Path, *extra: str, config: Path | None = REFUND_CONFIG
) -> subprocess.CompletedProcess[str]:
    """``replay JOURNAL --rerecord-from-divergence`` of the refund-desk agent into ``out`` (no --config: None)."""
    configured = ("--config", str(config)) if config is not None else ()
    return run_cli(
        str(journal), "--rerecord-from-divergence", "--agent", REFUND_AGENT, *configured, "--out", str(out), *extra
    )


def test_rerecord_the_crm_incident_with_the_fixed_agent(tmp_path: Path) -> None:
    incident = copy_corpus(tmp_path / "in", [JOURNALS / "crm-incident.jsonl"]) / "crm-incident.jsonl"
    before = digest(incident)
    out = tmp_path / "crm-rerecorded.jsonl"
    done = run_cli(
        str(incident),
        "--agent",
        "fixtures.agents.crm:agent",
        "--rerecord-from-divergence",
        "--config",
        str(CRM_CONFIG),
        "--out",
        str(out),
        "--json",
    )
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads(done.stdout)
    assert result["divergence_seq"] == 144 and result["run_status"] == "ok" and result["events_written"] == 175
    assert digest(incident) == before == result["journal_sha256"]
    assert verify_journal(out).ok
    # the new journal is the fixed agent's run: it replays clean with its own entry point...
    replay = run_cli(str(out), "--json")
    assert replay.returncode == 0, replay.stdout
    # ...and is, event for event, the fixed agent's recording
    with open_journal(out) as a, open_journal(JOURNALS / "crm.jsonl") as b:
        assert align_journals(a, b).identical
    with open_journal(out) as produced:
        assert produced.event(0).payload["agent"] == "fixtures.agents.crm:agent"


def test_rerecord_a_corpus_journal(tmp_path: Path) -> None:
    old = copy_corpus(tmp_path / "in", BEFORE_HISTORY[:1]) / BEFORE_HISTORY[0].name
    before = digest(old)
    out = tmp_path / "new.replay.jsonl"
    done = rerecord_cli(old, out)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("Re-recorded from seq=7:")
    assert digest(old) == before
    assert run_cli(str(out)).returncode == 0
    with open_journal(out) as journal:
        call = next(journal.event(p) for p in range(len(journal)) if journal.event(p).kind == "tool.call")
        assert call.payload["arguments"]["include_history"] is True


def test_matching_journal_has_nothing_to_rerecord(tmp_path: Path) -> None:
    out = tmp_path / "new.jsonl"
    done = rerecord_cli(CLEAN[0], out)
    assert done.returncode == 0
    assert "Nothing to re-record" in done.stdout
    assert not out.exists()


def test_existing_out_is_never_overwritten(tmp_path: Path) -> None:
    out = tmp_path / "taken.jsonl"
    out.write_text("keep me")
    done = rerecord_cli(BEFORE_HISTORY[0], out)
    assert done.returncode == 2 and "already exists" in done.stderr
    assert out.read_text() == "keep me"
    done = rerecord_cli(BEFORE_HISTORY[0], tmp_path / "x.jsonl", config=None)
    assert done.returncode == 2 and "needs --config" in done.stderr
    done = rerecord_cli(BEFORE_HISTORY[0], tmp_path / "y.jsonl", config=tmp_path / "missing.toml")
    assert done.returncode == 2 and "missing.toml" in done.stderr and not (tmp_path / "y.jsonl").exists()


def test_served_observations_are_counted(tmp_path: Path) -> None:
    old = copy_corpus(tmp_path / "in", BEFORE_HISTORY[:1]) / BEFORE_HISTORY[0].name
    out = tmp_path / "new.jsonl"
    done = rerecord_cli(old, out, "--json")
    assert done.returncode == 0
    # before seq 7: the uuid draw, the clock read and the first model answer
    assert json.loads(done.stdout)["served_from_journal"] == 3


def test_a_prefix_that_leaves_the_old_journal_is_stopped(tmp_path: Path) -> None:
    """Before the divergence every written event must equal the old one (parents by seq)."""
    with open_journal(CLEAN[0]) as journal:
        recorded = read_events(journal)
    new_run = "copy-rerecorded"
    sink = PrefixCheckingSink(JsonlSink(tmp_path / "new.jsonl", run_id=new_run), recorded, 5, new_run)
    for event in recorded[:3]:
        parent = event.parent_event_id and f"{new_run}:{event.parent_event_id.rsplit(':', 1)[1]}"
        written = sink.emit(event.kind, event.payload, step_id=event.step_id, parent_event_id=parent)
        assert written.seq == event.seq
    changed = dict(recorded[3].payload, request_hash="sha256:" + "0" * 64)
    with pytest.raises(PrefixMismatch, match="seq 4 differs from the old journal before the divergence at seq 5"):
        sink.emit(recorded[3].kind, changed, step_id=recorded[3].step_id, parent_event_id=f"{new_run}:3")
    sink.close()


def test_unreplayable_journal_and_bad_live_plugin(tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.jsonl"
    garbage.write_bytes(b"not json\n")
    done = rerecord_cli(garbage, tmp_path / "a.jsonl")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Cannot re-record: the replay stopped before any divergence (error)" in done.stdout
    assert not (tmp_path / "a.jsonl").exists()
    config = tmp_path / "bad-model.toml"
    config.write_text('[[plugins]]\nid = "model"\ntype = "openai-compatible"\noptions = { base_url = "nowhere" }\n')
    out = tmp_path / "b.jsonl"
    done = rerecord_cli(BEFORE_HISTORY[0], out, config=config)
    assert done.returncode == 2 and "options.base_url must be an http(s) URL" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr and not out.exists()


def test_without_agent_nothing_the_journal_names_runs_outside_the_sandbox(tmp_path: Path) -> None:
    """The journal names builtins:print and hands it an escape sequence: re-record refuses to import any entry
    point of the journal's in this process, and says to name the code with --agent (issue 27, item 3)."""

    def hostile(events: list[dict]) -> list[dict]:
        events[0]["payload"]["agent"] = "builtins:print"
        for event in events:
            if event["kind"] == "input.received":
                event["payload"]["content"] = "\x1b]52;c;cHduZWQ=\x07\x1b]0;PWNED\x07"
        return events

    journal = rechained_copy(BEFORE_HISTORY[0], tmp_path / "names-print.jsonl", hostile)
    out = tmp_path / "new.jsonl"
    done = subprocess.run(
        cli("replay", str(journal), "--rerecord-from-divergence", "--config", str(REFUND_CONFIG), "--out", str(out)),
        cwd=REPO,
        capture_output=True,
        timeout=300,
    )
    assert done.returncode == 2 and b"--agent MODULE:ATTR" in done.stderr, done.stderr
    assert b"\x1b" not in done.stdout + done.stderr and b"PWNED" not in done.stdout
    assert not out.exists()


def test_a_journal_cannot_turn_redaction_off_for_the_live_part(tmp_path: Path) -> None:
    """The old run.started says {"enabled": false}; the live tools after the divergence return a token: the new
    journal has it redacted, by the rules of --config (issue 27, item 4)."""

    def redaction_off(events: list[dict]) -> list[dict]:
        events[0]["payload"]["harness"]["redaction"] = {"enabled": False}
        return events

    journal = rechained_copy(BEFORE_HISTORY[0], tmp_path / "redaction-off.jsonl", redaction_off)
    out = tmp_path / "new.jsonl"
    done = rerecord_cli(journal, out, config=LEAKY_CONFIG)
    assert done.returncode == 0, done.stdout + done.stderr
    written = out.read_bytes()
    assert b'"token"' in written and leaky_tools.LIVE_TOKEN.encode() not in written

"""A replayed agent that attacks the parent through what it writes: forged protocol lines (wrong types,
escape sequences, a second hello, floods) and output the parent reads. Each is a failed replay naming
the field (exit 1), never an internal error, raw bytes on a terminal, a wedged app or unbounded memory
(issue 27: items 2, 8, 11, 12 and 14)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from replay_tui.replay.parent.runner import FAILED, MATCH
from replay_tui.replay.protocol import MAX_REFUSALS

from ..replay.helpers import record_probe, replay
from .conftest import REPO
from .hostile_journal import assert_nothing_raw

HOSTILE = "tests.replay.agents.hostile:agent"
OSC = "\x1b]52;c;cHduZWQ=\x07\x1b]0;PWNED\x07\x1b[2J"
PROGRESS = {"type": "progress", "phase": "replay", "consumed": 1, "total": 28, "seq": 1}
ALL_LAYERS_IN_FORCE = {
    "network_namespace": True,
    "namespace_method": "bwrap",
    "socket_guard": True,
    "allowed_hosts": [],
    "reason": None,
    "sandbox": {
        "mechanism": "bwrap",
        "layers": [{"name": "network namespace", "in_force": True, "detail": ""}],
        "summary": "sandbox (bwrap): every layer in force",
    },
    "summary": "sandbox (bwrap): every layer in force",
}
# (what the agent forges, the field the failure must name): the audit's attacks and their siblings
FORGED = [
    ({"type": ["progress"]}, "type"),
    ({**PROGRESS, "phase": ["replay"]}, "phase"),
    ({**PROGRESS, "phase": OSC}, "phase"),
    ({**PROGRESS, "consumed": "x", "total": "y"}, "consumed"),
    ({"type": "hello", "protocol": 2, "pid": 1, "isolation": "bwrap", "python": "3"}, "isolation"),
    ({"type": "error", "kind": "internal", "message": "x", "traceback": {"a": 1}}, "traceback"),
    ({"type": "refusal", "operation": "connect", "target": {"host": 1}, "where": None}, "target"),
    ({"type": "divergence", "report": {"seq": "12"}}, "report.seq"),
    ({"type": "result", "status": ["match"]}, "status"),
]


@pytest.fixture(scope="module")
def journal(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return record_probe(tmp_path_factory.mktemp("hostile-child") / "probe.jsonl", entry_point=HOSTILE)


def forging(lines: list[dict[str, Any]], repeat: int = 1, pause_s: float = 0.0) -> dict[str, str]:
    return {
        "HOSTILE_ATTACK": "forge",
        "HOSTILE_LINES": json.dumps(lines),
        "HOSTILE_REPEAT": str(repeat),
        "HOSTILE_PAUSE_S": str(pause_s),
    }


# Started from a small interpreter: a forked child's peak memory (ru_maxrss) starts at its parent's resident
# size when it forks, so forked straight from this worker (hundreds of MiB after other tests) the CLI's peak
# would be the worker's. The launcher forks it, waits for it and writes its rusage peak (KiB) to argv[1].
_MEASURED_LAUNCH = """
import os, sys
pid = os.fork()
if pid == 0:
    os.execv(sys.executable, [sys.executable, *sys.argv[2:]])
_, status, usage = os.wait4(pid, 0)  # its rusage covers the children it reaped (the sandbox child)
with open(sys.argv[1], "w") as peak:
    peak.write(str(usage.ru_maxrss))
sys.exit(os.waitstatus_to_exitcode(status))
"""


def run_cli(*args: str, env: dict[str, str]) -> tuple[subprocess.CompletedProcess[bytes], int]:
    """The CLI as a user runs it, and the most memory (KiB) it, or a child it waited for, held."""
    passed = [part for name in env for part in ("--pass-env", name)]
    with tempfile.TemporaryDirectory() as scratch:
        peak_file = Path(scratch) / "peak-kib"
        done = subprocess.run(
            [sys.executable, "-c", _MEASURED_LAUNCH, str(peak_file), "-m", "replay_tui", *args, *passed],
            cwd=REPO,
            env={**os.environ, **env},
            capture_output=True,
        )
        return done, int(peak_file.read_text())


@pytest.mark.parametrize(("line", "field"), FORGED, ids=[field for _, field in FORGED])
def test_a_forged_wrong_typed_field_is_a_failed_replay_naming_it(journal, line, field):
    outcome = replay(journal, agent=HOSTILE, env=forging([line]))
    assert outcome.status == FAILED and outcome.exit_code == 1, outcome.to_text()
    assert outcome.error["kind"] == "protocol" and f"field {field}" in outcome.error["message"], outcome.error
    assert_nothing_raw(outcome.to_text(), "the report")
    json.dumps(outcome.to_json())


@pytest.mark.parametrize(("line", "field"), FORGED[:6:2], ids=[field for _, field in FORGED[:6:2]])
def test_the_cli_reports_it_with_exit_1_and_escaped(journal, line, field):
    done, _ = run_cli("replay", str(journal), "--agent", HOSTILE, "--json", env=forging([line]))
    assert done.returncode == 1, done.stderr.decode(errors="replace")[-2000:]
    assert b"internal error" not in done.stderr and b"\x1b" not in done.stdout + done.stderr
    result = json.loads(done.stdout)
    assert result["error"]["kind"] == "protocol" and f"field {field}" in result["error"]["message"]


def test_a_forged_second_hello_cannot_claim_a_sandbox(journal):
    """Guard-only, the agent claims bwrap with every layer: the first hello (sent before any agent code ran) stands."""
    hello = {"type": "hello", "protocol": 2, "pid": 1, "isolation": ALL_LAYERS_IN_FORCE, "python": "3.11"}
    outcome = replay(journal, agent=HOSTILE, env=forging([hello]), isolation="guard-only")
    assert outcome.status == FAILED and "a second hello" in outcome.error["message"], outcome.to_text()
    assert outcome.isolation.sandbox["mechanism"] == "guard-only"
    assert "bwrap" not in outcome.isolation.summary and "every layer" not in outcome.to_text()
    assert "bwrap" not in json.dumps(outcome.to_json()["isolation"])


def test_a_forged_progress_phase_never_reaches_the_terminal_raw(journal):
    """The CLI on a terminal draws the child's progress: a forged phase full of escapes is refused, and
    whatever it draws is escaped (OSC 52, OSC 0 and ESC[2J never reach the pty)."""
    sys.path.insert(0, str(REPO / "tests" / "tui"))
    from pty_run import PtyProcess

    env = forging([{**PROGRESS, "phase": OSC}], pause_s=0.3)
    passed = [part for name in env for part in ("--pass-env", name)]
    terminal = PtyProcess(
        [sys.executable, "-m", "replay_tui", "replay", str(journal), "--agent", HOSTILE, *passed], cwd=REPO, env=env
    )
    code = terminal.finish(timeout=120)
    assert code == 1, terminal.screen[-2000:]
    for sequence in (b"\x1b]52", b"\x1b]0;", b"\x1b[2J", b"\x07"):
        assert sequence not in terminal.screen, (sequence, terminal.screen[-2000:])
    assert b"field phase" in terminal.screen


def test_a_flood_of_forged_refusals_is_bounded(journal):
    """400 refusal lines of 1 MiB each: the first is over a refusal's size, and the run stops there."""
    huge = {"type": "refusal", "operation": "connect", "target": "@BIG@", "where": None}
    env = {**forging([huge], repeat=400), "HOSTILE_BIG_BYTES": str(1 << 20)}
    done, peak_kib = run_cli("replay", str(journal), "--agent", HOSTILE, "--json", env=env)
    assert done.returncode == 1 and len(done.stdout) < (1 << 20), len(done.stdout)
    assert "over the 16,384 a refusal message may have" in json.loads(done.stdout)["error"]["message"]
    assert peak_kib < 400 * 1024, f"the parent reached {peak_kib / 1024:.0f} MiB"


def test_many_small_forged_refusals_are_counted_not_kept(journal):
    small = {"type": "refusal", "operation": "connect", "target": "10.0.0.1:80", "where": None}
    outcome = replay(journal, agent=HOSTILE, env=forging([small], repeat=MAX_REFUSALS + 500))
    assert outcome.status == MATCH, outcome.to_text()  # a refusal is a claim, never a verdict
    assert len(outcome.refusals) == MAX_REFUSALS and outcome.refusals_dropped == 500
    assert f"refused network access ({MAX_REFUSALS + 500})" in outcome.to_text()


def test_one_huge_stdout_line_is_bounded(journal):
    """512 MiB on stdout without a newline: the parent keeps the head of the line, not the line."""
    env = {"HOSTILE_ATTACK": "stdout-flood", "HOSTILE_FLOOD_MIB": "512"}
    done, peak_kib = run_cli("replay", str(journal), "--agent", HOSTILE, "--json", env=env)
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-2000:]
    assert len(done.stdout) < (1 << 20)
    assert peak_kib < 400 * 1024, f"the parent reached {peak_kib / 1024:.0f} MiB"


def test_one_bad_agent_does_not_abort_a_corpus(journal, tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "hostile.jsonl").write_bytes(journal.read_bytes())
    record_probe(corpus / "plain.jsonl")  # the probe agent ignores the attack
    done, _ = run_cli("replay", str(corpus), "--jobs", "1", "--json", env=forging([{"type": ["progress"]}]))
    assert done.returncode == 1, done.stderr.decode(errors="replace")[-2000:]
    entries = {Path(entry["journal"]).name: entry for entry in json.loads(done.stdout)["results"]}
    assert entries["plain.jsonl"]["status"] == MATCH
    assert entries["hostile.jsonl"]["status"] == FAILED


def forging_in_the_app(monkeypatch: pytest.MonkeyPatch, lines: list[dict[str, Any]], pause_s: float) -> None:
    """The app's replays run the hostile agent forging ``lines`` (the sandbox passes these variables in)."""
    env = forging(lines, pause_s=pause_s)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("REPLAY_TUI_PASS_ENV", ",".join(env))


@pytest.mark.asyncio
async def test_the_apps_replay_never_wedges_on_forged_counts(journal, tmp_path, monkeypatch):
    """Counts that are text once raised in the app's job thread: the panel said "cancelling…" for ever and r
    answered "a replay is running". The run is a failed replay, and r replays again (issue 27, item 12)."""
    from replay_helpers import wait_for_replay, wait_until
    from tui_helpers import SIZE, make_app, settle

    forging_in_the_app(monkeypatch, [{**PROGRESS, "consumed": "x", "total": "y"}], pause_s=0.3)
    copy = tmp_path / "hostile.jsonl"
    copy.write_bytes(journal.read_bytes())
    app = make_app(copy)
    async with app.run_test(size=SIZE) as pilot:
        screen = await settle(pilot)
        screen.replays.replay()
        replays = await wait_for_replay(pilot, timeout_s=90)
        first = replays.last
        assert first.outcome.status == FAILED and "field consumed" in first.outcome.error["message"]
        await pilot.press("escape")  # the report a failed run opens
        await settle(pilot)
        await pilot.press("r")
        assert "a replay is running" not in str(screen.status.render())
        await wait_until(pilot, lambda: replays.last is not first and not replays.running, 90, "the second replay")
        assert replays.last.outcome.error["kind"] == "protocol"


@pytest.mark.asyncio
async def test_the_apps_replay_strip_shows_a_forged_phase_escaped_or_not_at_all(journal, tmp_path, monkeypatch):
    """A forged phase of OSC 52, OSC 0 and ESC[2J: neither the strip nor any part of the screen draws it raw,
    while the run lasts or after (issue 27, item 2)."""
    from replay_helpers import panel_of, replays_of
    from tui_helpers import SIZE, make_app, screen_text, settle

    forging_in_the_app(monkeypatch, [{**PROGRESS, "phase": OSC}], pause_s=1.0)
    copy = tmp_path / "hostile.jsonl"
    copy.write_bytes(journal.read_bytes())
    app = make_app(copy)
    title = app.title
    async with app.run_test(size=SIZE) as pilot:
        screen = await settle(pilot)
        screen.replays.replay()
        panel, replays = panel_of(pilot), replays_of(pilot)
        while replays.running or replays.last is None:
            assert_nothing_raw(panel.line.text, "the replay strip")
            assert_nothing_raw(screen_text(app), "the screen")
            await pilot.pause(0.05)
        await pilot.pause(0.1)
        assert_nothing_raw(screen_text(app), "the screen after the run")
        assert app.title == title and "field phase" in replays.last.outcome.error["message"]

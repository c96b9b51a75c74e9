"""One detector table for redaction and scan: every detector is used by both, at every
boundary character, and the table is the only place patterns live."""

from __future__ import annotations

import random
import string
from pathlib import Path

import pytest

from replay_tui.analysis.secrets import scan_event, scan_string
from replay_tui.harness.canaries import Canary, canary_request, detector_canaries
from replay_tui.harness.redaction import RedactionRules, Redactor
from replay_tui.journal import Event, detectors

ROOT = Path(__file__).resolve().parents[2]
REDACTOR = Redactor()
BOUNDARIES = sorted(set(string.punctuation + string.whitespace) - {"\x0b", "\x0c"}) + ["\u00a0", "\u2028", "é"]


def _event(payload: dict) -> Event:
    return Event(
        1, "tool.result", "r", "r:1", None, None, "2026-01-01T00:00:00Z", payload, None, None, {"payload": payload}
    )


def _redacted(text: str) -> str:
    return REDACTOR.redact("tool.result", {"call_id": "c", "call_key": "k", "tool": "t", "result": text})["result"]


def _expected(canary: Canary) -> str:
    return f"format:{canary.name}" if canary.name in detectors.FORMAT_NAMES else canary.name


def test_every_detector_has_a_canary() -> None:
    names = {canary.name for canary in detector_canaries(random.Random(0))} | {"key-name"}
    assert names == set(detectors.DETECTOR_NAMES)


@pytest.mark.parametrize("seed", range(5))
def test_every_detector_is_used_by_redaction_and_by_scan(seed: int) -> None:
    for canary in detector_canaries(random.Random(seed)):
        text = canary.text
        found = scan_string(text, "note")
        assert found is not None and found[0] == _expected(canary), (canary.name, found)
        assert canary.secret not in _redacted(text), canary.name
        assert scan_string(_redacted(text), "note") is None, canary.name
    # key-name: a value under a sensitive key, a header pair, a number
    payload = {"password": "hunter2hunter2", "pairs": [["Authorization", "opensesame"]], "pin_password": 98765432}
    assert {f.detector for f in scan_event(_event(payload))} == {"key-name"}
    assert len(scan_event(_event(payload))) == 3
    redacted = REDACTOR.redact("tool.result", {"call_id": "c", "call_key": "k", "tool": "t", "result": payload})
    assert scan_event(_event(redacted)) == []


@pytest.mark.parametrize("boundary", BOUNDARIES, ids=[f"U+{ord(c):04X}" for c in BOUNDARIES])
def test_every_format_at_every_boundary_character(boundary: str) -> None:
    for canary in detector_canaries(random.Random(ord(boundary))):
        if canary.whole:
            continue  # a whole JSON document, not a token in text
        text = f"x{boundary}{canary.text}{boundary}y"
        assert canary.secret not in _redacted(text), (canary.name, boundary)
        assert scan_string(text, "note") is not None, (canary.name, boundary)


@pytest.mark.parametrize("canary", [c for c in detector_canaries(random.Random(1)) if c.alphabet], ids=lambda c: c.name)
def test_every_last_character_of_every_format(canary: Canary) -> None:
    """The flake: a Google key ending in '-' slipped past a trailing \\b. Every last character is tried."""
    for last in canary.alphabet:
        secret = canary.secret[:-1] + last
        text = canary.context.replace("{}", secret)
        for around in (" ", "-", ".", "\n"):
            assert secret not in _redacted(f"a{around}{text}{around}b"), (canary.name, last, around)
            assert scan_string(f"a{around}{text}{around}b", "note") is not None, (canary.name, last, around)


def test_structural_places_are_caught_by_both() -> None:
    request, canaries = canary_request(RedactionRules(), random.Random(3))
    findings = scan_event(_event({"arguments": request}))
    found_paths = {finding.path for finding in findings}
    for place in (
        "header_pairs[0][1]",
        "header_pairs[1][1]",
        "short_bearer[0][1]",
        "header_objects[0].value",
        "pin_password",
        "callback",
        "error_text",
        "config_json",
    ):
        assert f"payload.arguments.metadata.{place}" in found_paths, place
    assert any(finding.detail == "used as a key" for finding in findings)
    redacted = REDACTOR.redact("tool.call", {"tool": "t", "arguments": request})
    assert scan_event(_event(redacted)) == []


def test_patterns_live_only_in_the_table() -> None:
    """Redaction and scan compile no credential patterns of their own."""
    for module in ("replay_tui/harness/redaction.py", "replay_tui/analysis/secrets.py"):
        source = (ROOT / module).read_text()
        for marker in ("AKIA", "ghp_", "xox", "AIza", "PRIVATE KEY", "eyJ", "sk_live", "npm_"):
            assert marker not in source, (module, marker)


def test_the_table_is_compiled_on_first_use() -> None:
    import subprocess
    import sys

    code = "import replay_tui.journal.detectors as d, sys; print(d.compiled.cache_info().currsize)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "0"

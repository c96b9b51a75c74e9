"""Incident report export: content, self-containment, secret masking, replay results, Chromium render."""

from __future__ import annotations

import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib
from html.parser import HTMLParser
from pathlib import Path

import pytest

from replay_tui.analysis.annotations import AnnotationStore
from replay_tui.analysis.export import ExportError, build_report, render, write_report
from replay_tui.journal import open_journal
from replay_tui.replay.parent.results import load_replay_result
from tests.journal_factory import run_started

sys.path.insert(0, str(Path(__file__).parent))
from incident_sample import PLANTED_SECRET, write_incident_journal  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
FIXTURE = REPO / "fixtures" / "journals" / "crm-incident.jsonl"
NOTE = "The payments API timed out after 30 s; the retry asked for ten times the amount."


@pytest.fixture
def incident(tmp_path: Path) -> Path:
    path = write_incident_journal(tmp_path / "crm-incident.jsonl")
    journal = open_journal(path)
    store = AnnotationStore.open(path)
    store.set_bookmark(journal.event(10))  # seq 11, the timeout
    store.set_note(journal.event(10), NOTE)
    store.set_bookmark(journal.event(15))  # seq 16, the rejected refund lands in state
    journal.close()
    return path


def _cli(*argv: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "import sys; from replay_tui.cli import main; sys.exit(main(sys.argv[1:]))", *argv],
        capture_output=True,
        text=True,
        check=False,
        cwd=cwd,
    )


def test_report_model_has_chain_state_and_annotations(incident: Path) -> None:
    journal = open_journal(incident)
    stages: list[str] = []
    report = build_report(journal, progress=lambda stage, fraction: stages.append(stage))
    journal.close()

    assert report.failure is not None
    assert (report.failure.seq, report.failure.reason) == (11, "first error")
    assert "timed out" in report.failure.description
    # input -> request -> response -> call -> result -> next request ... -> the timeout
    assert [link.event.seq for link in report.chain] == [2, 3, 4, 5, 6, 8, 9, 10, 11]
    assert report.chain[0].role == "root" and report.chain[-1].role == "failing"
    assert report.chain[-1].event.is_error
    # the state change of the failing step's causes, and the overall before/after
    assert [link.event.seq for link in report.step_transitions] == [7]  # caused by seq 6, on the chain
    assert [(c.pointer, c.change) for c in report.step_transitions[0].state_changes] == [("/order", "changed")]
    assert report.overall_state_range == (2, 11)
    assert [(c.pointer, c.change) for c in report.overall_state] == [("/order", "changed")]
    assert report.overall_state[0].before == "null" and '"A-1009"' in report.overall_state[0].after
    assert [a.annotation.seq for a in report.annotations] == [11, 16]
    assert report.annotations[0].annotation.note == NOTE and report.annotations[0].event is not None
    assert report.verification.ok and report.run["status"] == "error"
    assert report.environment["code_revision"] == "4f2c9e1"
    assert report.masked_values == 1  # the planted key in the seq 10 tool.call
    assert stages[0] == "verifying the hash chain" and stages[-1] == "done"


def test_html_is_self_contained_and_loads_nothing(incident: Path, tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    result = _cli("export", str(incident), "--format", "html", "-o", str(out))
    assert result.returncode == 0, result.stderr
    assert "failing step seq 11 (first error)" in result.stdout
    html = out.read_text()
    assert_no_network_references(html)
    for expected in (
        "Incident report: run-crm-incident",
        "seq 11",
        "failing step",
        "root cause",
        NOTE,
        "hash chain verified",
        "Environment fingerprint",
        "cpython-3.11.9",
        "/order",
        "payments_refund",
        "<svg",
    ):
        assert expected in html, expected
    assert PLANTED_SECRET not in html and PLANTED_SECRET[:16] not in html
    assert "masked format:openai-key" in html


def test_markdown_has_the_same_sections(incident: Path, tmp_path: Path) -> None:
    out = tmp_path / "report.md"
    result = _cli("export", str(incident), "-o", str(out))  # format from the suffix
    assert result.returncode == 0, result.stderr
    text = out.read_text()
    for heading in (
        "# Incident report: run-crm-incident",
        "## Causal chain to the failing step",
        "## Bookmarks and notes",
        "## Verification",
        "## Run",
        "### Environment fingerprint",
        "## Run overview",
    ):
        assert heading in text, heading
    assert "**failing step**" in text and "**root cause**" in text
    assert "> The payments API timed out after 30 s; the retry asked for ten times the amount." in text
    assert "| `/order` | changed | `null` |" in text
    assert PLANTED_SECRET not in text


def test_journal_and_sidecar_are_never_written(incident: Path, tmp_path: Path) -> None:
    sidecar = incident.with_name(incident.name + ".replay-tui.json")
    before = (incident.read_bytes(), sidecar.read_bytes())
    for target in (incident, sidecar):
        result = _cli("export", str(incident), "--format", "html", "-o", str(target))
        assert result.returncode == 2 and "refusing to write the report over the journal" in result.stderr
    assert _cli("export", str(incident), "--format", "md", "-o", str(tmp_path / "r.md")).returncode == 0
    assert (incident.read_bytes(), sidecar.read_bytes()) == before


def test_bad_input_is_one_clear_line(incident: Path, tmp_path: Path) -> None:
    missing = _cli("export", str(tmp_path / "nope.jsonl"), "--format", "html", "-o", str(tmp_path / "r.html"))
    assert missing.returncode == 2 and "nope.jsonl" in missing.stderr and "Traceback" not in missing.stderr
    no_format = _cli("export", str(incident), "-o", str(tmp_path / "report"))
    assert no_format.returncode == 2 and "--format" in no_format.stderr
    bad_result = tmp_path / "result.json"
    bad_result.write_text("{not json")
    broken = _cli("export", str(incident), "-o", str(tmp_path / "r.html"), "--replay-result", str(bad_result))
    assert broken.returncode == 2 and "result.json: is not valid JSON" in broken.stderr
    gone = _cli(
        "export", str(incident), "-o", str(tmp_path / "r.html"), "--replay-result", str(tmp_path / "absent.json")
    )
    assert gone.returncode == 2 and "absent.json: no such file" in gone.stderr
    unwritable = _cli("export", str(incident), "-o", str(tmp_path / "no-such-dir" / "r.html"))
    assert unwritable.returncode == 2 and "cannot be written" in unwritable.stderr
    assert not list(tmp_path.glob("*.tmp")) and not list(tmp_path.glob(".*.tmp"))


def test_a_corrupt_sidecar_still_exports_and_says_so(incident: Path, tmp_path: Path) -> None:
    incident.with_name(incident.name + ".replay-tui.json").write_text("{broken")
    journal = open_journal(incident)
    report = build_report(journal)
    journal.close()
    assert report.annotations == [] and "is not valid JSON" in (report.annotations_error or "")
    assert "could not be read" in render(report, "html") and "could not be read" in render(report, "md")


def test_without_errors_the_chain_leads_to_the_last_event(tmp_path: Path) -> None:
    sys.path.insert(0, str(REPO / "tests" / "journal"))
    from sample import write_sample_journal

    journal = open_journal(write_sample_journal(tmp_path / "ok.jsonl", steps=2))
    report = build_report(journal)
    journal.close()
    assert report.failure is not None and report.failure.reason == "last event" and report.failure.seq == 10
    assert report.annotations == [] and report.replay is None


def test_cancel_raises(incident: Path) -> None:
    from replay_tui.analysis.export import ExportCancelled

    journal = open_journal(incident)
    with pytest.raises(ExportCancelled):
        build_report(journal, cancelled=lambda: True)
    journal.close()


def test_divergence_from_a_real_replay_of_an_edited_fixture(tmp_path: Path) -> None:
    """Edit one argument in a copy of the recorded CRM incident, replay it for real, export the result."""
    edited = tmp_path / "crm-edited.jsonl"
    lines = FIXTURE.read_text().splitlines(keepends=True)
    target = next(i for i, line in enumerate(lines) if '"kind":"tool.call"' in line and '"page":10' in line)
    seq = json.loads(lines[target])["seq"]
    lines[target] = lines[target].replace('"page":10', '"page":11', 1)
    edited.write_text("".join(lines))

    replay_run = subprocess.run(
        [
            sys.executable,
            "-c",
            "import argparse, sys; from replay_tui.cli import replay as r; p = argparse.ArgumentParser(); r.configure(p); sys.exit(r.run(p.parse_args(sys.argv[1:])))",
            str(edited),
            "--json",
            "--timeout",
            "120",
            "--no-verify-hash-chain",
        ],  # the edit breaks the chain; replay finds where
        capture_output=True,
        text=True,
        check=False,
        cwd=REPO,
    )
    assert replay_run.returncode == 1 and replay_run.stdout.strip().startswith("{"), replay_run.stderr[-2000:]
    result_path = tmp_path / "result.json"
    result_path.write_text(replay_run.stdout)
    assert json.loads(replay_run.stdout)["divergence"]["seq"] == seq

    out = tmp_path / "report.html"
    exported = _cli("export", str(edited), "-o", str(out), "--replay-result", str(result_path))
    assert exported.returncode == 0, exported.stderr
    assert f"failing step seq {seq} (first divergence)" in exported.stdout
    html = out.read_text()
    assert_no_network_references(html)
    assert f"Replay diverged at seq={seq}" in html and "FAILED: modified event" in html
    assert "Value of root[&#x27;arguments&#x27;][&#x27;page&#x27;] changed from 11 to 10." in html
    md = render_markdown_for(edited, result_path)
    assert f"seq {seq}" in md and "## Replay divergence" in md


def test_the_step_23_incident_from_a_real_replay_with_the_fixed_agent(tmp_path: Path) -> None:
    """The recorded incident, replayed with the hotfixed CRM agent, diverges at the query that gained include_inactive."""
    replay_run = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from replay_tui.cli import main; sys.exit(main(sys.argv[1:]))",
            "replay",
            str(FIXTURE),
            "--agent",
            "fixtures.agents.crm:agent",
            "--json",
            "--timeout",
            "120",
        ],
        capture_output=True,
        text=True,
        check=False,
        cwd=REPO,
    )
    assert replay_run.stdout.strip().startswith("{"), replay_run.stderr[-2000:]
    result = json.loads(replay_run.stdout)
    assert result.get("status") == "diverged", result
    result_path = tmp_path / "result.json"
    result_path.write_text(replay_run.stdout)
    journal = open_journal(FIXTURE)
    report = build_report(journal, replay=load_replay_result(result_path, journal.path))
    journal.close()
    seq = result["divergence"]["seq"]
    assert report.failure is not None and (report.failure.seq, report.failure.reason) == (seq, "first divergence")
    assert report.chain[-1].event.seq == seq and report.chain[-1].role == "failing" and report.chain[0].role == "root"
    assert report.verification.ok and report.replay is not None and report.replay.isolation
    html = render(report, "html")
    assert_no_network_references(html)
    assert "include_inactive" in html and f"seq {seq}" in html and "Replay divergence" in html
    assert '"include_inactive": true' in (report.replay.expected_payload_json or "")
    assert "include_inactive" not in (report.replay.actual_payload_json or "include_inactive")


def render_markdown_for(journal_path: Path, result_path: Path) -> str:
    journal = open_journal(journal_path)
    try:
        return render(build_report(journal, replay=load_replay_result(result_path, journal.path)), "md")
    finally:
        journal.close()


def test_replay_result_shapes(tmp_path: Path, incident: Path) -> None:
    match = tmp_path / "match.json"
    match.write_text(
        json.dumps(
            {"status": "match", "ok": True, "journal": str(incident), "consumed": 19, "total": 19, "divergence": None}
        )
    )
    section = load_replay_result(match, incident)
    assert (
        section.status == "match"
        and section.headline.startswith("Replay matched: 19 of 19")
        and section.journal_note is None
    )
    other = tmp_path / "other.json"
    other.write_text(
        json.dumps(
            {"status": "diverged", "journal": "/x/another.jsonl", "divergence": {"seq": 999, "reason": "extra event"}}
        )
    )
    section = load_replay_result(other, incident)
    assert section.journal_note == "this result was recorded for /x/another.jsonl, not crm-incident.jsonl"
    journal = open_journal(incident)
    report = build_report(
        journal, replay=load_replay_result(other, incident)
    )  # seq 999 is past the end: the chain ends at the last event
    journal.close()
    assert (
        report.failure is not None
        and report.failure.seq == 999
        and "past the journal's end" in report.failure.description
    )
    assert report.chain[-1].event.seq == 19
    wrong = tmp_path / "wrong.json"
    wrong.write_text(json.dumps([1, 2]))
    with pytest.raises(ExportError, match="expected a JSON object"):
        load_replay_result(wrong, incident)


@pytest.mark.parametrize(
    ("result", "headline"),
    [
        ({"status": "match", "consumed": 19, "total": 19}, "Replay matched: 19 of 19 events consumed"),
        (
            {"status": "diverged", "divergence": {"seq": 7, "reason": "other tool"}, "consumed": 6, "total": 19},
            "Replay diverged at seq=7 (6 of 19 events consumed).",
        ),
        (
            {"status": "unused_events", "unused": {"count": 2, "first_seq": 18}},
            "Replay left 2 recorded event(s) unused",
        ),
        ({"status": "verification_failed"}, "Replay not started: the journal failed verification."),
        (
            {"status": "timeout", "timeout_s": 30, "last_seq": 4, "consumed": 4, "total": 19},
            "Replay timed out after 30 s at seq=4 (4 of 19 events consumed); the child was killed.",
        ),
        ({"status": "cancelled", "consumed": 3, "total": 19}, "Replay cancelled before the first event"),
        ({"status": "crashed", "child_exit": -9, "last_seq": 5}, "Replay child crashed"),
        (
            {"status": "error", "error": {"kind": "agent_import", "message": "no module x"}},
            "Replay failed (agent_import): no module x",
        ),
    ],
)
def test_every_replay_outcome_is_worded_as_replay_words_it(
    tmp_path: Path, incident: Path, result: dict, headline: str
) -> None:
    path = tmp_path / "result.json"
    path.write_text(json.dumps({"journal": str(incident), **result}))
    section = load_replay_result(path, incident)
    assert section.status == result["status"] and section.headline.startswith(headline), section.headline
    assert headline.split("(")[0].strip() in render_markdown_for(incident, path)  # Markdown escapes the rest
    if result["status"] == "error":
        assert section.error == "agent_import: no module x"


def test_a_replay_result_with_a_wrong_field_is_named(tmp_path: Path, incident: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"status": "match", "consumed": "all"}))
    with pytest.raises(ExportError, match=r"bad.json: field consumed: expected a whole number"):
        load_replay_result(path, incident)
    path.write_text(json.dumps({"status": "diverged", "divergence": {"seq": "7"}}))
    with pytest.raises(ExportError, match=r"bad.json: field divergence: expected an object with an integer seq"):
        load_replay_result(path, incident)


_FETCHING_TAGS = {
    "script",
    "link",
    "iframe",
    "frame",
    "object",
    "embed",
    "img",
    "audio",
    "video",
    "source",
    "track",
    "image",
    "use",
    "base",
    "form",
    "input",
    "picture",
}
_URL_ATTRIBUTES = {
    "src",
    "href",
    "srcset",
    "action",
    "formaction",
    "poster",
    "data",
    "background",
    "xlink:href",
    "manifest",
    "ping",
    "cite",
    "longdesc",
}


class _ResourceFinder(HTMLParser):
    """Everything in a page that could make a browser fetch, found by parsing (escaped text is text)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[str] = []
        self._in_style = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _FETCHING_TAGS:
            self.found.append(f"<{tag}>")
        for name, value in attrs:
            value = (value or "").strip()
            if name in _URL_ATTRIBUTES and value and not value.startswith(("#", "data:")):
                self.found.append(f"{tag}[{name}={value}]")
            if name == "style":
                self._check_css(value)
            if tag == "meta" and name == "http-equiv" and value.lower() == "refresh":
                self.found.append("meta refresh")
        self._in_style = tag == "style"

    def handle_endtag(self, tag: str) -> None:
        self._in_style = False

    def handle_data(self, data: str) -> None:
        if self._in_style:
            self._check_css(data)

    def _check_css(self, css: str) -> None:
        for match in re.finditer(r"url\(\s*['\"]?([^'\")]*)|@import[^;]*", css, re.I):
            if not match.group(0).startswith("@") and match.group(1).startswith("data:"):
                continue
            self.found.append(match.group(0))


def assert_no_network_references(html: str, *, journal_has_urls: bool = False) -> None:
    """Nothing in the page may make the browser fetch: no fetching tags, no URL attributes, no CSS url()/@import."""
    finder = _ResourceFinder()
    finder.feed(html)
    assert finder.found == []
    if not journal_has_urls:  # then no http(s):// may appear anywhere, not even as text
        assert not re.search(r"https?://", html, re.I), re.search(r".{40}https?://.{40}", html, re.I)
    assert "default-src 'none'" in html  # and the page's CSP forbids fetching anyway


def test_hostile_journal_content_is_escaped_not_executed(tmp_path: Path) -> None:
    from replay_tui.journal import JournalWriter, call_key_of

    path = tmp_path / "hostile.jsonl"
    payload = "<script src='https://evil.example/x.js'></script><img src=http://evil.example/p.png> ![x](https://evil.example/i.png) `tick` | pipe"
    with JournalWriter(path, run_id="hostile</title><script>") as writer:
        writer.append(
            "run.started", run_started(agent="a:<b>", environment={"runtime": payload}, initial_state={"html": payload})
        )
        user = writer.append("input.received", {"role": "user", "content": payload})
        arguments = {"url": "https://api.example.com/v1/orders", "note": payload}
        writer.append(
            "tool.call",
            {"call_id": "c", "call_key": call_key_of("fetch", arguments), "tool": "fetch", "arguments": arguments},
            parent_event_id=user.event_id,
        )
        writer.append(
            "tool.result",
            {
                "call_id": "c",
                "call_key": call_key_of("fetch", arguments),
                "tool": "fetch",
                "error": {"type": "HTTPError", "message": payload},
                "duration_ms": 5,
            },
            parent_event_id="hostile</title><script>:3",
        )
        writer.append("run.ended", {"status": "error", "error": payload})
    journal = open_journal(path)
    AnnotationStore.open(path).set_note(journal.event(1), payload)
    report = build_report(journal)
    journal.close()
    html = render(report, "html")
    assert_no_network_references(html, journal_has_urls=True)
    assert "&lt;script src=" in html and "<script" not in html
    markdown = render(report, "md")
    # outside fenced blocks and code spans, nothing may be Markdown or HTML that a renderer acts on
    prose = re.sub(r"^( *)(`{3,})[^\n]*\n.*?^\1\2$", "", markdown, flags=re.S | re.M)
    prose = re.sub(r"(?<!`)(`+)(?!`).*?(?<!`)\1(?!`)", "", prose)
    assert not re.search(r"(?<!\\)<(script|img)|!(?<!\\)\[x(?<!\\)\]\(", prose), re.search(
        r".{30}(?<!\\)<(script|img).{30}", prose
    )
    assert "\\<script" in prose  # the note, escaped


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def _png_stats(png: bytes) -> tuple[int, int, int]:
    """(width, height, distinct colours in a sample of rows) of an 8-bit RGB(A) PNG, without Pillow."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    offset, chunks, header = 8, [], b""
    while offset < len(png):
        length, kind = struct.unpack(">I4s", png[offset : offset + 8])
        data = png[offset + 8 : offset + 8 + length]
        if kind == b"IHDR":
            header = data
        elif kind == b"IDAT":
            chunks.append(data)
        offset += 12 + length
    width, height, depth, colour_type = struct.unpack(">IIBB", header[:10])
    assert depth == 8 and colour_type in (2, 6)
    channels = 3 if colour_type == 2 else 4
    raw = zlib.decompress(b"".join(chunks))
    stride = width * channels + 1
    colours: set[bytes] = set()
    previous = bytearray(stride - 1)
    for row in range(height):
        line = raw[row * stride : (row + 1) * stride]
        filtered, current = line[0], bytearray(line[1:])
        for i in range(len(current)):  # undo the PNG row filter
            left = current[i - channels] if i >= channels else 0
            up = previous[i]
            if filtered == 1:
                current[i] = (current[i] + left) & 0xFF
            elif filtered == 2:
                current[i] = (current[i] + up) & 0xFF
            elif filtered == 3:
                current[i] = (current[i] + (left + up) // 2) & 0xFF
            elif filtered == 4:
                upper_left = previous[i - channels] if i >= channels else 0
                estimate = left + up - upper_left
                pa, pb, pc = abs(estimate - left), abs(estimate - up), abs(estimate - upper_left)
                current[i] = (current[i] + (left if pa <= pb and pa <= pc else up if pb <= pc else upper_left)) & 0xFF
        if row % 40 == 0:
            colours.update(bytes(current[i : i + 3]) for i in range(0, len(current), channels * 4))
        previous = current
    return width, height, len(colours)


@pytest.mark.skipif(_chromium() is None, reason="chromium is not installed (apt-get install -y chromium)")
def test_headless_chromium_renders_the_report(incident: Path, tmp_path: Path) -> None:
    journal = open_journal(incident)
    report = build_report(journal)
    journal.close()
    page = tmp_path / "report.html"
    write_report(report, page, "html")
    screenshot = tmp_path / "report.png"
    with tempfile.TemporaryDirectory() as profile:
        completed = subprocess.run(
            [
                _chromium(),
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--no-first-run",
                f"--user-data-dir={profile}",
                f"--screenshot={screenshot}",
                "--window-size=1280,2000",
                page.as_uri(),
            ],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
            env={**os.environ, "HOME": profile},
        )
    assert screenshot.exists(), completed.stderr[-2000:]
    png = screenshot.read_bytes()
    assert len(png) > 50_000  # a blank or error page compresses to a few kB
    width, height, colours = _png_stats(png)
    assert (width, height) == (1280, 2000)
    assert colours > 30  # text, the dark header, badges and cards, not a flat page


def test_a_damaged_journal_still_exports_and_says_what_is_missing(incident: Path, tmp_path: Path) -> None:
    damaged = tmp_path / "damaged.jsonl"
    lines = incident.read_bytes().splitlines(keepends=True)
    lines[5] = b'{"broken json\n'  # seq 6, the order_lookup result that step-02's request follows from
    lines[-1] = b'{"not": "an event"}\n'
    damaged.write_bytes(b"".join(lines))
    journal = open_journal(damaged)
    report = build_report(journal)
    journal.close()
    assert not report.verification.ok and report.verification.fault is not None and report.verification.fault.line == 6
    assert report.stats.unreadable == 2
    assert [link.event.seq for link in report.chain] == [8, 9, 10, 11] and report.chain[0].role == "cause"
    assert any("chain stops at seq 8" in note for note in report.notes)
    markdown, html = render(report, "md"), render(report, "html")
    assert "unreadable lines:** 2 skipped" in markdown and "2 unreadable lines skipped" in html
    assert "FAILED (malformed line)" in markdown

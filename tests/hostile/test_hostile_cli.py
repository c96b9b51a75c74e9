"""Every CLI command on a hostile journal, as a subprocess: nothing terminal-active reaches stdout or stderr."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from replay_tui.journal import call_key_of
from tests.journal_factory import run_started

from ..replay.helpers import rechained_copy
from .conftest import REPO
from .hostile_journal import ATTACK, FORBIDDEN, KEY, TOOL, assert_nothing_raw


def run_cli(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "replay_tui", *args], cwd=cwd, capture_output=True, timeout=180)


def check(result: subprocess.CompletedProcess[bytes], what: str, codes: tuple[int, ...]) -> str:
    """No forbidden byte in either stream (bytes, so a raw CR is seen too), an expected exit code, no traceback."""
    out, err = result.stdout.decode("utf-8", "replace"), result.stderr.decode("utf-8", "replace")
    assert_nothing_raw(out, f"{what} stdout")
    assert_nothing_raw(err, f"{what} stderr")
    for raw in (b"\x1b", b"\x07", b"\r", "\u202e".encode()):
        assert raw not in result.stdout + result.stderr, (what, raw)
    assert "Traceback" not in err and "internal error" not in err, (what, err[-2000:])
    assert result.returncode in codes, (what, result.returncode, err[-2000:])
    return out


@pytest.mark.parametrize(
    ("args", "codes"),
    [
        (["verify"], (0,)),
        (["verify", "--json"], (0,)),
        (["stats"], (0,)),
        (["stats", "--json"], (0,)),
        (["scan"], (0, 1)),
        (["scan", "--json"], (0, 1)),
        (["replay"], (1, 2)),  # the agent named in the journal cannot be imported: a clear failure
        (["replay", "--json"], (1, 2)),
    ],
)
def test_each_command_escapes_the_hostile_journal(hostile: Path, args: list[str], codes: tuple[int, ...]) -> None:
    out = check(run_cli(args[0], str(hostile), *args[1:]), " ".join(args), codes)
    if "--json" in args:
        json.loads(out)  # still one JSON document


def test_stats_shows_markup_as_text_not_as_a_link_or_an_error(hostile: Path) -> None:
    out = check(run_cli("stats", str(hostile)), "stats", (0,))
    assert "[/bold]lookup\\x1b]52;" in out  # the tool name, escaped, brackets and all
    assert "\\u202e" in out


def test_diff_escapes_both_journals(hostile: Path, hostile_variant: Path) -> None:
    out = check(run_cli("diff", str(hostile), str(hostile_variant)), "diff", (1,))
    assert "First difference" in out and "step-[/]\\x1b]52;" in out
    check(run_cli("diff", "--json", str(hostile), str(hostile_variant)), "diff --json", (1,))


def test_scan_paths_built_from_hostile_keys_are_escaped(tmp_path: Path) -> None:
    from replay_tui.journal import JournalWriter

    path = tmp_path / "secrets.jsonl"
    with JournalWriter(path, run_id="run-secret", fsync="never") as writer:
        writer.append(
            "run.started",
            run_started(agent="m:a", harness={"version": "0", "plugins": [], "config_hash": None}, snapshot_every=50),
        )
        arguments = {KEY: {"aws": "AKIAIOSFODNN7EXAMPLE", "token": "ghp_" + "a1B2" * 9}}
        writer.append(
            "tool.call",
            {"call_id": "c", "call_key": call_key_of(TOOL, arguments), "tool": TOOL, "arguments": arguments},
            step_id="s",
        )
        writer.append("run.ended", {"status": "ok", "output": None})
    out = check(run_cli("scan", str(path)), "scan", (1,))
    assert "key[/bold]\\x1b]52;" in out  # the finding's path names the hostile key, escaped
    check(run_cli("scan", "--json", str(path)), "scan --json", (1,))


@pytest.mark.parametrize("fmt", ["md", "html"])
def test_export_to_stdout_and_to_a_file(hostile: Path, tmp_path: Path, fmt: str) -> None:
    out = check(run_cli("export", str(hostile), "--format", fmt, "-o", "-"), f"export {fmt}", (0,))
    target = tmp_path / f"report.{fmt}"
    check(run_cli("export", str(hostile), "-o", str(target)), f"export -o {fmt}", (0,))
    written = target.read_text(encoding="utf-8")
    assert_nothing_raw(written, f"the {fmt} report")
    assert len(written) == len(out)  # the same report (but for its generation time)
    if fmt == "html":
        assert "<script>" not in written  # (Markdown keeps it inside a code span: see the next test)


def test_markdown_export_renders_no_live_html_link_or_broken_code_span(hostile: Path, tmp_path: Path) -> None:
    from markdown_it import MarkdownIt

    target = tmp_path / "report.md"
    check(run_cli("export", str(hostile), "-o", str(target)), "export md", (0,))
    html = MarkdownIt("gfm-like").render(target.read_text(encoding="utf-8"))
    assert "<script" not in html and "<a " not in html
    assert "href" not in html


def test_markdown_code_spans_and_fences_outlast_every_backtick_run() -> None:
    from markdown_it import MarkdownIt

    from replay_tui.analysis.export_markdown import _code, _fence

    for value in ("``<b>x</b>``", "`", "a ``` b", "````", "`edge`"):
        html = MarkdownIt("commonmark").render(_code(value) + " after <i>")
        assert "<b>" not in html and html.count("<code>") == 1, (value, html)
        block = MarkdownIt("commonmark").render(_fence(value + "\n```\n<b>x</b>") + "\n\n<i>after</i>")
        assert "<b>" not in block and block.count("<pre>") == 1, (value, block)


def test_replay_divergence_on_hostile_text_is_escaped(recorded_hostile: Path, tmp_path: Path) -> None:
    def edit(events):
        for event in events:
            if event["kind"] == "tool.call":
                event["payload"]["arguments"][KEY] = ATTACK + " edited"
                event["payload"]["call_key"] = call_key_of(event["payload"]["tool"], event["payload"]["arguments"])
            yield event

    edited = rechained_copy(recorded_hostile, tmp_path / "edited.jsonl", edit)
    out = check(run_cli("replay", str(edited)), "replay (divergence)", (1,))
    assert "Replay divergence at seq=" in out and "\\x1b]52;" in out
    check(run_cli("replay", "--json", str(edited)), "replay --json (divergence)", (1,))
    check(run_cli("replay", str(recorded_hostile)), "replay (match)", (0,))


def test_verify_and_replay_error_messages_name_hostile_files_safely(tmp_path: Path) -> None:
    broken = tmp_path / "broken\x1b]0;T\x07.jsonl"  # the file name is hostile too
    broken.write_bytes(b'{"not": "an event \x1b]0;T\x07"}\n')
    for args in (
        ["verify", str(broken)],
        ["stats", str(broken)],
        ["replay", str(broken)],
        ["scan", str(broken)],
        ["export", str(broken), "--format", "md", "-o", "-"],
        ["diff", str(broken), str(broken)],
    ):
        check(run_cli(*args), " ".join(args[:1]), (0, 1, 2))  # stats skips the unreadable line


def test_forbidden_list_covers_the_attack() -> None:
    assert all(char in ATTACK for char in FORBIDDEN)

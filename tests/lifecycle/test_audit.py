"""The read audit: with [audit] log (or $REPLAY_TUI_AUDIT_LOG) every open of a journal by the app or a command
appends exactly one line, and the journal is never touched."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from replay_tui.cli import main
from replay_tui.journal.hashing import file_sha256

from .conftest import CRM, INVENTORY, REPO, copy

CASSETTE = REPO / "fixtures" / "imports" / "weather.cassette.yaml"


@pytest.fixture
def audit_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    log = tmp_path / "audit" / "reads.ndjson"
    monkeypatch.setenv("REPLAY_TUI_AUDIT_LOG", str(log))
    return log


def state(paths: list[Path]) -> list[tuple[bytes, int, int, int]]:
    """Bytes, mtime, inode and mode of each journal file: the audit reads, never writes."""
    files = [member for path in paths for member in ([path] if path.is_file() else sorted(path.iterdir()))]
    return [(f.read_bytes(), f.stat().st_mtime_ns, f.stat().st_ino, f.stat().st_mode) for f in files]


def lines(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def no_app_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """The app and the comparison app are built as for a user, then not run (no terminal in a test)."""
    from replay_tui.tui.app import ReplayApp
    from replay_tui.tui.screens.compare_app import CompareApp

    monkeypatch.setattr(ReplayApp, "run", lambda self, *args, **kwargs: None)
    monkeypatch.setattr(CompareApp, "run", lambda self, *args, **kwargs: None)


COMMANDS = {
    "verify": (["verify", "{a}"], 1),
    "stats": (["stats", "{a}"], 1),
    "scan": (["scan", "{a}"], 1),
    "export": (["export", "{a}", "-o", "{out}/report.md"], 1),
    "replay": (["replay", "{a}", "--json"], 1),
    "diff": (["diff", "{a}", "{b}"], 2),
    "compare": (["compare", "{a}", "{b}"], 2),
    "app": (["{a}"], 1),
    "index": (["index", "{dir}", "-o", "{out}/corpus.duckdb"], 2),
}


@pytest.mark.parametrize("name", list(COMMANDS))
def test_each_command_writes_one_line_per_journal_it_opens_and_never_touches_it(
    name: str, tmp_path: Path, audit_log: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    if name == "index":
        pytest.importorskip("duckdb")
    no_app_run(monkeypatch)
    monkeypatch.chdir(REPO)  # the replay child imports the recorded agent (fixtures.agents.crm)
    corpus = tmp_path / "runs"
    a, b = copy(CRM, corpus / "crm.jsonl"), copy(INVENTORY, corpus / "inventory.jsonl")
    (tmp_path / "out").mkdir()
    args, expected = COMMANDS[name]
    names = {"a": str(a), "b": str(b), "dir": str(corpus), "out": str(tmp_path / "out")}
    before = state([a, b])
    code = main([arg.format(**names) for arg in args])
    assert code in (0, 1), capsys.readouterr()
    written = lines(audit_log)
    assert len(written) == expected
    opened = [a] if expected == 1 else [a, b]
    assert [line["journal"] for line in written] == [str(path) for path in opened]
    for line, path in zip(written, opened):
        assert line["op"] == "read" and line["command"] == name and line["sha256"] == file_sha256(path)
        assert line["uid"] == os.getuid() and line["pid"] == os.getpid() and line["user"] and line["at"].endswith("Z")
    assert state([a, b]) == before
    assert audit_log.stat().st_mode & 0o777 == 0o600


def test_lines_are_appended_never_rewritten_and_name_the_source_of_a_copy(tmp_path: Path, audit_log: Path) -> None:
    journal = copy(CRM, tmp_path / "crm.jsonl")
    trace = copy(CASSETTE, tmp_path / "weather.cassette.yaml")
    assert main(["verify", str(journal)]) == 0
    first = audit_log.read_bytes()
    assert main(["stats", f"file://{journal}"]) == 0
    assert main(["stats", str(trace)]) == 0
    assert audit_log.read_bytes().startswith(first)
    _, url, imported = lines(audit_log)
    assert url["journal"] == f"file://{journal}" and url["sha256"] == file_sha256(journal)
    assert Path(url["read_from"]).read_bytes() == journal.read_bytes()  # the cached download that was read
    assert imported["journal"] == str(trace) and imported["source_sha256"] == file_sha256(trace)
    assert imported["sha256"] == hashlib.sha256(Path(imported["read_from"]).read_bytes()).hexdigest()


def test_the_settings_file_turns_the_audit_on_and_the_environment_wins(tmp_path: Path, user_dirs) -> None:
    journal = copy(CRM, tmp_path / "crm.jsonl")
    settings = user_dirs["config"] / "replay-tui" / "config.toml"
    settings.parent.mkdir()
    settings.write_text('[audit]\nlog = "reads.ndjson"\n')  # relative: beside the settings file
    assert main(["verify", str(journal)]) == 0
    assert [line["command"] for line in lines(settings.parent / "reads.ndjson")] == ["verify"]
    os.environ["REPLAY_TUI_AUDIT_LOG"] = str(tmp_path / "elsewhere.ndjson")
    try:
        assert main(["verify", str(journal)]) == 0
    finally:
        del os.environ["REPLAY_TUI_AUDIT_LOG"]
    assert len(lines(tmp_path / "elsewhere.ndjson")) == 1 and len(lines(settings.parent / "reads.ndjson")) == 1


@pytest.mark.parametrize("kind", ["symlink", "directory", "fifo"])
def test_a_log_that_cannot_be_written_stops_the_open(tmp_path: Path, audit_log: Path, kind: str, capsys) -> None:
    journal = copy(CRM, tmp_path / "crm.jsonl")
    audit_log.parent.mkdir()
    if kind == "symlink":
        audit_log.symlink_to(tmp_path / "target.ndjson")
    elif kind == "directory":
        audit_log.mkdir()
    else:
        os.mkfifo(audit_log)
    assert main(["stats", str(journal)]) == 2
    captured = capsys.readouterr()
    assert f"audit log {audit_log}: " in captured.err and f"{journal} was not opened" in captured.err
    assert "events" not in captured.out  # the stats were never computed
    assert not (tmp_path / "target.ndjson").exists()


def test_a_mistyped_audit_setting_is_an_error_not_an_audit_turned_off(tmp_path: Path, user_dirs, capsys) -> None:
    settings = user_dirs["config"] / "replay-tui" / "config.toml"
    settings.parent.mkdir()
    settings.write_text('[audit]\nlogfile = "reads.ndjson"\n')
    assert main(["verify", str(copy(CRM, tmp_path / "crm.jsonl"))]) == 2
    assert "unknown key(s) ['logfile'] in [audit]; expected ['log']" in capsys.readouterr().err


def test_prune_and_forget_log_what_they_delete(tmp_path: Path, audit_log: Path) -> None:
    from .conftest import set_age

    journal = copy(CRM, tmp_path / "runs" / "old.jsonl")
    other = copy(INVENTORY, tmp_path / "runs" / "other.jsonl")
    set_age(journal, 30)
    digests = file_sha256(journal), file_sha256(other)
    assert main(["prune", str(journal.parent), "--older-than", "15d"]) == 0
    assert main(["forget", str(other)]) == 0
    assert [(line["op"], line["command"], line["journal"], line["sha256"]) for line in lines(audit_log)] == [
        ("delete", "prune", str(journal), digests[0]),
        ("delete", "forget", str(other), digests[1]),
    ]


def test_following_a_url_in_the_app_is_one_read(
    tmp_path: Path, audit_log: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    no_app_run(monkeypatch)
    journal = copy(CRM, tmp_path / "crm.jsonl")
    assert main(["--follow", f"file://{journal}"]) == 0
    (line,) = lines(audit_log)
    assert (line["command"], line["journal"], line["sha256"]) == ("app", f"file://{journal}", file_sha256(journal))
    assert Path(line["read_from"]).read_bytes() == journal.read_bytes()

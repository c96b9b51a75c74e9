"""Special files as journals: a FIFO, a symlink to /dev/zero, a socket, a shard directory holding a FIFO.

Each reader (every command, the app and ``--follow``, import, the reader, verify, the sniffers) refuses
them with a message naming what the path is and exit 2; none blocks in ``open`` or reads for ever.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from replay_tui.journal import Journal, JournalOpenError, verify_journal
from replay_tui.journal.files import open_regular
from replay_tui.store.sources import resolve_source

from .sample import write_sample_journal

REPO = Path(__file__).resolve().parents[2]
KINDS = {
    "fifo": "is a FIFO (named pipe)",
    "dev-zero": "is a character device (a symlink to /dev/zero)",
    "socket": "is a socket",
    "shard-fifo": "is a FIFO (named pipe)",
}


@pytest.fixture(scope="module")
def specials(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    folder = tmp_path_factory.mktemp("specials")
    fifo = folder / "fifo.jsonl"
    os.mkfifo(fifo)
    zero = folder / "zero.jsonl"
    zero.symlink_to("/dev/zero")
    sock = folder / "sock.jsonl"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(sock))
    shards = folder / "shards"
    shards.mkdir()
    write_sample_journal(shards / "a.jsonl", steps=1)
    os.mkfifo(shards / "b.jsonl")
    try:
        yield {"fifo": fifo, "dev-zero": zero, "socket": sock, "shard-fifo": shards}
    finally:
        server.close()


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "replay_tui", *args],
        cwd=REPO,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,  # a FIFO used to block the open for ever, /dev/zero to be read for ever
    )


COMMANDS = [
    ["verify"],
    ["verify", "--json"],
    ["verify", "--state"],
    ["stats"],
    ["stats", "--json"],
    ["scan"],
    ["scan", "--json"],
    ["export", "--format", "md", "-o", "-"],
    ["replay"],
    ["diff", "{path}"],
]


@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize("command", COMMANDS, ids=[" ".join(c) for c in COMMANDS])
def test_every_command_refuses_a_special_file(specials: dict[str, Path], kind: str, command: list[str]) -> None:
    if command[0] == "replay" and kind == "shard-fifo":
        pytest.skip("a directory given to replay is a corpus: replay reports its FIFO as that journal's failure")
    path = str(specials[kind])
    done = _cli(command[0], path, *(part.replace("{path}", path) for part in command[1:]))
    output = done.stdout + done.stderr
    assert done.returncode == 2, (done.returncode, output)
    assert KINDS[kind] in " ".join(output.split()), output
    assert "Traceback" not in output and "internal error" not in output, output


@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize("follow", [False, True], ids=["app", "follow"])
def test_the_app_refuses_a_special_file_before_its_first_frame(
    specials: dict[str, Path], kind: str, follow: bool
) -> None:
    done = _cli(*(["--follow"] if follow else []), str(specials[kind]))
    assert done.returncode == 2, done.stderr
    assert KINDS[kind] in done.stderr and "Traceback" not in done.stderr, done.stderr


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "socket"])
def test_import_refuses_a_special_file(specials: dict[str, Path], kind: str, tmp_path: Path) -> None:
    done = _cli("import", str(specials[kind]), "-o", str(tmp_path / "out.jsonl"))
    assert done.returncode == 2 and KINDS[kind] in done.stderr, done.stderr
    assert "a trace is read from a regular file" in done.stderr
    assert not (tmp_path / "out.jsonl").exists()


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_the_reader_verify_and_resolve_refuse_without_blocking(specials: dict[str, Path], kind: str) -> None:
    # (resolve_source leaves a directory to the reader, which lists its shards)
    for read in (Journal, verify_journal) if kind == "shard-fifo" else (Journal, verify_journal, resolve_source):
        with pytest.raises(JournalOpenError) as raised:
            read(str(specials[kind]))  # type: ignore[operator]
        assert KINDS[kind] in str(raised.value)


def test_open_regular_checks_the_file_it_opened(specials: dict[str, Path], tmp_path: Path) -> None:
    plain = write_sample_journal(tmp_path / "plain.jsonl", steps=1)
    os.close(open_regular(plain))
    link = tmp_path / "link.jsonl"
    link.symlink_to(plain)  # a symlink to a journal is a journal
    assert len(verify_journal_events(link)) > 0
    with pytest.raises(JournalOpenError, match="is a FIFO"):
        open_regular(specials["fifo"])


def verify_journal_events(path: Path) -> list[object]:
    with Journal(path) as journal:
        journal.index()
        return list(journal.events())


def test_a_followed_journal_replaced_by_a_fifo_is_refused_on_refresh(tmp_path: Path) -> None:
    path = write_sample_journal(tmp_path / "live.jsonl", steps=1)
    journal = Journal(path)
    journal.index()
    path.unlink()
    os.mkfifo(path)
    events = len(journal)
    with pytest.raises(JournalOpenError, match="is a FIFO"):
        journal.refresh()  # follow mode's reopen: refused, not blocked (the follower shows it as a notice)
    assert len(journal) == events and journal.event(events - 1).kind == "run.ended"  # what it showed still reads
    journal.close()

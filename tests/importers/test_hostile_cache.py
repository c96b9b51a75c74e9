"""Detection on hostile content, and the sha256-keyed import cache: a damaged entry is never trusted,
and concurrent opens of one source leave one whole entry."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replay_tui.importers import detect_format
from replay_tui.importers.detect import FORMATS, JOURNAL
from replay_tui.journal.errors import JournalError
from replay_tui.store.sources import MANIFEST, imports_cache_dir, resolve_source

from .conftest import REPO, SAMPLES

CASSETTE = SAMPLES / "weather.cassette.yaml"

# -- detection -----------------------------------------------------------------------------

HEADS = st.sampled_from(
    [b"", b"{", b"[", b"PK\x03\x04", b"\x1f\x8b", b"interactions:", b'{"resourceSpans":', b'{"object":"trace"', b"\xff"]
)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(head=HEADS, body=st.binary(max_size=300))
def test_detection_of_any_bytes_names_a_format_or_none(head: bytes, body: bytes) -> None:
    import tempfile

    with tempfile.TemporaryDirectory(prefix="replay-tui-detect-") as folder:
        path = Path(folder) / "unknown"
        path.write_bytes(head + body)
        assert detect_format(path) in (*FORMATS, JOURNAL, None)
        try:
            resolve_source(str(path))  # a journal to open, an import, or one named error
        except JournalError as error:
            assert str(path) in str(error)


def test_empty_binary_and_huge_first_lines(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.write_bytes(b"")
    binary = tmp_path / "binary"
    binary.write_bytes(bytes(range(256)) * 64)
    assert detect_format(empty) is None and detect_format(binary) is None
    huge = tmp_path / "huge.otlp.json"  # a first line far beyond what detection reads
    first = json.loads((SAMPLES / "weather.otlp.jsonl").read_text().splitlines()[0])
    first["resourceSpans"][0]["resource"] = {"attributes": [{"key": "pad", "value": {"stringValue": "x" * 2**20}}]}
    huge.write_text(json.dumps(first) + "\n")
    assert detect_format(huge) == "otlp"
    assert resolve_source(str(huge)).imported is not None


def test_a_file_that_looks_like_two_formats_is_decided_by_its_first_record(tmp_path: Path) -> None:
    both = tmp_path / "both.jsonl"
    both.write_text(json.dumps({"resourceSpans": [], "object": "trace", "interactions": [], "version": 1}) + "\n")
    assert detect_format(both) == "otlp"
    journal_talking = tmp_path / "cassette-in-a-string.jsonl"
    journal_talking.write_text(json.dumps({"kind": "note", "text": "interactions:\n- request: {}"}) + "\n")
    assert detect_format(journal_talking) == JOURNAL
    zip_of_both = tmp_path / "both.eval"
    with zipfile.ZipFile(zip_of_both, "w") as archive:
        archive.writestr("header.json", "{}")
        archive.writestr("interactions:", "version: 1")
    assert detect_format(zip_of_both) == "inspect"
    with pytest.raises(JournalError, match="sample in the Inspect AI log"):
        resolve_source(str(zip_of_both))


def test_a_damaged_zip_is_no_format(tmp_path: Path) -> None:
    cut = tmp_path / "cut.eval"
    cut.write_bytes((SAMPLES / "weather.eval").read_bytes()[:300])
    assert detect_format(cut) is None


# -- the cache -----------------------------------------------------------------------------


def _logical(journal: Path) -> list[tuple[str, object]]:
    """What an import of the cassette says, without the times and hashes (it is stamped when made)."""
    return [(event["kind"], event["payload"]) for event in map(json.loads, journal.read_text().splitlines())]


def _entry() -> tuple[Path, Path]:
    """(cache entry, its journal) of the sample cassette, opened once."""
    resolved = resolve_source(str(CASSETTE))
    return resolved.path.parent, resolved.path


def test_a_truncated_cached_journal_is_imported_again(tmp_path: Path) -> None:
    entry, journal = _entry()
    whole = journal.read_bytes()
    journal.write_bytes(whole[: len(whole) // 2])
    again = resolve_source(str(CASSETTE))
    assert len(again.path.read_bytes()) == len(whole) and again.path.read_bytes() != whole[: len(whole) // 2]


def test_an_edited_cached_journal_is_imported_again(tmp_path: Path) -> None:
    entry, journal = _entry()
    whole = journal.read_bytes()
    edited = whole.replace(b"Oslo", b"Rome", 1)
    assert edited != whole and len(edited) == len(whole)
    logical = _logical(journal)
    journal.write_bytes(edited)
    assert _logical(resolve_source(str(CASSETTE)).path) == logical


@pytest.mark.parametrize(
    "manifest",
    [
        {"journals": [{"path": "../../../../etc/hostname", "size": 1, "sha256": "x"}]},
        {"journals": ["weather.cassette.jsonl"]},  # an older manifest: names only
        {"journals": [{"path": "/etc/hostname"}]},
        [1, 2],
        "not an object",
    ],
)
def test_a_tampered_manifest_is_never_followed(manifest: object) -> None:
    entry, journal = _entry()
    logical = _logical(journal)
    (entry / MANIFEST).write_bytes(orjson.dumps(manifest))
    (entry / "mark").write_text("the damaged entry")
    again = resolve_source(str(CASSETTE))
    assert again.path.is_relative_to(imports_cache_dir()) and _logical(again.path) == logical
    assert not (again.path.parent / "mark").exists()  # a new entry, the damaged one set aside


def test_a_symlinked_journal_is_never_followed(tmp_path: Path) -> None:
    entry, journal = _entry()
    logical = _logical(journal)
    elsewhere = tmp_path / "elsewhere.jsonl"
    elsewhere.write_bytes(journal.read_bytes())
    journal.unlink()
    journal.symlink_to(elsewhere)
    again = resolve_source(str(CASSETTE))
    assert not again.path.is_symlink() and _logical(again.path) == logical


def test_concurrent_opens_of_one_source_leave_one_whole_entry(tmp_path: Path) -> None:
    source = tmp_path / "shared.yaml"
    shutil.copyfile(CASSETTE, source)
    script = (
        "import sys; from replay_tui.store.sources import resolve_source; "
        "print(resolve_source(sys.argv[1]).path.read_bytes().count(b'\\n'))"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    children = [
        subprocess.Popen(
            [sys.executable, "-c", script, str(source)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        for _ in range(4)
    ]
    outputs = [child.communicate(timeout=120) for child in children]
    assert all(child.returncode == 0 for child in children), [err[-2000:] for _, err in outputs]
    assert len({out for out, _ in outputs}) == 1  # every process read the same whole journal
    entries = list(imports_cache_dir().iterdir())
    assert len(entries) == 1 and not entries[0].name.startswith("."), entries  # no staging or stale dirs left
    assert resolve_source(str(source)).path.parent == entries[0]

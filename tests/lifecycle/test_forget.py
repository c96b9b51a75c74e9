"""replay-tui forget: the journal and every copy replay-tui made of it, each found where the code writes it.

``test_every_copy_is_found`` makes one copy in each place through the code that writes there;
``test_the_list_of_places_is_the_code_s`` reads the code for the places it writes, so a new cache or
temporary directory that holds journal data fails here until forget knows it.
"""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path

import pytest

from replay_tui.analysis.annotations import AnnotationStore, fallback_dir
from replay_tui.analysis.corpus_index import build_index, rows_of_runs
from replay_tui.cli import main
from replay_tui.journal import JournalWriter, open_journal
from replay_tui.journal.shipping import ShipOptions, Shipper, ledger_entries
from replay_tui.store import copies, storage
from replay_tui.store.sources import imports_cache_dir, resolve_source
from replay_tui.store.tags import MANIFEST_NAME, tag

from .conftest import CRM, INVENTORY, REPO, copy

SOURCE = REPO / "replay_tui"
CASSETTE = REPO / "fixtures" / "imports" / "weather.cassette.yaml"


def bookmark(journal: Path) -> Path:
    store = AnnotationStore.open(journal)
    with open_journal(journal) as opened:
        store.toggle_bookmark(opened.event(3))
    store.save()
    return store.path


Made = dict[str, tuple[list[Path], list[Path]]]


def make_every_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Made]:
    """The journal ``runs/crm.jsonl`` (run ``crm``) and a copy of it in each place replay-tui writes one;
    beside each, data of another run (``inventory``) that must stay: kind -> (to go, to stay)."""
    journal = copy(CRM, tmp_path / "runs" / "crm.jsonl")
    other = copy(INVENTORY, tmp_path / "runs" / "inventory.jsonl")
    made: Made = {}

    corrupt = journal.parent / "crm.jsonl.replay-tui.json.corrupt-20261101T000000Z"  # kept aside by open_lenient
    corrupt.write_text("{unreadable")
    demo = copy(CRM, tmp_path / "site-packages" / "crm.jsonl")  # a journal whose sidecar cannot go beside it
    with monkeypatch.context() as patched:
        patched.setattr("replay_tui.analysis.annotations.installed_data_dir", lambda: demo.parent)
        fallback = bookmark(demo)
    assert fallback.parent == fallback_dir()
    made["annotations"] = ([bookmark(journal), corrupt, fallback], [bookmark(other)])

    trace = copy(CASSETTE, tmp_path / "traces" / "weather.cassette.yaml")
    imported = resolve_source(str(trace))
    made["import cache"] = ([imported.path.parent], [])

    made["object cache"] = ([storage.fetch(f"file://{journal}").local.parent], [storage.fetch(f"file://{other}").local])
    mirror = storage.fetch(f"file://{journal.parent}/")
    made["storage mirror"] = ([mirror.local / "crm.jsonl"], [mirror.local / "inventory.jsonl"])
    follower = storage.ObjectFollower(f"file://{journal}")
    made["follow copy"] = ([follower.start().parent], [])
    follower.stop()

    experiments = Path(tempfile.mkdtemp(prefix="replay-tui-experiments-"))  # as tui/screens/experiments.py
    with JournalWriter(
        experiments / "crm.model-live.jsonl", run_id="crm-model-live"
    ) as output:  # replay/child/engine.py
        output.append("input.received", {"role": "user", "content": "hi"})
    unrelated = copy(JOURNALS_DIR / "crm-incident.jsonl", experiments / "crm-incident.jsonl")
    made["experiment output"] = ([experiments / "crm.model-live.jsonl"], [unrelated])

    from replay_tui.replay.parent.sandbox_launch import copy_journal

    scratch = Path(tempfile.mkdtemp(prefix="replay-tui-scratch-"))  # a replay that was killed
    ray = Path(tempfile.mkdtemp(prefix="replay-tui-ray-"))
    made["replay scratch copy"] = (
        [Path(copy_journal(str(journal), str(scratch)))],
        [Path(copy_journal(str(other), str(ray)))],
    )

    index = tmp_path / "corpus.duckdb"
    build_index([("crm.jsonl", journal), ("inventory.jsonl", other)], index)
    made["corpus index rows"] = ([], [index])

    tag(str(journal), "incident", "INC-1")
    tag(str(other), "incident")
    made["tag"] = ([], [journal.parent / MANIFEST_NAME])

    shipper = Shipper(journal.parent.resolve(), ShipOptions(f"file://{tmp_path / 'shipped'}/", keep_local=True))
    shipper.submit(journal, True)
    shipper.submit(other, True)
    assert shipper.drain(30)
    shipper.stop()
    made["shipped copy"] = ([tmp_path / "shipped" / "crm.jsonl"], [tmp_path / "shipped" / "inventory.jsonl"])
    return trace, made


JOURNALS_DIR = REPO / "fixtures" / "journals"


def test_every_copy_is_found_and_only_the_forgotten_run_s(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    trace, made = make_every_copy(tmp_path, monkeypatch)
    journal = tmp_path / "runs" / "crm.jsonl"
    assert main(["forget", str(journal), str(trace), "--dry-run"]) == 0
    dry = capsys.readouterr().out
    assert journal.exists() and all(path.exists() for gone, kept in made.values() for path in gone + kept)

    assert main(["forget", str(journal), str(trace), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    kinds = {item["kind"] for item in report["removed"]}
    assert kinds == {
        "journal",
        "trace",
        "annotations",
        "import cache",
        "object cache",
        "storage mirror",
        "follow copy",
        "experiment output",
        "replay scratch copy",
        "corpus index rows",
        "tag",
        "shipped copy",
        "shipping ledger lines",
        "shipped manifest lines",
    } - {"shipped manifest lines"}  # shipped to another place: its manifest line goes with the shipped copy
    removed = {item["where"] for item in report["removed"]}
    assert {where for where in removed} <= {line.split(": ", 1)[1].split(" (")[0] for line in dry.splitlines()[:-1]}
    assert not journal.exists() and not trace.exists()
    for kind, (gone, kept) in made.items():
        assert not any(path.exists() for path in gone), kind
        assert all(path.exists() for path in kept), kind
    (index,) = made["corpus index rows"][1]
    assert rows_of_runs(index, ["crm"]) == {} and rows_of_runs(index, ["inventory"])["runs"] == 1
    manifest = json.loads(made["tag"][1][0].read_bytes())
    assert list(manifest["journals"]) == ["inventory.jsonl"]
    assert [(entry["name"], entry["op"]) for entry in ledger_entries(journal.parent)] == [
        ("inventory.jsonl", "queued"),
        ("inventory.jsonl", "shipped"),
    ]
    assert not (tmp_path / "shipped" / ".replay-tui-manifest" / "crm.jsonl.json").exists()
    assert (tmp_path / "shipped" / ".replay-tui-manifest" / "inventory.jsonl.json").exists()
    assert not list(imports_cache_dir().iterdir())


def test_a_run_id_is_forgotten_where_its_journals_are_said_to_be(tmp_path: Path, capsys) -> None:
    runs = tmp_path / "runs"
    copy(CRM, runs / "2026" / "a.jsonl")
    copy(CRM, runs / "b.jsonl")
    copy(INVENTORY, runs / "c.jsonl")
    cached = storage.fetch(f"file://{runs / 'b.jsonl'}").local
    assert main(["forget", "crm", "--in", str(runs)]) == 0
    out = capsys.readouterr().out
    assert f"removed journal: {runs / '2026' / 'a.jsonl'}" in out and f"removed journal: {runs / 'b.jsonl'}" in out
    assert f"removed object cache: {cached.parent}" in out
    assert sorted(path.name for path in runs.rglob("*.jsonl")) == ["c.jsonl"]


def test_forget_refuses_what_is_neither_a_journal_nor_a_trace(tmp_path: Path, capsys) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("keep me")
    assert main(["forget", str(notes)]) == 2
    assert "neither a journal" in capsys.readouterr().err and notes.read_text() == "keep me"
    assert main(["forget", str(tmp_path / "gone.jsonl")]) == 2
    assert "no such journal" in capsys.readouterr().err


def test_the_derived_modes_are_replay_s_modes() -> None:
    from replay_tui.replay.modes import MODES

    assert set(copies.DERIVED_MODES) == set(MODES)


#: Temporary directories replay-tui makes that never hold a journal or a copy of one after their code
#: returns (removed in a ``finally``/``with``), each with why it is not searched.
TRANSIENT = {
    "replay-tui-otlp-": "spools of one import's first pass, removed when the import ends",
    "replay-tui-forkserver-": "the fork server's home directory: no journal is copied there",
    "replay-tui-index-": "row batches of one index build, removed when it ends (the index is searched)",
    "replay-tui-serve-": "textual-serve's page template",
    "replay-tui-record-": "the log of a --follow-in-app recording, no journal data",
    "replay-tui-langgraph-": "a live LangGraph run's checkpoints, removed when the run ends",
    "replay-tui-shard-": "a gzip shard inflated for reading: an unnamed file, gone when closed",
}


def test_the_list_of_places_is_the_code_s() -> None:
    """Every place the code writes a journal copy under is one forget searches, or transient by design."""
    code = {path: path.read_text(encoding="utf-8") for path in SOURCE.rglob("*.py")}
    temp_prefixes = {
        match for text in code.values() for match in re.findall(r'(?:prefix="|PREFIX = ")(replay-tui-[a-z]+-)"', text)
    }
    assert temp_prefixes == set(copies.TEMP_PREFIXES) | set(TRANSIENT)
    cache_dirs = {match for text in code.values() for match in re.findall(r'cache_root\(\) / "([a-z]+)"', text)}
    assert cache_dirs == {
        "objects",
        "prefixes",
        "follow",
        "imports",
        "stylesheets",
    }  # _object_cache, _mirrors, _follow_copies, imports; and the app's parsed stylesheets, no journal text
    state_names = {match for text in code.values() for match in re.findall(r'state_root\(\) / "([a-z.]+)"', text)}
    assert state_names == {"annotations", "indexes.ndjson"}  # _annotations, index_rows
    writers = {
        path.relative_to(SOURCE).as_posix()
        for path, text in code.items()
        for line in text.splitlines()
        if re.search(r"(JsonlSink|JournalWriter)\(", line) and not re.search(r"class |``", line)
    }
    assert writers == set(JOURNAL_WRITERS)


#: Every place that writes a journal, and where what it writes lands.
JOURNAL_WRITERS = {
    "harness/transport.py": "the recorded journal itself (the jsonl transport)",
    "harness/builder.py": "the recorded journal itself (no transport plugin)",
    "importers/builder.py": "an imported trace: the import cache, or the user's import -o",
    "replay/child/engine.py": "an experiment's output: the app's experiment directory (searched), or the user's --out",
    "replay/parent/rerecord.py": "a re-recording: the user's --out",
}

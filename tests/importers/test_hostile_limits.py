"""Bombs, tags, path tricks and loops in foreign traces: each is refused by a named limit (or imported
harmlessly), from the library and from the CLI (exit 2, one line, memory bounded)."""

from __future__ import annotations

import base64
import gzip
import json
import os
import resource
import struct
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest

from replay_tui.importers import TraceImportError

from . import hostile as H
from .conftest import REPO

#: The CLI runs under this address-space limit: a bomb that expanded would die of it instead of exiting 2.
MEMORY_LIMIT = 1 << 30


def _cli_import(src: Path, out: Path) -> subprocess.CompletedProcess[str]:
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))

    return subprocess.run(
        [sys.executable, "-c", "import sys; from replay_tui.cli import main; sys.exit(main(sys.argv[1:]))"]
        + ["import", str(src), "-o", str(out)],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        preexec_fn=limit,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _refused_by_cli(src: Path, out: Path, *expected: str) -> str:
    done = _cli_import(src, out)
    assert done.returncode == 2, (done.returncode, done.stderr[-2000:])
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    assert str(src) in done.stderr and all(part in done.stderr for part in expected), done.stderr
    assert not out.exists()
    return done.stderr


def _refused(src: Path, out: Path, fmt: str, *expected: str) -> TraceImportError:
    refusal = H.import_or_refuse(src, out, fmt)
    assert isinstance(refusal, TraceImportError), f"{src} imported: {refusal}"
    assert all(part in str(refusal) for part in expected), str(refusal)
    return refusal


# -- YAML ----------------------------------------------------------------------------------


def _cassette_with(tmp_path: Path, path: H.DocPath, raw: str, name: str = "hostile.yaml") -> Path:
    src = tmp_path / name
    src.write_text(H.yaml_text(H.mutated(H.cassette(), path, H.MARKER), raw))
    return src


def test_python_tags_never_construct_objects(tmp_path: Path) -> None:
    pwned = tmp_path / "pwned"
    for tag in ("!!python/object/apply:os.system", "!!python/object/new:os.system", "!!python/name:os.system"):
        src = _cassette_with(tmp_path, ("interactions", 0, "request", "method"), f"{tag} ['touch {pwned}']")
        _refused(src, tmp_path / "out.jsonl", "vcr", "a YAML vcrpy cassette", "line ")
        assert not pwned.exists()


def test_billion_laughs_is_refused_by_the_value_limit(tmp_path: Path) -> None:
    levels = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    levels += [f"a{n}: &a{n} [" + ", ".join([f"*a{n - 1}"] * 9) + "]" for n in range(1, 10)]
    bomb = tmp_path / "laughs.yaml"
    bomb.write_text("version: 1\n" + "\n".join(levels) + "\ninteractions: [*a9]\n")  # 9**10 values once expanded
    _refused(bomb, tmp_path / "out.jsonl", "vcr", "at most 2,000,000 values once YAML aliases are expanded")
    _refused_by_cli(bomb, tmp_path / "cli.jsonl", "2,000,000 values")


def test_an_alias_inside_its_own_anchor_is_refused(tmp_path: Path) -> None:
    src = _cassette_with(tmp_path, ("interactions", 0, "request", "headers", "accept"), "&loop [*loop]")
    _refused(src, tmp_path / "out.jsonl", "vcr", "interactions[0].request.headers.accept", "contain themselves")


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("!!set {a, b}", "a JSON value (found a set)"),
        ("2026-13-45", "a YAML vcrpy cassette"),
        (".nan", "a finite number"),
        ("{? [a, b] : c}", "a YAML vcrpy cassette"),
        ('"\\ud800"', "a YAML vcrpy cassette"),  # libyaml refuses it; the Python loader builds one
        ("[" * 300 + "]" * 300, "nested at most 200 levels"),
    ],
)
def test_yaml_values_no_journal_holds_are_named(tmp_path: Path, raw: str, expected: str) -> None:
    src = _cassette_with(tmp_path, ("interactions", 1, "response", "status", "message"), raw)
    _refused(src, tmp_path / "out.jsonl", "vcr", expected)


@pytest.mark.parametrize(
    "body",
    [
        "!!binary " + base64.b64encode(json.dumps({"choices": [{"message": {"content": "hi"}}]}).encode()).decode(),
        "!!binary " + base64.b64encode(bytes(range(256))).decode(),  # not UTF-8: kept, replaced where shown
        "aGVsbG8gd29ybGQ=",  # base64 that nobody decodes: text
        '"\\x1b]52;c;b3duZWQ=\\x07\\x00\\x9b"',
    ],
)
def test_cassette_bodies_of_any_bytes_import(tmp_path: Path, body: str) -> None:
    src = _cassette_with(tmp_path, ("interactions", 0, "response", "body", "string"), body)
    [result] = H.import_or_refuse(src, tmp_path / "out.jsonl", "vcr")  # type: ignore[misc]
    assert result.events > 2


def test_a_gzip_bomb_body_stops_at_its_limit(tmp_path: Path) -> None:
    bomb = gzip.compress(b"\0" * (64 * 2**20), compresslevel=9)
    document = H.cassette()
    document["interactions"][0]["response"]["body"]["string"] = bomb
    document["interactions"][0]["response"]["headers"]["content-encoding"] = ["gzip"]
    import yaml

    src = tmp_path / "gzip-bomb.yaml"
    src.write_text(yaml.safe_dump(document))
    _refused(src, tmp_path / "out.jsonl", "vcr", "interactions[0]: response.body.string", "at most 4 MiB inflated")
    _refused_by_cli(src, tmp_path / "cli.jsonl", "4 MiB")


def test_wrong_types_in_an_interaction_name_the_member(tmp_path: Path) -> None:
    src = _cassette_with(tmp_path, ("interactions", 2, "response", "status", "code"), "many")
    _refused(src, tmp_path / "out.jsonl", "vcr", "interactions[2]: response.status.code", "an HTTP status code")
    src = _cassette_with(tmp_path, ("interactions", 1, "request", "headers"), "[1, 2]")
    _refused(src, tmp_path / "out.jsonl", "vcr", "interactions[1]: request.headers", "a mapping")


# -- Inspect .eval zips ---------------------------------------------------------------------


def _eval_with(tmp_path: Path, extra: dict[str, bytes | None] | None = None, **replaced: Any) -> Path:
    """The sample log with members replaced (``samples__1_epoch_1.json=...``), added or (None) left out."""
    members = dict(H.eval_members())
    for name, value in replaced.items():
        members[name.replace("__", "/")] = json.dumps(value).encode()
    for name, data in (extra or {}).items():
        if data is None:
            members.pop(name, None)
        else:
            members[name] = data
    return H.write_eval(tmp_path / "hostile.eval", members)


def _sample() -> dict[str, Any]:
    return json.loads(H.eval_members()["samples/1_epoch_1.json"])


def _set_declared_size(archive_path: Path, member: str, size: int) -> None:
    """Rewrite the uncompressed size a member declares (local header and central directory)."""
    data = bytearray(archive_path.read_bytes())
    with zipfile.ZipFile(archive_path) as archive:
        struct.pack_into("<I", data, archive.getinfo(member).header_offset + 22, size)
    central = data.find(b"PK\x01\x02")
    while central >= 0:
        name_length = struct.unpack_from("<H", data, central + 28)[0]
        if data[central + 46 : central + 46 + name_length] == member.encode():
            struct.pack_into("<I", data, central + 24, size)
        central = data.find(b"PK\x01\x02", central + 46)
    archive_path.write_bytes(bytes(data))


def test_a_member_that_declares_a_huge_size_is_refused_unread(tmp_path: Path) -> None:
    src = _eval_with(tmp_path)
    _set_declared_size(src, "samples/1_epoch_1.json", 0xFFFF_FFF0)
    _refused(src, tmp_path / "out.jsonl", "inspect", "samples/1_epoch_1.json", "at most 256 MiB uncompressed")
    _refused_by_cli(src, tmp_path / "cli.jsonl", "256 MiB")


def test_a_member_bigger_than_it_declares_is_refused(tmp_path: Path) -> None:
    src = _eval_with(tmp_path)
    _set_declared_size(src, "samples/1_epoch_1.json", 1000)  # it holds 13 kB: read no further than it says
    _refused(src, tmp_path / "out.jsonl", "inspect", "samples/1_epoch_1.json")


def test_a_real_bomb_stops_at_the_member_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from replay_tui.importers import inspect_log

    monkeypatch.setattr(inspect_log, "MAX_MEMBER_BYTES", 2**20)
    src = _eval_with(tmp_path, {"summaries.json": b"[" + b" " * (8 * 2**20) + b"]"})
    _refused(src, tmp_path / "out.jsonl", "inspect", "summaries.json", "at most 1 MiB uncompressed")


def test_zip_path_tricks_write_nothing_outside_the_output(tmp_path: Path) -> None:
    sample = _sample()
    tricks = {
        "../escaped.json": b"{}",
        "/etc/absolute.json": b"{}",
        "samples/../../outside_epoch_1.json": json.dumps({**sample, "id": "../../outside"}).encode(),
        "samples/2_epoch_1.json": json.dumps({**sample, "id": "/etc/passwd", "epoch": "\x1b[2J"}).encode(),
        "summaries.json": None,  # without it every samples/ member is read
    }
    folder = tmp_path / "work"
    folder.mkdir()
    src = _eval_with(folder, tricks)
    out = folder / "out"
    results = H.import_or_refuse(src, out, "inspect")
    assert isinstance(results, list) and len(results) == 3
    assert sorted(path.name for path in folder.iterdir()) == ["hostile.eval", "out"]
    assert all(result.path.parent == out and result.path.name.endswith(".jsonl") for result in results)
    assert not any(part in result.path.name for result in results for part in ("..", "/", "\x1b"))


def test_two_samples_with_the_same_id_and_epoch_keep_both(tmp_path: Path) -> None:
    sample = _sample()
    src = _eval_with(tmp_path, {"samples/1_epoch_01.json": json.dumps(sample).encode(), "summaries.json": None})
    results = H.import_or_refuse(src, tmp_path / "out", "inspect")
    assert isinstance(results, list) and len({result.path for result in results}) == 2


def test_attachments_that_point_nowhere_or_at_each_other(tmp_path: Path) -> None:
    sample = _sample()
    model = next(index for index, event in enumerate(sample["events"]) if event.get("event") == "model")
    sample["events"][model]["input"] = ["attachment://nowhere"]
    src = _eval_with(tmp_path, **{"samples__1_epoch_1.json": sample})
    _refused(
        src, tmp_path / "out.jsonl", "inspect", f"events[{model}]", "an attachments entry for attachment://nowhere"
    )
    sample = _sample()
    sample["attachments"].update({"a": "attachment://b", "b": "attachment://a"})
    sample["events"].append({"event": "info", "data": "attachment://a"})
    src = _eval_with(tmp_path, **{"samples__1_epoch_1.json": sample})
    [result] = H.import_or_refuse(src, tmp_path / "looped.jsonl", "inspect")  # type: ignore[misc]
    assert "attachment://b" in result.path.read_text()  # followed once, never in a loop


def test_a_copy_patch_that_could_double_the_state_is_refused(tmp_path: Path) -> None:
    sample = _sample()
    copies = [{"op": "copy", "from": "/messages", "path": f"/m{n}"} for n in range(64)]
    sample["events"].append({"event": "state", "changes": copies})
    src = _eval_with(tmp_path, **{"samples__1_epoch_1.json": sample})
    _refused(src, tmp_path / "out.jsonl", "inspect", "changes[0]", "a JSON Patch operation")


def test_a_patch_that_does_not_apply_names_its_event(tmp_path: Path) -> None:
    sample = _sample()
    sample["events"].append({"event": "state", "changes": [{"op": "remove", "path": "/no/such/member"}]})
    src = _eval_with(tmp_path, **{"samples__1_epoch_1.json": sample})
    _refused(src, tmp_path / "out.jsonl", "inspect", "event_index", "JSON Patch does not apply")


def test_input_refs_cannot_multiply_the_message_pool(tmp_path: Path) -> None:
    sample = _sample()
    sample.setdefault("events_data", {})["messages"] = [{"role": "user", "content": "x"}] * 1000
    model = next(event for event in sample["events"] if event.get("event") == "model")
    model["input_refs"] = [[0, 1000]] * 1000
    src = _eval_with(tmp_path, **{"samples__1_epoch_1.json": sample})
    _refused(src, tmp_path / "out.jsonl", "inspect", "at most 100,000 input messages")


# -- Agents SDK exports --------------------------------------------------------------------


def test_parent_ids_in_a_loop_do_not_hang(tmp_path: Path) -> None:
    lines = H.agents_lines()
    spans = [line for line in lines if line["object"] == "trace.span"]
    spans[0]["parent_id"], spans[1]["parent_id"] = spans[1]["id"], spans[0]["id"]
    for span in spans:
        if span["span_data"].get("type") == "agent":
            span["parent_id"] = span["id"]
    src = tmp_path / "loop.jsonl"
    src.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    H.import_or_refuse(src, tmp_path / "out.jsonl", "openai-agents")


def test_duplicate_span_ids_are_named(tmp_path: Path) -> None:
    lines = H.agents_lines()
    spans = [index for index, line in enumerate(lines) if line["object"] == "trace.span"]
    lines[spans[1]]["id"] = lines[spans[0]]["id"]
    src = tmp_path / "dup.jsonl"
    src.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    _refused(src, tmp_path / "out.jsonl", "openai-agents", f"line {spans[1] + 1}", f"at line {spans[0] + 1} too")


def test_trace_ids_never_become_paths(tmp_path: Path) -> None:
    lines = H.agents_lines()
    second = [json.loads(json.dumps(line)) for line in lines]
    for line in second:
        key = "id" if line["object"] == "trace" else "trace_id"
        line[key] = "../../../escape"
    src = tmp_path / "two.jsonl"
    src.write_text("\n".join(json.dumps(line) for line in lines + second) + "\n")
    results = H.import_or_refuse(src, tmp_path / "out", "openai-agents")
    assert isinstance(results, list) and len(results) == 2
    assert all(result.path.parent == tmp_path / "out" for result in results)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["out", "two.jsonl"]


def test_every_refusal_is_one_line_from_the_cli(tmp_path: Path) -> None:
    src = tmp_path / "deep.agents.jsonl"
    lines = H.agents_lines()
    lines[0]["span_data"]["model_config"] = {"deep": json.loads("[" * 250 + "]" * 250)}
    src.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    _refused_by_cli(src, tmp_path / "out.jsonl", "line 1", "nested at most 200 levels")


def test_import_trace_refuses_wrong_types_at_the_top(tmp_path: Path) -> None:
    for name, text, fmt in [
        ("top.yaml", "version: 1\ninteractions: {a: 1}\n", "vcr"),
        ("top.json", '{"eval": {}, "samples": {"a": 1}}', "inspect"),
        ("top.agents.jsonl", '{"object": "trace.span", "trace_id": 5, "id": "s", "span_data": {}}\n', "openai-agents"),
    ]:
        src = tmp_path / name
        src.write_text(text)
        _refused(src, tmp_path / "out.jsonl", fmt)


def test_attachments_repeated_without_end_stop_at_the_import_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from replay_tui.importers import plain

    monkeypatch.setattr(plain, "MAX_IMPORT_CHARS", 4 * 2**20)
    sample = _sample()
    sample["attachments"]["big"] = "y" * 2**20  # 1 MiB, referenced by every one of 50 notes
    sample["events"] += [{"event": "info", "data": "attachment://big"} for _ in range(50)]
    src = _eval_with(tmp_path, **{"samples__1_epoch_1.json": sample})
    _refused(src, tmp_path / "out.jsonl", "inspect", "an import of at most 4 MiB of text")


def test_a_big_text_repeated_by_yaml_aliases_stops_at_the_import_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from replay_tui.importers import plain

    monkeypatch.setattr(plain, "MAX_IMPORT_CHARS", 4 * 2**20)
    few_values = tmp_path / "aliases.yaml"  # eleven values, but 10 MiB of text once the aliases are followed
    few_values.write_text(
        "version: 1\nbig: &big " + "y" * 2**20 + "\ninteractions: [" + ", ".join(["*big"] * 10) + "]\n"
    )
    _refused(few_values, tmp_path / "out.jsonl", "vcr", "an import of at most 4 MiB of text")


def test_times_that_are_not_rfc3339_are_stamped_instead(tmp_path: Path) -> None:
    from .helpers import events_of

    sample = _sample()
    sample["started_at"] = "\x1b]0;owned\x07"
    for event in sample["events"]:
        event["timestamp"] = "yesterday\x1b[2J"
    src = _eval_with(tmp_path, **{"samples__1_epoch_1.json": sample})
    [result] = H.import_or_refuse(src, tmp_path / "out.jsonl", "inspect")  # type: ignore[misc]
    assert all("\x1b" not in event["recorded_at"] for event in events_of(result.path))

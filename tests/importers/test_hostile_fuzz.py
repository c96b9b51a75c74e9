"""Each importer against mutations of its real sample: every input imports (and verifies) or is refused
by a TraceImportError naming the file and the record, and a refusal leaves nothing behind."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from . import hostile as H

FUZZ = settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

#: (kind, value): delete the member, put a hostile value there, or splice raw text in its place.
Mutation = tuple[str, Any]


def _mutations(raw: list[str]) -> st.SearchStrategy[Mutation]:
    return st.one_of(
        st.just(("delete", None)),
        st.sampled_from(H.PLAIN_HOSTILE).map(lambda value: ("value", value)),
        st.sampled_from(raw).map(lambda text: ("raw", text)),
    )


def _apply(document: Any, path: H.DocPath, mutation: Mutation) -> tuple[Any, str | None]:
    kind, value = mutation
    if kind == "delete":
        return H.mutated(document, path, H.DELETE), None
    if kind == "value":
        return H.mutated(document, path, value), None
    return H.mutated(document, path, H.MARKER), value


def _check(name: str, content: bytes, fmt: str) -> None:
    with tempfile.TemporaryDirectory(prefix="replay-tui-hostile-") as folder:
        src = Path(folder) / name
        src.write_bytes(content)
        H.import_or_refuse(src, Path(folder) / "out.jsonl", fmt)


def _byte_damage(data: bytes, cut: int, insert: bytes) -> bytes:
    """The bytes with ``insert`` (non-UTF-8, an escape sequence...) at ``cut``, or cut short there."""
    return data[:cut] + insert if not insert else data[:cut] + insert + data[cut:]


BAD_BYTES = st.sampled_from([b"", b"\xff\xfe", b"\xc3(", b"\x00", b"\x1b]0;owned\x07", b"\xed\xa0\x80"])

# -- vcrpy cassettes ----------------------------------------------------------------------

CASSETTE = H.cassette()
CASSETTE_PATHS = H.paths(CASSETTE)


@FUZZ
@given(path=st.sampled_from(CASSETTE_PATHS), mutation=_mutations(H.RAW_YAML))
def test_cassette_mutations(path: H.DocPath, mutation: Mutation) -> None:
    document, raw = _apply(CASSETTE, path, mutation)
    _check("hostile.yaml", H.yaml_text(document, raw).encode("utf-8", "surrogatepass"), "vcr")


@FUZZ
@given(cut=st.integers(0, H.CASSETTE.stat().st_size), insert=BAD_BYTES)
def test_cassette_bytes(cut: int, insert: bytes) -> None:
    _check("hostile.yaml", _byte_damage(H.CASSETTE.read_bytes(), cut, insert), "vcr")


# -- OpenAI Agents SDK exports ----------------------------------------------------------

AGENT_LINES = H.agents_lines()
AGENT_PATHS = H.paths(AGENT_LINES)


def _agents_text(lines: list[Any], raw: str | None) -> bytes:
    return ("\n".join(H.json_text(line, raw) for line in lines) + "\n").encode("utf-8", "surrogatepass")


@FUZZ
@given(path=st.sampled_from(AGENT_PATHS), mutation=_mutations(H.RAW_JSON))
def test_agents_export_mutations(path: H.DocPath, mutation: Mutation) -> None:
    lines, raw = _apply(AGENT_LINES, path, mutation)
    _check("hostile.agents.jsonl", _agents_text(lines, raw), "openai-agents")


@FUZZ
@given(path=st.sampled_from(AGENT_PATHS), mutation=_mutations(H.RAW_JSON))
def test_agents_export_as_one_document(path: H.DocPath, mutation: Mutation) -> None:
    lines, raw = _apply(AGENT_LINES, path, mutation)
    _check("hostile.agents.json", H.json_text({"data": lines}, raw).encode("utf-8", "surrogatepass"), "openai-agents")


@FUZZ
@given(cut=st.integers(0, H.AGENTS.stat().st_size), insert=BAD_BYTES)
def test_agents_export_bytes(cut: int, insert: bytes) -> None:
    _check("hostile.agents.jsonl", _byte_damage(H.AGENTS.read_bytes(), cut, insert), "openai-agents")


# -- Inspect AI logs --------------------------------------------------------------------

MEMBERS = H.eval_members()
PARSED_MEMBERS = {name: json.loads(data) for name, data in MEMBERS.items()}
MEMBER_PATHS = [path for path in H.paths(PARSED_MEMBERS) if len(path) > 1]
JSON_LOG = H.inspect_json_log(MEMBERS)
JSON_LOG_PATHS = H.paths(JSON_LOG)


def _eval_bytes(members: dict[str, Any], raw: str | None) -> bytes:
    with tempfile.TemporaryDirectory(prefix="replay-tui-hostile-") as folder:
        encoded = {name: H.json_text(value, raw).encode("utf-8", "surrogatepass") for name, value in members.items()}
        return H.write_eval(Path(folder) / "log.eval", encoded).read_bytes()


@FUZZ
@given(path=st.sampled_from(MEMBER_PATHS), mutation=_mutations(H.RAW_JSON))
def test_eval_zip_mutations(path: H.DocPath, mutation: Mutation) -> None:
    members, raw = _apply(PARSED_MEMBERS, path, mutation)
    _check("hostile.eval", _eval_bytes(members, raw), "inspect")


@FUZZ
@given(path=st.sampled_from(JSON_LOG_PATHS), mutation=_mutations(H.RAW_JSON))
def test_inspect_json_log_mutations(path: H.DocPath, mutation: Mutation) -> None:
    log, raw = _apply(JSON_LOG, path, mutation)
    _check("hostile.json", H.json_text(log, raw).encode("utf-8", "surrogatepass"), "inspect")


@FUZZ
@given(cut=st.integers(0, H.EVAL.stat().st_size), insert=BAD_BYTES)
def test_eval_zip_bytes(cut: int, insert: bytes) -> None:
    _check("hostile.eval", _byte_damage(H.EVAL.read_bytes(), cut, insert), "inspect")


# -- every path once: a value of the wrong type ----------------------------------------------


def _wrong_type(value: Any) -> Any:
    """A value of another JSON type than ``value`` (what a writer of the other shape would put there)."""
    if isinstance(value, bool) or value is None:
        return "text"
    if isinstance(value, (int, float)):
        return {"number": value}
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return {"0": value[:1]}
    return 7


def _value_at(document: Any, path: H.DocPath) -> Any:
    for key in path:
        document = document[key]
    return document


def test_every_cassette_path_with_a_wrong_type() -> None:
    for path in CASSETTE_PATHS:
        document = H.mutated(CASSETTE, path, _wrong_type(_value_at(CASSETTE, path)))
        _check("wrong.yaml", H.yaml_text(document).encode(), "vcr")


def test_every_agents_export_path_with_a_wrong_type() -> None:
    for path in AGENT_PATHS:
        lines = H.mutated(AGENT_LINES, path, _wrong_type(_value_at(AGENT_LINES, path)))
        _check("wrong.agents.jsonl", _agents_text(lines, None), "openai-agents")


def test_every_inspect_log_path_with_a_wrong_type() -> None:
    for path in JSON_LOG_PATHS:
        log = H.mutated(JSON_LOG, path, _wrong_type(_value_at(JSON_LOG, path)))
        _check("wrong.json", H.json_text(log).encode(), "inspect")

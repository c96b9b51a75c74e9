"""Hostile variants of the real samples in fixtures/imports/, for the importers' fuzz tests.

A document (parsed JSON or YAML) is mutated at one path: the value there is deleted or
replaced by a hostile one. Hostile values that no serializer writes (NaN, 10**400, a
nesting deeper than any parser allows, YAML tags and alias bombs) are spliced into the
serialized text in place of a marker string.
"""

from __future__ import annotations

import copy
import json
import zipfile
from pathlib import Path
from typing import Any

import pytest

from replay_tui.importers import TraceImportError, import_trace

from .conftest import SAMPLES

DocPath = tuple[str | int, ...]
MARKER = "hostile0marker"
DELETE = object()

ESCAPES = "\x1b]0;owned\x07\x1b[2J\x1b[31mred\u009b1m\u202egnp.exe\u200b\x00\x08\r"
#: Values any JSON or YAML writer can write.
PLAIN_HOSTILE: list[Any] = [
    None,
    True,
    0,
    -1,
    -(2**63),
    2**64,
    1e308,
    -1e-308,
    "",
    ESCAPES,
    "attachment://nowhere",
    "attachment://" + "a" * 5000,
    "x" * 100_000,
    [],
    {},
    [1, "x", None],
    {"key": ESCAPES},
    {"1": {"2": [3]}},
]
#: Raw JSON text, spliced where the marker was: what no writer makes but a file can hold.
RAW_JSON = [
    "NaN",
    "-Infinity",
    "1e400",
    "123456789012345678901234567890",
    "-0",
    "[" * 300 + "]" * 300,
    "[" * 3000 + "]" * 3000,
    '{"a":' * 200 + "1" + "}" * 200,
    '"\\ud800"',  # a lone surrogate
    '"\\u001b[31m"',
]
#: Raw YAML, spliced where the marker was (on one line, in flow style).
RAW_YAML = [
    "!!python/object/apply:os.system ['echo pwned > /tmp/replay-tui-pwned']",
    "!!python/name:os.system",
    "!!binary aGVsbG8=",
    "!!set {a, b}",
    "2026-01-01 00:00:00",
    "2026-01-01",
    ".nan",
    "-.inf",
    "0x7fffffffffffffffffff",
    "{? [a, b] : c}",
    "{1: one, null: two, 2.5: three, true: four}",
    "!!omap [a: 1, b: 2]",
    "[" * 300 + "]" * 300,
    "!<tag:yaml.org,2002:python/tuple> [1, 2]",
    "!custom {x: 1}",
    "&loop [*loop]",
    "'\\x1b[31m'",
    '"\\e]0;owned\\a\\x9b31m"',
]


def paths(value: Any, prefix: DocPath = ()) -> list[DocPath]:
    """Every path into ``value`` (the root excluded), containers before what they hold."""
    found: list[DocPath] = []
    items: Any = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        found.append((*prefix, key))
        found.extend(paths(item, (*prefix, key)))
    return found


def mutated(document: Any, path: DocPath, new: Any) -> Any:
    """A copy of ``document`` with the value at ``path`` replaced by ``new`` (deleted for DELETE)."""
    copied = copy.deepcopy(document)
    parent = copied
    for key in path[:-1]:
        parent = parent[key]
    if new is DELETE:
        del parent[path[-1]]
    else:
        parent[path[-1]] = new
    return copied


def json_text(document: Any, raw: str | None = None) -> str:
    """JSON of ``document``; the marker string (if any) becomes the raw text ``raw``."""
    text = json.dumps(document, ensure_ascii=False)
    return text.replace(json.dumps(MARKER), raw) if raw is not None else text


def yaml_text(document: Any, raw: str | None = None) -> str:
    import yaml

    text = yaml.safe_dump(document, allow_unicode=False, default_flow_style=False, width=1 << 20)
    return text.replace(MARKER, raw) if raw is not None else text


# -- the samples ---------------------------------------------------------------------------

CASSETTE = SAMPLES / "weather.cassette.yaml"
AGENTS = SAMPLES / "weather.agents.jsonl"
EVAL = SAMPLES / "weather.eval"


def cassette() -> Any:
    import yaml

    return yaml.safe_load(CASSETTE.read_text(encoding="utf-8"))


def agents_lines() -> list[Any]:
    return [json.loads(line) for line in AGENTS.read_text(encoding="utf-8").splitlines() if line.strip()]


def eval_members() -> dict[str, bytes]:
    pytest.importorskip("zipfile_zstd")  # the sample's members are zstd-compressed
    import zipfile_zstd  # noqa: F401

    with zipfile.ZipFile(EVAL) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def write_eval(target: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(target, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return target


def inspect_json_log(members: dict[str, bytes]) -> dict[str, Any]:
    """The .json form of the sample log: the header with its samples inline."""
    header = json.loads(members["header.json"])
    samples = [json.loads(data) for name, data in members.items() if name.startswith("samples/")]
    return {**header, "samples": samples}


# -- the verdict ---------------------------------------------------------------------------


def printable(text: str) -> bool:
    """Nothing a terminal would act on or hide (what journal/safe_text would change)."""
    from replay_tui.journal.safe_text import is_safe

    return is_safe(text)


def import_or_refuse(src: Path, out: Path, fmt: str) -> list[Any] | TraceImportError:
    """Import ``src``: it imports (each journal verifies) or is refused by a TraceImportError that names
    the file and says, in printable text, what was expected; a refusal leaves nothing behind."""
    from .helpers import events_of

    try:
        results = import_trace(src, out, format=fmt)
    except TraceImportError as error:
        assert error.path == str(src), error
        assert error.expected and printable(str(error).replace(str(src), "")), repr(str(error))
        assert not out.exists(), f"{out} left behind after: {error}"
        return error
    for result in results:
        assert result.path == out or result.path.parent == out, result.path
        events_of(result.path)
    return results

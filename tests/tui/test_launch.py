"""The command line: bad paths and themes exit 2 with a message before any UI."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from replay_tui.tui.launch import DEMO_JOURNAL, demo_journal_path, resolve_journal
from replay_tui.tui.themes import bundled_themes, check_theme_name, stylesheet_paths, themes_dir

REPO = Path(__file__).resolve().parents[2]


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "from replay_tui.cli import entry_point; entry_point()", *args],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


def missing(tmp: Path) -> Path:
    return tmp / "missing.jsonl"


def empty_file(tmp: Path) -> Path:
    (tmp / "empty.jsonl").write_bytes(b"")
    return tmp / "empty.jsonl"


def empty_directory(tmp: Path) -> Path:
    (tmp / "shards").mkdir()
    return tmp / "shards"


@pytest.mark.parametrize(
    ("make", "expected"),
    [(missing, "no such file or directory"), (empty_file, "is empty"), (empty_directory, "holds no journal shards")],
    ids=["missing", "empty", "empty-directory"],
)
def test_bad_journal_paths_exit_2_before_the_ui(tmp_path: Path, make, expected: str) -> None:
    path = make(tmp_path)
    done = run_cli(str(path))
    assert done.returncode == 2
    assert expected in done.stderr and str(path.name) in done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""


def test_unknown_theme_exits_2_and_lists_the_themes(incident_path: Path) -> None:
    done = run_cli(str(incident_path), "--theme", "neon")
    assert done.returncode == 2
    assert "unknown theme 'neon'" in done.stderr and "high-contrast" in done.stderr


def test_bad_seq_exits_2(incident_path: Path) -> None:
    done = run_cli(str(incident_path), "--seq", "0")
    assert done.returncode == 2 and "--seq 0" in done.stderr


def test_the_journal_is_never_written(incident_path: Path) -> None:
    before = incident_path.read_bytes()
    run_cli(str(incident_path), "--theme", "neon")
    assert incident_path.read_bytes() == before


def test_demo_journal_is_found_in_the_checkout_or_the_wheel() -> None:
    demo = demo_journal_path()
    fixture = REPO / "fixtures" / "journals" / DEMO_JOURNAL
    if fixture.exists():
        assert demo is not None and demo.name == DEMO_JOURNAL
        assert resolve_journal(None) == demo
    else:
        assert demo is None
        with pytest.raises(ValueError, match="bundled demo"):
            resolve_journal(None)


def test_wheel_layout_is_what_the_loaders_look_for() -> None:
    # pyproject force-includes themes/ and fixtures/journals/ under replay_tui/_bundled/.
    text = (REPO / "pyproject.toml").read_text()
    assert '"themes" = "replay_tui/_bundled/themes"' in text
    assert '"fixtures/journals" = "replay_tui/_bundled/journals"' in text
    assert themes_dir() in (REPO / "themes", REPO / "replay_tui" / "_bundled" / "themes")


def test_themes_load_by_name_and_use_only_variables() -> None:
    themes = bundled_themes()
    assert {"dark", "light", "high-contrast"} <= set(themes)
    assert not themes["light"].theme.dark and themes["dark"].theme.dark
    assert check_theme_name("high-contrast") is None and check_theme_name("nord") is None
    variables = [set(t.theme.variables) for t in themes.values()]
    assert all(v == variables[0] for v in variables), "every theme defines the same custom variables"
    literal = re.compile(
        r"#[0-9a-fA-F]{3,8}\b|\b(rgb|rgba|hsl|hsla)\(|\b(red|green|blue|white|black|yellow|magenta|cyan)\b"
    )
    for sheet in stylesheet_paths():
        for number, line in enumerate(sheet.read_text().splitlines(), 1):
            code = line.split("/*")[0]
            if ":" in code and not code.rstrip().endswith("{"):
                value = code.split(":", 1)[1]
                assert not literal.search(value), f"{sheet.name}:{number} uses a literal color: {line.strip()}"

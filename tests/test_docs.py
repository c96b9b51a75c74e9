"""README.md guides and the reference files beside the code hold the rest: every relative link resolves (to
a file that exists, and a #anchor to a heading in it), the README stays short with a table of contents
that matches its sections, and its quick start runs the tests the way CI does."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote

import pytest

from .docs import README, REPO, anchor, anchors, block, headings, links

#: The README stays a guide: about 400 lines, the references live beside the code.
MAX_README_LINES = 420


def _documents() -> list[Path]:
    """README.md and every Markdown file beside the code, the fixtures, the themes and the tests (snapshots excepted)."""
    beside = (path for top in ("replay_tui", "fixtures", "themes", "tests") for path in (REPO / top).rglob("*.md"))
    return [README, *sorted(path for path in beside if "__snapshots__" not in path.parts)]


DOCUMENTS = _documents()


def test_the_reference_files_are_found() -> None:
    names = {path.relative_to(REPO).as_posix() for path in DOCUMENTS}
    assert {"README.md", "replay_tui/journal/FORMAT.md", "replay_tui/cli/COMMANDS.md"} <= names


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda path: path.relative_to(REPO).as_posix())
def test_every_relative_link_resolves(document: Path) -> None:
    text = document.read_text()
    broken = []
    for line, target in links(text):
        if target.startswith(("http://", "https://", "mailto:")):
            continue
        path_part, _, fragment = target.partition("#")
        linked = (document.parent / unquote(path_part)).resolve() if path_part else document
        if not linked.exists():
            broken.append(f"line {line}: {target}: no such file")
        elif fragment and (linked.suffix != ".md" or fragment not in anchors(linked.read_text())):
            broken.append(f"line {line}: {target}: no heading #{fragment} in {linked.name}")
    assert not broken, f"{document.relative_to(REPO)}:\n" + "\n".join(broken)


def test_the_readme_is_a_guide_with_a_table_of_contents() -> None:
    text = README.read_text()
    assert len(text.splitlines()) <= MAX_README_LINES
    contents = block_of_contents(text)
    sections = [title for level, title in headings(text) if level == 2 and title != "Contents"]
    assert [title for title, _ in contents] == sections
    assert [target for _, target in contents] == ["#" + anchor(title) for title in sections]


def block_of_contents(text: str) -> list[tuple[str, str]]:
    """(title, target) of each entry of the README's "## Contents" list."""
    lines = text.split("\n## Contents\n", 1)[1].split("\n## ", 1)[0].splitlines()
    entries = []
    for line in lines:
        if line.startswith("- ["):
            title, _, rest = line[3:].partition("](")
            entries.append((title, rest.rstrip(")")))
    return entries


def test_the_quick_start_runs_the_tests_as_ci_does() -> None:
    """The README's test command is the one .ci/run runs, step for step."""
    command = block(README, "## Quick start", first_line="pip install -e '.[test]' && python -m pytest -q -n 2")
    ci = (REPO / ".ci" / "run").read_text().splitlines()
    steps = [step.strip() for step in command.strip().split("&&")]
    assert all(step in ci for step in steps), steps
    assert ci.index(steps[0]) < ci.index(steps[1])

"""The project's Markdown as the tests read it: sections by heading, fenced blocks, headings, anchors and
links. The tests that run what README.md and the reference files beside the code show read their blocks
through here, so a block that moves is found by its heading, not by an offset."""

from __future__ import annotations

import re
from pathlib import Path
from typing import NamedTuple

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"

_FENCE = re.compile(r"^(```+|~~~+)(\S*)")
_HEADING = re.compile(r"^(#{1,6}) +(.+?) *#*$")
_CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")
_LINK = re.compile(r"\[(?:[^\]\\]|\\.)*\]\(([^)\s]+)(?: \"[^\"]*\")?\)")


class Block(NamedTuple):
    lang: str
    body: str


def _prose_lines(text: str) -> list[tuple[int, str]]:
    """(line number, line) of every line outside fenced code blocks."""
    lines: list[tuple[int, str]] = []
    fence = ""
    for number, line in enumerate(text.splitlines(), 1):
        opened = _FENCE.match(line)
        if fence:
            if opened and opened.group(1).startswith(fence) and not opened.group(2):
                fence = ""
        elif opened:
            fence = opened.group(1)
        else:
            lines.append((number, line))
    return lines


def headings(text: str) -> list[tuple[int, str]]:
    """(level, title) of every heading outside code blocks, in order."""
    found = []
    for _, line in _prose_lines(text):
        match = _HEADING.match(line)
        if match:
            found.append((len(match.group(1)), match.group(2)))
    return found


def anchor(title: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces made hyphens."""
    plain = re.sub(r"[^\w\- ]", "", title.replace("`", "").lower())
    return plain.replace(" ", "-")


def anchors(text: str) -> set[str]:
    """Every heading's anchor (a repeated title gets -1, -2, … as on GitHub)."""
    seen: dict[str, int] = {}
    names = set()
    for _, title in headings(text):
        slug = anchor(title)
        count = seen.get(slug, 0)
        names.add(slug if count == 0 else f"{slug}-{count}")
        seen[slug] = count + 1
    return names


def links(text: str) -> list[tuple[int, str]]:
    """(line number, target) of every Markdown link outside code blocks and code spans."""
    return [
        (number, match.group(1))
        for number, line in _prose_lines(text)
        for match in _LINK.finditer(_CODE_SPAN.sub("", line))
    ]


def section(path: Path, heading: str) -> str:
    """The text of ``path`` from the line ``heading`` (``"## Recording"``) to the next heading of the same
    or a higher level (code blocks in between are part of it)."""
    text = path.read_text()
    level = len(heading) - len(heading.lstrip("#"))
    prose = dict(_prose_lines(text))
    lines = text.splitlines()
    start = next((n for n, line in prose.items() if line.rstrip() == heading), None)
    assert start is not None, f"{path.name} has no heading {heading!r}"
    end = next(
        (
            n
            for n, line in prose.items()
            if n > start and (m := _HEADING.match(line)) is not None and len(m.group(1)) <= level
        ),
        len(lines) + 1,
    )
    return "\n".join(lines[start - 1 : end - 1]) + "\n"


def blocks(text: str) -> list[Block]:
    """Every fenced code block of ``text``: its language (``""`` for none) and its body."""
    found: list[Block] = []
    body: list[str] = []
    fence = lang = ""
    for line in text.splitlines():
        opened = _FENCE.match(line)
        if fence:
            if opened and opened.group(1).startswith(fence) and not opened.group(2):
                found.append(Block(lang, "".join(body)))
                fence = ""
            else:
                body.append(line + "\n")
        elif opened:
            fence, lang, body = opened.group(1), opened.group(2), []
    return found


def block(path: Path, heading: str, *, lang: str | None = None, first_line: str | None = None) -> str:
    """The body of the first fenced block under ``heading`` in ``path`` in language ``lang`` whose first
    line is ``first_line`` (either may be left out)."""
    for found in blocks(section(path, heading)):
        if lang is not None and found.lang != lang:
            continue
        if first_line is not None and found.body.splitlines()[:1] != [first_line]:
            continue
        return found.body
    raise AssertionError(f"{path.name}, {heading!r}: no {lang or ''} block starting {first_line!r}")

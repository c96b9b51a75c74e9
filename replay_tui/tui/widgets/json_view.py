"""A JSON value as foldable, highlighted lines with a cursor (Line API).

Used for the state panes and the event detail. Each line knows the JSON pointer
it shows, so a pane can say which state path is under the cursor. Big values
(long strings, containers with many items) start folded; enter unfolds them.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Iterable

import orjson
from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from ...journal.pointer import child as child_pointer
from ...journal.safe_text import safe, safe_json, safe_json_text
from .component_styles import ComponentStyles

if TYPE_CHECKING:
    from ...analysis.diff import ValueDiff

LONG_STRING = 160
MANY_ITEMS = 40
MAX_LINES = 20_000  # even fully unfolded, a pane never builds more lines than this


@dataclass
class JsonLine:
    pointer: str | None
    parts: list[tuple[str, str]]  # (text, component class or "")
    change: str | None = None  # added / removed / changed
    fold: str | None = None  # pointer that enter folds or unfolds


@dataclass
class JsonDocument:
    """What a JsonView shows: a header of plain lines and a value."""

    value: Any
    header: list[tuple[str, str]] = field(default_factory=list)  # (text, component class)
    diff: ValueDiff | None = None
    side: str = "after"  # which changes this side shows: before -> removed, after -> added
    empty_text: str = "(no value)"


def build_lines(document: JsonDocument, unfolded: set[str], folded: set[str]) -> list[JsonLine]:
    lines = [JsonLine(None, [(safe(text, multiline=False), cls)]) for text, cls in document.header]
    diff = document.diff
    show = {"changed", "removed"} if document.side == "before" else {"changed", "added"}
    paths = diff.paths if diff is not None else ()

    def change_of(pointer: str, collapsed: bool) -> str | None:
        if diff is None:
            return None
        kind = diff.kind_of(pointer)
        if kind in show:
            return kind
        if collapsed and any(p.startswith(pointer + "/") for p in paths):
            return "changed"
        return None

    def is_folded(pointer: str, big: bool) -> bool:
        return (big and pointer not in unfolded) or pointer in folded

    # Iterative, with an explicit stack: a valid journal may nest 1,024 levels, deeper than Python recurses.
    # A stack entry is a finished line (a closing bracket) or a value still to lay out.
    stack: list[JsonLine | tuple[list[tuple[str, str]], Any, str, int, str]] = [([], document.value, "", 0, "")]

    def emit(prefix: list[tuple[str, str]], value: Any, pointer: str, indent: int, comma: str) -> None:
        pad = ("  " * indent, "")
        if isinstance(value, (dict, list)) and value:
            opener, closer = ("{", "}") if isinstance(value, dict) else ("[", "]")
            big = len(value) > MANY_ITEMS
            if is_folded(pointer, big):
                noun = "keys" if isinstance(value, dict) else "items"
                lines.append(
                    JsonLine(
                        pointer,
                        [
                            pad,
                            *prefix,
                            (f"{opener}… {len(value)} {noun} (enter to unfold){closer}{comma}", "json--punct"),
                        ],
                        change_of(pointer, True),
                        fold=pointer,
                    )
                )
                return
            lines.append(
                JsonLine(
                    pointer,
                    [pad, *prefix, (opener, "json--punct")],
                    change_of(pointer, False),
                    fold=pointer if pointer else None,
                )
            )
            items: Iterable[tuple[Any, Any]] = value.items() if isinstance(value, dict) else enumerate(value)
            last = len(value) - 1
            pending: list[JsonLine | tuple[list[tuple[str, str]], Any, str, int, str]] = []
            for number, (key, item) in enumerate(items):
                child = child_pointer(pointer, key)
                key_parts = [(json_text(key) if isinstance(value, dict) else "", "json--key")]
                if isinstance(value, dict):
                    key_parts.append((": ", "json--punct"))
                pending.append((key_parts, item, child, indent + 1, "," if number < last else ""))
                if len(lines) + len(pending) >= MAX_LINES:
                    break
            pending.append(JsonLine(pointer, [pad, (closer + comma, "json--punct")], None))
            stack.extend(reversed(pending))
            return
        text = json_text(value)
        style = (
            "json--string"
            if isinstance(value, str)
            else "json--number"
            if isinstance(value, (int, float)) and not isinstance(value, bool)
            else "json--punct"
        )
        fold = None
        if isinstance(value, str) and len(text) > LONG_STRING:
            fold = pointer
            if is_folded(pointer, True):
                text = f'{text[: LONG_STRING - 40]}…" (+{len(text) - LONG_STRING + 40} chars, enter to unfold)'
        lines.append(JsonLine(pointer, [pad, *prefix, (text + comma, style)], change_of(pointer, False), fold=fold))

    if document.value is None and document.empty_text:
        lines.append(JsonLine(None, [(document.empty_text, "json--punct")]))
        stack.clear()
    while stack and len(lines) < MAX_LINES:
        entry = stack.pop()
        if isinstance(entry, JsonLine):
            lines.append(entry)
        else:
            emit(*entry)
    return lines


def _restore(masked: Any, original: Any, pointer: str) -> Any:
    """``masked`` with the value at ``pointer`` put back from ``original`` (masked keys keep their
    position, so a segment is matched by its index among the keys)."""
    if pointer == "":
        return original
    head, _, rest = pointer[1:].partition("/")
    segment = head.replace("~1", "/").replace("~0", "~")
    if isinstance(masked, list) and isinstance(original, list) and segment.isdigit() and int(segment) < len(masked):
        index = int(segment)
        copy = list(masked)
        copy[index] = _restore(masked[index], original[index], "/" + rest if rest else "")
        return copy
    if isinstance(masked, dict) and isinstance(original, dict) and segment in masked:
        index = list(masked).index(segment)
        original_key = list(original)[index]
        child = _restore(masked[segment], original[original_key], "/" + rest if rest else "")
        return {
            original_key if key == segment else key: child if key == segment else item for key, item in masked.items()
        }
    return masked


def json_text(value: Any) -> str:
    """A key or scalar as JSON text, escaped: JSON leaves bidi, C1 and invisible characters raw."""
    try:
        text = orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()
    except orjson.JSONEncodeError:  # an integer past 64 bits, a value orjson cannot write
        return safe_json(value)
    return safe_json_text(text)


def wrap_lines(lines: list[JsonLine], width: int) -> list[JsonLine]:
    """Lines longer than ``width`` cut into continuation lines that keep their pointer (so the cursor,
    folding, watching and copying still name the value)."""
    wrapped: list[JsonLine] = []
    for line in lines:
        if sum(len(text) for text, _ in line.parts) <= width:
            wrapped.append(line)
            continue
        current: list[tuple[str, str]] = []
        room = width
        for text, cls in line.parts:
            while text:
                piece, text = text[:room], text[room:]
                current.append((piece, cls))
                room -= len(piece)
                if room == 0:
                    wrapped.append(JsonLine(line.pointer, current, line.change, line.fold))
                    current, room = [("  ", "")], width - 2
        if any(text.strip() for text, _ in current):
            wrapped.append(JsonLine(line.pointer, current, line.change, line.fold))
    return wrapped


class JsonView(ScrollView, can_focus=True):
    """Scrollable, foldable JSON with a line cursor."""

    # Here rather than in themes/replay.tcss: read when the first view is mounted, after the first frame
    # (no rule of the app's stylesheet styles a view or its components, so none is outranked).
    DEFAULT_CSS = """
    JsonView {
        background: $surface;
        scrollbar-size-vertical: 1;
    }
    JsonView > .json--key { color: $json-key; }
    JsonView > .json--string { color: $json-string; }
    JsonView > .json--number { color: $json-number; }
    JsonView > .json--punct { color: $foreground-muted; }
    JsonView > .json--added { background: $success 25%; }
    JsonView > .json--removed { background: $error 25%; }
    JsonView > .json--changed { background: $warning 25%; }
    JsonView > .json--watched { text-style: underline; }
    JsonView > .json--cursor { background: $timeline-cursor-background; color: $timeline-cursor-foreground; }
    JsonView > .json--status-ok { color: $success; }
    JsonView > .json--status-bad { color: $error; text-style: bold; }
    """

    COMPONENT_CLASSES = {
        "json--key",
        "json--string",
        "json--number",
        "json--punct",
        "json--added",
        "json--removed",
        "json--changed",
        "json--watched",
        "json--cursor",
        "json--status-ok",
        "json--status-bad",
    }

    BINDINGS = [
        Binding("o", "toggle_wrap", "Wrap", show=False),
        Binding("j,down", "cursor_down", "Down", show=False),
        Binding("k,up", "cursor_up", "Up", show=False),
        Binding("g,home", "first", "First", show=False),
        Binding("G,end", "last", "Last", show=False),
        Binding("pagedown", "page_down", "Page down", show=False),
        Binding("pageup", "page_up", "Page up", show=False),
        Binding("enter,f", "toggle_fold", "Fold/unfold"),
        Binding("u", "reveal_secret", "Reveal secret", show=False),
    ]

    class SecretsShown(Message):
        """A view started or stopped showing a flagged value unmasked (the header says so)."""

        def __init__(self, view: JsonView, shown: bool) -> None:
            super().__init__()
            self.view = view
            self.shown = shown

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.document = JsonDocument(None, empty_text="")
        self.lines: list[JsonLine] = []
        self.cursor = 0
        self.watched: str | None = None
        self._unfolded: set[str] = set()
        self._folded: set[str] = set()
        self._style = ComponentStyles(self)
        self.source = self.document  # what was shown, before flagged values were masked
        self._revealed: set[str] = set()  # pointers the user unmasked with u

    def show(self, document: JsonDocument, *, keep_folds: bool = False) -> None:
        """Show ``document`` with every value the secret scan flags masked (u reveals one)."""
        pointer = self.cursor_pointer
        if document.value is not self.source.value and self._revealed:
            self._revealed.clear()  # another value: reveals never carry over
            self.post_message(self.SecretsShown(self, False))
        self.source = document
        self.document = self._masked(document)
        if not keep_folds:
            self._unfolded.clear()
            self._folded.clear()
        self._rebuild(pointer)

    def _masked(self, document: JsonDocument) -> JsonDocument:
        from ...analysis.secrets import mask_secrets  # the detector tables load with the first document shown

        masked, count = mask_secrets(document.value)
        if not count:
            return document
        for pointer in self._revealed:
            masked = _restore(masked, document.value, pointer)
        hidden = "shown" if self._revealed else "masked"
        note = (f"{count} value(s) flagged by the secret scan are {hidden}; u on a value reveals it", "json--punct")
        return replace(document, value=masked, header=[*document.header, note])

    def action_reveal_secret(self) -> None:
        """Unmask (or mask again) the value under the cursor, on purpose."""
        pointer = self.cursor_pointer
        if pointer is None:
            return
        was_shown = bool(self._revealed)
        self._revealed ^= {pointer}
        self.document = self._masked(self.source)
        self._rebuild(pointer)
        if bool(self._revealed) != was_shown:
            self.post_message(self.SecretsShown(self, bool(self._revealed)))

    @property
    def secrets_shown(self) -> bool:
        return bool(self._revealed)

    wrap = False  # o: long lines continue below instead of running off to the right

    def action_toggle_wrap(self) -> None:
        pointer = self.cursor_pointer
        self.wrap = not self.wrap
        self.scroll_to(x=0, animate=False, immediate=True)
        self._rebuild(pointer)
        self.notify(
            "long lines wrap (o: one line each, ←/→ scroll)" if self.wrap else "one line each: ←/→ scroll (o wraps)",
            timeout=3,
        )

    def on_resize(self) -> None:
        if self.wrap:
            self._rebuild(self.cursor_pointer)

    def _rebuild(self, keep_pointer: str | None = None) -> None:
        self.lines = build_lines(self.document, self._unfolded, self._folded)
        pane = self.scrollable_content_region.width
        if self.wrap and pane > 1:
            self.lines = wrap_lines(self.lines, pane - 1)
        width = max((sum(len(text) for text, _ in line.parts) for line in self.lines), default=0)
        self.virtual_size = Size(width + 1, len(self.lines))
        if keep_pointer is not None:
            for number, line in enumerate(self.lines):
                if line.pointer == keep_pointer:
                    self.cursor = number
                    break
        self.cursor = max(0, min(self.cursor, len(self.lines) - 1))
        self.refresh()

    @property
    def cursor_pointer(self) -> str | None:
        if 0 <= self.cursor < len(self.lines):
            return self.lines[self.cursor].pointer
        return None

    def set_watched(self, pointer: str | None) -> None:
        self.watched = pointer
        self.refresh()

    # -- actions ----------------------------------------------------------
    def _move(self, line: int) -> None:
        if not self.lines:
            return
        self.cursor = max(0, min(line, len(self.lines) - 1))
        height = max(1, self.scrollable_content_region.height)
        top = self.scroll_offset.y
        if self.cursor < top:
            self.scroll_to(y=self.cursor, animate=False, immediate=True)
        elif self.cursor >= top + height:
            self.scroll_to(y=self.cursor - height + 1, animate=False, immediate=True)
        self.refresh()

    def action_cursor_down(self) -> None:
        self._move(self.cursor + 1)

    def action_cursor_up(self) -> None:
        self._move(self.cursor - 1)

    def action_first(self) -> None:
        self._move(0)

    def action_last(self) -> None:
        self._move(len(self.lines) - 1)

    def action_page_down(self) -> None:
        self._move(self.cursor + max(1, self.scrollable_content_region.height - 1))

    def action_page_up(self) -> None:
        self._move(self.cursor - max(1, self.scrollable_content_region.height - 1))

    def action_toggle_fold(self) -> None:
        if not self.lines:
            return
        pointer = self.lines[self.cursor].fold
        if pointer is None:
            return
        line = self.lines[self.cursor]
        currently_folded = "enter to unfold" in line.parts[-1][0]
        if currently_folded:
            self._unfolded.add(pointer)
            self._folded.discard(pointer)
        else:
            self._folded.add(pointer)
            self._unfolded.discard(pointer)
        self._rebuild(pointer)

    def unfold_all(self) -> None:
        """Unfold every folded value (the detail's `F`)."""
        for line in self.lines:
            if line.fold is not None:
                self._unfolded.add(line.fold)
        self._folded.clear()
        self._rebuild(self.cursor_pointer)

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is not None:
            self._move(self.scroll_offset.y + offset.y)

    # -- rendering --------------------------------------------------------
    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._style.clear()

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        row = scroll_y + y
        width = self.scrollable_content_region.width
        base = self.rich_style
        if row >= len(self.lines):
            return Strip.blank(width, base)
        line = self.lines[row]
        if line.change:
            base = base + self._style(f"json--{line.change}")
        if self.watched is not None and line.pointer == self.watched:
            base = base + self._style("json--watched")
        overlay = self._style("json--cursor") if row == self.cursor and self.has_focus else Style()
        segments = [Segment(text, base + (self._style(cls) if cls else Style()) + overlay) for text, cls in line.parts]
        return Strip(segments).crop_extend(scroll_x, scroll_x + width, base + overlay)

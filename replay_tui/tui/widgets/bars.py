"""The run header (run id, agent, chain status, environment) and the status bar."""

from __future__ import annotations

from typing import Any

from textual.content import Content
from textual.widgets import Static

from ...journal import Event
from ...journal.safe_text import safe_line
from ..format import short_hash


def _brief(value: Any, depth: int = 0) -> str:
    """A scalar as text; an object by its most telling member (hash, commit, version, name)."""
    if depth > 4:  # a hostile environment may nest {"name": {"name": …}} a thousand levels deep
        return "…"
    if isinstance(value, dict):
        for key in ("commit", "hash", "version", "name", "id"):
            if key in value:
                text = _brief(value[key], depth + 1)
                if key == "commit":
                    text = text[:10] + ("+dirty" if value.get("dirty") else "")
                if key == "version" and value.get("implementation"):
                    text = f"{value['implementation']} {text}"
                return text
        return ",".join(f"{k}={_brief(v, depth + 1)}" for k, v in list(value.items())[:3])
    if isinstance(value, str) and value.startswith("sha256:"):
        return short_hash(value)
    return safe_line(str(value)[:200], 80)


def environment_summary(environment: Any) -> str:
    """The fingerprint in one line: revision, runtime, locale/tz, flags, lockfile, prompts."""
    if not isinstance(environment, dict):
        return "no environment recorded"
    parts = []
    if environment.get("code_revision"):
        parts.append(f"rev {_brief(environment['code_revision'])}")
    if environment.get("runtime"):
        parts.append(_brief(environment["runtime"]))
    place = "/".join(_brief(environment[key]) for key in ("locale", "timezone") if environment.get(key))
    if place:
        parts.append(place)
    flags = environment.get("feature_flags")
    if isinstance(flags, dict) and flags:
        on = [name for name, value in flags.items() if value]
        parts.append(f"flags {','.join(on) or 'none on'}")
    for key, label in (("lockfile_hash", "lock"), ("prompt_bundle_hash", "prompts"), ("tool_schema_hash", "tools")):
        if environment.get(key):
            parts.append(f"{label} {_brief(environment[key])}")
    return " · ".join(parts) or "empty environment"


def imported_summary(imported: dict[str, Any]) -> str:
    """Where an imported journal came from and how faithful it is, in one line."""
    raw_fidelity = imported.get("fidelity")
    fidelity: dict[str, Any] = raw_fidelity if isinstance(raw_fidelity, dict) else {}
    label = str(fidelity.get("label") or "fidelity unknown")
    if fidelity.get("reason"):
        label += f": {fidelity['reason']}"
    name = str(imported.get("file_name") or "?")[:200]
    return f"imported from {name} ({imported.get('format')}; integrity from import on) · {label}"


class RunHeader(Static):
    """Two lines: who ran (run id, agent, chain) and where (environment, events)."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id)
        self.run_id = "…"
        self.agent = "…"
        self.environment = ""
        self.chain = ("checking", "checking the hash chain…")
        self.events = "opening…"
        self.journal_name = ""
        self.secrets_shown = False  # a flagged value is unmasked (u) in a pane

    def set_first_event(self, event: Event | None, journal_name: str) -> None:
        self.journal_name = journal_name
        if event is not None:
            self.run_id = event.run_id
            if event.kind == "run.started":
                self.agent = str(event.payload.get("agent"))
                self.environment = environment_summary(event.payload.get("environment"))
                imported = event.payload.get("imported")
                if isinstance(imported, dict):  # written by replay-tui import: its chain starts at the import
                    self.agent = self.agent or "none recorded"
                    self.environment = imported_summary(imported)
            else:
                self.agent = "unknown (first event is not run.started)"
                self.environment = "not recorded"
        self._update()

    def set_chain(self, status: str, summary: str) -> None:
        self.chain = (status, summary)
        self._update()

    def set_events(self, text: str) -> None:
        self.events = text
        self._update()

    def set_secrets_shown(self, shown: bool) -> None:
        self.secrets_shown = shown
        self._update()

    def _update(self) -> None:
        """The two lines, assembled from styled parts: journal text is never markup, and parsing markup four
        times before the first frame took 5 ms (``Content.assemble`` makes the same spans at a fiftieth)."""
        status, summary = self.chain
        style = {"verified": "$success", "broken": "$error", "error": "$error", "absent": "$warning"}.get(
            status, "$foreground-muted"
        )
        first = Content.assemble(
            (safe_line(self.run_id, 80), "b"),
            "  agent ",
            (safe_line(self.agent, 120), "b"),
            "  chain ",
            (safe_line(summary), style),
            "  ",
            (safe_line(self.journal_name), "dim"),
        )
        environment = safe_line(self.environment) if self.environment else "…"
        # Key facts first (event count, following, secrets shown): a narrow terminal cuts the environment.
        shown = ("  ·  ", ("secrets shown", "b $error")) if self.secrets_shown else ()
        second = Content.assemble(safe_line(self.events), *shown, "  ·  env ", environment)
        self.update(Content("\n").join([first, second]))


class StatusBar(Static):
    """One line at the bottom: what just happened, or what the keys do."""

    DEFAULT_TEXT = "? help  / search  n/N next/prev hit  : goto seq  e next error  d divergence  w watch path  tab next pane  q quit"

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(self.DEFAULT_TEXT, id=id, markup=False)

    def say(self, text: str) -> None:
        self.update(safe_line(text) if text else self.DEFAULT_TEXT)  # messages may quote journal text

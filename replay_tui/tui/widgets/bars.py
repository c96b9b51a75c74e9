"""The run header (run id, agent, chain status, environment) and the status bar."""

from __future__ import annotations

from typing import Any

from textual.content import Content
from textual.widgets import Static

from ...journal import Event
from ..format import short_hash


def environment_summary(environment: Any) -> str:
    """The fingerprint in one line: revision, runtime, locale/tz, flags, lockfile."""
    if not isinstance(environment, dict):
        return "no environment recorded"
    parts = []
    if environment.get("code_revision"):
        parts.append(f"rev {environment['code_revision']}")
    if environment.get("runtime"):
        parts.append(str(environment["runtime"]))
    place = "/".join(str(environment[key]) for key in ("locale", "timezone") if environment.get(key))
    if place:
        parts.append(place)
    flags = environment.get("feature_flags")
    if isinstance(flags, dict) and flags:
        on = [name for name, value in flags.items() if value]
        parts.append(f"flags {','.join(on) or 'none on'}")
    if environment.get("lockfile_hash"):
        parts.append(f"lock {short_hash(environment['lockfile_hash'])}")
    return " · ".join(parts) or "empty environment"


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

    def set_first_event(self, event: Event | None, journal_name: str) -> None:
        self.journal_name = journal_name
        if event is not None:
            self.run_id = event.run_id
            if event.kind == "run.started":
                self.agent = str(event.payload.get("agent"))
                self.environment = environment_summary(event.payload.get("environment"))
            else:
                self.agent = "unknown (first event is not run.started)"
        self._update()

    def set_chain(self, status: str, summary: str) -> None:
        self.chain = (status, summary)
        self._update()

    def set_events(self, text: str) -> None:
        self.events = text
        self._update()

    def _update(self) -> None:
        status, summary = self.chain
        style = {"verified": "$success", "broken": "$error", "error": "$error", "absent": "$warning"}.get(status, "$foreground-muted")
        first = Content.from_markup(
            f"[b]$run[/b]  agent [b]$agent[/b]  chain [{style}]$summary[/]  [dim]$name[/dim]",
            run=self.run_id,
            agent=self.agent,
            summary=summary,
            name=self.journal_name,
        )
        second = Content.from_markup("env $env  ·  $events", env=self.environment or "…", events=self.events)
        self.update(Content("\n").join([first, second]))


class StatusBar(Static):
    """One line at the bottom: what just happened, or what the keys do."""

    DEFAULT_TEXT = "? help  / search  n/N next/prev hit  : goto seq  e next error  d divergence  w watch path  tab next pane  q quit"

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(self.DEFAULT_TEXT, id=id, markup=False)

    def say(self, text: str) -> None:
        self.update(text or self.DEFAULT_TEXT)

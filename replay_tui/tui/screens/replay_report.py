"""`v`: everything a finished replay said - nothing the child reported is dropped.

Headline, divergence summary, isolation in force, refused connections, the
recorded-vs-current environment differences, the child's error and traceback,
and the last lines of its stderr and stdout.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.content import Content
from textual.screen import Screen
from textual.widgets import Footer, Static

from ...journal.safe_text import safe
from ...replay.parent.outcome import describe_exit
from ...replay.parent.runner import CRASHED, FAILED, MATCH, TIMEOUT
from ..controllers.replay import ReplayResult
from ..widgets import replay_format

SHOWN_LINES = 40


def report_sections(result: ReplayResult) -> list[tuple[str, list[str]]]:
    """(title, lines) of the report, in reading order."""
    outcome = result.outcome
    sections: list[tuple[str, list[str]]] = []
    summary = [outcome.headline()]
    timing = []
    if outcome.child_startup_s is not None:
        timing.append(f"start-up {replay_format.elapsed_text(outcome.child_startup_s)}")
    if outcome.replay_s is not None:
        rate = f", {outcome.events_per_s:,.0f} events/s" if outcome.events_per_s else ""
        timing.append(f"replay loop {replay_format.elapsed_text(outcome.replay_s)}{rate}")
    summary.append(f"child: {', '.join(timing + [describe_exit(outcome.child_exit)])}")
    summary.append(f"agent: {result.request.agent or 'as recorded in run.started'}")
    if outcome.status == MATCH and outcome.experiment is None:
        summary.append(
            f"checked: {outcome.state_checks} state hashes, {outcome.observations_served} observations served from the journal"
        )
    if outcome.out:
        summary.append(f"experiment journal: {outcome.out}")
    sections.append(("Result", summary))
    if outcome.error:
        error = outcome.error
        lines = [f"{error.get('kind')}: {error.get('message')}"]
        lines += list(error.get("traceback") or [])[-SHOWN_LINES:]
        sections.append(("Child error", lines))
    if outcome.divergence is not None:
        lines = [
            line.replace("(see --json)", "(d shows the whole chain)")
            for line in outcome.divergence.to_text().splitlines()
        ]
        sections.append(("Divergence (d opens the divergence view)", lines[:SHOWN_LINES]))
    if outcome.experiment:
        experiment = outcome.experiment
        lines = [str(experiment.get("summary"))]
        alignment = experiment.get("alignment") or {}
        if alignment.get("differences"):
            lines.append(
                f"{alignment['differences']} differing events: {alignment.get('changed', 0)} changed, "
                f"{alignment.get('only_a', 0)} only recorded, {alignment.get('only_b', 0)} only new (c compares)"
            )
        lines.append(f"live calls: {len(outcome.live_calls)}")
        sections.append(("Experiment", lines))
    isolation = (
        [outcome.isolation.summary]
        if outcome.isolation
        else ["unknown: the child ended before it reported its isolation"]
    )
    if outcome.refusals:
        isolation.append(f"refused network access ({len(outcome.refusals)}):")
        isolation += [f"  {refusal}" for refusal in outcome.refusals[:20]]
    else:
        isolation.append("refused network access: none attempted")
    sections.append(("Isolation", isolation))
    if result.environment is not None:
        sections.append(("Environment: recorded vs current code", result.environment.lines()))
    stderr = outcome.stderr_tail[-SHOWN_LINES:]
    sections.append(("Child stderr (last lines)", stderr or ["(empty)"]))
    if outcome.stdout_tail:
        sections.append(("Child stdout (last lines)", outcome.stdout_tail[-SHOWN_LINES:]))
    return sections


class ReplayReportScreen(Screen[None]):
    BINDINGS = [
        Binding("escape,q,v", "close", "Back"),
        Binding("d", "divergence", "Divergence"),
        Binding("c", "compare", "Compare"),
    ]
    DEFAULT_CSS = """
    ReplayReportScreen #report { padding: 0 1; background: $surface; }
    ReplayReportScreen .report-title { color: $accent; text-style: bold; margin-top: 1; }
    ReplayReportScreen .report-title.-bad { color: $error; }
    ReplayReportScreen .report-body { color: $foreground; }
    """

    def __init__(self, result: ReplayResult) -> None:
        super().__init__()
        self.result = result

    def compose(self) -> ComposeResult:
        bad = self.result.outcome.status in (CRASHED, TIMEOUT, FAILED)
        with VerticalScroll(id="report"):
            for title, lines in report_sections(self.result):
                heading = Static(Content(title), classes="report-title")
                if bad and title in ("Result", "Child error", "Child stderr (last lines)"):
                    heading.add_class("-bad")
                yield heading
                yield Static(Content(safe("\n".join(lines), multiline=True)), classes="report-body")  # journal text
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#report").focus()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "divergence":
            return self.result.outcome.divergence is not None
        if action == "compare":
            return bool(self.result.outcome.out)
        return True

    def action_close(self) -> None:
        self.dismiss()

    def action_divergence(self) -> None:
        self.dismiss()
        self.app.screen_stack[0].action_divergence()  # type: ignore[attr-defined]

    def action_compare(self) -> None:
        self.dismiss()
        self.app.screen_stack[0].action_compare_last()  # type: ignore[attr-defined]

"""Exporting the incident report (palette → Export): ask where, then write it as a child job
(``jobs/export.py``), which in a thread would take the interpreter lock from the UI."""

from __future__ import annotations

import time
from pathlib import Path

from textual.worker import get_current_worker

from ...jobs import JobCancelled, JobError, JobRun
from ..messages import Notice
from . import ScreenParts


def default_report_path(journal_path: Path) -> Path:
    """``session.jsonl`` → ``session.report.html`` beside it; a shard directory ``run/`` → ``run.report.html``."""
    name = journal_path.name
    for suffix in (".jsonl.gz", ".jsonl"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
            break
    return journal_path.with_name(f"{name}.report.html")


def report_format(target: Path) -> str:
    return "md" if target.suffix.lower() in (".md", ".markdown") else "html"


class ExportController:
    """Asks for the report's path and writes it without holding up the UI."""

    def __init__(self, parts: ScreenParts) -> None:
        self.parts = parts

    def ask(self) -> None:
        from ..screens.prompt import PromptScreen  # a dialog: loaded when first opened, not for the first frame

        if self.parts.indexing():
            self.parts.status.say("still indexing: export once the journal is read")
            return

        def chosen(text: str | None) -> None:
            if text is None or not text.strip():
                return
            target = Path(text.strip()).expanduser()
            self.export(target, report_format(target))

        default = default_report_path(self.parts.journal.path)
        hint = "where to write it: .html (self-contained, loads nothing) or .md · enter writes · escape cancels"
        prompt = PromptScreen("Export the incident report", hint, value=str(default), placeholder=str(default))
        self.parts.app.push_screen(prompt, chosen)

    def export(self, target: Path, fmt: str) -> None:
        self.parts.run_thread(lambda: self._export(target, fmt), group="export")

    def _export(self, target: Path, fmt: str) -> None:
        from ...jobs.export import ExportJob, ExportRequest  # export and stats load on the first export

        worker = get_current_worker()
        started = time.perf_counter()
        post = self.parts.post_message
        post(Notice(f"export: writing {target}… (the app stays usable)"))
        request = ExportRequest(str(self.parts.journal.path), str(target), fmt)
        try:
            summary = JobRun(ExportJob(), request, cancelled=lambda: worker.is_cancelled).result()
        except JobCancelled:
            return
        except JobError as error:
            reason = str(error).removeprefix("replay-tui export: ").removeprefix("replay-tui: ")
            post(Notice(f"export failed: {reason}", "error"))
            return
        post(Notice(f"incident report: {summary} in {time.perf_counter() - started:.1f} s", "information"))
        self.parts.app.call_from_thread(self.parts.app.notify, str(target), title="incident report written", timeout=8)

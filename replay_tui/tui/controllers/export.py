"""Exporting the incident report (palette → Export): ask where, then write it in a child job."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from textual.worker import get_current_worker

from ..messages import Notice
from ..screens.prompt import PromptScreen
from . import ScreenParts

_EXPORT_CHILD = "import os, sys\nos.nice(10)\nfrom replay_tui.cli import main\nsys.exit(main(sys.argv[1:]))\n"


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

    def ask(self, *, indexing: bool) -> None:
        if indexing:
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
        self.parts.run_worker(lambda: self._export(target, fmt), thread=True, exclusive=True, group="export",
                              exit_on_error=False)

    def _export(self, target: Path, fmt: str) -> None:
        worker = get_current_worker()
        started = time.perf_counter()
        post = self.parts.post_message
        post(Notice(f"export: writing {target}… (the app stays usable)"))
        argv = [sys.executable, "-c", _EXPORT_CHILD, "export", str(self.parts.journal.path), "--format", fmt,
                "-o", str(target)]
        process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        while True:
            try:
                out, err = process.communicate(timeout=0.2)
                break
            except subprocess.TimeoutExpired:
                if worker.is_cancelled:
                    process.kill()
                    process.communicate()
                    return
        if process.returncode != 0:
            why = (err.decode(errors="replace").strip().splitlines() or [f"exit status {process.returncode}"])[-1]
            reason = why.removeprefix("replay-tui export: ").removeprefix("replay-tui: ")
            post(Notice(f"export failed: {reason}", "error"))
            return
        summary = out.decode(errors="replace").strip().splitlines()[-1] if out.strip() else f"wrote {target}"
        post(Notice(f"incident report: {summary} in {time.perf_counter() - started:.1f} s", "information"))
        self.parts.app.call_from_thread(self.parts.app.notify, str(target), title="incident report written", timeout=8)

"""Write the incident report (child job): a big journal's report reads and hashes every line."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from ..analysis.export import ExportError, build_report, summary_line, write_report
from ..journal import open_journal
from ..journal.progress import CancelCheck, ProgressCallback
from ..replay.parent.results import load_replay_result
from .core import Job, JobError

STEPS = 1000  # export reports a fraction; progress counts thousandths


@dataclass(frozen=True)
class ExportRequest:
    path: str
    output: str
    format: str  # html | md
    replay_result: str | None = None


class ExportJob(Job[ExportRequest, str]):
    """The result is the one-line summary (what was written, the failing step, what was masked)."""

    name = "export"
    in_child = True

    def run(self, request: ExportRequest, progress: ProgressCallback, cancelled: CancelCheck) -> str:
        journal = open_journal(request.path)
        try:
            replay = load_replay_result(request.replay_result, request.path) if request.replay_result else None
            report = build_report(
                journal,
                replay=replay,
                progress=lambda _stage, fraction: progress(round(fraction * STEPS), STEPS),
                cancelled=cancelled,
            )
            size = write_report(report, request.output, "md" if request.format == "md" else "html")
        except ExportError as error:
            raise JobError(str(error)) from None
        finally:
            journal.close()
        return summary_line(report, request.output, size, request.format)

    def request_to_json(self, request: ExportRequest) -> Any:
        return asdict(request)

    def request_from_json(self, data: Any) -> ExportRequest:
        return ExportRequest(str(data["path"]), str(data["output"]), str(data["format"]), data.get("replay_result"))

    def result_to_json(self, result: str) -> Any:
        return result

    def result_from_json(self, data: Any) -> str:
        return str(data)

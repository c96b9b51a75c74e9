"""Scan the first events of a journal for secrets redaction missed (child job)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from ..analysis.secrets import scan_events
from ..journal import open_journal
from ..journal.progress import CancelCheck, ProgressCallback
from .core import Job


@dataclass(frozen=True)
class SecretScanRequest:
    path: str
    end: int  # scan positions [0, end): the events indexed when the app asked


class SecretScanJob(Job[SecretScanRequest, list[int]]):
    """A million events take about 20 s of CPU: in a thread that would hold the UI's interpreter lock."""

    name = "secret-scan"
    in_child = True

    def run(self, request: SecretScanRequest, progress: ProgressCallback, cancelled: CancelCheck) -> list[int]:
        journal = open_journal(request.path)
        try:
            report = scan_events(
                journal.events(0, request.end), total=request.end, progress=progress, cancelled=cancelled
            )
        finally:
            journal.close()
        return sorted(report.flagged_seqs)

    def request_to_json(self, request: SecretScanRequest) -> Any:
        return asdict(request)

    def request_from_json(self, data: Any) -> SecretScanRequest:
        return SecretScanRequest(str(data["path"]), int(data["end"]))

    def result_to_json(self, result: list[int]) -> Any:
        return result

    def result_from_json(self, data: Any) -> list[int]:
        return [int(seq) for seq in data]

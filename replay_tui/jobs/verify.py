"""Verify the hash chain (child job): the run header's one-line verdict."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from ..journal.progress import CancelCheck, ProgressCallback
from .core import Job


@dataclass(frozen=True)
class VerifyRequest:
    path: str


@dataclass(frozen=True)
class ChainResult:
    status: str  # verified | absent | broken | error | cancelled
    summary: str
    fault_seq: int | None = None


def result_of(report: dict[str, Any]) -> ChainResult:
    """The header's one-line verdict from a VerifyReport.to_json() object."""
    fault = report.get("fault")
    summary = report.get("summary")  # verify's own one-liner: faults, "not closed", "sealed by key"
    if fault:
        where = f"seq {fault['seq']}" if fault.get("seq") is not None else f"line {fault.get('line')}"
        return ChainResult("broken", summary or f"✗ {fault['kind'].replace('_', ' ')} at {where}", fault.get("seq"))
    if report.get("chain") == "absent":
        return ChainResult("absent", summary or f"no hash chain ({report.get('dialect')} dialect)")
    return ChainResult("verified", summary or f"✓ verified ({report.get('events', 0):,} events)")


class VerifyJob(Job[VerifyRequest, ChainResult]):
    """``verify_journal`` reads and hashes every line (and starts a worker pool): a child job."""

    name = "verify"
    in_child = True

    def run(self, request: VerifyRequest, progress: ProgressCallback, cancelled: CancelCheck) -> ChainResult:
        from ..journal.verify import verify_journal  # in the child: the app does not load the verifier

        return result_of(verify_journal(request.path).to_json())

    def request_to_json(self, request: VerifyRequest) -> Any:
        return asdict(request)

    def request_from_json(self, data: Any) -> VerifyRequest:
        return VerifyRequest(str(data["path"]))

    def result_to_json(self, result: ChainResult) -> Any:
        return asdict(result)

    def result_from_json(self, data: Any) -> ChainResult:
        return ChainResult(str(data["status"]), str(data["summary"]), data.get("fault_seq"))

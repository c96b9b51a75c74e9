"""Corpus replay through the fork server, beside the bare interpreter start, on two corpora, in one run.

    python tests/bench/bench_corpus.py [--journals N] [--jobs J] [--rounds R] [--keep DIR] [--no-plain]

Two corpora of ``--journals`` journals each (default 100):

* ``refund``: journals recorded by the real harness with the corpus's own recorder (``python -m
  fixtures.corpus.record --count N``: the refund-desk agent over N different orders, 15 events each);
* ``crm``: copies of ``fixtures/journals/crm.jsonl`` (the CRM incident agent, 175 events).

``--keep DIR`` keeps (and reuses) them. Each round replays each corpus strictly through ``replay_corpus``
(what ``replay-tui replay DIR --jobs J`` runs) with the fork server (one warm interpreter forks a fresh
sandboxed child per journal) and, unless ``--no-plain``, with a new interpreter per journal
(``--no-fork-server``), and times a bare interpreter start (``python -c pass``, 20 of them) between them:
the baseline is measured in the same run, interleaved, so a loaded machine inflates it and the corpus alike
(and the verdict line says when the load makes the ratio unquotable). Every replay must match. Modules are
compiled first (``honest.run_compiled``), as after a pip install.

Figures, medians over ``--rounds`` (default 3), for each corpus:

* ``ratio_wall``: (seconds x jobs / journals) / the bare start's wall time, the issue's "bare starts per
  journal per core";
* ``ratio_cpu``: (CPU of the whole run, this process and every child, / journals) / the bare start's CPU;
* ``child_phases``: what a forked child does, inside the sandbox, and what it costs (its own report, median
  over every journal): entering the sandbox, the socket guard and hello, indexing its copy of the journal,
  importing the agent (agent code: it runs inside), the tape and the harness, the agent's run, the result.

Target (issue 30, item 2): at most 2 by wall and by CPU on both corpora, at load under 1; the moonshot is 1.
The last line is one JSON object; the line before it says whether the load let the figures be quoted.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))
import honest  # noqa: E402

ROOT = honest.ROOT
sys.path.insert(0, str(ROOT))

from fixtures.corpus.record import generated_runs, record_one  # noqa: E402
from replay_tui.replay.corpus.executors import LocalExecutor  # noqa: E402
from replay_tui.replay.corpus.runs import find_journals, replay_corpus  # noqa: E402
from replay_tui.replay.protocol import ReplaySpec  # noqa: E402

CRM = ROOT / "fixtures" / "journals" / "crm.jsonl"
BARE_STARTS = 20


def refund_corpus(directory: Path, count: int) -> list[Path]:
    existing = find_journals(directory, "*.replay.jsonl") if directory.is_dir() else []
    if len(existing) < count:
        for run in generated_runs(count):
            if not (directory / f"{run.name}.replay.jsonl").exists():
                record_one(run, directory)
    return find_journals(directory, "*.replay.jsonl")[:count]


def crm_corpus(directory: Path, count: int) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    for number in range(count):
        copy = directory / f"crm-{number:04d}.jsonl"
        if not copy.exists() or copy.stat().st_size != CRM.stat().st_size:
            shutil.copyfile(CRM, copy)
    return sorted(directory.glob("crm-*.jsonl"))[:count]


def bare_start() -> honest.Seconds:
    """Mean wall and CPU of ``python -c pass`` (the interpreter start every plain child pays)."""
    before_cpu, started = honest.children_cpu(), time.perf_counter()
    for _ in range(BARE_STARTS):
        subprocess.run([sys.executable, "-c", "pass"], check=True)
    return honest.Seconds(
        (time.perf_counter() - started) / BARE_STARTS, (honest.children_cpu() - before_cpu) / BARE_STARTS
    )


def replayed(journals: list[Path], jobs: int, fork_server: bool, phases: list[dict[str, Any]]) -> honest.Seconds:
    """Wall and CPU of one corpus replay: this process, and every child, reaped (the fork server reaps its
    children, so theirs is in its own) or not: a plain child under bubblewrap runs below bwrap's own init,
    whose CPU getrusage never sees, so a plain run adds what each child reports of itself."""
    before_cpu = time.process_time() + honest.children_cpu()
    result = replay_corpus(
        journals,
        executor=LocalExecutor(jobs, fork_server=fork_server),
        spec_for=lambda journal: ReplaySpec(journal=journal, sys_path=[str(ROOT)]),
    )
    cpu = time.process_time() + honest.children_cpu() - before_cpu
    if not fork_server:
        cpu += sum(entry.outcome.child_cpu_s or 0.0 for entry in result.entries if _under_bwrap(entry.outcome))
    failed = [entry for entry in result.entries if not entry.ok]
    if failed:
        raise SystemExit(
            f"bench_corpus: {len(failed)} journal(s) did not match, e.g. {failed[0].journal}: {failed[0].outcome.headline()}"
        )
    if fork_server:
        phases += [entry.outcome.child_phases for entry in result.entries if entry.outcome.child_phases]
    return honest.Seconds(result.elapsed_s, cpu)


def _under_bwrap(outcome: Any) -> bool:
    sandbox = outcome.isolation.sandbox if outcome.isolation is not None else None
    return isinstance(sandbox, dict) and sandbox.get("mechanism") == "bwrap"


def phase_table(reports: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    names = list(reports[0]) if reports else []
    return {
        name: {
            clock: round(honest.median(report[name][clock] for report in reports if name in report) * 1000, 2)
            for clock in ("cpu_s", "wall_s")
        }
        for name in names
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--journals", type=int, default=100, help="journals in each corpus (default 100)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--rounds", type=int, default=3, help="rounds of every measurement (default 3)")
    parser.add_argument("--keep", type=Path, help="record the corpora here (and reuse them next time)")
    parser.add_argument("--no-plain", action="store_true", help="skip the new-interpreter-per-journal runs")
    args = parser.parse_args()
    honest.run_compiled()
    load = honest.Load()
    os.chdir(ROOT)
    figures: dict[str, Any] = {"bench": "corpus", "journals": args.journals, "jobs": args.jobs, "rounds": args.rounds}
    with tempfile.TemporaryDirectory(prefix="bench-corpus-", dir=ROOT) as scratch:
        directory = args.keep or Path(scratch)
        corpora = {
            "refund": refund_corpus(directory / "refund", args.journals),
            "crm": crm_corpus(directory / "crm", args.journals),
        }
        phases: dict[str, list[dict[str, Any]]] = {name: [] for name in corpora}
        cases: dict[str, Callable[[], honest.Seconds]] = {"bare": bare_start}
        for name, journals in corpora.items():
            cases[f"{name}_fork"] = lambda j=journals, p=phases[name]: replayed(j, args.jobs, True, p)
            if not args.no_plain:
                cases[f"{name}_plain"] = lambda j=journals, p=phases[name]: replayed(j, args.jobs, False, p)
        bare_start()  # warm-up: the page cache
        found = honest.interleaved(cases, args.rounds)
    bare = honest.Seconds(honest.median(s.wall for s in found["bare"]), honest.median(s.cpu for s in found["bare"]))
    figures["bare_start_wall_ms"] = round(bare.wall * 1000, 2)
    figures["bare_start_cpu_ms"] = round(bare.cpu * 1000, 2)
    for name, journals in corpora.items():
        count = len(journals)
        entry: dict[str, Any] = {"journals": count}
        for kind in ("fork", "plain"):
            samples = found.get(f"{name}_{kind}")
            if not samples:
                continue
            wall, cpu = honest.median(s.wall for s in samples), honest.median(s.cpu for s in samples)
            prefix = "" if kind == "fork" else "plain_"
            entry |= {
                f"{prefix}seconds": round(wall, 3),
                f"{prefix}cpu_s": round(cpu, 3),
                f"{prefix}per_journal_core_ms": round(wall * args.jobs / count * 1000, 2),
                f"{prefix}cpu_per_journal_ms": round(cpu / count * 1000, 2),
                f"{prefix}ratio_wall": round(wall * args.jobs / count / bare.wall, 2),
                f"{prefix}ratio_cpu": round(cpu / count / bare.cpu, 2),
            }
        entry["child_phases_ms"] = phase_table(phases[name])
        figures[name] = entry
        print(
            f"{name} ({count} journals, {args.jobs} jobs): fork server {entry['seconds']:.2f} s, "
            f"{entry['per_journal_core_ms']:.1f} ms per journal per core, {entry['cpu_per_journal_ms']:.1f} ms CPU per "
            f"journal; ratio {entry['ratio_wall']} by wall, {entry['ratio_cpu']} by CPU (bare start "
            f"{figures['bare_start_wall_ms']} ms wall, {figures['bare_start_cpu_ms']} ms CPU)",
            flush=True,
        )
        print(f"  what a forked child does inside the sandbox (median ms, CPU / wall), {name}:", flush=True)
        for phase, cost in entry["child_phases_ms"].items():
            print(f"    {phase:<18} {cost['cpu_s']:8.2f} {cost['wall_s']:8.2f}", flush=True)
    figures["target_ratio"] = 2
    figures["moonshot_ratio"] = 1
    figures["target_met"] = all(figures[name][key] <= 2 for name in corpora for key in ("ratio_wall", "ratio_cpu"))
    honest.finish(figures, load)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""pytest plugin: every incident journal is a regression test ("one incident, one test").

Registered as the ``pytest11`` entry point ``replay_tui``; inert until switched on
with ``--replay-journals`` or ``replay_journals = true`` in the ini file. Then each
file whose name matches ``replay_journals_glob`` (default ``*.replay.jsonl``) is
collected as one test item, ``<journal>::replay``, which runs a strict replay in an
isolated child process (the ordinary ``ReplayRunner``). A divergence, unused
events, a crash or a timeout fails the item; the failure text is the replay
report, divergence included.

Settings (ini, ``[pytest]`` or ``[tool.pytest.ini_options]``)::

    replay_journals = true
    replay_journals_glob = *.replay.jsonl           # one or more patterns
    replay_journals_agent_path = src                # added to the child's sys.path (rootdir always is)
    replay_journals_timeout = 600
    replay_journals_verify_chain = true             # schema and hash chain first (a hand-edited journal fails)
    replay_journals_executor = ray                  # or local (default); also --replay-executor
    replay_journals_ray_address = auto              # the cluster for ray (default $RAY_ADDRESS or a local one)

Expected failures. A sidecar ``NAME.replay.toml`` next to ``NAME.replay.jsonl``::

    [replay]
    xfail = "the prompt changed in #412; re-record after review"  # a divergence is XFAIL, a match XPASS(strict)
    strict = true           # default: an unexpected match fails, so a fixed journal is noticed
    skip = "reason"         # do not replay at all
    agent = "pkg.agent:run" # replay this entry point instead of the recorded one
    timeout = 120

Only a replay *divergence* is an expected failure; a crash, an import error or an
unreadable journal still fails. From a conftest.py, items are ordinary pytest items
(``JournalItem``, with ``.journal`` and the ``replay_journal`` marker), so the usual
hook works too::

    def pytest_collection_modifyitems(items):
        for item in items:
            if item.get_closest_marker("replay_journal") and item.path.name.startswith("legacy-"):
                item.add_marker(pytest.mark.xfail(reason="legacy agent", raises=ReplayDiverged, strict=True))

Under pytest-xdist each worker collects the same items and replays its share.
"""

from __future__ import annotations

import fnmatch
import tomllib
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

import pytest

if TYPE_CHECKING:
    from ..parent.outcome import ReplayOutcome

SIDECAR_SUFFIX = ".toml"
SIDECAR_KEYS = {"xfail", "strict", "skip", "agent", "timeout"}
DEFAULT_GLOB = "*.replay.jsonl"
DEFAULT_TIMEOUT_S = 600.0


class ReplayFailed(Exception):
    """A journal's replay did not match; carries the outcome whose text is the failure."""

    def __init__(self, outcome: "ReplayOutcome") -> None:
        super().__init__(outcome.headline())
        self.outcome = outcome


class ReplayDiverged(ReplayFailed):
    """The replay diverged (or left events unused): the only failure a sidecar ``xfail`` expects."""


class SidecarError(Exception):
    """The sidecar of a journal cannot be read; names the file and the key."""


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("replay-tui", "replay-tui journal replays")
    group.addoption("--replay-journals", action="store_true", default=None, help="collect journals as replay tests")
    group.addoption(
        "--replay-journals-glob",
        action="append",
        default=None,
        metavar="PATTERN",
        help=f"file names collected as journals (default {DEFAULT_GLOB}; repeatable)",
    )
    parser.addini("replay_journals", "collect journals as replay tests", type="bool", default=False)
    parser.addini(
        "replay_journals_glob",
        f"file names collected as journals (default {DEFAULT_GLOB})",
        type="args",
        default=[DEFAULT_GLOB],
    )
    parser.addini(
        "replay_journals_agent_path", "directories added to the replay child's sys.path", type="paths", default=[]
    )
    parser.addini("replay_journals_timeout", "seconds before a replay is killed", default=str(DEFAULT_TIMEOUT_S))
    parser.addini(
        "replay_journals_verify_chain", "verify schema and hash chain before each replay", type="bool", default=True
    )
    group.addoption(
        "--replay-executor",
        choices=("local", "ray"),
        default=None,
        help="where each journal replays: a local child (default) or a task on a Ray cluster",
    )
    group.addoption(
        "--replay-ray-address", default=None, metavar="ADDRESS", help="Ray cluster for --replay-executor ray"
    )
    parser.addini("replay_journals_executor", "local or ray", default="local")
    parser.addini("replay_journals_ray_address", "Ray cluster address for the ray executor", default="")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "replay_journal: a journal replayed strictly by replay-tui")


def _enabled(config: pytest.Config) -> bool:
    option = config.getoption("replay_journals")
    return bool(option) if option is not None else bool(config.getini("replay_journals"))


def _patterns(config: pytest.Config) -> list[str]:
    return config.getoption("replay_journals_glob") or list(config.getini("replay_journals_glob")) or [DEFAULT_GLOB]


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> "JournalFile | None":
    config = parent.config
    if not _enabled(config):
        return None
    if any(fnmatch.fnmatch(file_path.name, pattern) for pattern in _patterns(config)):
        return JournalFile.from_parent(parent, path=file_path)
    return None


def read_sidecar(journal: Path) -> dict[str, Any]:
    """The ``[replay]`` table of ``NAME.toml`` beside ``NAME.jsonl`` (empty when absent)."""
    sidecar = journal.with_name(journal.name.removesuffix(".jsonl") + SIDECAR_SUFFIX)
    if not sidecar.is_file():
        return {}
    try:
        table = tomllib.loads(sidecar.read_text("utf-8")).get("replay", {})
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, OSError) as error:
        raise SidecarError(f"{sidecar}: not readable TOML: {error}") from None
    if not isinstance(table, dict):
        raise SidecarError(f"{sidecar}: [replay] must be a table")
    unknown = set(table) - SIDECAR_KEYS
    if unknown:
        raise SidecarError(f"{sidecar}: unknown key(s) {sorted(unknown)} in [replay]; expected {sorted(SIDECAR_KEYS)}")
    for key, kind in (("xfail", str), ("skip", str), ("agent", str), ("strict", bool), ("timeout", (int, float))):
        if key in table and not isinstance(table[key], kind):
            raise SidecarError(f"{sidecar}: [replay] {key} has the wrong type ({type(table[key]).__name__})")
    return {**table, "_path": str(sidecar)}


class JournalFile(pytest.File):
    """A journal file: one replay item."""

    def collect(self) -> Iterator["JournalItem"]:
        item = JournalItem.from_parent(self, name="replay")
        yield item


class JournalItem(pytest.Item):
    """Strict replay of one journal in an isolated child process."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.journal = Path(self.path)
        self.add_marker("replay_journal")
        self.outcome: "ReplayOutcome | None" = None
        self.sidecar_error: str | None = None
        try:
            self.sidecar = read_sidecar(self.journal)
        except SidecarError as error:
            self.sidecar, self.sidecar_error = {}, str(error)
        if "skip" in self.sidecar:
            self.add_marker(pytest.mark.skip(reason=self.sidecar["skip"]))
        if "xfail" in self.sidecar:
            self.add_marker(
                pytest.mark.xfail(
                    reason=self.sidecar["xfail"], raises=ReplayDiverged, strict=self.sidecar.get("strict", True)
                )
            )

    def runtest(self) -> None:
        from ..parent.runner import DIVERGED, MATCH, UNUSED_EVENTS, ReplayRunner
        from ..protocol import ReplaySpec

        if self.sidecar_error:
            raise SidecarError(self.sidecar_error)
        config = self.config
        sys_path = [str(path) for path in config.getini("replay_journals_agent_path")] + [str(config.rootpath)]
        timeout = float(self.sidecar.get("timeout") or config.getini("replay_journals_timeout") or DEFAULT_TIMEOUT_S)
        spec = ReplaySpec(
            journal=str(self.journal.resolve()),
            agent=self.sidecar.get("agent"),
            sys_path=sys_path,
            verify_hash_chain=bool(config.getini("replay_journals_verify_chain")),
        )
        if _executor_name(config) == "ray":
            outcome = _run_on_ray(config, spec, timeout)
        else:
            outcome = ReplayRunner(spec, timeout_s=timeout, cwd=str(config.rootpath)).run()
        self.outcome = outcome
        self.user_properties.append(("replay_status", outcome.status))
        if outcome.divergence is not None:
            self.user_properties.append(("divergence_seq", outcome.divergence.seq))
        if outcome.status == MATCH:
            return
        raise (ReplayDiverged if outcome.status in (DIVERGED, UNUSED_EVENTS) else ReplayFailed)(outcome)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        if isinstance(excinfo.value, ReplayFailed):
            return excinfo.value.outcome.to_text()
        if isinstance(excinfo.value, SidecarError):
            return str(excinfo.value)
        return str(super().repr_failure(excinfo, style))

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, f"replay {self.journal.name}"


def _executor_name(config: pytest.Config) -> str:
    return str(config.getoption("replay_executor") or config.getini("replay_journals_executor") or "local")


_ray_executors: dict[str, Any] = {}


def _run_on_ray(config: pytest.Config, spec: Any, timeout: float) -> "ReplayOutcome":
    """One journal as one task on the Ray cluster, through the corpus executor (connected once per process)."""
    from .executors import ExecutorError, RayExecutor

    address = config.getoption("replay_ray_address") or config.getini("replay_journals_ray_address") or None
    key = address or ""
    if key not in _ray_executors:
        try:
            _ray_executors[key] = RayExecutor(address)
        except ExecutorError as error:
            raise pytest.UsageError(f"replay-tui: {error}") from None
    outcomes: list["ReplayOutcome"] = []
    _ray_executors[key].run_all([spec], timeout, lambda _, outcome: outcomes.append(outcome))
    return outcomes[0]

"""A corpus index: facts about thousands of journals in one DuckDB file, for SQL questions.

``replay-tui index DIR -o corpus.duckdb`` reads every journal once (one streaming pass
each, bounded memory) and writes four tables::

    runs        one row per journal: run id, agent, status, events, tokens, tool totals,
                environment fingerprint, and the replay verdict and divergence signature
                when a ``replay DIR --json`` report is given
    tool_calls  one row per tool.result: tool, call key, latency, error type, timeout
    model_calls one row per model.response: model, tokens, latency, finish reason, error
    steps       one row per step id: first and last seq, events, span in milliseconds

Rows are streamed to newline-delimited JSON files and bulk-loaded, which DuckDB reads
far faster than row-by-row inserts. DuckDB is an optional extra
(``replay-tui[index]``); this module imports it only when a database is written or read.

Journal text is hostile: it is stored as data and only ever shown through ``safe_text``
by the command that prints query results.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence

import orjson

from ..journal import Event, JournalError, open_journal
from ..journal.describe import is_timeout
from ..journal.model import MODEL_REQUEST, MODEL_RESPONSE, RUN_ENDED, RUN_STARTED, TOOL_CALL, TOOL_RESULT
from ..journal.private import FILE_MODE, append_line, make_private_dirs, read_lines
from ..journal.user_dirs import state_root
from .stats import _span_ms, _usage_tokens

#: Text columns are cut to this many characters: an index answers questions, it is not a copy.
TEXT_LIMIT = 500

SCHEMA: dict[str, tuple[tuple[str, str], ...]] = {
    "runs": (
        ("journal", "VARCHAR"),
        ("run_id", "VARCHAR"),
        ("agent", "VARCHAR"),
        ("status", "VARCHAR"),  # ok | error | cancelled | not closed
        ("events", "BIGINT"),
        ("unreadable_lines", "BIGINT"),
        ("started_at", "VARCHAR"),
        ("ended_at", "VARCHAR"),
        ("duration_ms", "DOUBLE"),
        ("model_calls", "BIGINT"),
        ("prompt_tokens", "BIGINT"),
        ("completion_tokens", "BIGINT"),
        ("total_tokens", "BIGINT"),
        ("tool_calls", "BIGINT"),
        ("tool_errors", "BIGINT"),
        ("tool_timeouts", "BIGINT"),
        ("code_revision", "VARCHAR"),
        ("runtime", "VARCHAR"),
        ("lockfile_hash", "VARCHAR"),
        ("prompt_bundle_hash", "VARCHAR"),
        ("tool_schema_hash", "VARCHAR"),
        ("config_hash", "VARCHAR"),
        ("environment_fingerprint", "VARCHAR"),  # sha256 of the canonical environment block
        ("replay_status", "VARCHAR"),  # from a replay --json report, else NULL
        ("signature_kind", "VARCHAR"),
        ("signature_tool", "VARCHAR"),
        ("signature_field", "VARCHAR"),
        ("divergence_seq", "BIGINT"),
    ),
    "tool_calls": (
        ("journal", "VARCHAR"),
        ("run_id", "VARCHAR"),
        ("seq", "BIGINT"),
        ("step_id", "VARCHAR"),
        ("tool", "VARCHAR"),
        ("call_key", "VARCHAR"),
        ("duration_ms", "DOUBLE"),
        ("error_type", "VARCHAR"),
        ("error_message", "VARCHAR"),
        ("timeout", "BOOLEAN"),
    ),
    "model_calls": (
        ("journal", "VARCHAR"),
        ("run_id", "VARCHAR"),
        ("seq", "BIGINT"),
        ("step_id", "VARCHAR"),
        ("model", "VARCHAR"),
        ("prompt_tokens", "BIGINT"),
        ("completion_tokens", "BIGINT"),
        ("total_tokens", "BIGINT"),
        ("latency_ms", "DOUBLE"),
        ("finish_reason", "VARCHAR"),
        ("error", "VARCHAR"),
    ),
    "steps": (
        ("journal", "VARCHAR"),
        ("run_id", "VARCHAR"),
        ("step_id", "VARCHAR"),
        ("first_seq", "BIGINT"),
        ("last_seq", "BIGINT"),
        ("events", "BIGINT"),
        ("span_ms", "DOUBLE"),
    ),
}

#: Canned questions: flag name -> (title, SQL).
CANNED: dict[str, tuple[str, str]] = {
    "failing-tools": (
        "tools that failed, most errors first",
        """SELECT tool, count(*) AS calls, count(error_type) AS errors,
                  count(*) FILTER (WHERE timeout) AS timeouts,
                  round(100.0 * count(error_type) / count(*), 1) AS error_pct,
                  count(DISTINCT journal) FILTER (WHERE error_type IS NOT NULL) AS journals,
                  round(quantile_cont(duration_ms, 0.95), 1) AS p95_ms
           FROM tool_calls GROUP BY tool HAVING count(error_type) > 0
           ORDER BY errors DESC, tool LIMIT 50""",
    ),
    "slowest-steps": (
        "slowest steps across the corpus",
        """SELECT journal, step_id, round(span_ms, 1) AS span_ms, events, first_seq, last_seq
           FROM steps WHERE span_ms IS NOT NULL ORDER BY span_ms DESC, journal, first_seq LIMIT 20""",
    ),
    "by-signature": (
        "replay failures grouped by divergence signature",
        """SELECT coalesce(signature_kind, replay_status) AS kind, signature_tool AS tool,
                  signature_field AS field, count(*) AS journals, min(journal) AS example
           FROM runs WHERE replay_status IS NOT NULL AND replay_status <> 'match'
           GROUP BY ALL ORDER BY journals DESC, kind, tool, field""",
    ),
}


class CorpusIndexError(ValueError):
    """The index cannot be built or read (missing extra, bad report, unreadable database)."""


def require_duckdb() -> Any:
    """The duckdb module, or a clear error naming the extra to install."""
    try:
        import duckdb
    except ImportError:
        raise CorpusIndexError("the corpus index needs DuckDB: pip install 'replay-tui[index]'") from None
    return duckdb


# -- one journal ------------------------------------------------------------------


@dataclass
class JournalFacts:
    """What the index keeps of one journal: its runs row and its detail rows."""

    run: dict[str, Any]
    tool_calls: list[tuple[Any, ...]] = field(default_factory=list)
    model_calls: list[tuple[Any, ...]] = field(default_factory=list)
    steps: list[tuple[Any, ...]] = field(default_factory=list)


def _text(value: Any) -> str | None:
    if value is None:
        return None
    text = value if isinstance(value, str) else orjson.dumps(value, default=str).decode()
    return text[:TEXT_LIMIT]


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _environment_fingerprint(environment: Any) -> str | None:
    if not isinstance(environment, dict):
        return None
    try:
        blob = orjson.dumps(environment, option=orjson.OPT_SORT_KEYS)
    except TypeError:
        return None
    return "sha256:" + hashlib.sha256(blob).hexdigest()


class _Collector:
    """One streaming pass over a journal's events; memory bounded by its step and pending-request maps."""

    PENDING_CAP = 4096

    def __init__(self, name: str) -> None:
        self.name = name
        self.run: dict[str, Any] = {column: None for column, _ in SCHEMA["runs"]}
        self.run.update(journal=name, status="not closed", events=0, unreadable_lines=0)
        for counter in ("model_calls", "prompt_tokens", "completion_tokens", "total_tokens"):
            self.run[counter] = 0
        for counter in ("tool_calls", "tool_errors", "tool_timeouts"):
            self.run[counter] = 0
        self.facts = JournalFacts(self.run)
        self._requests: dict[str, tuple[str | None, str]] = {}
        self._steps: dict[str, list[Any]] = {}

    def add(self, event: Event) -> None:
        run = self.run
        run["events"] += 1
        if run["started_at"] is None:
            run["started_at"], run["run_id"] = event.recorded_at, event.run_id
        run["ended_at"] = event.recorded_at
        handler = self._handlers.get(event.kind)
        if handler is not None:
            handler(self, event)
        if isinstance(event.step_id, str):
            step = self._steps.get(event.step_id)
            if step is None:
                self._steps[event.step_id] = [event.seq, event.seq, 1, event.recorded_at, event.recorded_at]
            else:
                step[1], step[4] = event.seq, event.recorded_at
                step[2] += 1

    def _run_started(self, event: Event) -> None:
        payload = event.payload
        environment, harness = _dict(payload.get("environment")), _dict(payload.get("harness"))
        self.run.update(
            agent=_text(payload.get("agent")),
            code_revision=_text(environment.get("code_revision")),
            runtime=_text(environment.get("runtime")),
            lockfile_hash=_text(environment.get("lockfile_hash")),
            prompt_bundle_hash=_text(environment.get("prompt_bundle_hash")),
            tool_schema_hash=_text(environment.get("tool_schema_hash")),
            config_hash=_text(harness.get("config_hash")),
            environment_fingerprint=_environment_fingerprint(payload.get("environment")),
        )

    def _run_ended(self, event: Event) -> None:
        self.run["status"] = _text(event.payload.get("status")) or "unknown"

    def _model_request(self, event: Event) -> None:
        request = event.payload.get("request")
        model = request.get("model") if isinstance(request, dict) else None
        if len(self._requests) >= self.PENDING_CAP:
            self._requests.pop(next(iter(self._requests)))
        key = event.payload.get("request_hash")
        self._requests[key if isinstance(key, str) else ""] = (_text(model), event.recorded_at)

    def _model_response(self, event: Event) -> None:
        payload = event.payload
        response = _dict(payload.get("response"))
        key = payload.get("request_hash")
        pending = self._requests.pop(key if isinstance(key, str) else "", None)
        model = _text(response.get("model")) or (pending[0] if pending else None)
        latency = _span_ms(pending[1], event.recorded_at) if pending else None
        tokens = _usage_tokens(response.get("usage")) or (None, None, None)
        self.run["model_calls"] += 1
        for column, amount in zip(("prompt_tokens", "completion_tokens", "total_tokens"), tokens):
            self.run[column] += amount or 0
        self.facts.model_calls.append(
            (
                self.name,
                event.run_id,
                event.seq,
                event.step_id,
                model,
                *tokens,
                latency if latency is None or latency >= 0 else None,
                _text(response.get("finish_reason")),
                _text(payload.get("error")),
            )
        )

    def _tool_call(self, event: Event) -> None:
        self.run["tool_calls"] += 1

    def _tool_result(self, event: Event) -> None:
        payload = event.payload
        error = payload.get("error") if isinstance(payload.get("error"), dict) else None
        duration = payload.get("duration_ms")
        timeout = error is not None and is_timeout(error)
        if error is not None:
            self.run["tool_errors"] += 1
            self.run["tool_timeouts"] += int(timeout)
        self.facts.tool_calls.append(
            (
                self.name,
                event.run_id,
                event.seq,
                event.step_id,
                _text(payload.get("tool")),
                _text(payload.get("call_key")),
                float(duration)
                if isinstance(duration, (int, float)) and not isinstance(duration, bool) and duration >= 0
                else None,
                (_text(error.get("type")) or "error") if error is not None else None,
                _text(error.get("message")) if error is not None else None,
                timeout,
            )
        )

    _handlers: dict[str, Callable[["_Collector", Event], None]] = {
        RUN_STARTED: _run_started,
        RUN_ENDED: _run_ended,
        MODEL_REQUEST: _model_request,
        MODEL_RESPONSE: _model_response,
        TOOL_CALL: _tool_call,
        TOOL_RESULT: _tool_result,
    }

    def result(self) -> JournalFacts:
        run = self.run
        if run["started_at"] and run["ended_at"]:
            run["duration_ms"] = _span_ms(run["started_at"], run["ended_at"])
        for step_id, (first, last, events, start, end) in self._steps.items():
            self.facts.steps.append(
                (self.name, run["run_id"], _text(step_id), first, last, events, _span_ms(start, end))
            )
        return self.facts


def journal_facts(path: str | Path, name: str | None = None) -> JournalFacts:
    """Read one journal (file, gzip or shard directory) into its index rows.

    A journal that cannot be opened still gets a runs row (status "unreadable"), so a
    corpus question never silently drops a file.
    """
    collector = _Collector(name or str(path))
    try:
        with open_journal(path) as journal:
            for item in journal.events():
                if isinstance(item, JournalError):
                    collector.run["unreadable_lines"] += 1
                else:
                    collector.add(item)
    except JournalError:
        collector.run["status"] = "unreadable"
    except OSError:
        collector.run["status"] = "unreadable"
    return collector.result()


# -- replay results ------------------------------------------------------------------


def load_replay_results(path: str | Path) -> dict[str, dict[str, Any]]:
    """Per journal path: status, signature and divergence seq, from a ``replay DIR --json`` report."""
    try:
        data = orjson.loads(Path(path).read_bytes())
    except OSError as error:
        raise CorpusIndexError(f"{path}: cannot read the replay report: {error.strerror}") from None
    except orjson.JSONDecodeError as error:
        raise CorpusIndexError(
            f"{path}: not JSON ({error}); expected the output of 'replay-tui replay DIR --json'"
        ) from None
    results = data.get("results") if isinstance(data, dict) else None
    if not isinstance(results, list):
        raise CorpusIndexError(f"{path}: no 'results' list; expected the output of 'replay-tui replay DIR --json'")
    found: dict[str, dict[str, Any]] = {}
    for number, item in enumerate(results):
        if not isinstance(item, dict) or not isinstance(item.get("journal"), str):
            raise CorpusIndexError(f"{path}: results[{number}] has no 'journal' path")
        found[os.path.abspath(item["journal"])] = item
    return found


def _apply_replay_result(run: dict[str, Any], result: dict[str, Any] | None) -> None:
    if result is None:
        return
    signature = _dict(result.get("signature"))
    seq = result.get("divergence_seq")
    run.update(
        replay_status=_text(result.get("status")),
        signature_kind=_text(signature.get("kind")),
        signature_tool=_text(signature.get("tool")),
        signature_field=_text(signature.get("field")),
        divergence_seq=seq if type(seq) is int else None,
    )


# -- writing ---------------------------------------------------------------------------


@dataclass
class IndexSummary:
    database: str
    journals: int
    unreadable: int
    rows: dict[str, int]
    elapsed_s: float

    def to_json(self) -> dict[str, Any]:
        return {
            "database": self.database,
            "journals": self.journals,
            "unreadable": self.unreadable,
            "rows": self.rows,
            "elapsed_s": round(self.elapsed_s, 3),
        }

    def to_text(self) -> str:
        rows = ", ".join(f"{count} {table}" for table, count in self.rows.items())
        unreadable = f" ({self.unreadable} unreadable)" if self.unreadable else ""
        return f"Indexed {self.journals} journal(s){unreadable} into {self.database} in {self.elapsed_s:.1f} s: {rows}."


class _JsonBatches:
    """One newline-delimited JSON file per table in a temporary directory; rows are appended as they come.

    JSON, not CSV: journal text can hold any character (quotes, newlines, NUL, escape sequences),
    and orjson's escaping round-trips every one of them, where a CSV sniffer can be confused.
    """

    def __init__(self, directory: Path) -> None:
        self.paths = {table: directory / f"{table}.ndjson" for table in SCHEMA}
        self._files = {table: path.open("wb") for table, path in self.paths.items()}
        self.counts = {table: 0 for table in SCHEMA}

    def add(self, table: str, rows: Iterable[Sequence[Any]]) -> None:
        handle = self._files[table]
        names = [name for name, _ in SCHEMA[table]]
        for row in rows:
            handle.write(orjson.dumps(dict(zip(names, row)), default=str) + b"\n")
            self.counts[table] += 1

    def close(self) -> None:
        for handle in self._files.values():
            handle.close()


def build_index(
    journals: Sequence[tuple[str, str | Path]],
    out: str | Path,
    *,
    replay_results: dict[str, dict[str, Any]] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> IndexSummary:
    """Index ``journals`` ((name shown, local path) pairs) into a new DuckDB file ``out``."""
    duckdb = require_duckdb()
    started = time.perf_counter()
    out = Path(out)
    if out.exists():
        raise CorpusIndexError(f"{out} already exists; the index is written whole, choose a new path or delete it")
    unreadable = 0
    with tempfile.TemporaryDirectory(prefix="replay-tui-index-") as scratch:
        batches = _JsonBatches(Path(scratch))
        try:
            for done, (name, path) in enumerate(journals, 1):
                facts = journal_facts(path, name)
                key = os.path.abspath(str(path))
                _apply_replay_result(facts.run, (replay_results or {}).get(key) or (replay_results or {}).get(name))
                unreadable += facts.run["status"] == "unreadable"
                batches.add("runs", [[facts.run[column] for column, _ in SCHEMA["runs"]]])
                batches.add("tool_calls", facts.tool_calls)
                batches.add("model_calls", facts.model_calls)
                batches.add("steps", facts.steps)
                if progress is not None:
                    progress(done, len(journals))
        finally:
            batches.close()
        partial = out.with_name(out.name + ".partial")
        partial.unlink(missing_ok=True)
        connection = duckdb.connect(str(partial))
        os.chmod(partial, FILE_MODE)  # owner-only before any row is in it (DuckDB creates it 0666 - umask)
        try:
            for table, columns in SCHEMA.items():
                connection.execute(f"CREATE TABLE {table} ({', '.join(f'{name} {kind}' for name, kind in columns)})")
                if batches.counts[table]:
                    typed = ", ".join(f"{name}: '{kind}'" for name, kind in columns)
                    connection.execute(
                        f"INSERT INTO {table} SELECT * FROM read_json(?, format = 'newline_delimited', "
                        f"columns = {{{typed}}}, maximum_object_size = 67108864)",
                        [str(batches.paths[table])],
                    )
            connection.execute(
                "CREATE TABLE index_info AS SELECT ? AS built_at, ? AS journals", [time.time(), len(journals)]
            )
        finally:
            connection.close()
        os.replace(partial, out)
    register_index(out)
    return IndexSummary(str(out), len(journals), unreadable, dict(batches.counts), time.perf_counter() - started)


# -- the indexes replay-tui built, and forgetting runs in them ---------------------------


def registry_path() -> Path:
    """The list of the indexes built here (one JSON line each): how ``replay-tui forget`` finds their rows."""
    return state_root() / "indexes.ndjson"


def register_index(database: str | Path) -> None:
    make_private_dirs(state_root())
    append_line(registry_path(), orjson.dumps({"path": os.path.abspath(database), "built_at": time.time()}))


def registered_indexes() -> list[Path]:
    """Every index built here that still exists, once each."""
    found: list[Path] = []
    for line in read_lines(registry_path()):
        try:
            entry = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        path = Path(entry["path"]) if isinstance(entry, dict) and isinstance(entry.get("path"), str) else None
        if path is not None and path not in found and path.is_file():
            found.append(path)
    return found


def rows_of_runs(database: str | Path, run_ids: Iterable[str]) -> dict[str, int]:
    """Rows per table that belong to ``run_ids``; CorpusIndexError when the file is no index DuckDB opens."""
    duckdb = require_duckdb()
    wanted = sorted(set(run_ids))
    try:
        connection = duckdb.connect(str(database), read_only=True, config={"enable_external_access": False})
    except duckdb.Error as error:
        raise CorpusIndexError(f"{database}: not a corpus index DuckDB can open: {error}") from None
    try:
        counts = {}
        for table in _tables_with_run_ids(connection):
            counts[table] = connection.execute(
                f"SELECT count(*) FROM {table} WHERE list_contains(?, run_id)", [wanted]
            ).fetchone()[0]
        return {table: count for table, count in counts.items() if count}
    finally:
        connection.close()


def remove_runs(database: str | Path, run_ids: Iterable[str]) -> dict[str, int]:
    """Remove every row of ``run_ids`` from an index; returns the rows removed per table.

    The index is written again without them and moved into place (a DELETE would leave the rows' bytes in
    the file's free blocks until DuckDB reuses them; what is forgotten must not stay readable in the file)."""
    duckdb = require_duckdb()
    database = Path(database)
    removed = rows_of_runs(database, run_ids)
    if not removed:
        return {}
    wanted = sorted(set(run_ids))
    partial = database.with_name(database.name + ".forget-partial")
    partial.unlink(missing_ok=True)
    connection = duckdb.connect(str(partial))
    os.chmod(partial, FILE_MODE)
    try:
        connection.execute("ATTACH ? AS old (READ_ONLY)", [str(database)])
        with_run_ids = set(_tables_with_run_ids(connection, "old"))
        tables = [
            row[0]
            for row in connection.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_catalog = 'old' ORDER BY table_name"
            ).fetchall()
        ]
        for table in tables:
            keep = " WHERE run_id IS NULL OR NOT list_contains(?, run_id)" if table in with_run_ids else ""
            connection.execute(f"CREATE TABLE {table} AS SELECT * FROM old.{table}{keep}", [wanted] if keep else [])
        connection.execute("DETACH old")
    except BaseException:
        connection.close()
        partial.unlink(missing_ok=True)
        raise
    connection.close()
    os.replace(partial, database)
    return removed


def _tables_with_run_ids(connection: Any, catalog: str | None = None) -> list[str]:
    where = "column_name = 'run_id'" + (f" AND table_catalog = '{catalog}'" if catalog else "")
    rows = connection.execute(f"SELECT table_name FROM information_schema.columns WHERE {where}").fetchall()
    return sorted(table for (table,) in rows if table in SCHEMA)


# -- reading ---------------------------------------------------------------------------


@dataclass
class QueryResult:
    columns: list[str]
    rows: list[tuple[Any, ...]]
    elapsed_s: float

    def to_json(self) -> dict[str, Any]:
        return {
            "columns": self.columns,
            "rows": [list(row) for row in self.rows],
            "elapsed_s": round(self.elapsed_s, 4),
        }


def run_query(database: str | Path, sql: str, *, limit: int = 10_000) -> QueryResult:
    """Run one SQL statement read-only against an index; rows beyond ``limit`` are not fetched.

    The connection is read-only and cannot reach files or the network beyond the database
    (``enable_external_access = false``), so a query only ever reads the index.
    """
    duckdb = require_duckdb()
    if not Path(database).is_file():
        raise CorpusIndexError(f"{database}: no such index; build one with 'replay-tui index DIR -o {database}'")
    started = time.perf_counter()
    try:
        connection = duckdb.connect(str(database), read_only=True, config={"enable_external_access": False})
    except duckdb.Error as error:
        raise CorpusIndexError(f"{database}: not a corpus index DuckDB can open: {error}") from None
    try:
        cursor = connection.execute(sql)
        columns = [column[0] for column in cursor.description or []]
        rows = cursor.fetchmany(limit) if columns else []
    except duckdb.Error as error:
        raise CorpusIndexError(f"query failed: {error}") from None
    finally:
        connection.close()
    return QueryResult(columns, [tuple(row) for row in rows], time.perf_counter() - started)


def iter_journal_sources(paths: Iterable[Path], root: Path) -> Iterator[tuple[str, Path]]:
    """(name relative to ``root``, path) for each journal found under a corpus root."""
    for path in paths:
        try:
            name = str(path.relative_to(root))
        except ValueError:
            name = str(path)
        yield name, path

"""Draw ``RunStats`` as rich renderables: tables with unicode bars and sparklines.

The CLI prints these; the app's stats screen can put the same renderables in a
Static widget (rich, not Textual, so the analysis layer stays Textual-free).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from ..journal.safe_text import safe_line
from .stats import Distribution, RunStats

_SPARK = "▁▂▃▄▅▆▇█"
_EIGHTHS = " ▏▎▍▌▋▊▉█"


def sparkline(values: Sequence[float]) -> str:
    """One character per value, scaled to the largest; zero is a blank-ish floor."""
    if not values:
        return ""
    top = max(values)
    if top <= 0:
        return _SPARK[0] * len(values)
    return "".join(_SPARK[min(7, int(value / top * 7.999))] if value > 0 else " " for value in values)


def bar(value: float, top: float, width: int = 30) -> str:
    """A horizontal bar ``width`` cells at most, in eighths of a cell."""
    if top <= 0 or value <= 0:
        return ""
    eighths = max(1, round(value / top * width * 8))
    return "█" * (eighths // 8) + (_EIGHTHS[eighths % 8] if eighths % 8 else "")


def format_ms(value: float | None) -> str:
    if value is None:
        return "-"
    if value >= 60_000:
        return f"{value / 60_000:.1f} min"
    if value >= 1000:
        return f"{value / 1000:.2f} s"
    if value >= 10:
        return f"{value:.0f} ms"
    return f"{value:.1f} ms" if value >= 1 or value == 0 else f"{value:.2f} ms"


def format_bytes(value: float | None) -> str:
    if value is None:
        return "-"
    for unit, size in (("MB", 1e6), ("kB", 1e3)):
        if value >= size:
            return f"{value / size:.1f} {unit}"
    return f"{value:.0f} B"


def journal_text(value: object, limit: int | None = None) -> Text:
    """A journal string as a table cell: plain text (never markup), escaped, on one line."""
    return Text(safe_line(value if isinstance(value, str) else str(value), limit))


def _table(title: str) -> Table:
    """A stats table: its title on the left, no box, no padding at the edges (one look for every table)."""
    return Table(title=title, title_justify="left", box=None, pad_edge=False)


def _estimate(distribution: Distribution) -> str:
    return "" if distribution.exact else "~"


def _header(stats: RunStats) -> RenderableType:
    text = Text()
    text.append(safe_line(str(stats.path)), style="bold")
    text.append(
        f"  run {safe_line(stats.run_id or '?', 80)}  agent {safe_line(stats.agent or '?', 80)}  "
        f"status {safe_line(stats.status or 'not ended', 40)}\n"
    )
    text.append(
        f"{stats.events:,} events (seq {stats.first_seq} to {stats.last_seq}), "
        f"{stats.steps:,} steps{' (approximate)' if stats.steps_approximate else ''}, "
        f"wall time {format_ms(stats.duration_ms)}"
    )
    if stats.unreadable:
        text.append(
            f"\n{stats.unreadable} unreadable line(s) skipped; first: {safe_line(str(stats.unreadable_examples[0]))}",
            style="yellow",
        )
    if not stats.complete:
        text.append("\ncancelled: the numbers cover only the events read so far", style="yellow")
    return text


def kinds_table(stats: RunStats) -> Table:
    table = _table("Events by kind")
    table.add_column("kind")
    table.add_column("events", justify="right")
    table.add_column("")
    top = max(stats.by_kind.values(), default=0)
    for kind, count in stats.by_kind.most_common():
        table.add_row(journal_text(kind), f"{count:,}", Text(bar(count, top), style="cyan"))
    return table


def timeline_block(stats: RunStats) -> RenderableType:
    series = stats.timeline
    width = stats.timeline_bucket_width
    table = _table(f"Over the run (each column is {width:,} seq{'s' if width > 1 else ''})")
    table.add_column("")
    table.add_column("")
    table.add_column("total", justify="right")
    for name, style in (("events", "cyan"), ("tokens", "magenta"), ("errors", "red")):
        values = series.get(name, [])
        table.add_row(name, Text(sparkline(values), style=style), f"{sum(values):,}")
    return table


def models_table(stats: RunStats) -> Table:
    totals = stats.model_totals
    table = _table(
        f"Model calls: {totals.calls:,} requests, {totals.responses:,} responses, {totals.errors:,} error(s); "
        f"latency p50 {format_ms(stats.model_latency_ms.quantile(0.5))} p95 {format_ms(stats.model_latency_ms.quantile(0.95))}"
    )
    for name, justify in (
        ("model", "left"),
        ("calls", "right"),
        ("errors", "right"),
        ("prompt", "right"),
        ("completion", "right"),
        ("total tokens", "right"),
        ("", "left"),
    ):
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    top = max((m.total_tokens for m in stats.models.values()), default=0)
    for name, model in sorted(stats.models.items(), key=lambda item: -item[1].total_tokens):
        table.add_row(
            journal_text(name),
            f"{model.calls:,}",
            f"{model.errors:,}" if model.errors else "",
            f"{model.prompt_tokens:,}",
            f"{model.completion_tokens:,}",
            f"{model.total_tokens:,}",
            Text(bar(model.total_tokens, top, 20), style="magenta"),
        )
    if len(stats.models) > 1:
        table.add_row(
            "all",
            f"{totals.calls:,}",
            f"{totals.errors:,}",
            f"{totals.prompt_tokens:,}",
            f"{totals.completion_tokens:,}",
            f"{totals.total_tokens:,}",
            "",
            style="bold",
        )
    return table


def tools_table(stats: RunStats, *, width: int = 120) -> Table:
    """Latency and sizes per tool; under 100 columns the latency histogram column is left out."""
    calls, errors, timeouts = stats.tool_totals
    table = _table(f"Tool calls: {calls:,} calls, {errors:,} error(s), {timeouts:,} timeout(s)")
    wide = width >= 100
    table.add_column("tool", overflow="fold")
    for name in ("calls", "p50", "p95", "max"):
        table.add_column(name, justify="right", no_wrap=True)
    if wide:
        table.add_column("latency spread", no_wrap=True)
    for name in ("result p50", "result max", "errors", "timeouts") if wide else ("res p50", "res max", "err", "t/o"):
        table.add_column(name, justify="right", no_wrap=True)
    for name, tool in sorted(stats.tools.items(), key=lambda item: -item[1].calls):
        latency, size = tool.latency_ms, tool.result_bytes
        mark = _estimate(latency)
        cells: list[Any] = [
            journal_text(name),
            f"{tool.calls:,}",
            mark + format_ms(latency.quantile(0.5)),
            mark + format_ms(latency.quantile(0.95)),
            format_ms(latency.max),
        ]
        if wide:
            cells.append(Text(sparkline(latency.histogram(12)), style="cyan"))
        cells += [
            _estimate(size) + format_bytes(size.quantile(0.5)),
            format_bytes(size.max),
            Text(f"{tool.errors:,}", style="red") if tool.errors else "",
            Text(f"{tool.timeouts:,}", style="red") if tool.timeouts else "",
        ]
        table.add_row(*cells)
    return table


def errors_table(stats: RunStats) -> Table | None:
    failing = [(name, tool) for name, tool in stats.tools.items() if tool.errors]
    if not failing:
        return None
    table = _table("Errors and timeouts by tool")
    table.add_column("tool")
    table.add_column("errors", justify="right")
    table.add_column("")
    table.add_column("timeouts", justify="right")
    table.add_column("error types")
    top = max(tool.errors for _, tool in failing)
    for name, tool in sorted(failing, key=lambda item: -item[1].errors):
        table.add_row(
            journal_text(name),
            f"{tool.errors:,}",
            Text(bar(tool.errors, top, 20), style="red"),
            f"{tool.timeouts:,}",
            Text(", ".join(f"{safe_line(str(kind), 60)} ×{count}" for kind, count in tool.error_types.most_common(4))),
        )
    return table


def steps_table(stats: RunStats) -> Table:
    table = _table("Longest steps")
    table.add_column("by wall time")
    table.add_column("span", justify="right")
    table.add_column("seqs")
    table.add_column("")
    table.add_column("by events")
    table.add_column("events", justify="right")
    table.add_column("seqs")
    by_span, by_events = stats.longest_steps_by_span, stats.longest_steps_by_events
    top = max((s.span_ms or 0 for s in by_span), default=0)
    for index in range(max(len(by_span), len(by_events))):
        left = by_span[index] if index < len(by_span) else None
        right = by_events[index] if index < len(by_events) else None
        table.add_row(
            journal_text(left.step_id, 60) if left else "",
            format_ms(left.span_ms) if left else "",
            f"{left.first_seq}–{left.last_seq}" if left else "",
            Text(bar(left.span_ms or 0, top, 16), style="yellow") if left else "",
            journal_text(right.step_id, 60) if right else "",
            f"{right.events:,}" if right else "",
            f"{right.first_seq}–{right.last_seq}" if right else "",
        )
    return table


def render_stats(stats: RunStats, *, width: int = 120) -> Group:
    """The whole report, top to bottom, as one rich renderable laid out for ``width`` columns."""
    parts: list[RenderableType] = [_header(stats), Text(""), kinds_table(stats), Text(""), timeline_block(stats)]
    if stats.models:
        parts += [Text(""), models_table(stats)]
    if stats.tools:
        parts += [Text(""), tools_table(stats, width=width)]
        errors = errors_table(stats)
        if errors is not None:
            parts += [Text(""), errors]
    if stats.longest_steps_by_events:
        parts += [Text(""), steps_table(stats)]
    return Group(*parts)

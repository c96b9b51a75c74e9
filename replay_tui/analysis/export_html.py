"""The incident report as one self-contained HTML file.

Inline CSS, inline SVG, no scripts, fonts or images from anywhere: the file
opens the same on an air-gapped laptop and leaks nothing when opened. Every
value from the journal is HTML-escaped.
"""

from __future__ import annotations

from html import escape
from importlib import resources
from typing import Any, Iterable, Sequence

import orjson

from ..journal.safe_text import safe
from .export import CHAIN_TAIL, ChainLink, EventView, IncidentReport, StateChange, ref_label
from .stats_render import format_bytes, format_ms


def _e(value: Any) -> str:
    """Journal text for HTML: controls, bidi and invisible characters shown escaped, then HTML-escaped."""
    return escape(safe("" if value is None else str(value), multiline=True), quote=True)


def _count(number: int, noun: str) -> str:
    return f"{number:,} {noun}{'' if number == 1 else 's'}"


def _badge(text: str, tone: str) -> str:
    return f'<span class="badge {tone}">{_e(text)}</span>'


def _bar(value: float, top: float, width_px: int = 220, tone: str = "") -> str:
    if top <= 0 or value <= 0:
        return ""
    width = max(2, round(value / top * width_px))
    return f'<span class="bar {tone}" style="width:{width}px"></span>'


def _sparkline(values: Sequence[float], color: str, width: int = 360, height: int = 34) -> str:
    """An inline SVG area chart of ``values`` (one point per timeline bucket)."""
    if not values or max(values) <= 0:
        return '<span class="muted">none</span>'
    top = max(values)
    step = width / max(1, len(values) - 1) if len(values) > 1 else width
    points = [(round(i * step, 1), round(height - 2 - (v / top) * (height - 4), 1)) for i, v in enumerate(values)]
    if len(points) == 1:
        points.append((width, points[0][1]))
    line = " ".join(f"{x},{y}" for x, y in points)
    area = f"0,{height} {line} {points[-1][0]},{height}"
    return (
        f'<svg class="spark" width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img">'
        f'<polygon points="{area}" fill="{color}" fill-opacity="0.18"/>'
        f'<polyline points="{line}" fill="none" stroke="{color}" stroke-width="1.6"/></svg>'
    )


def _table(headers: Iterable[tuple[str, bool]], rows: Iterable[Iterable[str]], css: str = "") -> str:
    """``headers`` are (label, numeric); cells are already HTML."""
    heads = list(headers)
    head = "".join(f'<th class="num">{_e(h)}</th>' if num else f"<th>{_e(h)}</th>" for h, num in heads)
    body = "".join(
        "<tr>"
        + "".join(f'<td class="num">{cell}</td>' if heads[i][1] else f"<td>{cell}</td>" for i, cell in enumerate(row))
        + "</tr>"
        for row in rows
    )
    return f'<table class="{css}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def _kv_table(items: dict[str, Any]) -> str:
    rows = []
    for key, value in items.items():
        if isinstance(value, (dict, list)):
            shown = f"<code>{_e(orjson.dumps(value).decode())}</code>" if value else '<span class="muted">(none)</span>'
        else:
            shown = (
                f"<code>{_e(value)}</code>" if value not in (None, "") else '<span class="muted">(not recorded)</span>'
            )
        rows.append((f"<b>{_e(key)}</b>", shown))
    return _table((("field", False), ("value", False)), rows)


def _state_table(changes: Sequence[StateChange]) -> str:
    if not changes:
        return ""
    rows = "".join(
        f'<tr class="{_e(c.change)}"><td class="path">{_e(c.pointer)} <span class="change {_e(c.change)}">{_e(c.change)}</span></td>'
        f'<td class="before"><pre>{_e(c.before) or "—"}</pre></td><td class="after"><pre>{_e(c.after) or "—"}</pre></td></tr>'
        for c in changes
    )
    return f'<table class="diff"><thead><tr><th>state path</th><th>before</th><th>after</th></tr></thead><tbody>{rows}</tbody></table>'


def _event_card(view: EventView, *, open_payload: bool = False, tag: str = "") -> str:
    what_class = "what error" if view.is_error else "what"
    cut = " (cut)" if view.payload_truncated else ""
    return (
        '<div class="event"><div class="head">'
        f'<span class="seq">seq {view.seq}</span><span class="kind">{_e(view.kind)}</span>'
        f'<span class="step">step {_e(view.step_id or "(run)")}</span><span class="time">{_e(view.recorded_at)}</span>{tag}</div>'
        f'<div class="{what_class}">{_e(view.summary)}</div>'
        f"<details{' open' if open_payload else ''}><summary>payload{cut}</summary><pre>{_e(view.payload_json)}</pre></details></div>"
    )


def _chain_link(link: ChainLink) -> str:
    classes = [link.role] + (["error"] if link.event.is_error else [])
    label = {"root": "root cause", "failing": "failing step", "cause": "", "effect": "effect"}.get(link.role, "")
    tag = f" {_badge(label, 'bad' if link.role == 'failing' else 'info')}" if label else ""
    state = ""
    if link.state_changes:
        state = (
            f'<h3>State before → after seq {link.event.seq} <span class="muted">({_e(link.state_status)})</span></h3>'
            + _state_table(link.state_changes)
        )
    elif link.state_problem:  # a patch that does not apply changes nothing: say why
        state = f'<h3>State at seq {link.event.seq} <span class="muted">({_e(link.state_status)})</span></h3>'

    card = _event_card(link.event, open_payload=link.role == "failing", tag=tag)
    return f'<li class="{" ".join(classes)}"><span class="dot"></span>{card}{state}</li>'


def _header(report: IncidentReport) -> str:
    run = report.run
    status = run.get("status")
    tone = "ok" if status == "ok" else "bad" if status == "error" else "warn"
    return (
        '<header class="report"><div class="inner">'
        f"<h1>{_e(report.title)} {_badge(str(status), tone)}</h1>"
        f'<div class="meta">agent <code>{_e(run.get("agent"))}</code> · journal <code>{_e(report.journal_path)}</code> · '
        f"{run.get('events', 0):,} events · {_e(run.get('started_at'))} → {_e(run.get('ended_at'))} ({_e(format_ms(run.get('duration_ms')))})"
        f"<br>generated {_e(report.generated_at)} by replay-tui {_e(report.version)}</div></div></header>"
    )


def _summary(report: IncidentReport) -> str:
    cards = []
    failure = report.failure
    if failure is not None:
        tone = "ok" if failure.reason == "last event" else "bad"
        cards.append(
            f'<div class="card {tone}"><div class="label">{_e(failure.reason)}</div>'
            f'<div class="value">seq {failure.seq}</div><div>{_e(failure.description)}</div></div>'
        )
    verification = report.verification
    if verification.ok and verification.chain == "verified":
        cards.append(
            f'<div class="card ok"><div class="label">verification</div><div class="value">hash chain verified</div><div>{verification.events:,} events, schema v1</div></div>'
        )
    elif verification.ok:
        cards.append(
            f'<div class="card warn"><div class="label">verification</div><div class="value">no hash chain</div><div>{_e(verification.dialect)} dialect: integrity cannot be checked</div></div>'
        )
    else:
        fault = verification.fault
        cards.append(
            f'<div class="card bad"><div class="label">verification</div><div class="value">FAILED: {_e(fault.kind.replace("_", " ") if fault else "")}</div>'
            f"<div>at seq {_e(fault.seq if fault else '?')}, line {_e(fault.line if fault else '?')}</div></div>"
        )
    replay = report.replay
    if replay is None:
        cards.append(
            '<div class="card"><div class="label">replay</div><div class="value">not included</div><div class="muted">pass --replay-result to add a divergence report</div></div>'
        )
    else:
        tone = "ok" if replay.ok or replay.status == "match" else "bad"
        cards.append(
            f'<div class="card {tone}"><div class="label">replay</div><div class="value">{_e(replay.status)}</div><div>{_e(replay.headline)}</div></div>'
        )
    calls, errors, timeouts = report.stats.tool_totals
    tokens = report.stats.model_totals
    cards.append(
        f'<div class="card"><div class="label">activity</div><div class="value">{tokens.calls:,} model calls · {calls:,} tool calls</div>'
        f"<div>{tokens.total_tokens:,} tokens · {_count(errors, 'tool error')} ({_count(timeouts, 'timeout')})</div></div>"
    )
    unreadable = ""
    if report.stats.unreadable:
        unreadable = (
            f'<p class="verify bad">{_count(report.stats.unreadable, "unreadable line")} skipped; the first: '
            f"{_e(report.stats.unreadable_examples[0])}</p>"
        )
    return f'<section><div class="summary">{"".join(cards)}</div>{unreadable}</section>'


def _run_section(report: IncidentReport) -> str:
    run = report.run
    header = {
        "run_id": run.get("run_id"),
        "agent": run.get("agent"),
        "status": run.get("status"),
        "seq range": f"{run.get('first_seq')} – {run.get('last_seq')}",
        "dialect": f"{run.get('dialect')}{'' if run.get('hash_chain') else ' (no hash chain)'}",
        "reducer_version": run.get("reducer_version"),
        "output": run.get("output"),
        "error": run.get("error"),
    }
    listed = report.harness.get("plugins")
    plugins: list[Any] = listed if isinstance(listed, list) else []
    harness = {key: value for key, value in report.harness.items() if key != "plugins"}
    plugin_rows = [
        (f"<code>{_e(p.get('id'))}</code>", _e(p.get("type")), _e(p.get("version")))
        for p in plugins
        if isinstance(p, dict)
    ]
    return (
        "<section><h2>Run</h2>"
        + _kv_table(header)
        + "<h3>Environment fingerprint</h3>"
        + _kv_table(report.environment)
        + "<h3>Harness</h3>"
        + _kv_table(harness)
        + (_table((("plugin", False), ("type", False), ("version", False)), plugin_rows) if plugin_rows else "")
        + "</section>"
    )


def _verification_section(report: IncidentReport) -> str:
    verification = report.verification
    tone = "bad" if not verification.ok else "ok" if verification.chain == "verified" else "warn"
    return f'<section><h2>Verification</h2><div class="verify {tone}">{_e(verification.to_text())}</div></section>'


def _replay_section(report: IncidentReport) -> str:
    replay = report.replay
    if replay is None:
        return (
            '<section><h2>Replay</h2><p class="muted">No replay result was given. Run '
            "<code>replay-tui replay JOURNAL --json &gt; result.json</code> and export with "
            "<code>--replay-result result.json</code> to include the divergence report.</p></section>"
        )
    parts = [
        f"<section><h2>{'Replay divergence' if replay.divergence else 'Replay'}</h2><p><b>{_e(replay.headline)}</b></p>"
    ]
    facts = {"result file": replay.source, "status": replay.status, "isolation": replay.isolation}
    if replay.journal_note:
        facts["warning"] = replay.journal_note
    if replay.error:
        facts["error"] = replay.error
    divergence = replay.divergence
    if divergence:
        facts.update(
            {
                "seq": divergence.get("seq"),
                "expected": ref_label(divergence.get("expected")),
                "actual": ref_label(divergence.get("actual")),
                "state before": divergence.get("state_before"),
                "step": divergence.get("step") or "(run level)",
                "mismatched": ", ".join(map(str, divergence.get("mismatched") or [])),
                "why": divergence.get("reason"),
            }
        )
    parts.append(_kv_table({k: v for k, v in facts.items() if v not in (None, "")}))
    if replay.diff_lines:
        parts.append("<h3>Payload diff (expected → actual)</h3><pre>" + _e("\n".join(replay.diff_lines)) + "</pre>")
    if replay.expected_payload_json is not None or replay.actual_payload_json is not None:
        parts.append(
            '<table class="payloads"><thead><tr><th>expected (journal)</th><th>actual (agent)</th></tr></thead><tbody><tr>'
            f"<td><pre>{_e(replay.expected_payload_json or '—')}</pre></td><td><pre>{_e(replay.actual_payload_json or '—')}</pre></td>"
            "</tr></tbody></table>"
        )
    parts.append("</section>")
    return "".join(parts)


def _visible_chain(chain: list[ChainLink]) -> list[Any]:
    """The root and the CHAIN_TAIL events nearest the failure; the middle folds into one item."""
    if len(chain) <= CHAIN_TAIL + 2:
        return chain
    middle = chain[1:-CHAIN_TAIL]
    return [chain[0], middle, *chain[-CHAIN_TAIL:]]


def _chain_item(link: ChainLink | list[ChainLink]) -> str:
    if isinstance(link, list):
        inner = "".join(_chain_item(item) for item in link)
        return (
            f'<li class="folded"><span class="dot"></span><details><summary>{len(link)} more events of the chain '
            f'(seq {link[0].event.seq} to {link[-1].event.seq})</summary><ol class="chain">{inner}</ol></details></li>'
        )
    return _chain_link(link)


def _chain_section(report: IncidentReport) -> str:
    failure = report.failure
    if failure is None:
        return '<section><h2>Causal chain</h2><p class="muted">The journal has no events.</p></section>'
    intro = (
        f"<p>From the root cause down to the failing step (seq {failure.seq}, {_e(failure.reason)}), "
        "following <code>parent_event_id</code>. The state before and after is shown where an event changed it.</p>"
    )
    if report.chain_cut:
        intro += '<p class="muted">The chain is longer than shown; its oldest events are left out.</p>'
    items = "".join(_chain_item(link) for link in _visible_chain(report.chain))
    parts = [f'<section><h2>Causal chain to the failing step</h2>{intro}<ol class="chain">{items}</ol>']
    if report.step_transitions:
        parts.append('<h3>State changes in the steps of this chain</h3><ol class="chain">')
        parts.extend(_chain_item(link) for link in report.step_transitions)
        parts.append("</ol>")
    if report.overall_state_range:
        first, last = report.overall_state_range
        parts.append(f"<h3>State before seq {first} → after seq {last}</h3>")
        parts.append(_state_table(report.overall_state) or '<p class="muted">The state did not change.</p>')
    parts.extend(f'<p class="muted">{_e(note)}</p>' for note in report.notes)
    parts.append("</section>")
    return "".join(parts)


def _annotations_section(report: IncidentReport) -> str:
    parts = ["<section><h2>Bookmarks and notes</h2>"]
    if report.annotations_error:
        parts.append(f'<p class="badge bad">The annotations file could not be read: {_e(report.annotations_error)}</p>')
    if not report.annotations and not report.annotations_error:
        parts.append(
            '<p class="muted">No bookmarks or notes. In the app, <code>m</code> bookmarks an event and <code>a</code> adds a note.</p>'
        )
    for view in report.annotations:
        annotation = view.annotation
        marks = _badge("bookmark", "info") if annotation.bookmarked else ""
        if view.event is None:
            parts.append(
                f'<div class="card warn"><b>seq {annotation.seq}</b> {_e(annotation.kind)} {marks} '
                f'{_badge("stale", "warn")} <span class="muted">the event this was attached to is no longer in this journal</span>'
                + (f'<div class="note">{_e(annotation.note)}</div>' if annotation.note else "")
                + "</div>"
            )
            continue
        card = _event_card(view.event)
        note = f'<div class="note">{_e(annotation.note)}</div>' if annotation.note else ""
        parts.append(f'<div style="margin-bottom:12px">{marks}{card}{note}</div>')
    parts.append("</section>")
    return "".join(parts)


def _stats_section(report: IncidentReport) -> str:
    stats = report.stats
    top = max(stats.by_kind.values(), default=0)
    kinds = _table(
        (("kind", False), ("events", True), ("", False)),
        ((f"<code>{_e(kind)}</code>", f"{count:,}", _bar(count, top)) for kind, count in stats.by_kind.most_common()),
    )
    timeline = stats.timeline
    width = stats.timeline_bucket_width
    over_run = _table(
        (("over the run", False), (f"each point = {width:,} seq{'s' if width > 1 else ''}", False), ("total", True)),
        [
            ("events", _sparkline(timeline.get("events", []), "#3355cc"), f"{sum(timeline.get('events', [])):,}"),
            ("tokens", _sparkline(timeline.get("tokens", []), "#8a4fd0"), f"{sum(timeline.get('tokens', [])):,}"),
            ("errors", _sparkline(timeline.get("errors", []), "#b42318"), f"{sum(timeline.get('errors', [])):,}"),
        ],
    )
    top_latency = max((t.latency_ms.max or 0 for t in stats.tools.values()), default=0)
    tools = _table(
        (
            ("tool", False),
            ("calls", True),
            ("p50", True),
            ("p95", True),
            ("max", True),
            ("", False),
            ("result p50", True),
            ("errors", True),
            ("timeouts", True),
        ),
        (
            (
                f"<code>{_e(name)}</code>",
                f"{t.calls:,}",
                _e(format_ms(t.latency_ms.quantile(0.5))),
                _e(format_ms(t.latency_ms.quantile(0.95))),
                _e(format_ms(t.latency_ms.max)),
                _bar(t.latency_ms.quantile(0.95) or 0, top_latency, 160, "bad" if t.errors else ""),
                _e(format_bytes(t.result_bytes.quantile(0.5))),
                f"{t.errors:,}" if t.errors else "",
                f"{t.timeouts:,}" if t.timeouts else "",
            )
            for name, t in sorted(stats.tools.items(), key=lambda item: -item[1].calls)
        ),
    )
    top_tokens = max((m.total_tokens for m in stats.models.values()), default=0)
    models = _table(
        (
            ("model", False),
            ("calls", True),
            ("errors", True),
            ("prompt", True),
            ("completion", True),
            ("total tokens", True),
            ("", False),
        ),
        (
            (
                f"<code>{_e(name)}</code>",
                f"{m.calls:,}",
                f"{m.errors:,}" if m.errors else "",
                f"{m.prompt_tokens:,}",
                f"{m.completion_tokens:,}",
                f"{m.total_tokens:,}",
                _bar(m.total_tokens, top_tokens, 160, "tok"),
            )
            for name, m in sorted(stats.models.items())
        ),
    )
    steps = _table(
        (("longest steps", False), ("wall time", True), ("events", True), ("seqs", False)),
        (
            (f"<code>{_e(s.step_id)}</code>", _e(format_ms(s.span_ms)), f"{s.events:,}", f"{s.first_seq}–{s.last_seq}")
            for s in stats.longest_steps_by_span[:5]
        ),
    )
    return (
        "<section><h2>Run overview</h2>"
        f"{over_run}<h3>Events by kind</h3>{kinds}"
        + (f"<h3>Model calls</h3>{models}" if stats.models else "")
        + (f"<h3>Tool calls (latency from duration_ms)</h3>{tools}" if stats.tools else "")
        + (f"<h3>Longest steps</h3>{steps}" if stats.longest_steps_by_span else "")
        + "</section>"
    )


def render_html(report: IncidentReport) -> str:
    css = resources.files(__package__).joinpath("report.css").read_text(encoding="utf-8")
    masked = (
        f"{report.masked_values} value(s) flagged by the secret scan are masked in this report."
        if report.masked_values
        else "No value in this report was flagged by the secret scan."
    )
    body = "".join(
        (
            _header(report),
            "<main>",
            _summary(report),
            _replay_section(report) if report.replay else "",
            _chain_section(report),
            "" if report.replay else _replay_section(report),
            _annotations_section(report),
            _verification_section(report),
            _run_section(report),
            _stats_section(report),
            f"<footer>Self-contained report: it loads nothing from the network. {_e(masked)} "
            f"Journal <code>{_e(report.journal_path)}</code>.</footer>",
            "</main>",
        )
    )
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        # a CSP that forbids every fetch makes "loads nothing" hold even for a future edit of this file
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\">"
        f"<title>{_e(report.title)}</title><style>{css}</style></head><body>{body}</body></html>\n"
    )

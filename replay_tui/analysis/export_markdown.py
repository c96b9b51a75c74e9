"""The incident report as Markdown, for a ticket, a pull request or a wiki page.

Same sections as the HTML; charts are unicode bars and sparklines. Values from
the journal go into code spans or fenced blocks so Markdown never interprets them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

import orjson

from ..journal.safe_text import safe, safe_line
from .export import CHAIN_TAIL, ChainLink, EventView, IncidentReport, StateChange, ref_label
from .stats_render import bar, format_bytes, format_ms, sparkline

_BACKTICK_RUNS = re.compile("`+")
# Everything CommonMark/GFM could read as syntax inside a line: emphasis, code, links, images, HTML, entities,
# tables, headings, strikethrough. Each is escaped with a backslash (any ASCII punctuation may be).
_MARKDOWN_SYNTAX = re.compile(r"[\\`*_\[\]<>|#&!~@]")
_BARE_LINK = re.compile(r"(?<=[A-Za-z])://|(?i:www)(?=\.)")  # GFM turns bare URLs into live links


def _longest_backtick_run(text: str) -> int:
    return max((len(run) for run in _BACKTICK_RUNS.findall(text)), default=0)


def _code(value: Any) -> str:
    """An inline code span that survives backticks and pipes: its fence is longer than any backtick run inside."""
    text = safe_line(str("" if value is None else value))
    if not text:
        return "—"
    text = text.replace("|", "\\|")
    run = _longest_backtick_run(text)
    if not run:
        return f"`{text}`"
    fence = "`" * (run + 1)
    return f"{fence} {text} {fence}"  # CommonMark strips one space each side: a backtick at either end stays


def _text(value: Any) -> str:
    """Plain text for a table cell or a paragraph: escaped (controls, bidi), and no Markdown syntax survives."""
    text = safe_line(str("" if value is None else value))
    text = _MARKDOWN_SYNTAX.sub(r"\\\g<0>", text)
    return _BARE_LINK.sub(lambda match: "\\" + match.group() if match.group() == "://" else match.group() + "\\", text)


def _fence(text: str, info: str = "") -> str:
    """A fenced block whose fence is longer than any backtick run in the (escaped) text."""
    text = safe(text, multiline=True)
    fence = "`" * max(3, _longest_backtick_run(text) + 1)
    return f"{fence}{info}\n{text}\n{fence}"


def _table(headers: Sequence[str], rows: Iterable[Sequence[str]], numeric: Sequence[bool] | None = None) -> str:
    numeric = numeric or [False] * len(headers)
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---:" if n else "---" for n in numeric) + "|"]
    lines.extend("| " + " | ".join(row) + " |" for row in rows)
    return "\n".join(lines)


def _kv(items: dict[str, Any]) -> str:
    rows = []
    for key, value in items.items():
        if isinstance(value, (dict, list)):
            shown = _code(orjson.dumps(value).decode()) if value else "(none)"
        else:
            shown = _code(value) if value not in (None, "") else "(not recorded)"
        rows.append((f"**{_text(key)}**", shown))
    return _table(("field", "value"), rows)


def _state(changes: Sequence[StateChange]) -> str:
    if not changes:
        return ""
    return _table(
        ("state path", "change", "before", "after"),
        (
            (_code(c.pointer), c.change, _code(c.before) if c.before else "—", _code(c.after) if c.after else "—")
            for c in changes
        ),
    )


def _event(view: EventView, marker: str = "") -> list[str]:
    lines = [
        f"**seq {view.seq}** · {_code(view.kind)} · step {_code(view.step_id or '(run)')} · {_text(view.recorded_at)}{marker}  ",
        f"{'**' if view.is_error else ''}{_text(view.summary)}{'**' if view.is_error else ''}",
    ]
    return lines


def _link(link: ChainLink, number: int) -> str:
    marker = {"root": " · **root cause**", "failing": " · **failing step**", "effect": " · effect"}.get(link.role, "")
    lines = [f"{number}. " + "\n   ".join(_event(link.event, marker))]
    if link.role == "failing":
        lines.append("\n" + "\n".join("   " + line for line in _fence(link.event.payload_json, "json").splitlines()))
    if link.state_changes:
        lines.append(f"\n   State before → after seq {link.event.seq} ({_text(link.state_status)}):\n")
        lines.append("\n".join("   " + line for line in _state(link.state_changes).splitlines()))
    elif link.state_problem:  # a patch that does not apply changes nothing: say why
        lines.append(f"\n   State at seq {link.event.seq}: {_text(link.state_status)}")
    return "\n".join(lines)


def render_markdown(report: IncidentReport) -> str:
    run = report.run
    out: list[str] = [f"# {_text(report.title)}", ""]
    out.append(
        f"Agent {_code(run.get('agent'))} · status **{_text(run.get('status'))}** · {run.get('events', 0):,} events · "
        f"{_text(run.get('started_at'))} → {_text(run.get('ended_at'))} ({format_ms(run.get('duration_ms'))})  "
    )
    out.append(
        f"Journal {_code(report.journal_path)} · generated {_text(report.generated_at)} by replay-tui {_text(report.version)}"
    )
    out.append("")

    out += ["## Summary", ""]
    if report.failure:
        out.append(
            f"- **{_text(report.failure.reason)}:** seq {report.failure.seq}: {_text(report.failure.description)}"
        )
    out.append(f"- **verification:** {_text(report.verification.to_text())}")
    out.append(
        f"- **replay:** {_text(report.replay.headline) if report.replay else 'not included (pass --replay-result)'}"
    )
    calls, errors, timeouts = report.stats.tool_totals
    tokens = report.stats.model_totals
    if report.stats.unreadable:
        out.append(
            f"- **unreadable lines:** {report.stats.unreadable} skipped; the first: {_text(report.stats.unreadable_examples[0])}"
        )
    out.append(
        f"- **activity:** {tokens.calls:,} model call(s), {tokens.total_tokens:,} tokens, {calls:,} tool calls, {errors:,} tool error(s) ({timeouts:,} timeout(s))"
    )
    out.append("")

    out += ["## Causal chain to the failing step", ""]
    if not report.chain:
        out.append("The journal has no events.")
    else:
        out.append("From the root cause down to the failing step, following `parent_event_id`.")
        if report.chain_cut:
            out.append("The chain is longer than shown; its oldest events are left out.")
        out.append("")
        chain = report.chain
        if len(chain) > CHAIN_TAIL + 2:
            middle = chain[1:-CHAIN_TAIL]
            out.append(_link(chain[0], 1) + "\n")
            out.append(
                f"   … {len(middle)} more events of the chain (seq {middle[0].event.seq} to {middle[-1].event.seq}) …\n"
            )
            out.extend(
                _link(link, number) + "\n"
                for number, link in enumerate(chain[-CHAIN_TAIL:], len(chain) - CHAIN_TAIL + 1)
            )
        else:
            out.extend(_link(link, number) + "\n" for number, link in enumerate(chain, 1))
    if report.step_transitions:
        out += ["### State changes in the steps of this chain", ""]
        out.extend(_link(link, number) + "\n" for number, link in enumerate(report.step_transitions, 1))
    if report.overall_state_range:
        first, last = report.overall_state_range
        out += [
            f"### State before seq {first} → after seq {last}",
            "",
            _state(report.overall_state) or "The state did not change.",
            "",
        ]
    out.extend(f"_{_text(note)}_\n" for note in report.notes)

    out += ["## Replay divergence" if report.replay and report.replay.divergence else "## Replay", ""]
    replay = report.replay
    if replay is None:
        out.append(
            "No replay result was given. Run `replay-tui replay JOURNAL --json > result.json` and export with `--replay-result result.json`."
        )
    else:
        out.append(f"**{_text(replay.headline)}**\n")
        facts: dict[str, Any] = {
            "result file": replay.source,
            "status": replay.status,
            "isolation": replay.isolation,
            "warning": replay.journal_note,
            "error": replay.error,
        }
        if replay.divergence:
            divergence = replay.divergence
            facts |= {
                "seq": divergence.get("seq"),
                "expected": ref_label(divergence.get("expected")),
                "actual": ref_label(divergence.get("actual")),
                "state before": divergence.get("state_before"),
                "step": divergence.get("step") or "(run level)",
                "why": divergence.get("reason"),
            }
        out.append(_kv({k: v for k, v in facts.items() if v not in (None, "")}))
        if replay.diff_lines:
            out += ["", "Payload diff (expected → actual):", "", _fence("\n".join(replay.diff_lines))]
        for side, text in (
            ("Expected (journal)", replay.expected_payload_json),
            ("Actual (agent)", replay.actual_payload_json),
        ):
            if text is not None:
                out += ["", f"{side}:", "", _fence(text, "json")]
    out.append("")

    out += ["## Bookmarks and notes", ""]
    if report.annotations_error:
        out.append(f"**The annotations file could not be read:** {_text(report.annotations_error)}\n")
    if not report.annotations and not report.annotations_error:
        out.append("No bookmarks or notes.")
    for view in report.annotations:
        annotation = view.annotation
        flag = " · 🔖 bookmark" if annotation.bookmarked else ""
        if view.event is None:
            out.append(
                f"- **seq {annotation.seq}** {_code(annotation.kind)}{flag} · _stale: the event is no longer in this journal_"
            )
        else:
            out.append("- " + "\n  ".join(_event(view.event, flag)))
        if annotation.note:
            out.append("\n" + "\n".join("  > " + _text(line) for line in annotation.note.splitlines()))
        out.append("")

    out += ["## Verification", "", _text(report.verification.to_text()), ""]

    out += [
        "## Run",
        "",
        _kv(
            {
                "run_id": run.get("run_id"),
                "agent": run.get("agent"),
                "status": run.get("status"),
                "seq range": f"{run.get('first_seq')} – {run.get('last_seq')}",
                "dialect": run.get("dialect"),
                "reducer_version": run.get("reducer_version"),
                "output": run.get("output"),
                "error": run.get("error"),
            }
        ),
        "",
        "### Environment fingerprint",
        "",
        _kv(report.environment),
        "",
        "### Harness",
        "",
        _kv(report.harness),
        "",
    ]

    stats = report.stats
    out += ["## Run overview", ""]
    timeline = stats.timeline
    out.append(
        _table(
            ("over the run", f"each column = {stats.timeline_bucket_width:,} seq(s)", "total"),
            [
                (name, _code(sparkline(timeline.get(name, []))), f"{sum(timeline.get(name, [])):,}")
                for name in ("events", "tokens", "errors")
            ],
            (False, False, True),
        )
    )
    out.append("")
    top = max(stats.by_kind.values(), default=0)
    out.append(
        _table(
            ("kind", "events", ""),
            ((_code(k), f"{c:,}", bar(c, top, 24)) for k, c in stats.by_kind.most_common()),
            (False, True, False),
        )
    )
    if stats.tools:
        out.append("")
        out.append(
            _table(
                ("tool", "calls", "p50", "p95", "max", "result p50", "errors", "timeouts"),
                (
                    (
                        _code(name),
                        f"{t.calls:,}",
                        format_ms(t.latency_ms.quantile(0.5)),
                        format_ms(t.latency_ms.quantile(0.95)),
                        format_ms(t.latency_ms.max),
                        format_bytes(t.result_bytes.quantile(0.5)),
                        f"{t.errors:,}",
                        f"{t.timeouts:,}",
                    )
                    for name, t in sorted(stats.tools.items(), key=lambda item: -item[1].calls)
                ),
                (False, True, True, True, True, True, True, True),
            )
        )
    out.append("")
    masked = (
        f"{report.masked_values} value(s) flagged by the secret scan are masked in this report."
        if report.masked_values
        else "No value in this report was flagged by the secret scan."
    )
    out.append(f"---\n_{masked}_\n")
    return "\n".join(out)

"""The picture of a run: tokens in the window at each model call, with the window, the trigger
line and each compaction marked, plus a table of the run's metrics.

``build_report(events)`` turns a run's event stream (from the run log or a ``--events`` file) into a
``RunReport``, a plain data structure; the renderers only draw it: ``render_terminal`` with plotext,
``write_png`` and ``write_html`` with matplotlib (the HTML page inlines an SVG, so it works offline),
``metrics_table`` as text. The plotting libraries are imported only when drawing.

A compaction is marked after the last model call that precedes its event (``after_call``), that
is between that call and the next one. The window and trigger line come from the ``run_start``
fields ``context_window`` and ``compact_at`` when the run recorded them.

The cost line and the cached share come from the events too: each call's ``usage`` (cache reads
and writes) and the ``cost`` its ``run_end`` carries; the chart draws the tokens each agent call
read from the provider's prompt cache under its curve.

Part of the ``runlog`` package; imports only ``events`` and ``runlog.costs``.
"""

from __future__ import annotations

import html
import io
import json
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..events import Event, compaction_tokens
from ..safefs import write_file
from .costs import cost_line

LABEL_HEADROOM = 1.12  # the figure's y axis ends this far above its highest value


@dataclass(frozen=True)
class CallPoint:
    call: int
    purpose: str
    tokens: int | None  # the accounting counter after the call
    input_tokens: int | None
    output_tokens: int | None
    stop_reason: str | None
    tool_calls: int  # tool calls the model asked for in this reply
    tool_errors: int
    prefix_share: float | None  # share of this request that repeats the previous one's prefix
    cached_tokens: int | None = None  # of input_tokens, read from the provider's prompt cache
    cache_write_tokens: int | None = None  # of input_tokens, written to it


@dataclass(frozen=True)
class CompactionMark:
    n: int
    strategy: str
    after_call: int  # the compaction happened after this model call (0: before the first)
    tokens_before: int | None
    tokens_after: int | None
    messages_before: int | None
    messages_after: int | None

    @property
    def ratio(self) -> float | None:
        """Compression ratio, tokens before / after (4.0 means four times smaller)."""
        if not self.tokens_before or not self.tokens_after:
            return None
        return self.tokens_before / self.tokens_after


@dataclass(frozen=True)
class Round:
    """One agent turn: its model call and how much the window grew since the previous turn."""

    number: int
    call: int
    tokens: int | None
    growth: int | None  # None for the first round and across a compaction


@dataclass
class RunReport:
    run_id: str = ""
    task: str = ""
    model: str = ""
    stop: str | None = None
    window: int | None = None
    compact_at: int | None = None
    calls: list[CallPoint] = field(default_factory=list)
    compactions: list[CompactionMark] = field(default_factory=list)
    tool_calls: int = 0
    tool_errors: int = 0
    tools: dict[str, tuple[int, int]] = field(default_factory=dict)  # name -> (calls, errors)
    memory_reads: int = 0
    memory_writes: int = 0
    memory_write_ops: dict[str, int] = field(default_factory=dict)
    notes_writes: int = 0
    errors: int = 0
    prefix_share: float | None = None  # over calls 2..n, weighted by request size when computed
    prefix_source: str | None = None  # "events" (prefix_share fields) or "requests" (traced)
    cost: dict[str, Any] | None = None  # run_end's cost
    usage: dict[str, Any] | None = None  # run_end's usage

    @property
    def cached_share(self) -> float | None:
        """Share of all input tokens read from the prompt cache (None when no call said)."""
        inputs = sum(c.input_tokens or 0 for c in self.calls)
        if not inputs or all(c.cached_tokens is None for c in self.calls):
            return None
        return sum(c.cached_tokens or 0 for c in self.calls) / inputs

    @property
    def rounds(self) -> list[Round]:
        rounds: list[Round] = []
        previous: CallPoint | None = None
        compacted = {c.after_call for c in self.compactions}
        passed_compaction = False
        for point in self.calls:
            if point.purpose == "agent":
                growth = None
                if previous and not passed_compaction and None not in (point.tokens, previous.tokens):
                    growth = (point.tokens or 0) - (previous.tokens or 0)
                rounds.append(Round(len(rounds) + 1, point.call, point.tokens, growth))
                previous, passed_compaction = point, False
            if point.call in compacted:
                passed_compaction = True
        return rounds

    @property
    def mean_growth(self) -> float | None:
        growths = [r.growth for r in self.rounds if r.growth is not None]
        return sum(growths) / len(growths) if growths else None


# --- from events ------------------------------------------------------------------------------


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _threshold(value: Any, window: int | None) -> int | None:
    """compact_at as tokens; a ratio in (0, 1] is taken as a share of the window."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if 0 < value <= 1 and window:
        return round(value * window)
    return int(value)


def _request_chunks(request: Any) -> list[str]:
    if not isinstance(request, dict):
        return []
    chunks = [json.dumps(request.get("system", ""), ensure_ascii=False)]
    if "tools" in request:
        chunks.append(json.dumps(request["tools"], ensure_ascii=False, sort_keys=True))
    messages = request.get("messages", [])
    chunks += [json.dumps(m, ensure_ascii=False, sort_keys=True) for m in messages or []]
    return chunks


def common_prefix(previous: Sequence[str], current: Sequence[str]) -> int:
    """Characters at the start of ``current`` equal to ``previous`` (chunk by chunk, then the
    first differing chunk character by character)."""
    shared = 0
    for old, new in zip(previous, current, strict=False):
        if old == new:
            shared += len(new)
            continue
        for a, b in zip(old, new, strict=False):
            if a != b:
                break
            shared += 1
        break
    return shared


def build_report(events: Iterable[Event]) -> RunReport:
    """Everything the picture and the table show, computed from one run's events."""
    report = RunReport()
    pending: list[dict[str, Any]] = []  # model_call fields, completed as tool calls arrive
    tool_owner: dict[str, int] = {}  # call_id -> index in pending
    tools: Counter[str] = Counter()
    tool_errors: Counter[str] = Counter()
    write_ops: Counter[str] = Counter()
    last_request: dict[str, list[str]] = {}  # purpose -> chunks of its last traced request
    prefix_shared = prefix_total = 0
    event_shares: list[float] = []
    for event in events:
        kind = event.get("type")
        if kind == "run_start":
            report.run_id = str(event.get("run_id", ""))
            report.task = str(event.get("task", ""))
            report.model = str(event.get("model", ""))
            report.window = _int(event.get("context_window"))
            report.compact_at = _threshold(event.get("compact_at"), report.window)
        elif kind == "model_call":
            usage = event.get("usage") if isinstance(event.get("usage"), dict) else {}
            assert isinstance(usage, dict)
            share = event.get("prefix_share")
            share = float(share) if isinstance(share, int | float) and not isinstance(share, bool) else None
            purpose = str(event.get("purpose", "agent"))
            if share is not None:
                event_shares.append(share)
            elif "request" in event:
                chunks = _request_chunks(event["request"])
                before = last_request.get(purpose)
                if before is not None and chunks:
                    shared = common_prefix(before, chunks)
                    total = sum(len(c) for c in chunks)
                    share = shared / total
                    prefix_shared, prefix_total = prefix_shared + shared, prefix_total + total
                last_request[purpose] = chunks
            pending.append(
                {
                    "call": _int(event.get("call")) or len(pending) + 1,
                    "purpose": purpose,
                    "tokens": _int(event.get("tokens")),
                    "input_tokens": _int(usage.get("input_tokens")),
                    "output_tokens": _int(usage.get("output_tokens")),
                    "stop_reason": event.get("stop_reason"),
                    "tool_calls": 0,
                    "tool_errors": 0,
                    "prefix_share": share,
                    "cached_tokens": _int(usage.get("cache_read_input_tokens", usage.get("cached_tokens"))),
                    "cache_write_tokens": _int(usage.get("cache_creation_input_tokens")),
                }
            )
        elif kind == "tool_call":
            report.tool_calls += 1
            name = str(event.get("name", "?"))
            tools[name] += 1
            if pending:
                pending[-1]["tool_calls"] += 1
                tool_owner[str(event.get("call_id"))] = len(pending) - 1
        elif kind == "tool_result" and not event.get("ok", True):
            report.tool_errors += 1
            tool_errors[str(event.get("name", "?"))] += 1
            owner = tool_owner.get(str(event.get("call_id")))
            if owner is not None:
                pending[owner]["tool_errors"] += 1
        elif kind == "compaction":
            before, after = compaction_tokens(event)
            report.compactions.append(
                CompactionMark(
                    n=_int(event.get("n")) or len(report.compactions) + 1,
                    strategy=str(event.get("strategy", "")),
                    after_call=pending[-1]["call"] if pending else 0,
                    tokens_before=_int(before),
                    tokens_after=_int(after),
                    messages_before=_int(event.get("messages_before")),
                    messages_after=_int(event.get("messages_after")),
                )
            )
        elif kind == "memory_recall":
            report.memory_reads += 1
        elif kind == "memory_write":
            report.memory_writes += 1
            write_ops[str(event.get("op", "?"))] += 1
        elif kind == "notes_write":
            report.notes_writes += 1
        elif kind == "error":
            report.errors += 1
        elif kind == "run_end":
            report.stop = str(event.get("stop"))
            cost, usage = event.get("cost"), event.get("usage")
            report.cost = cost if isinstance(cost, dict) else None
            report.usage = usage if isinstance(usage, dict) else None
    report.calls = [CallPoint(**fields) for fields in pending]
    report.tools = {name: (count, tool_errors[name]) for name, count in tools.items()}
    report.memory_write_ops = dict(write_ops)
    if event_shares:
        report.prefix_share, report.prefix_source = sum(event_shares) / len(event_shares), "events"
    elif prefix_total:
        report.prefix_share, report.prefix_source = prefix_shared / prefix_total, "requests"
    return report


# --- the metrics table ------------------------------------------------------------------------


def _fmt(value: float | int | None, spec: str = "") -> str:
    return "-" if value is None else format(value, spec)


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    line = "  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True))
    out = [line.rstrip(), "  ".join("-" * w for w in widths)]
    for row in rows:
        cells = [
            c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths, strict=True))
        ]
        out.append("  ".join(cells).rstrip())
    return out


def metrics_sections(report: RunReport) -> list[tuple[str, list[str], list[list[str]]]]:
    """The metrics as (title, headers, rows) tables, shared by the text and HTML renderers."""
    share = report.prefix_share
    share_text = "-" if share is None else f"{share:.1%} (from {report.prefix_source})"
    memory_ops = ", ".join(f"{op} {n}" for op, n in sorted(report.memory_write_ops.items()))
    summary = [
        ["model calls", str(len(report.calls))],
        ["agent rounds", str(len(report.rounds))],
        ["mean tokens added per round", _fmt(report.mean_growth, ".0f")],
        ["peak tokens in window", _fmt(max((c.tokens or 0 for c in report.calls), default=None))],
        ["context window", _fmt(report.window)],
        ["compaction trigger", _fmt(report.compact_at)],
        ["compactions", str(len(report.compactions))],
        ["tool calls", str(report.tool_calls)],
        ["tool errors", str(report.tool_errors)],
        ["memory reads (recalls)", str(report.memory_reads)],
        ["memory writes", f"{report.memory_writes}" + (f" ({memory_ops})" if memory_ops else "")],
        ["notes writes", str(report.notes_writes)],
        ["errors", str(report.errors)],
        ["repeated prefix share", share_text],
        ["input read from prompt cache", _fmt(report.cached_share, ".1%")],
        ["cost", (cost_line(report.cost, report.usage) or "-").removeprefix("cost: ")],
    ]
    rounds = [
        [str(r.number), str(r.call), _fmt(r.tokens), "-" if r.growth is None else f"{r.growth:+d}"]
        for r in report.rounds
    ]
    compactions = [
        [
            str(c.n),
            c.strategy,
            str(c.after_call),
            _fmt(c.tokens_before),
            _fmt(c.tokens_after),
            _fmt(c.ratio, ".2f") + ("x" if c.ratio is not None else ""),
            f"{_fmt(c.messages_before)} -> {_fmt(c.messages_after)}",
        ]
        for c in report.compactions
    ]
    tools = [[name, str(n), str(err)] for name, (n, err) in sorted(report.tools.items())]
    return [
        ("Metrics", ["metric", "value"], summary),
        ("Tokens per round", ["round", "call", "tokens", "growth"], rounds),
        (
            "Compactions",
            ["n", "strategy", "after call", "tokens before", "tokens after", "ratio", "messages"],
            compactions,
        ),
        ("Tool calls", ["tool", "calls", "errors"], tools),
    ]


def metrics_table(report: RunReport) -> str:
    lines: list[str] = []
    for title, headers, rows in metrics_sections(report):
        if not rows:
            continue
        lines += ["", title, *_table(headers, rows)]
    return "\n".join(lines).lstrip("\n") + "\n"


# --- drawing ----------------------------------------------------------------------------------


def segments(report: RunReport) -> list[tuple[list[int], list[int]]]:
    """The agent calls' (call numbers, tokens), split where a compaction happened so that no line
    is drawn across one."""
    cuts = sorted({c.after_call for c in report.compactions})
    parts: list[tuple[list[int], list[int]]] = [([], [])]
    for point in report.calls:
        if point.purpose != "agent" or point.tokens is None:
            continue
        passed = sum(1 for cut in cuts if cut < point.call)
        while len(parts) <= passed:
            parts.append(([], []))
        parts[passed][0].append(point.call)
        parts[passed][1].append(point.tokens)
    return [part for part in parts if part[0]]


def cached_points(report: RunReport) -> tuple[list[int], list[int]]:
    """The agent calls' (call numbers, input tokens read from the prompt cache), for runs whose
    provider reported any."""
    points = [(c.call, c.cached_tokens) for c in report.calls if c.purpose == "agent" and c.cached_tokens]
    return [a for a, _ in points], [t or 0 for _, t in points]


def _others(report: RunReport) -> tuple[list[int], list[int]]:
    """Calls for compaction or memory, with their token counters."""
    points = [(c.call, c.tokens) for c in report.calls if c.purpose != "agent" and c.tokens is not None]
    return [a for a, _ in points], [t for _, t in points]


def _title(report: RunReport) -> str:
    return f"run {report.run_id}: tokens in the window per model call"


def _integer_ticks(first: int, last: int, most: int = 10) -> list[int]:
    step = max(1, -(-(last - first) // (most - 1)))
    return list(range(first, last + 1, step))


def render_terminal(report: RunReport, width: int = 100, height: int = 24, color: bool = False) -> str:
    """The context curve as text, drawn by plotext."""
    import plotext as plt

    plt.clear_figure()
    plt.plotsize(width, height)
    plt.theme("pro" if color else "clear")
    parts = segments(report)
    calls = [c for part in parts for c in part[0]]
    tokens = [t for part in parts for t in part[1]]
    other_calls, other_tokens = _others(report)
    if not calls and not other_calls:
        return "(no model call with a token count in this run)\n"
    for i, (xs, ys) in enumerate(parts):
        plt.plot(xs, ys, marker="braille", label="tokens (agent calls)" if i == 0 else None)
    cached_xs, cached_ys = cached_points(report)
    if cached_xs:
        plt.scatter(cached_xs, cached_ys, marker="dot", label="of which read from the prompt cache")
    if other_calls:
        plt.scatter(other_calls, other_tokens, marker="o", label="compaction/memory calls")
    right = max(calls + other_calls)
    if report.window:
        plt.hline(report.window, "red")
        plt.text("window", right, report.window, color="red", alignment="right")
    if report.compact_at:
        plt.hline(report.compact_at, "orange")
        plt.text("trigger", right, report.compact_at, color="orange", alignment="right")
    top = max([*tokens, *other_tokens, report.window or 0, report.compact_at or 0])
    for mark in report.compactions:
        plt.vline(mark.after_call + 0.5, "blue")
        plt.text(f"C{mark.n}", mark.after_call + 0.5, top, color="blue")
    plt.ylim(0, top * 1.05 or 1)
    plt.xticks(_integer_ticks(min(calls + other_calls), right))
    plt.title(_title(report))
    plt.xlabel("model call  (C<n>: compaction)")
    text = str(plt.build())
    plt.clear_figure()
    return (text if color else plt.uncolorize(text)).rstrip() + "\n"


def _figure(report: RunReport) -> Any:
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    figure = Figure(figsize=(10, 5), dpi=110, layout="constrained")
    axes = figure.add_subplot()
    for i, (xs, ys) in enumerate(segments(report)):
        label = "tokens in window (agent calls)" if i == 0 else None
        axes.plot(xs, ys, marker="o", markersize=3, color="tab:blue", label=label)
    cached_xs, cached_ys = cached_points(report)
    if cached_xs:
        axes.bar(cached_xs, cached_ys, color="tab:green", alpha=0.3, label="read from the prompt cache")
    other_calls, other_tokens = _others(report)
    if other_calls:
        axes.scatter(
            other_calls, other_tokens, marker="s", color="tab:purple", label="compaction/memory calls"
        )
    if report.window:
        axes.axhline(report.window, color="tab:red", linewidth=1.2, label=f"window {report.window}")
    if report.compact_at:
        axes.axhline(
            report.compact_at, color="tab:orange", linestyle="--", label=f"trigger {report.compact_at}"
        )
    for i, mark in enumerate(report.compactions):
        axes.axvline(
            mark.after_call + 0.5,
            color="tab:blue",
            linestyle=":",
            label="compaction" if i == 0 else None,
        )
        ratio = f" ({mark.ratio:.1f}x)" if mark.ratio else ""
        axes.annotate(
            f"C{mark.n}{ratio}",
            xy=(mark.after_call + 0.5, 1.0),
            xycoords=("data", "axes fraction"),
            xytext=(2, -12),
            textcoords="offset points",
            color="tab:blue",
            fontsize=8,
        )
    axes.set_xlabel("model call")
    axes.set_ylabel("tokens")
    axes.set_title(_title(report))
    # Headroom above the highest line, so the compaction labels at the top never sit on the
    # window line (the window is usually the highest value drawn).
    top = max([*(c.tokens or 0 for c in report.calls), report.window or 0, report.compact_at or 0])
    axes.set_ylim(bottom=0, top=top * LABEL_HEADROOM or None)
    axes.grid(alpha=0.3)
    axes.xaxis.set_major_locator(MaxNLocator(integer=True))
    if axes.get_legend_handles_labels()[0]:
        axes.legend(loc="best", fontsize=8, framealpha=0.9)
    return figure


def write_png(report: RunReport, path: str | Path) -> Path:
    """The context curve as a PNG image (matplotlib)."""
    target = Path(path)
    _figure(report).savefig(target, format="png")
    return target


def write_html(report: RunReport, path: str | Path) -> Path:
    """A standalone page: the curve as inline SVG and the metrics tables. Needs no network."""
    from matplotlib import rc_context

    buffer = io.StringIO()
    with rc_context({"svg.fonttype": "none"}):  # text stays text: smaller, searchable
        _figure(report).savefig(buffer, format="svg", metadata={"Date": None})
    svg = buffer.getvalue()
    svg = svg[svg.index("<svg") :]  # drop the XML prologue, not allowed inside HTML
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>tinyharness run {html.escape(report.run_id)}</title>",
        "<style>body{font-family:sans-serif;margin:2em;max-width:1100px}"
        "table{border-collapse:collapse;margin-bottom:1.5em}"
        "td,th{border:1px solid #ccc;padding:2px 8px;text-align:right}"
        "th{background:#eee}td:first-child{text-align:left}</style></head><body>",
        f"<h1>Run {html.escape(report.run_id)}</h1>",
        f"<p><b>task:</b> {html.escape(report.task)}<br><b>model:</b> {html.escape(report.model)}"
        f"<br><b>stop:</b> {html.escape(str(report.stop))}</p>",
        svg,
    ]
    for title, headers, rows in metrics_sections(report):
        if not rows:
            continue
        parts.append(f"<h2>{html.escape(title)}</h2><table><tr>")
        parts += [f"<th>{html.escape(h)}</th>" for h in headers]
        parts.append("</tr>")
        for row in rows:
            parts.append("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>")
        parts.append("</table>")
    parts.append("</body></html>\n")
    target = write_file(Path(path), "\n".join(parts).encode("utf-8"))
    return target

"""Run reports: the data computed from events, the terminal chart, the PNG and HTML files."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tinyharness.runlog.report import (
    build_report,
    common_prefix,
    metrics_table,
    render_terminal,
    segments,
    write_html,
    write_png,
)


def _events(*, window: bool = True) -> list[dict[str, Any]]:
    """A run with agent calls 1-3, a compaction (call 4), agent calls 5-6, a second compaction
    (call 7) and a last agent call 8, with tool calls, a tool error, notes and memory."""
    out: list[dict[str, Any]] = []

    def add(kind: str, **fields: Any) -> None:
        out.append({"type": kind, "seq": len(out) + 1, "ts": 100.0 + len(out), "run_id": "r42", **fields})

    start: dict[str, Any] = {"task": "long task", "model": "scripted", "tools": ["read_file"]}
    if window:
        start |= {"context_window": 1000, "compact_at": 0.8}
    add("run_start", **start)
    add("memory_recall", query="task", hits=1)

    def call(n: int, tokens: int, purpose: str = "agent") -> None:
        usage = {"input_tokens": tokens - 20, "output_tokens": 20}
        add(
            "model_call",
            call=n,
            purpose=purpose,
            stop_reason="tool_use",
            usage=usage,
            tokens=tokens,
            messages=n,
        )

    def tool(call_id: str, ok: bool = True) -> None:
        add("tool_call", call_id=call_id, name="read_file", args={"path": "a.txt"})
        add("tool_result", call_id=call_id, name="read_file", ok=ok, chars=10, truncated=False)

    call(1, 300)
    tool("a")
    call(2, 550)
    tool("b", ok=False)
    add("notes_write", op="append", chars=30)
    call(3, 820)
    tool("c")
    call(4, 820, "compact")
    add("compaction", n=1, strategy="summarize", tokens_before=820, tokens_after=200,
        messages_before=7, messages_after=2)  # fmt: skip
    call(5, 400)
    tool("d")
    call(6, 810)
    tool("e")
    add("memory_write", op="add", text="a fact")
    call(7, 810, "compact")
    add("compaction", n=2, strategy="summarize", tokens_before=810, tokens_after=270,
        messages_before=6, messages_after=2)  # fmt: skip
    call(8, 350)
    add("run_end", stop="end_turn", final="done", model_calls=8, compactions=2)
    return out


def test_compactions_are_placed_after_the_call_that_preceded_them() -> None:
    report = build_report(_events())
    assert [(c.n, c.after_call) for c in report.compactions] == [(1, 4), (2, 7)]
    assert [c.ratio for c in report.compactions] == [pytest.approx(4.1), pytest.approx(3.0)]
    assert (report.window, report.compact_at, report.stop) == (1000, 800, "end_turn")
    assert segments(report) == [([1, 2, 3], [300, 550, 820]), ([5, 6], [400, 810]), ([8], [350])]
    assert [(c.call, c.purpose, c.tokens) for c in report.calls if c.purpose == "compact"] == [
        (4, "compact", 820),
        (7, "compact", 810),
    ]


def test_rounds_and_counters() -> None:
    report = build_report(_events())
    rounds = report.rounds
    assert [(r.number, r.call, r.tokens, r.growth) for r in rounds] == [
        (1, 1, 300, None), (2, 2, 550, 250), (3, 3, 820, 270), (4, 5, 400, None),
        (5, 6, 810, 410), (6, 8, 350, None),
    ]  # fmt: skip
    assert report.mean_growth == pytest.approx((250 + 270 + 410) / 3)
    assert (report.tool_calls, report.tool_errors, report.tools) == (5, 1, {"read_file": (5, 1)})
    assert [c.tool_errors for c in report.calls][:2] == [0, 1]
    assert (report.memory_reads, report.memory_writes, report.memory_write_ops) == (1, 1, {"add": 1})
    assert report.notes_writes == 1
    assert report.prefix_share is None  # neither prefix_share fields nor traced requests


def test_metrics_table_lists_every_metric() -> None:
    text = metrics_table(build_report(_events()))
    assert re.search(r"compactions\s+2", text)
    assert re.search(r"tool errors\s+1", text)
    assert re.search(r"memory writes\s+1 \(add 1\)", text)
    assert re.search(r"notes writes\s+1", text)
    assert re.search(r"compaction trigger\s+800", text)
    assert re.search(r"1\s+summarize\s+4\s+820\s+200\s+4\.10x\s+7 -> 2", text)
    assert re.search(r"2\s+summarize\s+7\s+810\s+270\s+3\.00x\s+6 -> 2", text)
    assert re.search(r"5\s+6\s+810\s+\+410", text)  # round 5 is call 6


def _columns(line: str, labels: list[str]) -> list[int]:
    return [re.search(rf"(?<!\d){label}(?!\d)", line).start() for label in labels]  # type: ignore[union-attr]


def test_terminal_chart_marks_each_compaction_between_its_calls() -> None:
    text = render_terminal(build_report(_events()), width=100, height=24)
    lines = text.splitlines()
    assert "\x1b[" not in text  # no colour codes unless asked
    marks = [line for line in lines if "C1" in line]
    assert len(marks) == 1 and "C2" in marks[0]
    c1, c2 = marks[0].index("C1"), marks[0].index("C2")
    tick_line = next(line for line in reversed(lines) if re.fullmatch(r"[\s\d]+", line) and "8" in line)
    x = _columns(tick_line, [str(n) for n in range(1, 9)])
    assert x[3] < c1 + 1 < x[4]  # between call 4 and call 5
    assert x[6] < c2 + 1 < x[7]  # between call 7 and call 8
    plot_rows = [line for line in lines if line.rstrip().endswith(("│", "┤"))]
    for column in (c1 + 1, c2 + 1):  # the vertical line runs down under each label
        assert sum(row[column] in "│┼┴" for row in plot_rows if len(row) > column) > len(plot_rows) // 2
    assert any("window" in line for line in lines) and any("trigger" in line for line in lines)


def test_terminal_chart_without_window_has_no_window_lines() -> None:
    report = build_report(_events(window=False))
    assert (report.window, report.compact_at) == (None, None)
    text = render_terminal(report, width=80, height=20)
    assert text.count("window") == 1 and "tokens in the window" in text  # the title only
    assert "trigger" not in text and "C2" in text
    assert re.search(r"context window\s+-", metrics_table(report))


def test_terminal_chart_in_colour_and_empty_run() -> None:
    assert "\x1b[" in render_terminal(build_report(_events()), color=True)
    assert "no model call" in render_terminal(build_report([]))
    assert "Metrics" in metrics_table(build_report([]))


def test_png_file_is_a_real_image(tmp_path: Path) -> None:
    from matplotlib.image import imread

    path = write_png(build_report(_events()), tmp_path / "run.png")
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000
    height, width, _ = imread(path).shape
    assert width > 800 and height > 400


def test_html_file_is_standalone_with_chart_and_tables(tmp_path: Path) -> None:
    page = write_html(build_report(_events()), tmp_path / "run.html").read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and "<svg" in page and page.rstrip().endswith("</html>")
    assert len(page) > 10_000
    assert "C1 (4.1x)" in page and "C2 (3.0x)" in page  # compaction labels in the chart
    assert "trigger 800" in page and "window 1000" in page
    assert "<script" not in page and "src=" not in page and "<link" not in page  # nothing to fetch
    assert "<td>4.10x</td>" in page and "<h2>Tokens per round</h2>" in page


def test_prefix_share_from_events_is_averaged() -> None:
    events = [
        {"type": "model_call", "call": 1, "purpose": "agent", "tokens": 10, "prefix_share": 0.0},
        {"type": "model_call", "call": 2, "purpose": "agent", "tokens": 20, "prefix_share": 0.9},
        {"type": "model_call", "call": 3, "purpose": "agent", "tokens": 30, "prefix_share": 0.6},
    ]
    report = build_report(events)
    assert report.prefix_share == pytest.approx(0.5) and report.prefix_source == "events"
    assert [c.prefix_share for c in report.calls] == [0.0, 0.9, 0.6]


def _request(*texts: str, system: str = "sys") -> dict[str, Any]:
    roles = ["user", "assistant"]
    messages = [{"role": roles[i % 2], "content": [{"type": "text", "text": t}]} for i, t in enumerate(texts)]
    return {"system": system, "messages": messages}


def test_prefix_share_from_traced_requests() -> None:
    first, second = _request("task"), _request("task", "reply", "more")
    third = _request("a summary " * 30)  # after a compaction: the prefix breaks after the system prompt
    compact = _request("summarise this", system="summariser")  # compared only with compact requests
    events = [
        {"type": "model_call", "call": 1, "purpose": "agent", "tokens": 1, "request": first},
        {"type": "model_call", "call": 2, "purpose": "agent", "tokens": 2, "request": second},
        {"type": "model_call", "call": 3, "purpose": "compact", "tokens": 2, "request": compact},
        {"type": "model_call", "call": 4, "purpose": "agent", "tokens": 3, "request": third},
    ]
    report = build_report(events)
    shares = [c.prefix_share for c in report.calls]
    assert shares[0] is None and shares[2] is None  # nothing earlier of the same purpose
    chunks = [json.dumps("sys")] + [json.dumps(m, sort_keys=True) for m in second["messages"]]
    assert shares[1] == pytest.approx(sum(map(len, chunks[:2])) / sum(map(len, chunks)))
    assert shares[3] is not None and shares[3] < shares[1]
    assert report.prefix_source == "requests"
    assert report.prefix_share is not None and shares[3] < report.prefix_share < shares[1]


def test_common_prefix_counts_whole_chunks_then_characters() -> None:
    assert common_prefix(["abc", "def"], ["abc", "deX", "more"]) == 5
    assert common_prefix(["abc"], ["abc", "new"]) == 3
    assert common_prefix(["xbc"], ["abc"]) == 0
    assert common_prefix([], ["abc"]) == 0


def test_the_figure_leaves_room_above_the_window_for_the_compaction_labels() -> None:
    from tinyharness.runlog.report import LABEL_HEADROOM, _figure

    report = build_report(_events())
    assert report.window == 1000 and max(c.tokens or 0 for c in report.calls) < 1000
    (axes,) = _figure(report).axes
    bottom, top = axes.get_ylim()
    assert bottom == 0 and top == pytest.approx(1000 * LABEL_HEADROOM)
    # Each label sits 12 points below the top: above the window line, not on it.
    window_y = axes.transData.transform((0, 1000))[1]
    top_y = axes.transAxes.transform((0, 1))[1]
    assert top_y - window_y > 12 * axes.figure.dpi / 72

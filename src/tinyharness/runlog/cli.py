"""The run-log commands: ``runs``, ``show RUN``, ``export RUN``, ``report RUN``.

``register(subparsers)`` adds them to the ``tinyharness`` parser; each sets ``handler`` on its
namespace, a function ``(args) -> int`` that returns the exit code: 0 ok, 1 run not found,
2 unusable run log (corrupt, newer schema, another program's file) or a missing plotting library,
always with a one-line reason on stderr. Every command takes ``--log PATH`` (default: the run log
in the user's data folder, see ``runlog.default_path``). ``python -m tinyharness.runlog.cli``
runs them on their own.

Part of the ``runlog`` package; its rule applies.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..events import Event, compaction_tokens
from ..safefs import write_file
from ..terminal import say
from . import (
    RunLogError,
    RunLogStore,
    RunNotFound,
    RunSummary,
    default_path,
    is_postgres_url,
    open_run_log,
)
from .costs import cost_cell, cost_line
from .report import build_report, metrics_table, render_terminal, write_html, write_png

Handler = Callable[[argparse.Namespace], int]
_PREVIEW = 160


def _add_log_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--log",
        metavar="PATH|URL",
        help=f"run log: a SQLite file or a postgresql://... URL (default: {default_path()})",
    )


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``runs``, ``show``, ``export`` and ``report`` to a parser's subcommands."""
    runs = subparsers.add_parser(
        "runs", help="list logged runs, newest first, each with its sub-agents' runs under it"
    )
    runs.add_argument(
        "-n",
        "--limit",
        type=_count,
        default=20,
        metavar="N",
        help="how many of the runs you started to list (default 20); the runs their sub-agents "
        "made come with them and are not counted",
    )
    _add_log_option(runs)
    runs.set_defaults(handler=cmd_runs)

    show = subparsers.add_parser("show", help="print a run's transcript")
    show.add_argument("run", metavar="RUN", help="run id, a unique prefix of it, or last (the newest run)")
    _add_log_option(show)
    show.set_defaults(handler=cmd_show)

    export = subparsers.add_parser("export", help="a run's events as JSON Lines (the --events format)")
    export.add_argument("run", metavar="RUN", help="run id, a unique prefix of it, or last (the newest run)")
    export.add_argument("-o", "--output", metavar="FILE", help="write to FILE instead of stdout")
    export.add_argument(
        "--tree", action="store_true", help="also the events of its sub-agents' runs, after its own"
    )
    _add_log_option(export)
    export.set_defaults(handler=cmd_export)

    report = subparsers.add_parser(
        "report", help="draw a run's tokens in the window per model call, with its compactions"
    )
    report.add_argument("run", metavar="RUN", help="run id, a unique prefix of it, or last (the newest run)")
    files = report.add_mutually_exclusive_group()
    files.add_argument("--html", metavar="FILE", help="also write a standalone HTML page")
    files.add_argument("--png", metavar="FILE", help="also write a PNG image")
    report.add_argument("--width", type=int, help="chart width in characters (default: terminal)")
    report.add_argument("--height", type=int, default=24, help="chart height in lines (default 24)")
    _add_log_option(report)
    report.set_defaults(handler=cmd_report)


def _fail(message: str, code: int) -> int:
    say(f"tinyharness: {message}", err=True)
    return code


def _guarded(body: Callable[[argparse.Namespace, RunLogStore], int], *, listing: bool = False) -> Handler:
    """Open the run log, run the command, turn typed errors into exit codes. A missing file is
    an empty list for ``listing`` commands and "not found" for the others; it is not created."""

    def handler(args: argparse.Namespace) -> int:
        shared = bool(args.log) and is_postgres_url(args.log)
        path = Path(args.log) if args.log else default_path()
        if not shared and not path.exists():
            if listing:
                print(f"no runs logged yet ({path})", file=sys.stderr)
                return 0
            return _fail(f"no run log at {path}", 1)
        try:
            with open_run_log(args.log if shared else path) as log:
                return body(args, log)
        except RunNotFound as exc:
            return _fail(str(exc), 1)
        except RunLogError as exc:
            return _fail(str(exc), 2)

    return handler


# --- runs -------------------------------------------------------------------------------------


def _when(ts: float | None) -> str:
    return "-" if ts is None else time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts))


def _one_line(text: str | None, limit: int) -> str:
    flat = " ".join((text or "").split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _stop(run: RunSummary) -> str:
    return run.stop or "unfinished"


def _tree_id(run: RunSummary) -> str:
    """The id, indented under its parent's for a sub-agent's run."""
    return f"{'  ' * (run.depth - 1)}└ {run.id}" if run.depth > 0 else run.id


def _count(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text}")
    return value


def _runs(args: argparse.Namespace, log: RunLogStore) -> int:
    # -n counts runs a person started: a sub-agent's run is part of its parent's, so a tree is
    # listed whole or not at all. One run more than asked tells whether older ones are left out.
    listed = log.list_runs(args.limit + 1)
    starts = [i for i, run in enumerate(listed) if run.depth == 0]
    runs = listed[: starts[args.limit]] if len(starts) > args.limit else listed
    if not runs:
        print("no runs logged yet", file=sys.stderr)
        return 0
    headers = ["id", "started", "model", "stop", "calls", "compactions", "cost", "task"]
    rows = [
        [
            _tree_id(r),
            _when(r.started),
            r.model or "-",
            _stop(r),
            str(r.model_calls),
            str(r.compactions),
            cost_cell(r.cost),
        ]
        for r in runs
    ]
    widths = [max(len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(headers[:-1])]
    print("  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=False)) + "  task")
    for run, row in zip(runs, rows, strict=True):
        cells = "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True))
        say(f"{cells}  {_one_line(run.task, 60)}")
    if len(runs) < len(listed):
        print(f"(the {args.limit} newest runs you started; older ones: -n {2 * args.limit})", file=sys.stderr)
    return 0


cmd_runs = _guarded(_runs, listing=True)


# --- show -------------------------------------------------------------------------------------


def _short(value: Any, limit: int = _PREVIEW) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return _one_line(text, limit)


def _message_text(message: Any) -> str:
    """The text blocks of a neutral message dict (or a bare list of blocks)."""
    content = message.get("content", []) if isinstance(message, dict) else message
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "".join(str(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("type") == "text")


def _traced(events: Sequence[Event]) -> tuple[dict[int, str], dict[str, str]]:
    """From traced requests (or ``response`` fields): each agent call's reply text by call number,
    and each tool result's text by tool_use id."""
    replies: dict[int, str] = {}
    results: dict[str, str] = {}
    calls = [e for e in events if e.get("type") == "model_call"]
    for index, event in enumerate(calls):
        if "response" in event:
            replies[int(event.get("call", 0))] = _message_text(event["response"])
        request = event.get("request")
        if not isinstance(request, dict):
            continue
        messages = request.get("messages") or []
        for message in messages:
            for block in message.get("content", []) if isinstance(message, dict) else []:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    results[str(block.get("tool_use_id"))] = str(block.get("content", ""))
        later = [c for c in calls[index + 1 :] if c.get("purpose") == event.get("purpose")]
        following = later[0].get("request") if later else None
        if isinstance(following, dict):
            next_messages = following.get("messages") or []
            if next_messages[: len(messages)] == messages and len(next_messages) > len(messages):
                replies.setdefault(int(event.get("call", 0)), _message_text(next_messages[len(messages)]))
    return replies, results


def _describe(event: Event, replies: dict[int, str], results: dict[str, str]) -> list[str]:
    """The transcript lines of one event (none for event types it does not show)."""
    kind = event.get("type")
    get = event.get
    if kind == "run_start":
        return [
            f"run {get('run_id')} · model {get('model')} · started {_when(get('ts'))}",
            f"task: {get('task', '')}",
        ]
    if kind == "model_call":
        usage = get("usage") or {}
        cache = ""
        read = usage.get("cache_read_input_tokens", usage.get("cached_tokens"))
        if read or usage.get("cache_creation_input_tokens"):
            cache = f" (cache read {read or 0}, written {usage.get('cache_creation_input_tokens', 0)})"
        line = (
            f"[call {get('call')}] {get('purpose')} · stop {get('stop_reason')} · "
            f"in {usage.get('input_tokens', '?')}{cache} out {usage.get('output_tokens', '?')} · "
            f"tokens {get('tokens')}"
        )
        reply = replies.get(int(get("call", 0)))
        return [line, f"    assistant: {_short(reply)}"] if reply else [line]
    if kind == "tool_call":
        return [f"    -> {get('name')}({_short(get('args'), 120)})"]
    if kind == "tool_result":
        status = "ok" if get("ok") else "ERROR"
        line = f"       <- {status}, {get('chars')} chars" + (" truncated" if get("truncated") else "")
        text = results.get(str(get("call_id")))
        return [line + (f": {_short(text, 120)}" if text is not None else "")]
    if kind == "compaction":
        before, after = compaction_tokens(event)
        return [
            f"==== compaction #{get('n')} ({get('strategy')}): tokens {before} -> "
            f"{after}, messages {get('messages_before')} -> {get('messages_after')} ===="
        ]
    if kind == "compaction_fallback":
        return [f"    [context] {get('strategy')}: {get('reason', '')}"]
    if kind == "context_warning":
        return [f"    [context] {get('message', '')}"]
    if kind == "offload":
        sizes = f"{get('chars_before')} -> {get('chars_after')} chars"
        return [f"    [context] offloaded message {get('index')}: {sizes}"]
    if kind == "notes_write":
        return [f"    [notes] {get('op', 'write')} {get('chars', '?')} chars"]
    if kind in ("memory_write", "memory_recall"):
        fields = {k: v for k, v in event.items() if k not in ("type", "seq", "ts", "run_id")}
        return [f"    [{str(kind).replace('_', ' ')}] {_short(fields, 120)}"]
    if kind == "error":
        return [f"!! error ({get('stop', get('kind', 'error'))}): {get('message', '')}"]
    if kind == "run_end":
        lines = [
            f"end: stop {get('stop')} · {get('model_calls')} model calls · {get('compactions')} compactions"
        ]
        if get("detail"):
            lines.append(f"detail: {get('detail')}")
        if (cost := cost_line(get("cost"), get("usage"))) is not None:
            lines.append(cost)
        final = str(get("final") or "").splitlines() or ["(none)"]
        return [*lines, "final answer:", *(f"  {line}" for line in final)]
    return []


def transcript(events: Sequence[Event]) -> list[str]:
    """A readable transcript of one run's events: model calls, tool calls with their arguments and
    result status, compactions, notes and memory operations, errors and the final answer."""
    replies, results = _traced(events)
    lines = [line for event in events for line in _describe(event, replies, results)]
    if not any(e.get("type") == "run_end" for e in events):
        lines.append("(no run_end: the run is still going, or it was killed)")
    return lines


def tree_transcript(log: RunLogStore, run_id: str, *, indent: str = "") -> list[str]:
    """``transcript`` of a run, with each sub-agent's transcript nested (indented) right after
    the result of the task call that started it."""
    events = log.events(run_id)
    by_call: dict[str, list[RunSummary]] = {}
    for child in log.children(log.resolve(run_id)):
        by_call.setdefault(child.call_id or "", []).append(child)
    replies, results = _traced(events)
    lines: list[str] = []
    for event in events:
        lines += [indent + line for line in _describe(event, replies, results)]
        if event.get("type") == "tool_result" and event.get("name") == "task":
            for child in by_call.pop(str(event.get("call_id")), []):
                lines.append(f"{indent}    ┌ sub-agent run {child.id} (depth {child.depth}, {_stop(child)})")
                lines += tree_transcript(log, child.id, indent=indent + "    │ ")
    for children in by_call.values():  # started by a call whose result was never logged (a kill)
        for child in children:
            lines.append(f"{indent}    ┌ sub-agent run {child.id} (depth {child.depth}, {_stop(child)})")
            lines += tree_transcript(log, child.id, indent=indent + "    │ ")
    if not any(e.get("type") == "run_end" for e in events):
        lines.append(f"{indent}(no run_end: the run is still going, or it was killed)")
    return lines


def _show(args: argparse.Namespace, log: RunLogStore) -> int:
    say("\n".join(tree_transcript(log, args.run)))
    return 0


cmd_show = _guarded(_show)


# --- export -----------------------------------------------------------------------------------


def _export(args: argparse.Namespace, log: RunLogStore) -> int:
    lines = log.event_lines(args.run)
    if args.tree:
        for child in log.tree(log.get_run(args.run))[1:]:
            lines += log.event_lines(child.id)
    text = "".join(line + "\n" for line in lines)
    if args.output:
        write_file(Path(args.output), text.encode("utf-8"))
    else:
        sys.stdout.write(text)
    return 0


cmd_export = _guarded(_export)


# --- report -----------------------------------------------------------------------------------


def _report(args: argparse.Namespace, log: RunLogStore) -> int:
    report = build_report(log.events(args.run))
    width = args.width or min(shutil.get_terminal_size((100, 24)).columns, 140)
    try:
        chart = render_terminal(report, width, args.height, color=sys.stdout.isatty())
        written = None
        if args.html:
            written = write_html(report, args.html)
        elif args.png:
            written = write_png(report, args.png)
    except ImportError as exc:
        return _fail(
            f"report needs plotext and matplotlib ({exc.name} is missing): pip install plotext matplotlib", 2
        )
    sys.stdout.write(chart + "\n" + metrics_table(report))
    tree = log.tree(log.get_run(args.run))
    if len(tree) > 1:
        sys.stdout.write("\n" + subagent_table(log, tree))
    if written is not None:
        print(f"wrote {written}", file=sys.stderr)
    return 0


def subagent_table(log: RunLogStore, tree: Sequence[RunSummary]) -> str:
    """The tree of runs under a report: each run's stop, model calls, billed tokens (a parent's
    include its sub-agents') and peak tokens in its window."""
    headers = ["run", "stop", "calls", "billed", "peak window", "task"]
    rows = []
    for run in tree:
        peaks = [e.get("tokens") for e in log.events(run.id) if e.get("type") == "model_call"]
        peak = max((t for t in peaks if isinstance(t, int)), default=None)
        usage = run.usage or {}
        billed = usage.get("input_tokens", 0) + usage.get("output_tokens", 0) if run.usage else None
        rows.append(
            [
                _tree_id(run),
                _stop(run),
                str(run.model_calls),
                "-" if billed is None else f"{billed:,}",
                "-" if peak is None else f"{peak:,}",
                _one_line(run.task, 50),
            ]
        )
    widths = [max(len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(headers)]
    lines = [
        "sub-agents (the tree of runs):",
        "  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)),
    ]
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in rows]
    return "\n".join(lines) + "\n"


cmd_report = _guarded(_report)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tinyharness", description="Inspect the run log.")
    register(parser.add_subparsers(dest="command", required=True, metavar="COMMAND"))
    args = parser.parse_args(argv)
    handler: Handler = args.handler
    return handler(args)


if __name__ == "__main__":
    sys.exit(main())

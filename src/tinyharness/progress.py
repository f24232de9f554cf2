"""What a person sees while a run goes on: one line per model call, tool call and compaction.

On a terminal the current step is redrawn in place; elsewhere (CI, pipes) every step is a plain
line. Compactions always get their own ``[compact]`` line, with tokens before -> after.

May import: ``events``, ``redact``, ``terminal``. Nothing else of the package.
"""

from __future__ import annotations

import json
import sys
from typing import TextIO

from .events import Event, compaction_tokens
from .redact import redact
from .terminal import shown

_ARG_PREVIEW = 60
_REDACT_SCAN = 4000  # characters of an argument preview scanned for secrets before cutting
_PERMANENT = (
    "compaction",
    "compaction_fallback",
    "context_warning",
    "error",
    "run_end",
    "mcp_server",
    "plan",
    "pin",
    "audit",
    "coverage",
)


def _clipped(value: object) -> object:
    """``value`` with every string cut to ``_REDACT_SCAN`` characters and redacted. Strings are
    redacted before JSON escaping, which would hide a secret's boundaries from the rules, and
    before the preview cut, which could leave half a secret that no rule recognises."""
    if isinstance(value, str):
        return redact(value[:_REDACT_SCAN])
    if isinstance(value, dict):
        return {_clipped(str(k)): _clipped(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clipped(v) for v in value]
    return value


def _short(value: object) -> str:
    value = _clipped(value)
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = text.replace("\n", " ")
    return text if len(text) <= _ARG_PREVIEW else text[: _ARG_PREVIEW - 1] + "…"


class ProgressPrinter:
    def __init__(self, stream: TextIO | None = None, *, live: bool | None = None) -> None:
        self.stream = stream or sys.stderr
        self.live = self.stream.isatty() if live is None else live
        self._pending = False  # a redrawable line is on screen
        self._max_turns: int | None = None  # the run's --max-iterations (from run_start)

    def emit(self, event: Event) -> None:
        line = self._describe(event)
        if line is None:
            return
        depth = event.get("depth")
        if isinstance(depth, int) and depth > 0:  # a sub-agent's step, under its parent's
            line = f"{'  ' * depth}[sub {str(event.get('run_id', ''))[:6]}] {line}"
        line = shown(line)  # stderr is often a CI log: no secrets in clear there either, no escapes
        permanent = event["type"] in _PERMANENT or not self.live
        if self.live:
            self.stream.write("\r\033[K" + line + ("\n" if permanent else ""))
            self._pending = not permanent
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def _describe(self, event: Event) -> str | None:
        kind = event["type"]
        if kind == "run_start" and not event.get("depth") and isinstance(event.get("max_iterations"), int):
            self._max_turns = event["max_iterations"]
        if kind == "model_call":
            usage = event["usage"]
            return (
                f"[call {event['call']}] {event['purpose']} stop={event['stop_reason']} "
                f"in={usage['input_tokens']} out={usage['output_tokens']} tokens={event['tokens']}"
            )
        if kind == "tool_call" and event["name"] == "task" and isinstance(event.get("args"), dict):
            args = event["args"]
            what = args.get("description") or args.get("prompt") or ""
            return f"[task] {args.get('agent') or 'general'}: {_short(what)}"
        if kind == "tool_call":
            return f"[tool] {event['name']} {_short(event['args'])}"
        if kind == "mcp_server":
            return _describe_mcp(event)
        if kind == "tool_result" and event.get("outcome") == "unknown":
            return f"[tool] {event['name']}: outcome unknown (cut off by an earlier crash; not run again)"
        if kind == "tool_result" and not event["ok"]:
            return f"[tool] {event['name']} failed ({event['chars']} chars of error)"
        if kind == "compaction":
            before, after = compaction_tokens(event)
            return (
                f"[compact] #{event['n']} {event['strategy']}: tokens {before} -> "
                f"{after}, messages {event['messages_before']} -> {event['messages_after']}"
            )
        if kind == "plan":
            return _describe_plan(event, self._max_turns)
        if kind == "coverage":
            files = ", ".join(str(f) for f in event.get("files", []))
            return f"[files] {event.get('covered')}/{event.get('total')} covered ({_short(files)})"
        if kind == "pin":
            return f"[pin] {_short(event.get('text', ''))}"
        if kind == "hook" and event.get("blocked"):
            what = f" {event['tool']}" if event.get("tool") else ""
            return f"[hook] {event.get('event')} blocked{what}: {_short(event.get('stderr', ''))}"
        if kind == "instructions_loaded":
            return f"[instructions] {event.get('source')} loaded"
        if kind == "audit" and not event.get("ok", True):
            missing = event.get("missing", [])
            lost = ", ".join(f"{m.get('kind')} {_short(m.get('text', ''))!r}" for m in missing)
            return f"[audit] compaction #{event.get('n')} lost {lost}; put back"
        if kind in ("compaction_fallback", "context_warning"):
            return f"[context] {event.get('message') or event.get('reason', '')}"
        if kind == "error":
            return f"[stop] {event.get('stop', 'error')}: {event.get('message', '')}"
        if kind == "run_end":
            return (
                f"[done] stop={event['stop']} model_calls={event['model_calls']} "
                f"compactions={event['compactions']}"
            )
        return None


def _describe_plan(event: Event, max_turns: int | None = None) -> str:
    if "targets" in event:  # the guide's plan of the task (its kind and the files it is about)
        targets = ", ".join(_short(str(t)) for t in event.get("targets") or ()) or "no files named"
        line = f"[plan] {event.get('kind') or 'open'}: {targets}"
        files, turns = event.get("files") or 0, event.get("turns") or 0
        if files:
            line += f" ({files} files)"
        if max_turns is not None and turns > max_turns:
            # Said before the first read, not at the stop: the seed's task on 37 files needs 75
            # turns, and the default limit of 50 stopped it two thirds of the way.
            line += (
                f"; it takes about {turns} turns, more than the limit of {max_turns}: the run will "
                f"stop before the last files (raise --max-iterations to {turns + 5} or more)"
            )
        return line
    total, done = event.get("total", 0), event.get("done", 0)
    if not total:
        return "[plan] (empty)"
    current = event.get("current")
    now = f" · now: {_short(current)}" if current else " · all done"
    return f"[plan] {done}/{total} done{now}"


def _describe_mcp(event: Event) -> str:
    server, state = event["server"], event["state"]
    if state == "started":
        return f"[mcp] {server}: {event['tools']} tools ({event['transport']}, {event['seconds']:.1f} s)"
    if state == "failed":
        tail = f"; its stderr ends: {event['stderr']}" if event.get("stderr") else ""
        return f"[mcp] {server} failed: {event.get('message', '')}{tail}"
    if state == "restarted":
        return f"[mcp] {server} restarted"
    return f"[mcp] {server} {state}: {event.get('message', '')}"

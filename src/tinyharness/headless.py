"""What ``tinyharness run`` prints on stdout, for people and for programs (``--output-format``).

- ``text`` (the default): the final answer, nothing else.
- ``json``: one JSON object when the run ends (``RESULT_FIELDS``): the answer, why it stopped,
  the model calls, the usage split as the event stream splits it (by purpose: agent turns,
  compaction summaries, memory extraction, with cached tokens), ``cost_usd`` (null when no
  price is known), the run id, the session and the model. Like Claude Code's
  ``--output-format json``: a CI job reads one object instead of scraping text.
- ``stream-json``: the event stream itself, one JSON object per line as it happens, in the same
  schema and with the same redaction as ``--events FILE``; the final answer is in ``run_end``.

Whatever the format, progress lines and errors go to stderr (``--quiet`` turns progress off)
and the exit code is the same: 0 when the task ended normally, 1 when the run stopped early, 2
for bad usage. A run refused before it starts (exit 2) prints nothing on stdout.

May import: ``events``, ``terminal``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Literal, TextIO

from .events import Event, EventSink, JsonlSink, redact_value
from .terminal import say

OutputFormat = Literal["text", "json", "stream-json"]
OUTPUT_FORMATS: tuple[OutputFormat, ...] = ("text", "json", "stream-json")
RESULT_FIELDS = (
    "type",
    "answer",
    "stop",
    "ok",
    "detail",
    "model_calls",
    "compactions",
    "usage",
    "cost_usd",
    "run_id",
    "session",
    "model",
)
_TOKEN_FIELDS = ("input_tokens", "output_tokens", "cached_tokens")


class RunSummary:
    """An event sink that keeps what the ``json`` result needs: ``run_start`` (run id, session,
    model), every ``model_call`` (usage by purpose, cost when the event carries one) and
    ``run_end`` (stop, answer, totals). Sub-agents' calls reach the same bus and count too,
    as they count in the run's billed tokens."""

    def __init__(self) -> None:
        self.start: Event = {}
        self.end: Event = {}
        self.by_purpose: dict[str, dict[str, int]] = {}
        self._costs: list[Any] = []

    def emit(self, event: Event) -> None:
        kind = event.get("type")
        if kind == "run_start" and not event.get("depth"):
            self.start = event
        elif kind == "run_end" and not event.get("depth"):
            self.end = event
        elif kind == "model_call":
            usage = event.get("usage") or {}
            row = self.by_purpose.setdefault(str(event.get("purpose", "agent")), {"calls": 0})
            row["calls"] += 1
            for name in _TOKEN_FIELDS:
                row[name] = row.get(name, 0) + int(usage.get(name) or 0)
            self._costs.append(event.get("cost_usd"))

    def cost_usd(self) -> float | None:
        """The run's cost in US dollars, or None when it is not known. The one place a price
        comes from: ``run_end``'s ``cost_usd`` when the harness reports one, else the sum of
        every ``model_call``'s ``cost_usd`` when each call has one."""
        total = self.end.get("cost_usd")
        if isinstance(total, int | float):
            return float(total)
        if self._costs and all(isinstance(c, int | float) for c in self._costs):
            return float(sum(self._costs))
        return None

    def result(self) -> dict[str, Any]:
        """The ``json`` output: the fields of ``RESULT_FIELDS``, secrets redacted."""
        totals = self.end.get("usage") or {}
        cached = sum(row.get("cached_tokens", 0) for row in self.by_purpose.values())
        usage = {
            "input_tokens": int(totals.get("input_tokens") or 0),
            "output_tokens": int(totals.get("output_tokens") or 0),
            "cached_tokens": cached,
            "by_purpose": self.by_purpose,
        }
        stop = self.end.get("stop")
        result = {
            "type": "result",
            "answer": self.end.get("final", ""),
            "stop": stop,
            "ok": stop == "end_turn",
            "detail": self.end.get("detail", ""),
            "model_calls": self.end.get("model_calls", 0),
            "compactions": self.end.get("compactions", 0),
            "usage": usage,
            "cost_usd": self.cost_usd(),
            "run_id": self.end.get("run_id") or self.start.get("run_id"),
            "session": self.start.get("session"),
            "model": self.start.get("model"),
        }
        redacted: dict[str, Any] = redact_value(result)
        return redacted


class HeadlessOutput:
    """The sinks a run adds for its ``--output-format`` and what it prints at the end."""

    def __init__(self, output_format: OutputFormat, stdout: TextIO) -> None:
        self.format = output_format
        self.stdout = stdout
        self.summary = RunSummary() if output_format == "json" else None
        self._stream = JsonlSink(stdout) if output_format == "stream-json" else None

    @property
    def sinks(self) -> Sequence[EventSink]:
        return [s for s in (self.summary, self._stream) if s is not None]

    def finish(self, answer: str) -> None:
        """Print what the format prints once the run has ended."""
        if self.summary is not None:
            self.stdout.write(json.dumps(self.summary.result(), ensure_ascii=False) + "\n")
        elif self.format == "text" and answer:
            say(answer, file=self.stdout)  # redacted, control characters shown
        self.stdout.flush()

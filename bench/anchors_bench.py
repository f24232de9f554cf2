"""Pins, the plan and incremental summaries on the long-task workload.

1. Pinned-fact retention: the workload of ``context_bench`` (one file read per round, a note
   every fifth round, hundreds of rounds) with three pins given at the start (``--pin``), a pin
   the model adds every 60 rounds (the ``pin`` tool) and a plan it rewrites every 45 rounds
   (``todo``). After every compaction, the first request is checked: is every pin made so far
   in it word for word, and the current plan? Each strategy runs twice in the same process:
   with the plan and pins put back after compaction (ours), and with the same tools but
   nothing put back (what a harness without the feature keeps: the calls, until they are
   summarized or dropped).
2. Incremental summaries against rewritten ones: the same history is compacted again and again
   by ``summarize``, once with ``--summary-mode update`` and once with ``rewrite``. The
   summarizer is simulated and faithful (it keeps every fact it is shown, in the section it
   belongs to) but bound by its output limit like a model: a reply longer than the request's
   ``max_tokens`` is cut there. Counted: tokens sent to and written by the summarizer, and the
   facts still in the window at the end.

    python -m bench.anchors_bench            # 300 rounds, 32k window; 40 summary cycles
    python -m bench.anchors_bench --small    # 40 rounds, 8k window; 8 cycles
"""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.context_bench import (
    TASK_CONSTRAINTS,
    BenchModel,
    Workload,
    long_task,
    long_task_agent,
    make_workspace,
    true_counter,
)
from tinyharness.anchors import Anchors
from tinyharness.context.audit import PLAN_HEADER, audit
from tinyharness.context.config import ContextConfig
from tinyharness.context.manager import build_context
from tinyharness.context.summarize import UPDATE_PROMPT
from tinyharness.events import EventBus, ListSink
from tinyharness.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock
from tinyharness.models.base import ModelRequest, ModelResponse, Usage

STRATEGIES = ["offload", "clear-tool-results", "sliding-window", "summarize", "restart", "default"]
USER_PINS = [f"Pinned by the user: {c}" for c in TASK_CONSTRAINTS]
STEPS = ["Read every module", "Note what each does", "Check the constraints", "Answer"]


class PinningModel(BenchModel):
    """The workload's agent, which also writes a plan, rewrites it every 45 rounds and pins a
    fact every 60 rounds; after each compaction it records the request with the pins and plan
    made so far."""

    def __init__(self, *args: Any, anchors: Anchors, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.anchors = anchors
        self.checks: list[tuple[ModelRequest, list[str], Anchors]] = []
        self._seen = 0

    async def complete(self, request: ModelRequest) -> ModelResponse:
        if request.purpose == "agent":
            compactions = len(self.sink.of_type("compaction"))
            if compactions > self._seen:
                self._seen = compactions
                snapshot = Anchors(self.anchors.pins, self.anchors.plan)
                self.checks.append((request, list(self.anchors.pins), snapshot))
        return await super().complete(request)

    def _agent_reply(self) -> Message:
        i = self.turn
        if i >= self.rounds or not (i == 0 or i % 45 == 10 or i % 60 == 30):
            return super()._agent_reply()
        self.turn += 1
        if i % 60 == 30:
            fact = f"Pinned fact {i}: module m{i % 40:02d} owns refunds"
            call = ToolUseBlock(f"p{i}", "pin", {"text": fact})
        else:
            done = min(len(STEPS) - 1, i // 90)
            items = [
                {"content": step, "status": "done" if n < done else "in_progress" if n == done else "pending"}
                for n, step in enumerate(STEPS)
            ]
            call = ToolUseBlock(f"t{i}", "todo", {"items": items})
        return Message("assistant", (TextBlock(f"Round {i}."), call))


def retention(strategy: str, workload: Workload, *, put_back: bool) -> dict[str, Any]:
    _name, count = true_counter()
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        files = make_workspace(root, workload)
        notes_path = root / "NOTES.md"
        sink = ListSink()
        anchors = Anchors(pins=USER_PINS)
        model = PinningModel(
            files, workload.rounds, count, workload.window, sink, notes_path, anchors=anchors
        )
        # Without put-back the user's pins still open the first request (as text after the task
        # would), so the comparison is about what compaction keeps.
        agent = long_task_agent(
            root, workload, strategy, model, EventBus([sink]), anchors=anchors, put_back=put_back
        )
        result = agent.run("Summarize every file under src/ into NOTES.md.")
        pin_checks = pins_kept = plan_checks = plans_kept = 0
        for request, pins, snapshot in model.checks:
            missing = audit(request.messages, snapshot, ())
            lost_pins = sum(m["kind"] == "pin" for m in missing)
            pin_checks += len(pins)
            pins_kept += len(pins) - lost_pins
            if snapshot.plan:
                plan_checks += 1
                plans_kept += not any(m["kind"] == "plan" for m in missing)
        return {
            "stop": result.stop,
            "compactions": result.compactions,
            "pin_checks": pin_checks,
            "pins": pins_kept / pin_checks if pin_checks else None,
            "plan": plans_kept / plan_checks if plan_checks else None,
            "audits_failed": sum(not e["ok"] for e in sink.of_type("audit")),
            "billed": model.billed,
            "pins_made": len(anchors.pins),
        }


# --- incremental against rewritten summaries ------------------------------------------------

_FACT = re.compile(r"(decision|file|error) \d+: [^\n\"\\]+")
_SECTIONS = {"decision": "3. Decisions:", "file": "4. Files touched:", "error": "5. Errors and fixes:"}


class OutputBoundSummarizer:
    """A faithful summarizer with an output limit: it writes every fact it is shown in its
    section; in update mode it writes only the sections that gain facts, as "(unchanged)" plus
    the new facts. The reply is cut at the request's max_tokens, as a model's would be."""

    def __init__(self, count: Any) -> None:
        self.count = count
        self.sent = 0
        self.written = 0
        self.calls = 0

    async def __call__(self, request: ModelRequest) -> ModelResponse:
        prompt = request.messages[0].text
        self.calls += 1
        self.sent += self.count(prompt)
        update = prompt.startswith(UPDATE_PROMPT)
        if update:
            earlier, _, since = prompt.partition("## Transcript since then")
            old = set(m.group(0) for m in _FACT.finditer(earlier))
            facts = [f for f in dict.fromkeys(m.group(0) for m in _FACT.finditer(since)) if f not in old]
        else:
            facts = list(dict.fromkeys(m.group(0) for m in _FACT.finditer(prompt)))
        lines = ["1. Intent: " + ("(unchanged)" if update else "summarize every module")]
        for kind, heading in _SECTIONS.items():
            mine = [f"- {f}" for f in facts if f.startswith(kind)]
            if update:
                lines += [f"{heading} (unchanged)", *mine]
            else:
                lines += [heading, *mine]
        lines.append("7. Next step: " + ("(unchanged)" if update else "read the next module"))
        text = self._cut("\n".join(lines), request.max_tokens)
        self.written += self.count(text)
        return ModelResponse(Message.assistant(text), "end_turn", Usage(self.count(prompt), self.count(text)))

    def _cut(self, text: str, limit: int) -> str:
        if self.count(text) <= limit:
            return text
        lines = text.split("\n")
        while lines and self.count("\n".join(lines)) > limit:
            lines.pop()
        return "\n".join(lines)


@dataclass
class SummaryRun:
    mode: str
    cycles: int
    sent: int
    written: int
    facts: int
    kept: int


def summary_cycles(mode: str, cycles: int, window: int) -> SummaryRun:
    """``cycles`` compactions, each after eight new rounds that state three facts."""
    _name, count = true_counter()
    config = ContextConfig("summarize", window=window, ratio=0.7, keep_recent=2, summary_mode=mode)  # type: ignore[arg-type]
    context = build_context(config)
    summarizer = OutputBoundSummarizer(count)
    messages = [Message.user("Summarize every module; keep every decision, file and error.")]
    facts: list[str] = []
    for cycle in range(cycles):
        for r in range(8):
            n = cycle * 8 + r
            fact = f"{('decision', 'file', 'error')[n % 3]} {n}: module m{n} uses table t{n * 7 % 97}"
            if r % 3 == 0:
                facts.append(fact)
                said = f"Found it: {fact}."
            else:
                said = f"Round {n}: nothing new."
            use = ToolUseBlock(f"c{n}", "read_file", {"path": f"src/m{n}.py"})
            messages += [
                Message("assistant", (TextBlock(said), use)),
                Message("user", (ToolResultBlock(use.id, f"code of m{n}\n" * 40),)),
            ]
        context._calls_since_compaction = 5  # the agent worked in between (no storm guard)
        messages = asyncio.run(context.compact_now("sys", messages, summarizer))
    text = "\n".join(m.text for m in messages)
    kept = sum(f in text for f in facts)
    return SummaryRun(mode, cycles, summarizer.sent, summarizer.written, len(facts), kept)


# --- report ---------------------------------------------------------------------------------


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def main(argv: list[str] | None = None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="40 rounds, 8k window; 8 summary cycles")
    args = parser.parse_args(argv)
    workload = long_task(args.small)
    name, _ = true_counter()
    lines = [
        f"### Pinned-fact retention ({workload.rounds} rounds, window {workload.window:,}, tokens by {name})",
        "",
        "After each compaction, the first request: share of the pins made so far that are in it word for "
        "word, and whether the current plan is (its block, or the newest todo call). `put back` is ours; "
        "`kept as calls` has the same tools with nothing put back.",
        "",
        "| strategy | compactions | pin checks | pins: put back | pins: kept as calls | plan: put back "
        "| plan: kept as calls | failed audits | tokens billed: put back / kept as calls |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    worst = 1.0
    for strategy in STRATEGIES:
        ours = retention(strategy, workload, put_back=True)
        bare = retention(strategy, workload, put_back=False)
        if ours["pins"] is not None:
            worst = min(worst, ours["pins"])
        lines.append(
            f"| {strategy} | {ours['compactions']} | {ours['pin_checks']} | {_pct(ours['pins'])} | "
            f"{_pct(bare['pins'])} | {_pct(ours['plan'])} | {_pct(bare['plan'])} | {ours['audits_failed']} | "
            f"{ours['billed']:,} / {bare['billed']:,} |"
        )
    cycles = 8 if args.small else 40
    lines += [
        "",
        f"Lowest pin retention with put-back, over every strategy: {worst:.0%}.",
        "",
        f"### Incremental against rewritten summaries ({cycles} compactions, 3 new facts each)",
        "",
        "| summary mode | tokens sent to the summarizer | tokens it wrote | facts stated "
        "| facts in the window at the end |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for mode in ("update", "rewrite"):
        run = summary_cycles(mode, cycles, 8_000)
        share = run.kept / run.facts
        lines.append(f"| {mode} | {run.sent:,} | {run.written:,} | {run.facts} | {run.kept} ({share:.0%}) |")
    limit = min(1024, max(256, int(8_000 * 0.7) // 4))
    lines += [
        "",
        f"The summarizer's output limit at this window is {limit} tokens; "
        "a rewrite must restate every fact within it, an update only the new ones. The plan's block "
        f"opens with `{PLAN_HEADER}`.",
    ]
    report = "\n".join(lines)
    print(report)
    return report


if __name__ == "__main__":
    sys.exit(0 if main() else 1)

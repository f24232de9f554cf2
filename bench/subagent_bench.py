"""The long-task workload with and without sub-agents: the parent's peak window and the tokens
billed for the whole run.

Workload: "write one line about every file under src/ into NOTES.md", over files of realistic
sizes (those of bench/context_bench.py: 0.5k to 20k characters, some Chinese), with a 32k
window, compaction at 0.7 and the default pipeline for every agent. Input tokens are counted by
a real BPE encoding (o200k when installed, else bytes/3).

- **without**: the agent reads each file and notes a line about it, one file per round.
- **with**: the agent hands the files to sub-agents through the real ``task`` tool, ten files
  per sub-agent, three at a time (the default concurrency); each sub-agent reads its files and
  answers one line per file; the agent notes each answer.

The model is simulated (the same policy plays every agent; the answer about a file is its first
words), so the numbers measure what the harness sends, not a model's judgment.

    python -m bench.subagent_bench            # 120 files
    python -m bench.subagent_bench --small    # 24 files, an 8k window (what the test runs)
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.context_bench import RequestTokens, Workload, make_workspace, true_counter
from tinyharness.agent import Agent, AgentConfig
from tinyharness.context.config import ContextConfig
from tinyharness.context.manager import build_context
from tinyharness.events import EventBus, ListSink
from tinyharness.messages import Message, TextBlock, ToolUseBlock
from tinyharness.models.base import Model, ModelRequest, ModelResponse, Usage
from tinyharness.subagents import SUBAGENT_PROMPT, SubAgentConfig, SubAgentHost, SubAgents
from tinyharness.tools.base import ToolRegistry
from tinyharness.tools.builtin import builtin_tools
from tinyharness.tools.notes import NotesFile

PER_CHILD = 10  # files one sub-agent reads
AT_ONCE = 3  # task calls per turn (the default concurrency)
TASK = "Write one line about every file under src/ into NOTES.md (the note tool, path and line)."


@dataclass
class Row:
    mode: str
    stop: str
    billed: int
    parent_peak: int
    child_peak: int | None
    calls: int
    compactions: int
    noted: int
    files: int
    seconds: float


class PolicyModel:
    """Plays every agent of the run. The parent's policy depends on ``delegate``; a sub-agent
    (told by its system prompt) reads the files its task lists and answers a line per file.
    Usage is counted by a real tokenizer; each agent request's input size is recorded by role."""

    def __init__(self, files: list[str], count: Callable[[str], int], window: int, *, delegate: bool) -> None:
        self.name = "bench-policy"
        self.files = files
        self.count = count
        self.window = window
        self.delegate = delegate
        self.billed = 0
        self.calls = 0
        self.parent_inputs: list[int] = []
        self.child_inputs: list[int] = []
        self._input = RequestTokens(count).request
        self._next = 0  # without: the next file to read; with: the next batch to hand out
        self._ids = 0

    @property
    def context_window(self) -> int | None:
        return self.window

    def _id(self) -> str:
        self._ids += 1
        return f"c{self._ids}"

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self.calls += 1
        tokens = self._input(request)
        if request.purpose == "compact":
            reply = Message.assistant("Summary. Pending: the files not noted yet.")
        elif request.purpose == "flush" or request.final_only:
            reply = Message.assistant("Done.")
        elif request.system == SUBAGENT_PROMPT:
            self.child_inputs.append(tokens)
            reply = self._child(request)
        else:
            self.parent_inputs.append(tokens)
            reply = self._parent_with(request) if self.delegate else self._parent_without(request)
        output = self.count(reply.text) + 15 + sum(self.count(str(c.input)) for c in reply.tool_uses)
        self.billed += tokens + output
        stop = "tool_use" if reply.tool_uses else "end_turn"
        return ModelResponse(reply, stop, Usage(tokens, output))

    @staticmethod
    def _line(path: str) -> str:
        return f"{path}: {'order handlers' if path[-5] != '0' else 'inventory checks'}"

    def _parent_without(self, request: ModelRequest) -> Message:
        last = request.messages[-1]
        read = [c for c in _last_calls(request) if c.name == "read_file"]
        if read:  # a file was just read: note it
            path = str(read[0].input["path"])
            return Message("assistant", (ToolUseBlock(self._id(), "note", {"text": self._line(path)}),))
        del last
        if self._next >= len(self.files):
            return Message.assistant("Every file has its line in NOTES.md.")
        path = self.files[self._next]
        self._next += 1
        return Message("assistant", (ToolUseBlock(self._id(), "read_file", {"path": path}),))

    def _parent_with(self, request: ModelRequest) -> Message:
        answered = [r for r in request.messages[-1].tool_results if _is_task_answer(r.content)]
        if answered:  # the sub-agents' answers: one note per line
            lines = [line for r in answered for line in r.content.splitlines()[1:] if ": " in line]
            calls = tuple(ToolUseBlock(self._id(), "note", {"text": line}) for line in lines)
            return Message("assistant", calls)
        if self._next * PER_CHILD >= len(self.files):
            return Message.assistant("Every file has its line in NOTES.md.")
        calls = []
        for _ in range(AT_ONCE):
            batch = self.files[self._next * PER_CHILD : (self._next + 1) * PER_CHILD]
            if not batch:
                break
            self._next += 1
            prompt = "Read these files and answer one line per file (path: what it does): " + ", ".join(batch)
            calls.append(ToolUseBlock(self._id(), "task", {"prompt": prompt, "description": "read files"}))
        return Message("assistant", tuple(calls))

    def _child(self, request: ModelRequest) -> Message:
        wanted = request.messages[0].text.split(": ", 1)[1].split(", ")
        done = {str(c.input["path"]) for m in request.messages for c in m.tool_uses if c.name == "read_file"}
        left = [p for p in wanted if p not in done]
        if left:
            return Message("assistant", (ToolUseBlock(self._id(), "read_file", {"path": left[0]}),))
        return Message("assistant", (TextBlock("\n".join(self._line(p) for p in wanted)),))

    async def aclose(self) -> None:
        return None


def _last_calls(request: ModelRequest) -> list[ToolUseBlock]:
    """The calls answered by the last message (the assistant message before it)."""
    if len(request.messages) < 2:
        return []
    return list(request.messages[-2].tool_uses)


def _is_task_answer(content: str) -> bool:
    return content.startswith("Sub-agent run ")


def run_mode(workload: Workload, *, delegate: bool) -> Row:
    _name, count = true_counter()
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        files = make_workspace(root, workload)
        notes_path = root / "NOTES.md"
        sink = ListSink()
        events = EventBus([sink])
        model = PolicyModel(files, count, workload.window, delegate=delegate)

        def context(
            model_: Model,
            bus: EventBus,
            tools: ToolRegistry,
            notes: Path,
            session: Any = None,
            pins: Any = None,
        ) -> Any:
            config = ContextConfig(window=workload.window, ratio=0.7, notes_path=notes, workspace=root)
            return build_context(config, events=bus)

        tools = builtin_tools(root, notes=NotesFile(notes_path))
        if delegate:
            runner = SubAgents(
                SubAgentConfig(max_iterations=PER_CHILD + 5),
                SubAgentHost(
                    tools=lambda notes, bus: builtin_tools(root, notes=NotesFile(notes, root=root)),
                    state_dir=root / ".tinyharness" / "subagents",
                    context=context,
                ),
            )
            tools.add(runner.tool())
        agent = Agent(
            model,
            tools,
            AgentConfig(max_iterations=4 * len(files)),
            context=context(model, events, tools, notes_path),
            events=events,
        )
        started = time.perf_counter()
        result = agent.run(TASK)
        seconds = time.perf_counter() - started
        notes = notes_path.read_text(encoding="utf-8") if notes_path.exists() else ""
        noted = sum(1 for path in files if re.search(re.escape(path) + r": ", notes))
        return Row(
            "with sub-agents" if delegate else "without",
            result.stop,
            model.billed,
            max(model.parent_inputs),
            max(model.child_inputs) if model.child_inputs else None,
            model.calls,
            len(sink.of_type("compaction")),
            noted,
            len(files),
            seconds,
        )


def to_markdown(workload: Workload, rows: list[Row]) -> str:
    name, _ = true_counter()
    lines = [
        f"{workload.files} files, window {workload.window:,}, compaction at 0.7 (default pipeline in "
        f"every agent), tokens by {name}; sub-agents read {PER_CHILD} files each, {AT_ONCE} at a time.",
        "",
        "| run | stop | tokens billed | parent's peak window | a sub-agent's peak window | model calls "
        "| compactions (all agents) | files noted | seconds |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        child = "-" if r.child_peak is None else f"{r.child_peak:,}"
        lines.append(
            f"| {r.mode} | {r.stop} | {r.billed:,} | {r.parent_peak:,} | {child} | {r.calls:,} "
            f"| {r.compactions} | {r.noted}/{r.files} | {r.seconds:.1f} |"
        )
    without, with_ = rows
    lines += [
        "",
        f"- The parent's peak window: {with_.parent_peak:,} tokens with sub-agents against "
        f"{without.parent_peak:,} without ({without.parent_peak / with_.parent_peak:.1f}x smaller); "
        f"tokens billed for the whole run: {with_.billed:,} against {without.billed:,} "
        f"({without.billed / with_.billed:.1f}x fewer).",
    ]
    return "\n".join(lines)


def run(*, small: bool = False) -> tuple[Workload, list[Row]]:
    workload = Workload(0, 8_000, files=24) if small else Workload(0, 32_000, files=120)
    return workload, [run_mode(workload, delegate=False), run_mode(workload, delegate=True)]


def main(argv: list[str] | None = None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="24 files, an 8k window")
    args = parser.parse_args(argv)
    workload, rows = run(small=args.small)
    report = to_markdown(workload, rows)
    print(report)
    return report


if __name__ == "__main__":
    sys.exit(0 if main() else 1)

"""Loop overhead: the harness's CPU time per turn, model time excluded, against history length.

The same synthetic history (a task, then rounds of ``read_file`` calls whose results are 0.1k to
2.5k characters of code, then a final answer) is given, at 100, 1,000 and 10,000 messages, to:

- tinyharness's context path, as the agent drives it on every turn under the compaction trigger
  (``ContextManager.prepare``, ``record_response``, ``record_appended``) on the agent's
  ``Transcript`` (a list that knows it only grew), split into its parts: the prefix-share
  tracker, the usage calibration's estimate of the whole request, the rest (the incremental
  ledger and the trigger check); and the same on a plain list, where each check walks the
  history to find what is new (how it ran before the Transcript);
- ``RequestValidator.check``, which every request passes (incremental), beside
  ``validate_messages``, the same check from scratch;
- the whole agent turn (``Agent`` with an instant model and a no-op tool), as the library runs it
  (no run log) and as the CLI runs it (run log with a checkpoint after every step);
- seed 000's naive way: ``estimate_tokens`` (chars/4 over ``json.dumps`` of every message) on the
  whole history every turn, then the threshold check;
- LangChain: ``trim_messages(strategy="last", token_counter=count_tokens_approximately)`` on the
  whole history every turn, as a LangGraph pre-model hook does (needs ``langchain-core``; skipped
  with a note when it is not installed).

Each cell is the median over many turns of ``time.process_time`` (CPU of the whole process, so
the tool's worker thread counts), in microseconds. The window is set far above the history so no
compaction runs: this measures the steady per-turn cost, not compaction.

    python -m bench.loop_overhead            # 100, 1,000, 10,000 messages
    python -m bench.loop_overhead --small    # fewer turns (what the test runs)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import tempfile
import time
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench import markdown_table, median, progress
from tinyharness.agent import Agent, AgentConfig
from tinyharness.context.config import ContextConfig
from tinyharness.context.manager import ContextManager, build_context
from tinyharness.context.prefix import PrefixTracker
from tinyharness.context.validator import RequestValidator, validate_messages
from tinyharness.events import EventBus, EventSink, redacted_json
from tinyharness.messages import (
    Message,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    Transcript,
    block_to_dict,
    messages_to_dicts,
)
from tinyharness.models.base import ModelRequest, ModelResponse, Usage
from tinyharness.runlog import RunLog
from tinyharness.session import SessionStore
from tinyharness.tools.base import ToolRegistry, function_tool

SIZES = (100, 1_000, 10_000)
HUGE_WINDOW = 10**9  # far above any history here: the trigger never fires
SYSTEM = "You are a careful agent working in a workspace folder through tools."
SEED_LIMIT, SEED_BUFFER = 30_000, 6_000  # seed 000's CONTEXT_LIMIT and COMPACT_BUFFER
LANGCHAIN_MAX_TOKENS = 22_937  # 0.7 of a 32k window, the same trigger share as ours
CODE_LINE = "def handler(order, ledger):\n    return ledger.apply(order)  # keep it simple\n"

# row keys, in table order, with their labels
ROWS: dict[str, str] = {
    "context": "tinyharness context path (prepare + record_response + record_appended)",
    "prefix": "- of which PrefixTracker.observe (prefix-share metric)",
    "calibration": "- of which usage calibration (Accountant counts what changed since the last request)",
    "ledger": "- of which the rest: incremental ledger + trigger check",
    "context_list": "- the same on a plain list: each check walks the history to find what is new (before)",
    "validator": "RequestValidator.check (every request; incremental)",
    "validate": "- naive: validate_messages, the same check from scratch every request",
    "agent": "tinyharness whole agent turn, library (no run log)",
    "agent_cli": "tinyharness whole agent turn, CLI default (run log + checkpoint every step)",
    "checkpoint": "- one checkpoint step (SQLiteSession.save of one appended message; 2 per turn)",
    "redact": "- naive: redacted_json of the whole history at every step (the old checkpoint)",
    "naive": "naive: chars/4 of every message, re-estimated every turn",
    "langchain": "LangChain trim_messages + count_tokens_approximately every turn",
}


@dataclass
class LoopResult:
    sizes: tuple[int, ...]
    cells: dict[str, dict[int, float]] = field(default_factory=dict)  # row -> size -> median µs
    turns: dict[str, dict[int, int]] = field(default_factory=dict)  # row -> size -> samples
    notes: list[str] = field(default_factory=list)
    commits: dict[int, tuple[float, float]] = field(default_factory=dict)  # size -> run log, session

    def put(self, row: str, size: int, samples: Sequence[float]) -> None:
        self.cells.setdefault(row, {})[size] = median(samples) * 1e6
        self.turns.setdefault(row, {})[size] = len(samples)

    def get(self, row: str, size: int) -> float | None:
        return self.cells.get(row, {}).get(size)

    def growth(self, row: str) -> float | None:
        """Cost at the largest size over cost at the smallest."""
        low, high = self.get(row, self.sizes[0]), self.get(row, self.sizes[-1])
        return high / low if low and high is not None else None


# --- the workload ---------------------------------------------------------------------------------


def make_history(size: int, seed: int = 7) -> list[Message]:
    """Exactly ``size`` messages (size >= 3, odd sizes are rounded down to even): the task, rounds
    of read_file calls and their results, and a final answer, so a new task may follow."""
    rng = random.Random(seed)
    history = [Message.user("Read every .py file under src/ and summarise each into NOTES.md.")]
    rounds = max(1, (size - 2) // 2)
    for i in range(rounds):
        call = ToolUseBlock(f"r{i}", "read_file", {"path": f"src/module_{i}.py"})
        history.append(Message("assistant", (TextBlock(f"Reading module {i}."), call)))
        body = CODE_LINE * rng.randint(1, 30)
        history.append(Message("user", (ToolResultBlock(f"r{i}", body),)))
    history.append(Message.assistant("Done: every module is summarised in NOTES.md."))
    return history


def turn_messages(turn: int) -> tuple[Message, Message]:
    """One new round: the assistant's call and its result."""
    call = ToolUseBlock(f"n{turn}", "read_file", {"path": f"src/new_{turn}.py"})
    reply = Message("assistant", (TextBlock(f"Reading new file {turn}."), call))
    result = Message("user", (ToolResultBlock(f"n{turn}", CODE_LINE * 12),))
    return reply, result


def _drive(coroutine: Coroutine[Any, Any, Any]) -> Any:
    """Run a coroutine that never suspends (``prepare`` under the trigger) without an event loop."""
    try:
        coroutine.send(None)
    except StopIteration as done:
        return done.value
    coroutine.close()
    raise RuntimeError("the coroutine suspended; this benchmark expects no compaction")


# --- tinyharness: the context path and the validator ----------------------------------------------


class _TimedPrefix(PrefixTracker):
    def __init__(self) -> None:
        super().__init__()
        self.spent = 0.0

    def observe(self, system: str, messages: Sequence[Message]) -> float:
        start = time.process_time()
        try:
            return super().observe(system, messages)
        finally:
            self.spent += time.process_time() - start


class _Timed:
    """Wraps a callable and sums the CPU time spent in it."""

    def __init__(self, function: Callable[..., Any]) -> None:
        self.function = function
        self.spent = 0.0

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        start = time.process_time()
        try:
            return self.function(*args, **kwargs)
        finally:
            self.spent += time.process_time() - start


def measure_context(
    history: list[Message], turns: int, warmup: int = 20, *, transcript: bool = True
) -> dict[str, list[float]]:
    """Per-turn CPU seconds of the context path and its parts, of the request validator and of
    ``validate_messages``. ``transcript``: the history is a ``Transcript`` and each request its
    snapshot, as the agent sends them; else a plain list and a fresh tuple per request.

    Each is measured in a loop of its own: the whole path with a clock read at its two ends
    only; its two parts in a second run with a clock around each (a clock read is a system
    call, a few µs, and it slows the code after it), the rest being the whole less the parts;
    the request validator on each request as it is made; the full check over the same requests
    afterwards (it walks the whole history, which would leave the path's caches cold)."""
    whole, requests = _context_pass(history, turns, warmup, transcript=transcript, timed_parts=False)
    samples = _context_pass(history, turns, warmup, transcript=transcript, timed_parts=True)[0]
    samples["context"] = whole["context"]
    # The rest, turn by turn (both runs do the same work at the same turn): the whole less the
    # two parts, so the clock reads around the parts do not count as the ledger's.
    samples["ledger"] = [
        spent - prefix - calibration
        for spent, prefix, calibration in zip(
            whole["context"], samples["prefix"], samples["calibration"], strict=True
        )
    ]
    samples["validator"] = whole["validator"]
    samples["validate"] = []
    for turn, request in enumerate(requests):
        start = time.process_time()
        validate_messages(request.messages)
        spent = time.process_time() - start
        if turn >= warmup:
            samples["validate"].append(spent)
    return samples


def _context_pass(
    history: list[Message], turns: int, warmup: int, *, transcript: bool, timed_parts: bool
) -> tuple[dict[str, list[float]], list[ModelRequest]]:
    context = build_context(ContextConfig("default", window=HUGE_WINDOW))
    prefix = _TimedPrefix() if timed_parts else PrefixTracker()
    context.prefix = prefix
    calibration = _Timed(context.accountant.raw.count_messages)
    if timed_parts:
        context.accountant.raw.count_messages = calibration
    start_list = [*history, Message.user("Go on with the next files.")]
    messages: list[Message] = Transcript(start_list) if transcript else start_list
    context.record_appended(messages)
    samples: dict[str, list[float]] = {k: [] for k in ("context", "prefix", "calibration")}
    samples["validator"] = []
    validator = RequestValidator()  # checks each request as the agent does, as it is made
    requests: list[ModelRequest] = []
    for turn in range(warmup + turns):
        reply, result = turn_messages(turn)
        response = ModelResponse(reply, "tool_use", Usage(5_000 + turn, 20))
        if isinstance(prefix, _TimedPrefix):
            prefix.spent = 0.0
        calibration.spent = 0.0
        start = time.process_time()
        messages = _drive(context.prepare(SYSTEM, messages, _never_called))
        sent = messages.snapshot() if isinstance(messages, Transcript) else tuple(messages)
        request = ModelRequest(sent, SYSTEM, purpose="agent")
        context.record_response(request, response)
        messages.append(reply)
        context.record_appended([reply])
        messages.append(result)
        context.record_appended([result])
        spent = time.process_time() - start
        requests.append(request)
        start = time.process_time()
        validator.check(request.messages, purpose="agent")
        checked = time.process_time() - start
        if turn >= warmup:
            samples["context"].append(spent)
            samples["validator"].append(checked)
            if isinstance(prefix, _TimedPrefix):
                samples["prefix"].append(prefix.spent)
                samples["calibration"].append(calibration.spent)
    if context.compactions:
        raise RuntimeError("a compaction ran; the benchmark measures the steady per-turn cost")
    return samples, requests


async def _never_called(request: ModelRequest) -> ModelResponse:
    raise RuntimeError("no model call is expected under the trigger")


# --- tinyharness: the whole agent turn ------------------------------------------------------------


@function_tool
def noop(i: int) -> str:
    """Do nothing and say so.

    Args:
        i: a counter, so no two calls are identical
    """
    return f"ok {i}"


class InstantModel:
    """Answers at once: ``turns`` tool calls, then a final answer. Stamps the process CPU time at
    every request, so the gaps between stamps are the harness's work between two requests."""

    name = "instant"

    def __init__(self, turns: int) -> None:
        self.turns = turns
        self.calls = 0
        self.stamps: list[float] = []

    @property
    def context_window(self) -> int | None:
        return HUGE_WINDOW

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self.stamps.append(time.process_time())
        i = self.calls
        self.calls += 1
        usage = Usage(5_000 + i, 20)
        if i >= self.turns:
            return ModelResponse(Message.assistant("Done."), "end_turn", usage)
        call = ToolUseBlock(f"b{i}", "noop", {"i": i})
        return ModelResponse(Message("assistant", (TextBlock(f"Step {i}."), call)), "tool_use", usage)

    async def aclose(self) -> None:
        return None


def measure_agent(
    history: list[Message], turns: int, *, run_log: bool, warmup: int = 2, commits: list[float] | None = None
) -> list[float]:
    """Per-turn CPU seconds of the whole agent loop between two model requests; with ``run_log``
    as the CLI runs it: every event in the run log and a checkpoint after every step.
    ``commits``, given, receives the SQLite transactions of the run log and of the session
    store per turn (the run's own, less those of setting it up)."""
    model = InstantModel(warmup + turns)
    with tempfile.TemporaryDirectory() as folder:
        log = RunLog(Path(folder) / "runs.db") if run_log else None
        store = SessionStore(Path(folder) / "runs.sessions.db") if run_log else None
        session = store.open("bench") if store is not None else None
        if session is not None:
            session.save(history, {})  # the session as a resumed run finds it
        counted = [0, 0]
        if log is not None and store is not None and commits is not None:
            log._sqlite.set_trace_callback(lambda sql: _count_commit(counted, 0, sql))
            store._db.set_trace_callback(lambda sql: _count_commit(counted, 1, sql))
        sinks: list[EventSink] = [log] if log is not None else []
        events = EventBus(sinks)
        context: ContextManager = build_context(ContextConfig("default", window=HUGE_WINDOW), events=events)
        agent = Agent(
            model,
            ToolRegistry([noop]),
            AgentConfig(system=SYSTEM, max_iterations=warmup + turns + 5),
            context=context,
            events=events,
            checkpoint=session,
        )
        try:
            result = asyncio.run(agent.arun("Go on with the next files.", history=history))
        finally:
            if log is not None:
                log.close()
            if store is not None:
                store.close()
    if result.stop != "end_turn" or result.compactions:
        raise RuntimeError(f"the agent run ended with {result.stop} after {result.compactions} compactions")
    if commits is not None:
        # The run's commits, over its turns (the run_start and run_end of one run add a few).
        commits[:] = [round(n / (warmup + turns), 1) for n in counted]
    gaps = [b - a for a, b in zip(model.stamps, model.stamps[1:], strict=False)]
    return gaps[warmup:]


def _count_commit(counted: list[int], which: int, sql: str) -> None:
    if sql == "COMMIT":
        counted[which] += 1


def measure_checkpoint(
    history: list[Message], reps: int, redact_reps: int | None = None
) -> tuple[list[float], list[float]]:
    """CPU seconds of one checkpoint step (one message appended to the agent's Transcript since
    the last save), and of redacting the whole history, which is what every step cost before
    checkpoints became incremental."""
    saves, redactions = [], []
    with tempfile.TemporaryDirectory() as folder:
        store = SessionStore(Path(folder) / "runs.sessions.db")
        session = store.open("bench")
        transcript = Transcript(history)
        try:
            session.save(transcript, {})
            # One save first, not counted: the first after the whole history was written cost
            # 3-6x the next ones at 10,000 messages (757 against 112-174 µs), and the two saves
            # measured there made that the row's median.
            for rep in range(reps + 1):
                transcript.append(turn_messages(rep)[rep % 2])
                start = time.process_time()
                session.save(transcript, {"model_calls": rep})
                if rep:
                    saves.append(time.process_time() - start)
        finally:
            store.close()
    # Apart: the whole-history redaction would leave the saves' caches cold.
    data = messages_to_dicts(history)
    for _ in range(reps if redact_reps is None else redact_reps):
        start = time.process_time()
        redacted_json(data)
        redactions.append(time.process_time() - start)
    return saves, redactions


# --- the seed's naive way -------------------------------------------------------------------------


def seed_estimate_tokens(messages: Sequence[dict[str, Any]]) -> int:
    """Seed 000's ``estimate_tokens``, verbatim in behaviour."""
    total = 0
    for m in messages:
        c = m["content"]
        text = c if isinstance(c, str) else json.dumps(c, ensure_ascii=False)
        total += len(text) // 4
    return total


def seed_dict(message: Message) -> dict[str, Any]:
    """A message as the seed keeps it: a plain string for a lone text, else the block dicts."""
    if len(message.content) == 1 and isinstance(message.content[0], TextBlock):
        return {"role": message.role, "content": message.content[0].text}
    return {"role": message.role, "content": [block_to_dict(b) for b in message.content]}


def measure_naive(history: list[Message], turns: int) -> list[float]:
    messages = [seed_dict(m) for m in history]
    samples = []
    for turn in range(turns):
        reply, result = (seed_dict(m) for m in turn_messages(turn))
        messages += [reply, result]
        start = time.process_time()
        over = seed_estimate_tokens(messages) >= SEED_LIMIT - SEED_BUFFER
        samples.append(time.process_time() - start)
        del over
    return samples


# --- LangChain ------------------------------------------------------------------------------------


def langchain_available() -> bool:
    try:
        import langchain_core.messages.utils  # noqa: F401
    except ImportError:
        return False
    return True


def to_langchain(messages: Sequence[Message]) -> list[Any]:
    """The same messages as LangChain objects: human, AI with tool calls, tool results."""
    from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

    out: list[BaseMessage] = []
    for message in messages:
        if message.role == "assistant":
            calls = [{"name": c.name, "args": c.input, "id": c.id} for c in message.tool_uses]
            out.append(AIMessage(content=message.text, tool_calls=calls))
            continue
        results = message.tool_results
        if results:
            out += [ToolMessage(content=r.content, tool_call_id=r.tool_use_id) for r in results]
        else:
            out.append(HumanMessage(content=message.text))
    return out


def measure_langchain(history: list[Message], turns: int) -> list[float]:
    from langchain_core.messages.utils import count_tokens_approximately, trim_messages

    messages = to_langchain(history)
    new = [to_langchain(turn_messages(turn)) for turn in range(turns)]
    samples = []
    for pair in new:
        messages += pair
        start = time.process_time()
        trimmed = trim_messages(
            messages,
            max_tokens=LANGCHAIN_MAX_TOKENS,
            token_counter=count_tokens_approximately,
            strategy="last",
        )
        samples.append(time.process_time() - start)
        del trimmed
    return samples


# --- the run --------------------------------------------------------------------------------------


def turns_for(size: int, small: bool) -> int:
    """Repetitions per cell: many where a turn is cheap, fewer where it costs milliseconds."""
    base = {100: 300, 1_000: 120}.get(size, 40)
    return max(5, base // 6) if small else base


def heavy_turns_for(size: int, small: bool) -> int:
    """Repetitions for the CLI and checkpoint rows (each run costs the setting up of a run log
    and a session store with the whole history); 0 skips the cell (the small run measures them
    on the smallest history only)."""
    if small:
        return 3 if size <= 100 else 0
    return {100: 120, 1_000: 80}.get(size, 60)


def redact_reps_for(size: int, small: bool) -> int:
    """Repetitions of the whole-history redaction, which costs seconds at 10,000 messages."""
    if small:
        return 3 if size <= 100 else 0
    return {100: 20, 1_000: 5}.get(size, 2)


def warm_up() -> None:
    """A short pass of the tinyharness rows on a small history, discarded. The rows measured
    first in a fresh process otherwise pay its one-time costs (the heap growing, patterns
    compiled and caches filled on first use): on a quiet machine the first column, 100
    messages, read 1.2-1.5x the others for the whole and CLI turns."""
    history = make_history(100)
    measure_context(history, 20)
    measure_agent(history, 60, run_log=False)
    measure_agent(history, 60, run_log=True, warmup=3)
    measure_checkpoint(history, 20, 1)


def run(sizes: Sequence[int] = SIZES, *, small: bool = False) -> LoopResult:
    result = LoopResult(tuple(sizes))
    if not small:
        progress("loop overhead: warming the process up (a short pass, not reported)")
        warm_up()
    with_langchain = langchain_available()
    if not with_langchain:
        note = "LangChain: skipped, langchain-core is not installed (pip install langchain-core)"
        result.notes.append(note)
        progress(note)
    for size in sizes:
        history = make_history(size)
        turns = turns_for(size, small)
        progress(f"loop overhead: {size:,} messages, {turns} turns per row")
        for row, samples in measure_context(history, turns).items():
            result.put(row, size, samples)
        result.put("context_list", size, measure_context(history, turns, transcript=False)["context"])
        # The whole turn costs about what the context rows' turn at 100 messages costs and is
        # cheap at any size: as many turns at every size (40 at 10,000 moved the cell by 1.5x).
        result.put(
            "agent", size, measure_agent(history, max(turns, turns_for(SIZES[0], small)), run_log=False)
        )
        heavy = heavy_turns_for(size, small)
        if heavy:
            progress(f"loop overhead: {size:,} messages, run log and checkpoints, {heavy} turns")
            commits: list[float] = []
            result.put(
                "agent_cli", size, measure_agent(history, heavy, run_log=True, warmup=3, commits=commits)
            )
            result.commits[size] = (commits[0], commits[1])
            saves, redactions = measure_checkpoint(history, heavy, redact_reps_for(size, small))
            result.put("checkpoint", size, saves)
            result.put("redact", size, redactions)
        result.put("naive", size, measure_naive(history, turns))
        if with_langchain:
            result.put("langchain", size, measure_langchain(history, turns))
    return result


def _us(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:,.0f}" if value >= 100 else f"{value:,.1f}"


def to_markdown(result: LoopResult) -> str:
    header = ["per turn, CPU µs (median)", *(f"{s:,} msgs" for s in result.sizes), "growth"]
    rows = []
    for key, label in ROWS.items():
        if key not in result.cells:
            continue
        growth = result.growth(key)
        cells = [_us(result.get(key, s)) for s in result.sizes]
        rows.append([label, *cells, f"{growth:,.1f}x" if growth is not None else "-"])
    lines = [markdown_table(header, rows)]
    samples = ", ".join(f"{k} {v}" for k, v in result.turns.get("context", {}).items())
    lines += ["", f"Turns measured per cell (context rows): {samples}; growth = largest size / smallest."]
    if result.commits:
        per = ", ".join(
            f"{log:g} + {session:g} at {size:,}" for size, (log, session) in result.commits.items()
        )
        lines.append(
            f"SQLite transactions per CLI turn (run log + session store, the run's start and end "
            f"spread over its turns): {per} messages."
        )
    lines += [f"Note: {note}" for note in result.notes]
    return "\n".join(lines)


def headlines(result: LoopResult) -> list[str]:
    """Ratios at the largest size, for the README."""
    size = result.sizes[-1]
    ours = result.get("context", size)
    out = []
    before, growth = result.get("context_list", size), result.growth("context")
    if ours and before is not None and growth is not None:
        out.append(
            f"at {size:,} messages, tinyharness's context path costs {_us(ours)} µs per turn "
            f"({growth:,.1f}x its cost at {result.sizes[0]:,} messages); on a plain list, where each "
            f"check walks the history, {_us(before)} µs"
        )
    cli = result.get("agent_cli", size)
    if cli is not None:
        out.append(f"a whole CLI turn (run log and session store) costs {_us(cli)} µs at {size:,} messages")
    for key, name in (("naive", "the naive chars/4 re-estimate"), ("langchain", "LangChain trim_messages")):
        other = result.get(key, size)
        if ours and other is not None:
            out.append(
                f"at {size:,} messages, tinyharness's context path costs {_us(ours)} µs per turn, "
                f"{other / ours:,.1f}x less than {name} ({_us(other)} µs)"
            )
    return out


def main(argv: list[str] | None = None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--small", action="store_true", help="fewer turns per cell")
    args = parser.parse_args(argv)
    report = to_markdown(run(small=args.small))
    print(report)
    return report


if __name__ == "__main__":
    main()

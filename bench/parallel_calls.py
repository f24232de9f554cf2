"""N tool calls in one turn, with the run log and the session on, as the CLI runs them.

    python -m bench.parallel_calls            # 100, 1,000 and 10,000 calls
    python -m bench.parallel_calls --small    # 100 and 1,000

One model turn asks for N calls of a no-op tool; the loop runs them in parallel and the model
then answers. Rows, side by side in one process run:

- ours: every event in the run log, each call recorded as started and as finished in the session
  store (one row each);
- the old way: what the loop did before, rebuilt here: a checkpoint after each call whose state
  holds every result finished so far, redacted and rewritten whole, so the turn costs O(N^2);
- no run log: the library with no sinks and no session (the floor).

Besides wall time, the bytes of SQL written to the two files (statement text with its bound
values, from SQLite's trace hook) show the shape: linear for ours, quadratic for the old way.
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import markdown_table, progress
from tinyharness.agent import Agent, AgentConfig
from tinyharness.events import EventBus, EventSink
from tinyharness.messages import Message, ToolResultBlock, ToolUseBlock, block_to_dict, messages_to_dicts
from tinyharness.models.base import ModelRequest, ModelResponse, Usage
from tinyharness.runlog import RunLog
from tinyharness.session import SessionStore
from tinyharness.tools.base import ToolRegistry, function_tool

SIZES = (100, 1_000, 10_000)
OLD_WAY_LIMIT = 1_000  # above this the old way runs for hours (1,000 calls: minutes)


@function_tool
def noop(i: int) -> str:
    """Do nothing.

    Args:
        i: the call's number
    """
    return f"ok {i}"


class FanOutModel:
    """First request: N calls at once; second: the answer."""

    name = "fan-out"
    context_window = None

    def __init__(self, calls: int) -> None:
        self.calls = calls
        self.requests = 0

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self.requests += 1
        if self.requests == 1:
            uses = tuple(ToolUseBlock(f"c{i}", "noop", {"i": i}) for i in range(self.calls))
            return ModelResponse(Message("assistant", uses), "tool_use", Usage(100, 10))
        return ModelResponse(Message.assistant("done"), "end_turn", Usage(100, 10))

    async def aclose(self) -> None:
        return None


class OldWayCheckpointer:
    """The checkpoint the loop wrote before: after each call, the whole turn state (every
    finished result, every started id) redacted and rewritten in the run log."""

    def __init__(self, log: RunLog) -> None:
        self.log = log
        self.stored = 0
        self.messages: Sequence[Message] = []
        self.state: dict[str, Any] = {}
        self.finished: dict[str, ToolResultBlock] = {}
        self.started: set[str] = set()

    def save(self, messages: Sequence[Message], state: dict[str, Any]) -> None:
        if not (messages and messages[-1].tool_uses):
            self.finished, self.started = {}, set()
        self.messages, self.state = messages, state
        self._write()

    def call_started(self, call: ToolUseBlock) -> None:
        self.started.add(call.id)
        self._write()

    def call_finished(self, result: ToolResultBlock) -> None:
        self.finished[result.tool_use_id] = result
        self._write()

    def _write(self) -> None:
        state = {
            **self.state,
            "finished_results": [block_to_dict(b) for b in self.finished.values()],
            "started": sorted(self.started),
        }
        keep = min(self.stored, len(self.messages))
        new = messages_to_dicts(self.messages[keep:])
        self.log.save_checkpoint("bench", "bench", 1, new, state, keep=keep)
        self.stored = len(self.messages)


@dataclass
class Row:
    way: str
    calls: int
    seconds: float | None
    sql_bytes: int | None
    note: str = ""


def _traced(db: sqlite3.Connection, counter: list[int]) -> None:
    db.set_trace_callback(lambda sql: counter.__setitem__(0, counter[0] + len(sql)))


def measure(calls: int, way: str) -> Row:
    with tempfile.TemporaryDirectory() as folder:
        written = [0]
        log = RunLog(Path(folder) / "runs.db") if way != "none" else None
        store = SessionStore(Path(folder) / "runs.sessions.db") if way == "ours" else None
        checkpoint: Any = None
        if log is not None:
            _traced(log._db, written)
            checkpoint = OldWayCheckpointer(log) if way == "old" else None
        if store is not None:
            _traced(store._db, written)
            checkpoint = store.open("bench")
        sinks: list[EventSink] = [log] if log is not None else []
        agent = Agent(
            FanOutModel(calls),
            ToolRegistry([noop]),
            events=EventBus(sinks),
            checkpoint=checkpoint,
            config=AgentConfig(max_iterations=3),
        )
        started = time.perf_counter()
        result = asyncio.run(agent.arun("fan out"))
        took = time.perf_counter() - started
        for closable in (log, store):
            if closable is not None:
                closable.close()
    if result.stop != "end_turn":
        raise RuntimeError(f"{way} at {calls} calls stopped with {result.stop}")
    return Row(way, calls, took, written[0] if way != "none" else None)


LABELS = {
    "ours": "ours: run log + session store (a row per call start and finish)",
    "old": "old way: a checkpoint of the whole turn state after every call",
    "none": "no run log, no session (library floor)",
}


def run(small: bool = False) -> list[Row]:
    sizes = SIZES[:2] if small else SIZES
    rows: list[Row] = []
    for calls in sizes:
        for way in ("ours", "old", "none"):
            if way == "old" and calls > OLD_WAY_LIMIT:
                rows.append(Row(way, calls, None, None, "not run: hours (O(N^2))"))
                continue
            progress(f"parallel calls: {way} x {calls:,} ...")
            rows.append(measure(calls, way))
    return rows


def to_markdown(rows: list[Row]) -> str:
    sizes = sorted({r.calls for r in rows})
    header = ["", *(f"{n:,} calls: s" for n in sizes), *(f"{n:,}: SQL MB" for n in sizes)]
    body = []
    for way, label in LABELS.items():
        mine = {r.calls: r for r in rows if r.way == way}
        seconds = [
            f"{mine[n].seconds:,.2f}" if mine[n].seconds is not None else mine[n].note or "-" for n in sizes
        ]
        sizes_mb = [
            f"{mine[n].sql_bytes / 1e6:,.2f}" if mine[n].sql_bytes is not None else "-" for n in sizes
        ]
        body.append([label, *seconds, *sizes_mb])
    return markdown_table(header, body)


def headlines(rows: list[Row]) -> list[str]:
    lines = []
    ours = {r.calls: r for r in rows if r.way == "ours"}
    old = {r.calls: r for r in rows if r.way == "old" and r.seconds is not None}
    for calls in sorted(old):
        a, b = ours[calls], old[calls]
        if a.seconds and b.seconds and a.sql_bytes and b.sql_bytes:
            lines.append(
                f"{calls:,} calls: ours {a.seconds:,.1f} s against {b.seconds:,.1f} s the old way "
                f"({b.seconds / a.seconds:,.0f}x); SQL written {a.sql_bytes / 1e6:,.2f} MB against "
                f"{b.sql_bytes / 1e6:,.1f} MB"
            )
    sizes = sorted(ours)
    if len(sizes) > 1 and ours[sizes[0]].sql_bytes:
        growth = (ours[sizes[-1]].sql_bytes or 0) / (ours[sizes[0]].sql_bytes or 1)
        lines.append(
            f"ours from {sizes[0]:,} to {sizes[-1]:,} calls: SQL written grows {growth:,.0f}x "
            f"for {sizes[-1] // sizes[0]:,}x the calls (linear)"
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.parallel_calls", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--small", action="store_true", help="100 and 1,000 calls only")
    args = parser.parse_args(argv)
    rows = run(small=args.small)
    print(to_markdown(rows))
    print()
    for line in headlines(rows):
        print(f"- {line}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

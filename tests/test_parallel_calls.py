"""N parallel tool calls with the run log and the session on cost work linear in N: counted in
SQL statements and bytes written to the two files (SQLite's trace hook), not timed. The old
checkpointing rewrote every finished result after each call (1,000 calls took minutes)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tinyharness.agent import Agent, AgentConfig
from tinyharness.events import EventBus
from tinyharness.messages import Message, ToolUseBlock
from tinyharness.models.base import ModelRequest, ModelResponse, Usage
from tinyharness.runlog import RunLog
from tinyharness.sqlite_session import SessionStore
from tinyharness.tools.base import ToolRegistry, function_tool


@function_tool
def noop(i: int) -> str:
    """Do nothing.

    Args:
        i: the call's number
    """
    return f"ok {i}"


class FanOut:
    name = "fan-out"
    context_window = None

    def __init__(self, calls: int) -> None:
        self.calls, self.requests = calls, 0

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self.requests += 1
        if self.requests > 1:
            return ModelResponse(Message.assistant("done"), "end_turn", Usage(1, 1))
        uses = tuple(ToolUseBlock(f"c{i}", "noop", {"i": i}) for i in range(self.calls))
        return ModelResponse(Message("assistant", uses), "tool_use", Usage(1, 1))

    async def aclose(self) -> None:
        return None


def work(folder: Path, calls: int) -> tuple[int, int]:
    """Statements and bytes of SQL (with bound values) written for one turn of ``calls`` calls."""
    counts = [0, 0]

    def count(sql: str) -> None:
        counts[0] += 1
        counts[1] += len(sql)

    log = RunLog(folder / "runs.db")
    store = SessionStore(folder / "runs.sessions.db")
    log._db.set_trace_callback(count)
    store._db.set_trace_callback(count)
    agent = Agent(
        FanOut(calls),
        ToolRegistry([noop]),
        events=EventBus([log]),
        checkpoint=store.open("s"),
        config=AgentConfig(max_iterations=3),
    )
    result = asyncio.run(agent.arun("fan out"))
    log.close()
    store.close()
    assert result.ok and len(result.messages[2].tool_results) == calls
    return counts[0], counts[1]


def test_parallel_calls_cost_linear_work(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    small_statements, small_bytes = work(tmp_path / "a", 30)
    big_statements, big_bytes = work(tmp_path / "b", 120)
    # 4x the calls: about 4x the work (the old way wrote about 16x: every result once per call)
    assert big_statements < 4.5 * small_statements, (small_statements, big_statements)
    assert big_bytes < 4.5 * small_bytes, (small_bytes, big_bytes)

"""N parallel tool calls with the run log and the session on cost work linear in N: counted in
SQL statements and bytes written to the two files (SQLite's trace hook), not timed. The old
checkpointing rewrote every finished result after each call (1,000 calls took minutes)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tinyharness.agent import Agent, AgentConfig
from tinyharness.context.config import ContextConfig
from tinyharness.context.manager import build_context
from tinyharness.context.validator import validate_messages
from tinyharness.events import EventBus
from tinyharness.guide import NoGuide, Turn
from tinyharness.messages import Message, ToolUseBlock
from tinyharness.models.base import ModelRequest, ModelResponse, Usage
from tinyharness.runlog import RunLog
from tinyharness.session import SessionStore
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


class Steps:
    """``turns`` turns of one noop call each, then an answer; the request after the
    ``stop_at``-th one raises, as a kill during a model call would leave the session."""

    name = "steps"
    context_window = None

    def __init__(self, turns: int, stop_at: int | None = None) -> None:
        self.turns, self.stop_at, self.requests = turns, stop_at, 0

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self.requests += 1
        if self.stop_at is not None and self.requests > self.stop_at:
            raise KeyboardInterrupt("killed during the model call")
        if self.requests > self.turns:
            return ModelResponse(Message.assistant("done"), "end_turn", Usage(1, 1))
        use = ToolUseBlock(f"c{self.requests}", "noop", {"i": self.requests})
        return ModelResponse(Message("assistant", (use,)), "tool_use", Usage(1, 1))

    async def aclose(self) -> None:
        return None


def _commits(folder: Path, model: Steps, context: ContextConfig | None = None) -> tuple[int, Any]:
    """Session transactions of a run, and the session store (open; the caller closes it)."""
    store = SessionStore(folder / "runs.sessions.db")
    commits = [0]
    store._db.set_trace_callback(lambda sql: commits.__setitem__(0, commits[0] + (sql == "COMMIT")))
    agent = Agent(
        model,
        ToolRegistry([noop]),
        checkpoint=store.open("s"),
        config=AgentConfig(max_iterations=50),
        context=build_context(context) if context is not None else None,
    )
    with contextlib.suppress(KeyboardInterrupt):  # the simulated kill
        asyncio.run(agent.arun("step by step"))
    return commits[0], store


def test_a_turn_without_compaction_saves_no_unchanged_history(tmp_path: Path) -> None:
    """The save after the context step writes only what that step changed: a turn that did not
    compact commits the reply with the call's start, and the results with the call's finish
    (2), not a save of the same history with the iteration counted, nor the call's start or
    the last call's finish apart from the saves that record them."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    few, store = _commits(tmp_path / "a", Steps(2))
    store.close()
    more, store = _commits(tmp_path / "b", Steps(12))
    store.close()
    assert (more - few) / 10 == 2, (few, more)


def test_a_compacted_history_is_saved_before_the_next_request(tmp_path: Path) -> None:
    """A kill during the request after a compaction finds the compacted history saved (not the
    one before it), so the resumed run does not compact the same rounds again."""
    window = ContextConfig("sliding-window", window=120, ratio=0.5, keep_recent=1)
    _, store = _commits(tmp_path, Steps(40, stop_at=8), window)
    saved = store.open("s").load()
    store.close()
    assert saved is not None
    # 8 requests made: the task, then 7 turns of a call and its result (15 messages) if
    # nothing was dropped; the sliding window dropped rounds before the eighth request.
    assert len(saved.messages) < 15
    validate_messages(saved.messages)  # raises on a broken history


class _AnswerNow(NoGuide):
    """A guide that asks for the answer from the third turn on."""

    def next_turn(self, messages: Sequence[Message]) -> Turn | None:
        return Turn("Answer now.", final_only=True) if len(messages) >= 5 else None


def test_a_prompt_added_to_the_results_is_saved_before_the_request(tmp_path: Path) -> None:
    """The answer rule adds its prompt to the last tool results right before a request: a kill
    during that request must find the prompt saved (the history changed since the last save),
    not the results without it."""
    store = SessionStore(tmp_path / "runs.sessions.db")
    agent = Agent(
        Steps(40, stop_at=3),
        ToolRegistry([noop]),
        checkpoint=store.open("s"),
        config=AgentConfig(max_iterations=50),
        guide=_AnswerNow(),
    )
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(agent.arun("step by step"))
    saved = store.open("s").load()
    store.close()
    assert saved is not None
    last = saved.messages[-1]
    assert last.tool_results and last.text.endswith("Answer now."), last


def test_the_last_finish_is_recorded_when_the_turn_stops_before_its_results_are_saved(
    tmp_path: Path, monkeypatch: Any
) -> None:
    """The last call to finish is recorded by the save of the results message; a stop that
    falls between its finish and that save (a Ctrl-C, here a cancellation as the calls' gather
    returns) records it on the way out, so the resumed run uses its result and does not call
    it again, or report its outcome as unknown."""
    real_gather = asyncio.gather
    ran: list[int] = []

    @function_tool
    def counted(i: int) -> str:
        """Count a run.

        Args:
            i: a counter
        """
        ran.append(i)
        return f"ran {i}"

    async def gather_then_stopped(*aws: Any, **kwargs: Any) -> Any:
        await real_gather(*aws, **kwargs)
        raise asyncio.CancelledError  # after every call finished, before the results are saved

    class TwoCalls(Steps):
        async def complete(self, request: ModelRequest) -> ModelResponse:
            self.requests += 1
            if self.requests > 1:
                return ModelResponse(Message.assistant("done"), "end_turn", Usage(1, 1))
            uses = (ToolUseBlock("c1", "counted", {"i": 1}), ToolUseBlock("c2", "counted", {"i": 2}))
            return ModelResponse(Message("assistant", uses), "tool_use", Usage(1, 1))

    store = SessionStore(tmp_path / "runs.sessions.db")
    agent = Agent(TwoCalls(1), ToolRegistry([counted]), checkpoint=store.open("s"))
    monkeypatch.setattr(asyncio, "gather", gather_then_stopped)
    with contextlib.suppress(asyncio.CancelledError):
        asyncio.run(agent.arun("two calls"))
    monkeypatch.setattr(asyncio, "gather", real_gather)
    saved = store.open("s").load()
    assert saved is not None
    assert set(saved.turn.finished) == {"c1", "c2"} and not saved.turn.started - set(saved.turn.finished)
    resumed = Agent(TwoCalls(1), ToolRegistry([counted]), checkpoint=store.open("s"))
    resumed.model.requests = 1  # type: ignore[attr-defined]  # the script goes on with the answer
    result = asyncio.run(resumed.arun(None, history=saved.messages, state=saved.state, turn=saved.turn))
    store.close()
    assert result.stop == "end_turn"
    assert sorted(ran) == [1, 2]  # each call ran once: the resumed run used both results
    assert [b.content for m in result.messages for b in m.tool_results] == ["ran 1", "ran 2"]


def test_without_the_results_saved_the_last_finish_is_not_recorded_apart(tmp_path: Path) -> None:
    """A one-call turn commits the call's start and then its results with its finish: the
    session never holds the call as finished without the results message (one transaction
    fewer a turn), and a resumed run finds the turn done."""
    store = SessionStore(tmp_path / "runs.sessions.db")
    statements: list[str] = []
    store._db.set_trace_callback(statements.append)
    agent = Agent(Steps(1), ToolRegistry([noop]), checkpoint=store.open("s"))
    asyncio.run(agent.arun("one call"))
    calls = [s for s in statements if "session_calls" in s]
    store.close()
    assert sum("INSERT" in s for s in calls) == 1, calls  # the start only
    assert any(s.startswith("DELETE FROM session_calls") for s in calls), calls

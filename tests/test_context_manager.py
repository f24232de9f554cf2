"""ContextManager: the trigger in prepare, the pipeline, the circuit breaker, reactive
recovery through the real Agent, per-turn offload and the builder's options."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from tinyharness.agent import Agent
from tinyharness.context.config import ContextConfig
from tinyharness.context.manager import ContextManager, build_context
from tinyharness.errors import ConfigError, ContextLengthExceeded
from tinyharness.events import EventBus, ListSink
from tinyharness.messages import Message, ToolResultBlock, ToolUseBlock
from tinyharness.models.base import ModelRequest, ModelResponse, Usage
from tinyharness.models.scripted import ScriptedModel
from tinyharness.tools.builtin import builtin_tools

TASK = Message.user("Read every module and note what it does.")


def history(rounds: int, size: int = 2000) -> list[Message]:
    messages = [TASK]
    for i in range(rounds):
        messages.append(Message("assistant", (ToolUseBlock(f"c{i}", "read_file", {"path": f"m{i}.py"}),)))
        messages.append(Message("user", (ToolResultBlock(f"c{i}", f"code {i} " * (size // 7)),)))
    return messages


class Caller:
    """A call_model stand-in: answers compact requests, or fails them."""

    def __init__(self, fail: bool = False) -> None:
        self.fail = fail
        self.requests: list[ModelRequest] = []

    async def __call__(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        if self.fail:
            raise ContextLengthExceeded("still too long")
        return ModelResponse(Message.assistant("summary of the work"), "end_turn", Usage(10, 5))


def manager(strategy: str, sink: ListSink, **kw: Any) -> ContextManager:
    options: dict[str, Any] = {"window": 4000, "ratio": 0.7, "keep_recent": 2}
    options.update(kw)
    return build_context(ContextConfig(strategy, **options), events=EventBus([sink]))


def test_prepare_compacts_only_over_the_trigger() -> None:
    sink = ListSink()
    context = manager("summarize", sink)
    small = history(2, 200)
    assert asyncio.run(context.prepare("sys", small, Caller())) is small
    big = history(12)
    after = asyncio.run(context.prepare("sys", big, Caller()))
    (event,) = sink.of_type("compaction")
    assert event["strategy"] == "summarize" and event["reason"] == "threshold"
    assert event["tokens_before"] >= 2800 > event["tokens_after"]
    assert event["messages_before"] == 25 and event["messages_after"] == len(after)
    assert context.tokens == event["tokens_after"] == context.accountant.estimate(after)


def test_circuit_breaker_falls_back_and_retries_later() -> None:
    sink = ListSink()
    context = manager("summarize", sink)
    caller = Caller(fail=True)
    for _ in range(3):
        after = asyncio.run(context.prepare("sys", history(12), caller))
        context._calls_since_compaction = 5  # agent calls happened in between
        assert context.accountant.window_estimate < context.trigger.threshold
    strategies = [e["strategy"] for e in sink.of_type("compaction")]
    assert strategies == ["sliding-window"] * 3  # never stuck, never silent
    reasons = [e["reason"] for e in sink.of_type("compaction_fallback")]
    assert "skipped for the next 5 compactions" in reasons[1]
    assert len(reasons) == 2  # the third compaction did not even try the tripped summarizer
    assert after[0].content[0] == TASK.content[0]
    for _ in range(5):
        context.breaker.tick()
    assert context.breaker.allows("summarize")  # half-open: tried again after the cooldown


def test_storm_guard_skips_the_model_right_after_a_compaction() -> None:
    sink = ListSink()
    context = manager("summarize", sink)
    caller = Caller()
    asyncio.run(context.prepare("sys", history(12), caller))
    asyncio.run(context.prepare("sys", history(12), caller))  # again with no agent call between
    assert len(caller.requests) == 1
    assert "storm" in sink.of_type("compaction_fallback")[0]["reason"]


def test_offload_runs_each_turn_on_fresh_output(tmp_path: Path) -> None:
    sink = ListSink()
    context = manager("offload,summarize", sink, workspace=tmp_path, window=32000)
    messages = history(1)
    huge = Message("user", (ToolResultBlock("c0", "row, " * 20000),))
    messages[-1] = huge
    context.record_appended(messages)
    after = asyncio.run(context.prepare("sys", messages, Caller()))
    assert after[-1] is not huge and len(after[-1].tool_results[0].content) < 10000
    assert sink.of_type("offload") and not sink.of_type("compaction")
    saved = list((tmp_path / ".tinyharness" / "runs").glob("*/offload/*.txt"))
    assert len(saved) == 1
    assert context.tokens == context.accountant.estimate(after)


def test_none_counts_but_never_compacts() -> None:
    sink = ListSink()
    context = manager("none", sink)
    big = history(30)
    assert asyncio.run(context.prepare("sys", big, Caller())) is big
    assert asyncio.run(context.recover("sys", big, Caller())) is big
    assert not sink.of_type("compaction")


def test_builder_options() -> None:
    context = build_context(model=ScriptedModel({"responses": []}, context_window=8192))
    assert context.trigger.window == 8192 and context.trigger.threshold == int(8192 * 0.7)
    assert context.strategy == "offload,clear-tool-results,summarize,sliding-window"
    assert build_context(ContextConfig(window=30000, buffer=6000)).trigger.threshold == 24000
    assert build_context(ContextConfig(accounting="cumulative")).accountant.mode == "cumulative"
    assert build_context(ContextConfig(counter="chars4")).accountant.calibration is None
    for bad in (
        {"strategy": "compress"},
        {"strategy": "summarize,summarize"},
        {"accounting": "total"},
        {"counter": "bytes"},
        {"ratio": 1.5},
        {"window": 1000, "buffer": 2000},
        {"keep_recent": -1},
    ):
        with pytest.raises(ConfigError):
            build_context(ContextConfig(**bad))  # type: ignore[arg-type]


class OverflowOnce:
    """Refuses the first agent request that carries more than ``limit`` messages."""

    def __init__(self, script: list[dict[str, Any]], limit: int) -> None:
        self.inner = ScriptedModel({"responses": script})
        self.name = "overflow-once"
        self.limit = limit
        self.refused = 0

    @property
    def context_window(self) -> int | None:
        return 100_000

    async def complete(self, request: ModelRequest) -> ModelResponse:
        if request.purpose == "agent" and len(request.messages) > self.limit and not self.refused:
            self.refused += 1
            raise ContextLengthExceeded("prompt is too long: 200000 tokens > 100000 maximum")
        return await self.inner.complete(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


def test_context_length_error_compacts_and_retries_once(tmp_path: Path) -> None:
    for i in range(6):
        (tmp_path / f"m{i}.py").write_text(f"print({i})\n" * 50)
    script: list[dict[str, Any]] = []
    for i in range(6):
        call = {"type": "tool_use", "id": f"c{i}", "name": "read_file", "input": {"path": f"m{i}.py"}}
        script.append({"purpose": "agent", "stop_reason": "tool_use", "content": [call]})
    script.append(
        {"purpose": "agent", "stop_reason": "end_turn", "content": [{"type": "text", "text": "ok"}]}
    )
    script.append(
        {"purpose": "compact", "stop_reason": "end_turn", "content": [{"type": "text", "text": "S"}]}
    )
    model = OverflowOnce(script, limit=8)
    sink = ListSink()
    events = EventBus([sink])
    context = build_context(
        ContextConfig("summarize", window=100_000, keep_recent=1, workspace=tmp_path), events=events
    )
    result = Agent(model, builtin_tools(tmp_path), context=context, events=events).run("read all")
    assert result.stop == "end_turn" and model.refused == 1
    (event,) = sink.of_type("compaction")
    assert event["reason"] == "overflow"
    assert sink.of_type("context_warning")
    asyncio.run(model.aclose())  # every scripted response used


def test_the_model_is_asked_to_take_notes_once_before_a_compaction() -> None:
    """Nearing the trigger (WARN_SHARE of it), the newest tool results get a line asking the
    model to save what it needs with the note tool; once per compaction, and only if it has one."""
    from tinyharness.context.manager import WARN_SHARE

    sink = ListSink()
    context = manager("sliding-window", sink, counter="chars4")
    note_tool = next(s for s in builtin_tools(Path(".")).specs if s.name == "note")
    request = ModelRequest(
        messages=(TASK,), system="sys", tools=(note_tool,), purpose="agent", max_tokens=256
    )
    context.record_response(request, ModelResponse(Message.assistant("ok"), "end_turn", Usage(10, 5)))
    messages: list[Message] = [TASK]
    warned_at: list[int] = []
    for _ in range(60):
        messages += history(1, 300)[1:]
        messages = asyncio.run(context.prepare("sys", messages, Caller()))
        if "note tool now" in messages[-1].text:
            warned_at.append(context.compactions)
            assert context.tokens >= context.compact_at * WARN_SHARE
            assert isinstance(messages[-1].content[0], ToolResultBlock)  # joined the results
    assert context.compactions >= 2
    assert warned_at == sorted(set(warned_at)) and len(warned_at) >= 2  # once between compactions
    assert len(sink.of_type("context_warning")) == len(warned_at)

    quiet = manager("sliding-window", ListSink(), counter="chars4")  # no note tool: no warning
    messages = [TASK]
    for _ in range(60):
        messages = asyncio.run(quiet.prepare("sys", [*messages, *history(1, 300)[1:]], Caller()))
        assert "note tool" not in messages[-1].text

"""Property tests over generated histories (tool_use/tool_result pairs, parallel calls, signed
thinking blocks, CJK text): every strategy and pipeline returns a history the validator accepts,
keeps the first task message and every surviving thinking block intact, leaves no orphan tool
ids, and shrinks where it promises to."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tinyharness.context.accounting import Accountant
from tinyharness.context.config import ContextConfig
from tinyharness.context.manager import ContextManager
from tinyharness.context.pipeline import STRATEGIES
from tinyharness.context.spill import SpillFolder
from tinyharness.context.strategies import CompactionFailed, StepContext
from tinyharness.context.tokens import HeuristicCounter
from tinyharness.context.validator import check_compaction, validate_messages
from tinyharness.messages import (
    Block,
    Message,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    group_rounds,
)
from tinyharness.models.base import ModelRequest, ModelResponse, Usage

WORDS = st.sampled_from(["orders", "库存", "version", "lock", "テスト", "버전", "fix", "race", "42"])


def text(min_words: int = 1, max_words: int = 40) -> st.SearchStrategy[str]:
    return st.lists(WORDS, min_size=min_words, max_size=max_words).map(" ".join)


@st.composite
def histories(draw: Any) -> list[Message]:
    messages = [Message.user("TASK: " + draw(text(1, 10)))]
    for r in range(draw(st.integers(0, 12))):
        blocks: list[Block] = []
        if draw(st.booleans()):
            blocks.append(ThinkingBlock(draw(text()), signature=f"sig{r}"))
        if draw(st.booleans()):
            blocks.append(TextBlock(draw(text())))
        calls = draw(st.integers(0, 3))
        uses = [
            ToolUseBlock(
                f"r{r}c{i}", draw(st.sampled_from(["read_file", "grep", "note"])), {"path": f"f{i}.py"}
            )
            for i in range(calls)
        ]
        blocks.extend(uses)
        if not blocks:
            blocks.append(TextBlock("ok"))
        messages.append(Message("assistant", tuple(blocks)))
        if uses:
            results = [ToolResultBlock(u.id, draw(text(0, 400)), is_error=draw(st.booleans())) for u in uses]
            results = draw(st.permutations(results))
            messages.append(Message("user", tuple(results)))
        else:
            messages.append(Message.user(draw(text())))
    return messages


async def fake_summarizer(request: ModelRequest) -> ModelResponse:
    assert request.purpose == "compact" and request.tools == ()
    return ModelResponse(Message.assistant("Intent: fix. Pending: none."), "end_turn", Usage(10, 5))


def step_context(tmp: Path, accountant: Accountant, target: int, keep: int) -> StepContext:
    return StepContext(
        system="sys",
        call_model=fake_summarizer,
        count=accountant.estimate,
        count_text=accountant.count_text,
        keep_recent=keep,
        target=target,
        spill=SpillFolder(tmp / "offload", tmp),
        offload_cap=200,
    )


SETTINGS = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@SETTINGS
@given(history=histories(), name=st.sampled_from(sorted(STRATEGIES)), keep=st.integers(0, 5))
def test_each_strategy_keeps_the_invariants(
    tmp_path: Path, history: list[Message], name: str, keep: int
) -> None:
    validate_messages(history, signed_thinking=True)
    accountant = Accountant(HeuristicCounter())
    before = accountant.estimate(history)
    ctx = step_context(tmp_path, accountant, target=before // 3, keep=keep)
    step = STRATEGIES[name]()
    try:
        after = asyncio.run(step.apply(list(history), ctx))
    except CompactionFailed:
        assert name in ("summarize", "restart")  # nothing to summarize is the only refusal
        return
    check_compaction(history, after)
    validate_messages(after, signed_thinking=True)
    rounds_before, rounds_after = group_rounds(history[1:]), group_rounds(after[1:])
    if name in ("clear-tool-results", "offload"):
        assert accountant.estimate(after) <= before
        assert len(after) == len(history)
    if name == "sliding-window":
        assert len(rounds_after) <= max(1, keep) and len(after) <= len(history)
        if len(rounds_before) > max(1, keep):
            assert rounds_after == rounds_before[-len(rounds_after) :]  # kept rounds untouched
    if name == "restart":
        assert len(after) == 1
    if name == "summarize":
        assert rounds_after == rounds_before[-len(rounds_after) :]


@SETTINGS
@given(
    history=histories().filter(lambda h: len(h) >= 3),
    spec=st.sampled_from(
        ["default", "clear-tool-results,sliding-window", "offload,summarize", "restart", "summarize", "none"]
    ),
)
def test_pipelines_through_the_manager(tmp_path: Path, history: list[Message], spec: str) -> None:
    accountant = Accountant(HeuristicCounter())
    before = accountant.estimate(history)
    config = ContextConfig(
        spec, window=max(50, before), ratio=0.5, keep_recent=2, state_dir=tmp_path, workspace=tmp_path
    )
    manager = ContextManager(config)
    after = asyncio.run(manager.recover("sys", list(history), fake_summarizer))
    if spec == "none":
        assert after == history
        return
    check_compaction(history, after)
    assert manager.compactions == 1
    # A forced compaction always brings the window under the trigger (the last resorts promise it
    # whenever the newest round alone fits).
    rounds = group_rounds(history[1:])
    newest_alone = accountant.estimate([history[0], *rounds[-1]])
    if len(rounds) > 1 and newest_alone < manager.trigger.threshold // 2:
        assert manager.accountant.window_estimate < manager.trigger.threshold
        assert manager.accountant.window_estimate < before

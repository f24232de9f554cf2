"""The strategies one by one: placeholders, offload files, the summarizer request and its
retries, restart, and the notes/files restore after compaction."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tinyharness.context.accounting import Accountant
from tinyharness.context.restore import files_block, workspace_reader
from tinyharness.context.spill import SpillFolder
from tinyharness.context.strategies import (
    CLEARED_PREFIX,
    ClearToolResults,
    CompactionFailed,
    Offload,
    SlidingWindow,
    StepContext,
)
from tinyharness.context.summarize import SUMMARY_PROMPT, Restart, Summarize
from tinyharness.context.tokens import HeuristicCounter
from tinyharness.errors import ContextLengthExceeded, ModelError
from tinyharness.history import recent_file_paths
from tinyharness.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock
from tinyharness.models.base import ModelRequest, ModelResponse, Usage

TASK = Message.user("Fix the race in orders.py. Constraint: never change the public API.")


def history(rounds: int, size: int = 2000) -> list[Message]:
    messages = [TASK]
    for i in range(rounds):
        messages.append(Message("assistant", (ToolUseBlock(f"c{i}", "read_file", {"path": f"src/m{i}.py"}),)))
        messages.append(Message("user", (ToolResultBlock(f"c{i}", f"line {i}\n" * (size // 8)),)))
    return messages


class Summarizer:
    def __init__(self, refusals: int = 0, error: Exception | None = None) -> None:
        self.requests: list[ModelRequest] = []
        self.refusals = refusals
        self.error = error

    async def __call__(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        if self.error is not None:
            raise self.error
        if self.refusals:
            self.refusals -= 1
            raise ContextLengthExceeded("prompt is too long")
        return ModelResponse(
            Message.assistant("SUMMARY: decided optimistic locking"), "end_turn", Usage(50, 9)
        )


def context(tmp: Path | None = None, summarizer: Summarizer | None = None, **kw: object) -> StepContext:
    accountant = Accountant(HeuristicCounter())
    fields: dict[str, object] = {
        "system": "sys",
        "call_model": summarizer or Summarizer(),
        "count": accountant.estimate,
        "count_text": accountant.count_text,
        "keep_recent": 2,
        "target": 100_000,
        "spill": SpillFolder(tmp / "offload", tmp) if tmp is not None else None,
        "offload_cap": 300,
    }
    fields.update(kw)
    return StepContext(**fields)  # type: ignore[arg-type]


def run(step: object, messages: list[Message], ctx: StepContext) -> list[Message]:
    return asyncio.run(step.apply(messages, ctx))  # type: ignore[attr-defined]


def test_clear_tool_results_keeps_call_and_path() -> None:
    before = history(6)
    after = run(ClearToolResults(), before, context())
    assert after[-4:] == before[-4:]  # the last 2 rounds are verbatim
    cleared = after[2].tool_results[0].content
    assert cleared.startswith(CLEARED_PREFIX)
    assert 'read_file(path="src/m0.py")' in cleared
    assert run(ClearToolResults(), after, context()) == after  # idempotent


def test_sliding_window_drops_oldest_rounds_and_says_so() -> None:
    before = history(6)
    after = run(SlidingWindow(), before, context())
    assert after[1:] == before[-4:]
    assert after[0].content[0] == TASK.content[0]
    assert "8 earlier messages were dropped" in after[0].content[-1].text  # type: ignore[union-attr]
    again = run(SlidingWindow(), [*after, *history(3)[1:]], context(keep_recent=1))
    assert "16 earlier messages were dropped" in again[0].content[-1].text  # type: ignore[union-attr]


def test_offload_saves_the_full_output_and_points_to_it(tmp_path: Path) -> None:
    big = "\n".join(f"row {i}: 库存 {i * 7}" for i in range(3000))
    messages = [TASK, history(1)[1], Message("user", (ToolResultBlock("c0", big),))]
    after = run(Offload(), messages, context(tmp_path))
    preview = after[-1].tool_results[0].content
    assert len(preview) < len(big) // 5
    assert preview.startswith("row 0: 库存 0")
    saved = list((tmp_path / "offload").glob("*.txt"))
    assert len(saved) == 1 and saved[0].read_text(encoding="utf-8") == big
    relative = saved[0].relative_to(tmp_path).as_posix()
    assert f"read_file(path='{relative}'" in preview  # the agent can read it back
    assert run(Offload(), after, context(tmp_path)) == after  # never offloaded twice


def test_offload_writes_only_through_the_writer_it_is_given() -> None:
    """The step stays pure: what it cuts goes to the context's writer, and the path the writer
    returns goes into the preview."""
    kept: list[tuple[str, str]] = []

    def writer(call_id: str, text: str) -> str | None:
        kept.append((call_id, text))
        return "spill/c0.txt"

    big = "word " * 5000
    messages = [TASK, history(1)[1], Message("user", (ToolResultBlock("c0", big),))]
    after = run(Offload(), messages, context(None, spill=writer))
    assert kept == [("c0", big)]
    assert "read_file(path='spill/c0.txt'" in after[-1].tool_results[0].content


def test_offload_without_a_state_folder_truncates() -> None:
    messages = [TASK, history(1)[1], Message("user", (ToolResultBlock("c0", "word " * 5000),))]
    after = run(Offload(), messages, context(None))
    assert "the rest was cut" in after[-1].tool_results[0].content


def test_summarize_keeps_head_and_recent_and_asks_without_tools() -> None:
    summarizer = Summarizer()
    before = history(8)
    after = run(Summarize(), before, context(summarizer=summarizer, instructions="Keep every SQL statement."))
    assert after[0].content[0] == TASK.content[0]
    assert "SUMMARY: decided optimistic locking" in after[0].content[-1].text  # type: ignore[union-attr]
    assert after[1:] == before[-4:]
    (request,) = summarizer.requests
    assert request.purpose == "compact" and request.tools == ()
    prompt = request.messages[0].text
    assert SUMMARY_PROMPT in prompt and "Keep every SQL statement." in prompt
    assert "never change the public API" in prompt  # the task goes to the summarizer
    assert "src/m0.py" in prompt and "src/m5.py" in prompt and "src/m6.py" not in prompt


def test_summarize_twice_folds_the_old_summary_in() -> None:
    summarizer = Summarizer()
    first = run(Summarize(), history(8), context(summarizer=summarizer))
    second = run(Summarize(), [*first, *history(6)[1:]], context(summarizer=summarizer))
    summaries = [b for b in second[0].content if isinstance(b, TextBlock) and "SUMMARY" in b.text]
    assert len(summaries) == 1  # replaced, not piled up
    assert "SUMMARY: decided optimistic locking" in summarizer.requests[1].messages[0].text


def test_summarizer_too_long_drops_oldest_rounds_and_retries() -> None:
    summarizer = Summarizer(refusals=2)
    after = run(Summarize(), history(12), context(summarizer=summarizer))
    assert len(summarizer.requests) == 3
    sizes = [len(r.messages[0].text) for r in summarizer.requests]
    assert sizes[0] > sizes[1] > sizes[2]
    assert "older rounds left out" in summarizer.requests[2].messages[0].text
    assert "SUMMARY" in after[0].content[-1].text  # type: ignore[union-attr]


def test_summarizer_sized_to_its_window_up_front() -> None:
    summarizer = Summarizer()
    run(
        Summarize(),
        history(30, 4000),
        context(summarizer=summarizer, model_window=4000, summary_max_tokens=500),
    )
    assert "older rounds left out" in summarizer.requests[0].messages[0].text


def test_summarizer_failures_become_compaction_failed() -> None:
    with pytest.raises(CompactionFailed):
        run(Summarize(), history(8), context(summarizer=Summarizer(refusals=99)))
    with pytest.raises(CompactionFailed):
        run(Summarize(), history(8), context(summarizer=Summarizer(error=ModelError("503"))))
    with pytest.raises(CompactionFailed):
        run(Summarize(), history(2), context())  # nothing in the middle


def test_restart_is_one_message_with_task_and_handoff() -> None:
    after = run(Restart(), history(5), context())
    assert len(after) == 1 and after[0].role == "user"
    assert after[0].content[0] == TASK.content[0]
    assert "Handoff summary" in after[0].content[-1].text  # type: ignore[union-attr]


def test_restore_rereads_recent_files_within_budget(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    for i in range(4):
        (tmp_path / "src" / f"m{i}.py").write_text(f"# module {i}\n" + "x = 1\n" * 2000)
    (tmp_path.parent / "secret.txt").write_text("outside")
    paths = recent_file_paths(history(4), limit=3)
    assert paths == ["src/m3.py", "src/m2.py", "src/m1.py"]
    reader = workspace_reader(tmp_path)
    assert reader("../secret.txt") is None and reader("missing.py") is None
    count = HeuristicCounter().count_text
    block, restored = files_block(paths, reader, count, budget=1500, per_file=1000)
    assert block is not None and restored[0] == "src/m3.py"
    assert count(block.text) <= 1700
    assert "# module 3" in block.text and "cut; read_file for the rest" in block.text

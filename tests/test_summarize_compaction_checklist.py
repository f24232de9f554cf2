"""Seed 000's milestone-4 checklist on the scripted model through the real Agent.

chars/4 counter, CONTEXT_LIMIT 30000, COMPACT_BUFFER 6000, KEEP_RECENT 4, summarize strategy,
a task that reads many files and notes each one:
- a long task no longer overflows: ``[compact]`` appears;
- the first task message and the last 4 messages are kept, the middle becomes a summary;
- the buffer triggers before the window is full;
- notes.md holds what the agent noted.
"""

from __future__ import annotations

import io
import itertools
from pathlib import Path
from typing import Any

from tinyharness.agent import Agent, AgentConfig
from tinyharness.context.config import ContextConfig
from tinyharness.context.manager import build_context
from tinyharness.context.tokens import Chars4Counter
from tinyharness.events import EventBus, ListSink
from tinyharness.messages import TextBlock
from tinyharness.models.scripted import ScriptedModel
from tinyharness.progress import ProgressPrinter
from tinyharness.tools.builtin import builtin_tools
from tinyharness.tools.notes import NotesFile

TASK = "逐个读 src/ 下所有 .py 文件，总结每个的职责，写进 notes.md"
FILES = 24


def source_file(i: int) -> str:
    lines = [f'"""Module {i}: handles part {i} of the order pipeline."""', ""]
    for j in range(90):
        lines.append(f"def step_{i}_{j}(order, ledger):  # 校验订单 {j}")
        lines.append(f"    return ledger.apply(order, rule={j}, weight={i * j})")
    return "\n".join(lines) + "\n"


def agent_turn(call_id: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {
        "purpose": "agent",
        "stop_reason": "tool_use",
        "content": [{"type": "tool_use", "id": call_id, "name": name, "input": args}],
    }


def script() -> list[dict[str, Any]]:
    responses = []
    for i in range(FILES):
        responses.append(agent_turn(f"r{i}", "read_file", {"path": f"src/m{i:02d}.py"}))
        responses.append(agent_turn(f"n{i}", "note", {"text": f"m{i:02d}.py 负责订单流水线第 {i} 段"}))
    responses.append(
        {"purpose": "agent", "stop_reason": "end_turn", "content": [{"type": "text", "text": "全部完成"}]}
    )
    for k in range(10):
        summary = f"摘要 {k}: 已读并记下前面的文件，继续读下一个。"
        responses.append(
            {"purpose": "compact", "stop_reason": "end_turn", "content": [{"type": "text", "text": summary}]}
        )
    return responses


def test_seed000_checklist(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    for i in range(FILES):
        (tmp_path / "src" / f"m{i:02d}.py").write_text(source_file(i), encoding="utf-8")
    notes_path = tmp_path / "notes.md"
    sink = ListSink()
    screen = io.StringIO()
    events = EventBus([sink, ProgressPrinter(screen, live=False)])
    context = build_context(
        ContextConfig(
            "summarize",
            window=30000,
            buffer=6000,
            keep_recent=4,
            counter="chars4",
            notes_path=notes_path,
            workspace=tmp_path,
        ),
        events=events,
    )
    model = ScriptedModel({"responses": script()})
    tools = builtin_tools(tmp_path, notes=NotesFile(notes_path))
    agent = Agent(model, tools, context=context, events=events, config=AgentConfig(max_iterations=200))
    result = agent.run(TASK)

    assert result.stop == "end_turn", result.detail
    compactions = sink.of_type("compaction")
    assert compactions, "a long task must compact"
    assert "[compact]" in screen.getvalue()

    agent_requests = [r for r in model.requests if r.purpose == "agent"]
    chars4 = Chars4Counter()
    for request in agent_requests:
        # The first task message survives every compaction, first and unchanged.
        assert request.messages[0].content[0] == TextBlock(TASK)
        # Seed 000 counts messages with chars/4: no request comes near the 30000 window.
        assert sum(chars4.count_message(m) for m in request.messages) < 30000

    # The buffer triggers before the window is full: at 24000 = 30000 - 6000.
    for event in compactions:
        assert 24000 <= event["tokens_before"] < 30000
        assert event["tokens_after"] < 24000
        assert event["strategy"] == "summarize"

    # Across each compaction the last 4 messages are kept verbatim.
    checked = 0
    for before, after in itertools.pairwise(agent_requests):
        if after.messages[0] is before.messages[0] or len(after.messages) > len(before.messages):
            continue  # no compaction between these two requests
        history = [*before.messages, after.messages[-2], after.messages[-1]]
        assert list(after.messages[-4:]) == history[-4:]
        assert after.messages[-2].tool_uses  # the newest round is whole: call and result
        checked += 1
    assert checked == len(compactions)

    summaries = [r for r in model.requests if r.purpose == "compact"]
    assert len(summaries) == len(compactions)
    assert all(r.tools == () for r in summaries)

    notes = notes_path.read_text(encoding="utf-8")
    for i in range(FILES):
        assert f"m{i:02d}.py 负责订单流水线第 {i} 段" in notes

"""Lesson 6's demo log, reproduced on the scripted model through the real Agent.

Window 2000, ratio 0.7 (trigger at 1400), cumulative accounting, restart compaction. The log:
call 1 -> 400, call 2 -> 1050, call 3 -> 1850, call 4 is the compaction and the counter restarts
at 0, call 5 -> 280, call 6 -> 490 and end_turn; 6 calls, 1 compaction, NOTES.md read back into
the restart message. Exercise 2 ("compaction storm") is the same run with more rounds after the
compaction: the counter reset means no second compaction.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tinyharness.agent import Agent
from tinyharness.context.config import ContextConfig
from tinyharness.context.manager import build_context
from tinyharness.events import EventBus, ListSink
from tinyharness.messages import TextBlock
from tinyharness.models.scripted import ScriptedModel
from tinyharness.tools.base import ToolRegistry
from tinyharness.tools.files import file_tools
from tinyharness.tools.notes import NotesFile
from tinyharness.tools.permissions import Permissions
from tinyharness.tools.workspace import Workspace

DECISION = "## 已定决策\n- 修复方案: 数据库乐观锁 (orders 表加 version 字段)\n"
FINAL_NOTES = DECISION + "## 未解决\n- (无 -- updateStatus 竞态已随乐观锁合入解决)\n"
FINAL = "已给 orders 表加 version 字段并接入乐观锁, 竞态 bug 修复完成。"
TASK = "修复订单服务里 updateStatus 的并发竞态 bug"


def tool_use(call_id: str, name: str, args: dict[str, Any], usage: tuple[int, int]) -> dict[str, Any]:
    return {
        "stop_reason": "tool_use",
        "content": [{"type": "tool_use", "id": call_id, "name": name, "input": args}],
        "usage": {"input_tokens": usage[0], "output_tokens": usage[1]},
    }


def end_turn(text: str, usage: tuple[int, int]) -> dict[str, Any]:
    return {
        "stop_reason": "end_turn",
        "content": [{"type": "text", "text": text}],
        "usage": {"input_tokens": usage[0], "output_tokens": usage[1]},
    }


SUMMARY = "意图: 修复 updateStatus 竞态。已读 orders.py, 决定用乐观锁, 已在 orders.py 加 version 字段。"


def demo_script(extra_rounds: int = 0) -> list[dict[str, Any]]:
    script = [
        tool_use("c1", "read_file", {"path": "orders.py"}, (360, 40)),  # 400
        tool_use("c2", "update_notes", {"content": DECISION}, (590, 60)),  # 1050
        tool_use(
            "c3",
            "edit_file",
            {"path": "orders.py", "old": "status TEXT", "new": "status TEXT, version INT"},
            (730, 70),
        ),  # 1850 -> over 1400: compaction before the next agent call
        end_turn(SUMMARY, (900, 120)),  # call 4: the compaction's own reply
        tool_use("c5", "update_notes", {"content": FINAL_NOTES}, (230, 50)),  # 280
    ]
    for i in range(extra_rounds):
        script.append(tool_use(f"x{i}", "read_file", {"path": "orders.py", "end_line": i + 1}, (80, 20)))
    script.append(end_turn(FINAL, (170, 40)))  # 490 without extra rounds
    return script


def run_demo(tmp_path: Path, extra_rounds: int = 0) -> tuple[Any, ScriptedModel, ListSink, Path]:
    (tmp_path / "orders.py").write_text("CREATE TABLE orders (id INT, status TEXT);\n")
    notes_path = tmp_path / "NOTES.md"
    space = Workspace(tmp_path)
    permissions = Permissions(allow_write=True).with_workspace(space)
    registry = ToolRegistry(permissions=permissions)
    for tool in file_tools(space):
        if tool.name in ("read_file", "edit_file"):
            registry.add(tool)
    for tool in NotesFile(notes_path).tools():
        if tool.name == "update_notes":
            registry.add(tool)
    sink = ListSink()
    events = EventBus([sink])
    context = build_context(
        ContextConfig(
            "restart",
            window=2000,
            ratio=0.7,
            accounting="cumulative",
            notes_path=notes_path,
            workspace=tmp_path,
        ),
        events=events,
    )
    model = ScriptedModel({"responses": demo_script(extra_rounds)})
    agent = Agent(model, registry, context=context, events=events)
    result = agent.run(TASK)
    return result, model, sink, notes_path


def test_demo_log_reproduced(tmp_path: Path) -> None:
    result, model, sink, notes_path = run_demo(tmp_path)
    calls = sink.of_type("model_call")
    assert [c["call"] for c in calls] == [1, 2, 3, 4, 5, 6]
    assert [c["purpose"] for c in calls] == ["agent", "agent", "agent", "compact", "agent", "agent"]
    agent_tokens = [c["tokens"] for c in calls if c["purpose"] == "agent"]
    assert agent_tokens == [400, 1050, 1850, 280, 490]
    assert [c["stop_reason"] for c in calls][-1] == "end_turn"

    (compaction,) = sink.of_type("compaction")
    assert compaction["n"] == 1
    assert compaction["strategy"] == "restart"
    assert compaction["tokens_before"] == 1850 and compaction["tokens_after"] == 0
    assert compaction["messages_after"] == 1
    assert compaction["seq"] > calls[3]["seq"]  # the compaction completes after call 4
    assert compaction["seq"] < calls[4]["seq"]

    assert result.stop == "end_turn" and result.final == FINAL
    assert result.model_calls == 6 and result.compactions == 1
    assert notes_path.read_text(encoding="utf-8") == FINAL_NOTES
    assert model.unused() == 0  # every scripted response consumed, none left over


def test_restart_message_holds_summary_task_and_notes(tmp_path: Path) -> None:
    _result, model, _sink, _notes = run_demo(tmp_path)
    summarizer = model.requests[3]
    assert summarizer.purpose == "compact" and summarizer.tools == ()
    after = model.requests[4].messages
    restart = after[0]
    text = "\n".join(b.text for b in restart.content if isinstance(b, TextBlock))
    assert restart.content[0] == TextBlock(TASK)  # the task opens the new window, unchanged
    assert SUMMARY in text
    assert "乐观锁 (orders 表加 version 字段)" in text  # NOTES.md as written before compaction
    assert "orders.py" in text  # the file being edited was re-read
    # The restart message plus the round after it: the old messages are gone.
    assert len(after) == 1


def test_no_compaction_storm(tmp_path: Path) -> None:
    """Exercise 2: after the counter reset, ten more small rounds do not compact again."""
    result, _model, sink, _notes = run_demo(tmp_path, extra_rounds=10)
    assert result.stop == "end_turn"
    assert len(sink.of_type("compaction")) == 1
    agent_tokens = [c["tokens"] for c in sink.of_type("model_call") if c["purpose"] == "agent"]
    # Without the reset the counter would start at 1850 + 280 and compact before every call.
    assert agent_tokens[3:] == [280 + 100 * i for i in range(11)] + [1280 + 210]

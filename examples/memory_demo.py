"""A three-round demo of tinyharness memory across sessions, with a scripted model.

Three rounds: "帮我计算 (12 + 8) * 3 的结果" (calculator), "现在几点" (current time), and in a *new
session*, "我刚刚问过什么问题" — answered from long-term memory. Each round does what the agent loop
does around a turn: ``recall_block`` before it (the block goes after the stable prompt prefix),
the turn itself, ``extract_and_store`` after it with the loop's ``call_model``.

    python examples/memory_demo.py [STORE]      # default: a temporary SQLite file
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tinyharness.memory.base import MemoryStore, Scope
from tinyharness.memory.factory import open_store
from tinyharness.memory.manager import MemoryManager
from tinyharness.messages import Message, ToolResultBlock, ToolUseBlock
from tinyharness.models.base import ModelRequest
from tinyharness.models.scripted import ScriptedModel

USER = "demo-user"
AGENT = "agent_harness_demo"
QUESTIONS = ("帮我计算 (12 + 8) * 3 的结果", "现在几点", "我刚刚问过什么问题")


def _text(text: str, purpose: str) -> dict[str, Any]:
    return {"stop_reason": "end_turn", "content": [{"type": "text", "text": text}], "purpose": purpose}


def _memory(payload: str) -> dict[str, Any]:
    return _text(payload, "memory")


# What a model would answer: two agent turns and the memory requests of the first session
# (extraction after each round; after round two a consolidation request, because round one's
# memory is similar), then the agent turn of the new session.
FIRST_SESSION_SCRIPT = {
    "responses": [
        _text("(12 + 8) * 3 = 60", "agent"),
        _memory('{"facts": [{"text": "用户问过：帮我计算 (12 + 8) * 3，结果是 60", "kind": "fact"}]}'),
        _text("现在是 2025-01-01 09:30:00", "agent"),
        _memory('{"facts": [{"text": "用户问过：现在几点（当时是 2025-01-01 09:30）", "kind": "fact"}]}'),
        _memory('{"operations": [{"op": "add", "fact": 1}]}'),
    ]
}
SECOND_SESSION_SCRIPT = {
    "responses": [
        _text("你之前问过两个问题：计算 (12 + 8) * 3（结果是 60），以及现在几点。", "agent"),
        _memory('{"facts": []}'),
    ]
}


async def demo_round(
    manager: MemoryManager,
    model: ScriptedModel,
    scope: Scope,
    user_text: str,
    tool: tuple[str, dict[str, Any], str] | None = None,
) -> tuple[str, str]:
    """One round; returns (the recalled block, the answer)."""
    block = await manager.recall_block(user_text, scope)
    turn = [Message.user(user_text)]
    if tool is not None:
        name, args, result = tool
        turn.append(Message("assistant", (ToolUseBlock("call-1", name, args),)))
        turn.append(Message("user", (ToolResultBlock("call-1", result),)))
    prefix = [Message.user(block)] if block else []
    response = await model.complete(ModelRequest(messages=(*prefix, *turn), system="你是一个有用的 Agent。"))
    turn.append(response.message)
    await manager.extract_and_store(turn, scope, model.complete)
    return block, response.message.text


async def run_demo(open_memory: Callable[[], MemoryStore]) -> list[tuple[str, str]]:
    """The three rounds; the third in a new session with a freshly opened store (as a later
    process would open it by URL)."""
    rounds: list[tuple[str, str]] = []
    store = open_memory()
    try:
        model = ScriptedModel(FIRST_SESSION_SCRIPT)
        manager = MemoryManager(store)
        first = Scope(USER, AGENT, "session-1")
        rounds.append(
            await demo_round(
                manager, model, first, QUESTIONS[0], ("calculator", {"expression": "(12 + 8) * 3"}, "60")
            )
        )
        rounds.append(
            await demo_round(manager, model, first, QUESTIONS[1], ("current_time", {}, "2025-01-01 09:30:00"))
        )
        await model.aclose()
    finally:
        store.close()
    store = open_memory()
    try:
        model = ScriptedModel(SECOND_SESSION_SCRIPT)
        rounds.append(
            await demo_round(MemoryManager(store), model, Scope(USER, AGENT, "session-2"), QUESTIONS[2])
        )
        await model.aclose()
    finally:
        store.close()
    return rounds


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    with tempfile.TemporaryDirectory() as tmp:
        url = args[0] if args else str(Path(tmp) / "memory.db")
        for number, (question, (block, answer)) in enumerate(
            zip(QUESTIONS, asyncio.run(run_demo(lambda: open_store(url))), strict=True), 1
        ):
            if block:
                print(block)
            print(f"结果{number}: {question} -> {answer}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

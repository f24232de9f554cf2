"""The library's tool and agent conveniences: async tools are awaited, dataclass and Pydantic
parameters get real schemas and arrive as those types, Agent takes a plain list of functions,
output_type gives a validated typed answer (one retry), and run_stream yields events."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any

import pytest
from pydantic import BaseModel

from tinyharness.agent import Agent
from tinyharness.events import EventBus, ListSink
from tinyharness.messages import ToolResultBlock
from tinyharness.models.scripted import ScriptedModel
from tinyharness.tools.base import ToolRegistry, function_tool


def call(name: str, args: dict[str, Any], call_id: str = "c1") -> dict[str, Any]:
    return {
        "stop_reason": "tool_use",
        "content": [{"type": "tool_use", "id": call_id, "name": name, "input": args}],
        "usage": {},
    }


def answer(text: str) -> dict[str, Any]:
    return {"stop_reason": "end_turn", "content": [{"type": "text", "text": text}], "usage": {}}


def results(agent: Agent) -> list[ToolResultBlock]:
    return [b for m in agent.messages for b in m.tool_results]


@dataclass
class Point:
    x: int
    y: int = 0


class Box(BaseModel):
    label: str
    corners: list[Point]


def test_async_tools_are_awaited_not_stringified() -> None:
    async def fetch(key: str) -> str:
        """Look a key up."""
        await asyncio.sleep(0)
        return f"value of {key}"

    model = ScriptedModel({"responses": [call("fetch", {"key": "k"}), answer("done")]})
    agent = Agent(model, [fetch])
    result = agent.run("go")
    assert result.ok
    assert results(agent)[0].content == "value of k"


def test_an_async_tool_that_hangs_is_cancelled_by_the_timeout() -> None:
    cancelled = []

    async def hang() -> str:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.append(True)
            raise
        return "never"

    registry = ToolRegistry([function_tool(hang)], timeout=0.05)
    result = asyncio.run(registry.execute("hang", {}))
    assert not result.ok and "timed out" in result.content
    assert cancelled == [True]


def test_dataclass_and_pydantic_parameters_get_schemas_and_arrive_typed() -> None:
    seen: list[Any] = []

    def draw(box: Box, origin: Point, extra: list[Point] | None = None) -> str:
        """Draw a box."""
        seen.extend([box, origin, extra])
        return "drawn"

    tool = function_tool(draw)
    props = tool.input_schema["properties"]
    assert props["origin"] == {
        "type": "object",
        "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}},
        "required": ["x"],
        "additionalProperties": False,
    }
    assert props["box"]["properties"]["corners"]["items"]["properties"]["x"] == {"type": "integer"}
    assert "$ref" not in json.dumps(props)
    box = {"label": "b", "corners": [{"x": 1, "y": 2}]}
    model = ScriptedModel(
        {
            "responses": [
                call("draw", {"box": box, "origin": {"x": 3}, "extra": [{"x": 5}]}),
                call("draw", {"box": box, "origin": {"x": "not a number"}}, "c2"),
                answer("ok"),
            ]
        }
    )
    agent = Agent(model, [draw])
    assert agent.run("draw").ok
    assert seen == [Box(label="b", corners=[Point(1, 2)]), Point(3, 0), [Point(5, 0)]]
    second = results(agent)[1]
    assert second.is_error and "invalid arguments" in second.content  # the schema caught it


class Verdict(BaseModel):
    ok: bool
    reason: str


def test_output_type_validates_the_final_answer_with_one_retry() -> None:
    model = ScriptedModel(
        {"responses": [answer("it is fine"), answer('{"ok": true, "reason": "tests pass"}')]}
    )
    agent = Agent(model, [], output_type=Verdict)
    result = agent.run("check")
    assert result.ok and result.output == Verdict(ok=True, reason="tests pass")
    retry = model.requests[1].messages[-1].text
    assert "does not match the required schema" in retry
    assert '"reason"' in model.requests[0].system  # the schema is in the (stable) system prompt


def test_output_type_stops_after_a_second_bad_answer() -> None:
    model = ScriptedModel({"responses": [answer("no"), answer("still no"), answer("final words")]})
    result = Agent(model, [], output_type=Verdict).run("check")
    assert result.stop == "bad_output" and result.output is None


def test_output_type_accepts_plain_types() -> None:
    model = ScriptedModel({"responses": [answer("```json\n[1, 2, 3]\n```")]})
    assert Agent(model, output_type=list[int]).run("numbers").output == [1, 2, 3]


def test_run_stream_yields_text_deltas_tool_events_and_the_result() -> None:
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    model = ScriptedModel({"responses": [call("add", {"a": 2, "b": 3}), answer("The sum is 5.")]})
    sink = ListSink()
    agent = Agent(model, [add], events=EventBus([sink]))

    async def collect() -> list[dict[str, Any]]:
        return [event async for event in agent.run_stream("add")]

    events = asyncio.run(collect())
    kinds = [e["type"] for e in events]
    deltas = [e["text"] for e in events if e["type"] == "text_delta"]
    assert len(deltas) > 1 and "".join(deltas) == "The sum is 5."
    assert kinds.index("tool_call") < kinds.index("tool_result") < kinds.index("text_delta")
    assert kinds[-2:] == ["run_end", "result"] and events[-1]["result"].final == "The sum is 5."
    assert "text_delta" not in [e["type"] for e in sink.events]  # deltas never reach the log sinks
    assert agent.on_text is None and agent.events.sinks == [sink]


def test_closing_run_stream_early_cancels_the_run() -> None:
    model = ScriptedModel({"responses": [answer("one two three four")], "stream_delay": 0.01})
    agent = Agent(model, [])

    async def first_delta() -> str:
        stream = agent.run_stream("go")
        async for event in stream:
            if event["type"] == "text_delta":
                await stream.aclose()
                return str(event["text"])
        return ""

    assert asyncio.run(first_delta()) == "one "
    assert agent.events.sinks == []


@pytest.mark.parametrize("text", ["plain", "two words", "  spaced  out  ", ""])
def test_scripted_stream_chunks_add_up_to_the_text(text: str) -> None:
    model = ScriptedModel({"responses": [answer(text)]})
    agent = Agent(model)
    chunks: list[str] = []
    agent.on_text = chunks.append
    assert agent.run("x").final == text
    assert "".join(chunks) == text

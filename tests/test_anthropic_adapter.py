"""The Anthropic Messages adapter: exact thinking round-trip, tool blocks, stops, errors.

A fake transport stands in for the network: the real ``anthropic`` SDK builds each request,
parses each reply, retries and raises its own exception classes, while the test sees the exact
JSON body that would have gone out, with no server and no key.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import anthropic
import pytest

from tinyharness.errors import ConfigError, ContextLengthExceeded, ModelError, ModelTimeout
from tinyharness.messages import (
    Message,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from tinyharness.models.anthropic_messages import AnthropicModel, CacheConfig
from tinyharness.models.base import ModelRequest, ModelResponse, ToolSpec, Usage

try:  # the SDKs of this environment ship on httpx2; older ones on httpx
    import httpx2 as httpx
except ImportError:  # pragma: no cover
    import httpx  # type: ignore[no-redef]

CALC = ToolSpec(
    "calculator",
    "Evaluate arithmetic.",
    {"type": "object", "properties": {"expression": {"type": "string"}}, "required": ["expression"]},
)
SIGNATURE = "EqQBCkgIBxABGAIiQL+/signature/with+base64==/and\nnewline"
REDACTED = "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP"


class FakeServer:
    """Records every request body and answers with the next reply (the last one repeats)."""

    def __init__(self, *replies: Any) -> None:
        self.replies = list(replies)
        self.bodies: list[dict[str, Any]] = []

    def __call__(self, request: Any) -> Any:
        self.bodies.append(json.loads(request.content))
        reply = self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]
        if isinstance(reply, Exception):
            raise reply
        return reply


def message(content: list[dict[str, Any]], stop_reason: str = "end_turn", **usage: int) -> Any:
    return httpx.Response(
        200,
        json={
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-test",
            "content": content,
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "usage": {"input_tokens": 20, "output_tokens": 7, **usage},
        },
    )


def error(status: int, message_text: str, kind: str = "invalid_request_error") -> Any:
    body = {"type": "error", "error": {"type": kind, "message": message_text}}
    return httpx.Response(status, json=body, headers={"retry-after-ms": "1"})


def make_model(server: FakeServer, *, max_retries: int = 0, **kw: Any) -> AnthropicModel:
    client = anthropic.AsyncAnthropic(
        api_key="sk-ant-test",
        base_url="http://fake.test",
        max_retries=max_retries,
        http_client=httpx.AsyncClient(transport=httpx.MockTransport(server)),
    )
    # The wire-mapping tests read the body without cache breakpoints (test_prompt_cache.py has those).
    kw.setdefault("cache", CacheConfig(enabled=False))
    return AnthropicModel("claude-test", client=client, **kw)


def complete(model: AnthropicModel, *requests: ModelRequest) -> list[ModelResponse]:
    async def go() -> list[ModelResponse]:
        try:
            return [await model.complete(r) for r in requests]
        finally:
            await model.aclose()

    return asyncio.run(go())


THINKING_TURN = [
    {"type": "thinking", "thinking": "The user wants 2+2.", "signature": SIGNATURE},
    {"type": "redacted_thinking", "data": REDACTED},
    {"type": "text", "text": "Computing."},
    {"type": "tool_use", "id": "toolu_01", "name": "calculator", "input": {"expression": "2+2"}},
]


def test_thinking_blocks_round_trip_exactly() -> None:
    server = FakeServer(
        message(THINKING_TURN, "tool_use", cache_read_input_tokens=100),
        message([{"type": "text", "text": "4"}]),
    )
    ask = Message.user("2+2?")
    first_request = ModelRequest((ask,), system="Be exact.", tools=(CALC,))
    model = make_model(server, thinking={"type": "enabled", "budget_tokens": 1024})
    first = complete(model, first_request)[0]
    assert first.stop_reason == "tool_use"
    assert first.usage == Usage(120, 7, cached_tokens=100)  # cached input counts: it is in the window
    assert first.message.content == (
        ThinkingBlock("The user wants 2+2.", SIGNATURE),
        ThinkingBlock("", "", redacted=REDACTED),
        TextBlock("Computing."),
        ToolUseBlock("toolu_01", "calculator", {"expression": "2+2"}),
    )
    result = Message("user", (ToolResultBlock("toolu_01", "4"),))
    second_model = make_model(server, thinking={"type": "enabled", "budget_tokens": 1024})
    complete(second_model, ModelRequest((ask, first.message, result), tools=(CALC,)))
    sent = server.bodies[1]
    assert sent["messages"][1] == {"role": "assistant", "content": THINKING_TURN}
    assert sent["messages"][2] == {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "toolu_01", "content": "4"}],
    }
    assert sent["thinking"] == {"type": "enabled", "budget_tokens": 1024}
    first_body = server.bodies[0]
    assert first_body["system"] == "Be exact."
    assert first_body["tools"] == [
        {"name": "calculator", "description": "Evaluate arithmetic.", "input_schema": CALC.input_schema}
    ]


def test_raw_tool_input_is_sent_as_an_empty_object_and_errors_are_flagged() -> None:
    server = FakeServer(message([{"type": "text", "text": "ok"}]))
    history = (
        Message.user("go"),
        Message(
            "assistant",
            (TextBlock(""), ToolUseBlock("toolu_9", "calculator", '{"expression": 1+')),
        ),
        Message("user", (ToolResultBlock("toolu_9", "invalid JSON arguments", is_error=True),)),
    )
    complete(make_model(server), ModelRequest(history, tools=(CALC,)))
    sent = server.bodies[0]["messages"]
    # the empty text block is left out: the API rejects empty text
    assert sent[1]["content"] == [{"type": "tool_use", "id": "toolu_9", "name": "calculator", "input": {}}]
    assert sent[2]["content"][0]["is_error"] is True


def test_final_only_forbids_tool_calls_and_schema_goes_to_output_config() -> None:
    server = FakeServer(message([{"type": "text", "text": "{}"}]))
    schema = {"type": "object", "properties": {}, "additionalProperties": False}
    request = ModelRequest((Message.user("q"),), tools=(CALC,), final_only=True, response_schema=schema)
    complete(make_model(server), request)
    body = server.bodies[0]
    assert body["tool_choice"] == {"type": "none"}
    assert body["output_config"] == {"format": {"type": "json_schema", "schema": schema}}
    assert "system" not in body and "thinking" not in body


def test_tool_choice_forces_the_named_tool_unless_thinking_is_on() -> None:
    """Extended thinking accepts only "auto" and "none": then the request asks by prompt alone."""
    forced = ModelRequest((Message.user("q"),), tools=(CALC,), tool_choice="calculator")
    server = FakeServer(message([{"type": "text", "text": "ok"}]))
    complete(make_model(server), forced)
    assert server.bodies[0]["tool_choice"] == {"type": "tool", "name": "calculator"}
    server = FakeServer(message([{"type": "text", "text": "ok"}]))
    complete(make_model(server, thinking={"type": "enabled", "budget_tokens": 1024}), forced)
    assert "tool_choice" not in server.bodies[0]


@pytest.mark.parametrize(
    ("wire", "neutral"),
    [
        ("end_turn", "end_turn"),
        ("tool_use", "tool_use"),
        ("max_tokens", "max_tokens"),
        ("model_context_window_exceeded", "max_tokens"),
        ("stop_sequence", "end_turn"),
        ("refusal", "end_turn"),
        ("pause_turn", "end_turn"),
    ],
)
def test_stop_reason_mapping(wire: str, neutral: str) -> None:
    server = FakeServer(message([{"type": "text", "text": "x"}], wire))
    (reply,) = complete(make_model(server), ModelRequest((Message.user("q"),)))
    assert reply.stop_reason == neutral


def test_json_mode_by_prompt_parses_the_action() -> None:
    action = '```json\n{"tool": "calculator", "arguments": {"expression": "9*9"}}\n```'
    server = FakeServer(message([{"type": "text", "text": action}]))
    model = make_model(server, tool_mode="json")
    (reply,) = complete(model, ModelRequest((Message.user("9*9?"),), system="S", tools=(CALC,)))
    body = server.bodies[0]
    assert "tools" not in body and body["system"].startswith("S\n\n")
    assert "final_answer(answer: string)" in body["system"]
    assert reply.stop_reason == "tool_use"
    assert reply.message.content == (ToolUseBlock("call_1", "calculator", {"expression": "9*9"}),)


def test_prompt_too_long_is_context_length_exceeded() -> None:
    server = FakeServer(error(400, "prompt is too long: 210000 tokens > 200000 maximum"))
    with pytest.raises(ContextLengthExceeded, match="prompt is too long"):
        complete(make_model(server, max_retries=2), ModelRequest((Message.user("q"),)))
    assert len(server.bodies) == 1


def test_overloaded_is_retried_then_reported() -> None:
    server = FakeServer(error(529, "Overloaded", "overloaded_error"))
    with pytest.raises(ModelError, match="try again later"):
        complete(make_model(server, max_retries=2), ModelRequest((Message.user("q"),)))
    assert len(server.bodies) == 3


def test_authentication_error_says_check_the_key() -> None:
    server = FakeServer(error(401, "invalid x-api-key", "authentication_error"))
    with pytest.raises(ModelError, match="check the API key"):
        complete(make_model(server), ModelRequest((Message.user("q"),)))


def test_timeout_is_model_timeout() -> None:
    server = FakeServer(httpx.ReadTimeout("read timed out"))
    with pytest.raises(ModelTimeout):
        complete(make_model(server, max_retries=1), ModelRequest((Message.user("q"),)))
    assert len(server.bodies) == 2


def test_missing_key_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    with pytest.raises(ConfigError, match="ANTHROPIC_API_KEY"):
        AnthropicModel("claude-test")


def test_exact_counter_uses_the_count_tokens_endpoint_less_the_message_framing() -> None:
    """``--counter exact`` on an Anthropic model counts with ``/v1/messages/count_tokens``: the
    text as one user message, less the framing measured once; each distinct text counted once."""
    paths: list[str] = []

    def count_server(request: Any) -> Any:
        paths.append(request.url.path)
        text = json.loads(request.content)["messages"][0]["content"]
        return httpx.Response(200, json={"input_tokens": 7 + len(text.split())})  # framing 7

    counter_client = anthropic.Anthropic(
        api_key="sk-ant-test",
        base_url="http://fake.test",
        max_retries=0,
        http_client=httpx.Client(transport=httpx.MockTransport(count_server)),
    )
    model = make_model(FakeServer(message([{"type": "text", "text": "hi"}])), count_client=counter_client)
    assert model.count_tokens("one two three") == 3
    assert model.count_tokens("one two three") == 3 and model.count_tokens("") == 0
    assert paths == ["/v1/messages/count_tokens"] * 2  # the framing, then the text once

    failing = anthropic.Anthropic(
        api_key="sk-ant-test",
        base_url="http://fake.test",
        max_retries=0,
        http_client=httpx.Client(transport=httpx.MockTransport(lambda r: error(404, "no such endpoint"))),
    )
    broken = make_model(FakeServer(message([])), count_client=failing)
    with pytest.raises(ModelError, match=r"counting tokens.*--counter auto"):
        broken.count_tokens("text")

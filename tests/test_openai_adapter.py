"""The OpenAI Chat Completions adapter: wire conversion both ways, JSON mode, error mapping.

A fake transport stands in for the network: the real ``openai`` SDK builds each request,
parses each reply, retries and raises its own exception classes, while the test sees the exact
JSON body that would have gone out, with no server and no key.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import openai
import pytest

from tinyharness.errors import ConfigError, ContextLengthExceeded, ModelError, ModelTimeout
from tinyharness.messages import (
    Message,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from tinyharness.models.base import ModelRequest, ModelResponse, ToolSpec, Usage
from tinyharness.models.json_mode import action_schema
from tinyharness.models.openai_chat import OpenAIChatModel

try:  # the SDKs of this environment ship on httpx2; older ones on httpx
    import httpx2 as httpx
except ImportError:  # pragma: no cover
    import httpx  # type: ignore[no-redef]

Reply = Callable[[Any], Any]

CALC = ToolSpec(
    "calculator",
    "Evaluate arithmetic.",
    {"type": "object", "properties": {"expression": {"type": "string"}}, "required": ["expression"]},
)


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
        return reply(request) if callable(reply) else reply


def completion(
    message: dict[str, Any], finish_reason: str = "stop", usage: tuple[int, int] | None = (12, 5)
) -> Any:
    body: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": "gpt-test",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", **message},
                "finish_reason": finish_reason,
            }
        ],
    }
    if usage is not None:
        body["usage"] = {
            "prompt_tokens": usage[0],
            "completion_tokens": usage[1],
            "total_tokens": sum(usage),
        }
    return httpx.Response(200, json=body)


def error(status: int, body: dict[str, Any]) -> Any:
    # retry-after-ms keeps the SDK's backoff between retries to a millisecond.
    return httpx.Response(status, json=body, headers={"retry-after-ms": "1"})


def make_model(
    server: FakeServer, *, max_retries: int = 0, base_url: str = "http://fake.test/v1", **kw: Any
) -> OpenAIChatModel:
    client = openai.AsyncOpenAI(
        api_key="sk-test",
        base_url=base_url,
        max_retries=max_retries,
        http_client=httpx.AsyncClient(transport=httpx.MockTransport(server)),
    )
    return OpenAIChatModel("gpt-test", client=client, **kw)


def complete(model: OpenAIChatModel, request: ModelRequest) -> ModelResponse:
    async def go() -> ModelResponse:
        try:
            return await model.complete(request)
        finally:
            await model.aclose()

    return asyncio.run(go())


HISTORY = (
    Message.user("What is 2+2? And then 3+3?"),
    Message(
        "assistant",
        (
            ThinkingBlock("I should use the tool", "sig-abc"),
            TextBlock("Let me compute."),
            ToolUseBlock("call_a", "calculator", {"expression": "2+2"}),
            ToolUseBlock("call_b", "calculator", '{"expression": 3+3'),
        ),
    ),
    Message(
        "user",
        (
            ToolResultBlock("call_a", "4"),
            ToolResultBlock("call_b", "arguments are not valid JSON", is_error=True),
            TextBlock("Please continue."),
        ),
    ),
)


# --- neutral -> wire --------------------------------------------------------------------------


def test_request_wire_format() -> None:
    server = FakeServer(completion({"content": "8"}))
    request = ModelRequest(HISTORY, system="You are terse.", tools=(CALC,), max_tokens=77)
    complete(make_model(server), request)
    body = server.bodies[0]
    assert body["model"] == "gpt-test"
    assert body["max_tokens"] == 77
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "calculator",
                "description": "Evaluate arithmetic.",
                "parameters": CALC.input_schema,
            },
        }
    ]
    assert "tool_choice" not in body
    assert body["messages"] == [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "What is 2+2? And then 3+3?"},
        {
            "role": "assistant",
            "content": "Let me compute.",  # the thinking block is dropped on this wire
            "tool_calls": [
                {
                    "id": "call_a",
                    "type": "function",
                    "function": {"name": "calculator", "arguments": '{"expression": "2+2"}'},
                },
                {  # raw arguments go back exactly as the model sent them
                    "id": "call_b",
                    "type": "function",
                    "function": {"name": "calculator", "arguments": '{"expression": 3+3'},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "call_a", "content": "4"},
        {"role": "tool", "tool_call_id": "call_b", "content": "Error: arguments are not valid JSON"},
        {"role": "user", "content": "Please continue."},
    ]


def test_final_only_keeps_tools_but_forbids_calls() -> None:
    server = FakeServer(completion({"content": "done"}))
    complete(make_model(server), ModelRequest(HISTORY, tools=(CALC,), final_only=True))
    assert server.bodies[0]["tool_choice"] == "none"
    assert server.bodies[0]["tools"][0]["function"]["name"] == "calculator"


def test_tool_choice_forces_the_named_tool() -> None:
    server = FakeServer(completion({"content": "done"}))
    complete(make_model(server), ModelRequest(HISTORY, tools=(CALC,), tool_choice="calculator"))
    assert server.bodies[0]["tool_choice"] == {"type": "function", "function": {"name": "calculator"}}


def test_official_api_gets_max_completion_tokens_and_response_schema() -> None:
    server = FakeServer(completion({"content": '{"facts": []}'}))
    schema = {"type": "object", "properties": {"facts": {"type": "array"}}}
    model = make_model(server, base_url="https://api.openai.com/v1", temperature=0.0)
    reply = complete(model, ModelRequest((Message.user("x"),), response_schema=schema))
    body = server.bodies[0]
    assert body["max_completion_tokens"] == 1024 and "max_tokens" not in body
    assert body["temperature"] == 0.0
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "response", "schema": schema},
    }
    assert reply.message.text == '{"facts": []}'


# --- wire -> neutral --------------------------------------------------------------------------


def test_tool_calls_with_invalid_arguments_keep_the_raw_string() -> None:
    server = FakeServer(
        completion(
            {
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "calculator", "arguments": '{"expression": "1+'},
                    },
                    {
                        "id": "call_2",
                        "type": "function",
                        "function": {"name": "calculator", "arguments": '{"expression": "2*3"}'},
                    },
                    {
                        "id": "call_3",
                        "type": "function",
                        "function": {"name": "current_time", "arguments": ""},
                    },
                ],
            },
            finish_reason="tool_calls",
        )
    )
    reply = complete(make_model(server), ModelRequest((Message.user("go"),), tools=(CALC,)))
    assert reply.stop_reason == "tool_use"
    assert reply.message.content == (
        ToolUseBlock("call_1", "calculator", '{"expression": "1+'),
        ToolUseBlock("call_2", "calculator", {"expression": "2*3"}),
        ToolUseBlock("call_3", "current_time", {}),
    )
    assert reply.usage == Usage(12, 5)


def test_reasoning_content_comes_back_as_thinking() -> None:
    server = FakeServer(completion({"content": "4", "reasoning_content": "2+2 is 4"}))
    reply = complete(make_model(server), ModelRequest((Message.user("2+2?"),)))
    assert reply.message.content == (ThinkingBlock("2+2 is 4"), TextBlock("4"))


@pytest.mark.parametrize(
    ("finish_reason", "stop_reason"),
    [
        ("stop", "end_turn"),
        ("length", "max_tokens"),
        ("tool_calls", "tool_use"),
        ("content_filter", "end_turn"),
    ],
)
def test_finish_reason_mapping(finish_reason: str, stop_reason: str) -> None:
    server = FakeServer(completion({"content": "x"}, finish_reason=finish_reason))
    reply = complete(make_model(server), ModelRequest((Message.user("q"),)))
    assert reply.stop_reason == stop_reason


def test_missing_usage_is_zero_and_missing_call_ids_are_generated() -> None:
    call = {"id": "", "type": "function", "function": {"name": "calculator", "arguments": "{}"}}
    server = FakeServer(completion({"content": None, "tool_calls": [call]}, usage=None))
    reply = complete(make_model(server), ModelRequest((Message.user("q"),), tools=(CALC,)))
    assert reply.usage == Usage(0, 0)
    # "stop" with tool calls (as Ollama reports it) is still a tool_use turn
    assert reply.stop_reason == "tool_use"
    assert reply.message.tool_uses[0].id == "call_1"


# --- JSON tool mode ---------------------------------------------------------------------------


def test_json_mode_sends_the_action_schema_and_text_history() -> None:
    action = {"tool": "calculator", "arguments": {"expression": "6*7"}}
    server = FakeServer(completion({"content": json.dumps(action)}))
    model = make_model(server, tool_mode="json")
    reply = complete(model, ModelRequest(HISTORY, system="Be exact.", tools=(CALC,)))
    body = server.bodies[0]
    assert "tools" not in body
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "action", "schema": action_schema([CALC])},
    }
    system, *rest = body["messages"]
    assert system["role"] == "system" and system["content"].startswith("Be exact.")
    assert "calculator" in system["content"]
    assert [m["role"] for m in rest] == ["user", "assistant", "user"]
    assert all(isinstance(m["content"], str) for m in rest)
    assert "Result of calculator (call_a):\n4" in rest[2]["content"]
    assert reply.stop_reason == "tool_use"
    # no call_<n> id in the history yet, so the first generated id is call_1
    assert reply.message.content == (ToolUseBlock("call_1", "calculator", {"expression": "6*7"}),)


def test_json_mode_cut_reply_is_a_max_tokens_text() -> None:
    server = FakeServer(completion({"content": '{"tool": "calcul'}, finish_reason="length"))
    model = make_model(server, tool_mode="json")
    reply = complete(model, ModelRequest((Message.user("q"),), tools=(CALC,)))
    assert reply.stop_reason == "max_tokens"
    assert reply.message.content == (TextBlock('{"tool": "calcul'),)


def test_json_mode_final_only_allows_only_final() -> None:
    server = FakeServer(completion({"content": '{"final": "42"}'}))
    model = make_model(server, tool_mode="json")
    reply = complete(model, ModelRequest((Message.user("q"),), tools=(CALC,), final_only=True))
    schema = server.bodies[0]["response_format"]["json_schema"]["schema"]
    assert schema == action_schema([], final_only=True)
    assert (reply.message.content, reply.stop_reason) == ((TextBlock("42"),), "end_turn")


def test_json_mode_tool_choice_allows_only_that_call() -> None:
    """A forced tool in JSON mode: the grammar's schema is that tool's branch alone (no final
    answer, no other tool), while the prompt still lists every tool, so it stays the same."""
    server = FakeServer(completion({"content": '{"tool": "calculator", "arguments": {"expression": "1"}}'}))
    model = make_model(server, tool_mode="json")
    other = ToolSpec("other", "Another tool.", {"type": "object", "properties": {}})
    request = ModelRequest((Message.user("q"),), tools=(CALC, other), tool_choice="calculator")
    reply = complete(model, request)
    schema = server.bodies[0]["response_format"]["json_schema"]["schema"]
    assert "anyOf" not in schema and schema["properties"]["tool"] == {"const": "calculator"}
    assert "other(" in server.bodies[0]["messages"][0]["content"]
    assert reply.message.tool_uses[0].name == "calculator"


# --- errors -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        {  # OpenAI
            "error": {
                "message": "This model's maximum context length is 8192 tokens.",
                "type": "invalid_request_error",
                "code": "context_length_exceeded",
            }
        },
        {  # llama.cpp
            "error": {
                "code": 400,
                "message": "request (9000 tokens) exceeds the available context size "
                "(8192 tokens), try increasing it",
                "type": "exceed_context_size_error",
            }
        },
    ],
)
def test_context_overflow_is_typed(body: dict[str, Any]) -> None:
    server = FakeServer(error(400, body))
    with pytest.raises(ContextLengthExceeded):
        complete(make_model(server, max_retries=2), ModelRequest((Message.user("long"),)))
    assert len(server.bodies) == 1  # a 400 is not retried


def test_other_bad_request_is_a_plain_model_error() -> None:
    body = {"error": {"message": "Invalid value for 'tools'", "type": "invalid_request_error"}}
    with pytest.raises(ModelError) as caught:
        complete(make_model(FakeServer(error(400, body))), ModelRequest((Message.user("q"),)))
    assert type(caught.value) is ModelError
    assert "Invalid value for 'tools'" in str(caught.value)


def test_server_errors_are_retried_by_the_sdk() -> None:
    busy = error(503, {"error": {"message": "overloaded"}})
    server = FakeServer(busy, busy, completion({"content": "finally"}))
    reply = complete(make_model(server, max_retries=2), ModelRequest((Message.user("q"),)))
    assert reply.message.text == "finally"
    assert len(server.bodies) == 3


@pytest.mark.parametrize(
    ("status", "hint"),
    [(401, "check the API key"), (404, "model name"), (429, "rate limited"), (500, "try again")],
)
def test_errors_after_retries_say_what_to_do(status: int, hint: str) -> None:
    server = FakeServer(error(status, {"error": {"message": "nope"}}))
    with pytest.raises(ModelError, match=hint) as caught:
        complete(make_model(server, max_retries=1), ModelRequest((Message.user("q"),)))
    assert "\n" not in str(caught.value)
    assert len(server.bodies) == (2 if status in (429, 500) else 1)


def test_timeout_after_retries_is_model_timeout() -> None:
    server = FakeServer(httpx.ReadTimeout("read timed out"))
    with pytest.raises(ModelTimeout):
        complete(make_model(server, max_retries=1), ModelRequest((Message.user("q"),)))
    assert len(server.bodies) == 2


def test_unreachable_server_names_the_base_url() -> None:
    server = FakeServer(httpx.ConnectError("connection refused"))
    with pytest.raises(ModelError, match="check the base URL") as caught:
        complete(make_model(server), ModelRequest((Message.user("q"),)))
    assert "fake.test" in str(caught.value)


def test_missing_api_key_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        OpenAIChatModel("gpt-test")


def test_bad_tool_mode_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="tool mode"):
        OpenAIChatModel("m", base_url="http://localhost:1/v1", tool_mode="xml")  # type: ignore[arg-type]

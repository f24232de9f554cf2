"""Provider prompt caching: where the Anthropic adapter puts its breakpoints, how cache reads and
writes are reported, and what a long run reads from the cache.

The servers are ``bench/cache_sim.py``: fake Anthropic and OpenAI APIs on loopback that follow
the providers' documented cache rules (why a fake: no key, no network, no bill); the real SDKs
talk to them over HTTP.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anthropic
import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # the bench package lives beside the tests, not in the install
    sys.path.insert(0, str(ROOT))

from bench import cache_sim  # noqa: E402

from tinyharness.agent import Agent, AgentConfig  # noqa: E402
from tinyharness.context.config import ContextConfig  # noqa: E402
from tinyharness.context.manager import build_context  # noqa: E402
from tinyharness.events import EventBus, ListSink  # noqa: E402
from tinyharness.messages import Message, TextBlock, ThinkingBlock, ToolResultBlock, ToolUseBlock  # noqa: E402
from tinyharness.models.anthropic_messages import (  # noqa: E402
    AnthropicModel,
    CacheConfig,
    messages_to_wire,
    place_breakpoints,
    tool_to_wire,
    usage_from_wire,
)
from tinyharness.models.base import ModelRequest, ToolSpec, Usage  # noqa: E402
from tinyharness.models.openai_chat import OpenAIChatModel  # noqa: E402
from tinyharness.models.openai_chat import usage_from_wire as openai_usage  # noqa: E402
from tinyharness.tools.builtin import builtin_tools  # noqa: E402

TOOLS = [ToolSpec(f"tool{i}", f"Tool number {i}.", {"type": "object", "properties": {}}) for i in range(3)]


def body(
    messages: list[Message], system: str = "Be careful.", tools: list[ToolSpec] = TOOLS
) -> dict[str, Any]:
    params: dict[str, Any] = {"messages": messages_to_wire(messages), "system": system}
    if tools:
        params["tools"] = [tool_to_wire(t) for t in tools]
    return params


def marked(params: Mapping[str, Any]) -> list[str]:
    """Where the breakpoints are: tool NAME, system, or message INDEX."""
    spots = [f"tool {t['name']}" for t in params.get("tools", []) if "cache_control" in t]
    system = params.get("system")
    if isinstance(system, list):
        spots += ["system" for b in system if "cache_control" in b]
    for index, message in enumerate(params["messages"]):
        spots += [f"message {index}" for b in message["content"] if "cache_control" in b]
    return spots


CONVERSATION = [
    Message.user("task"),
    Message("assistant", (TextBlock("reading"), ToolUseBlock("t1", "tool0", {}))),
    Message("user", (ToolResultBlock("t1", "result one"),)),
    Message("assistant", (ThinkingBlock("hmm", "sig"), ToolUseBlock("t2", "tool1", {}))),
    Message("user", (ToolResultBlock("t2", "result two"),)),
]


def test_breakpoints_go_on_tools_system_the_previous_request_and_the_latest_turn() -> None:
    params = body(CONVERSATION)
    place_breakpoints(params, CacheConfig())
    # message 2 ended the previous request (it wrote that prefix); message 4 is this turn.
    assert marked(params) == ["tool tool2", "system", "message 2", "message 4"]
    assert params["messages"][4]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    assert params["system"] == [
        {"type": "text", "text": "Be careful.", "cache_control": {"type": "ephemeral"}}
    ]


def test_at_most_four_breakpoints_and_never_on_thinking() -> None:
    history = [*CONVERSATION, Message("assistant", (ThinkingBlock("only thinking", "s"),))]
    params = body(history)
    place_breakpoints(params, CacheConfig())
    # The latest message holds only thinking, which may not carry cache_control: it gets none.
    assert marked(params) == ["tool tool2", "system", "message 4"]
    assert all("cache_control" not in b for b in params["messages"][5]["content"])
    long = [*CONVERSATION, *CONVERSATION[1:], Message("assistant", (TextBlock("so"),)), Message.user("go on")]
    many = body(long)
    place_breakpoints(many, CacheConfig())
    assert len(marked(many)) == 4 and marked(many)[2:] == ["message 8", "message 10"]
    first = body(CONVERSATION[:1], system="", tools=[])
    place_breakpoints(first, CacheConfig())
    assert marked(first) == ["message 0"] and first["system"] == ""


def test_ttl_min_tokens_and_off_are_options() -> None:
    params = body(CONVERSATION)
    place_breakpoints(params, CacheConfig(ttl="1h"))
    assert params["tools"][-1]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
    short = body(CONVERSATION)
    place_breakpoints(short, CacheConfig(min_tokens=10_000))
    assert marked(short) == []  # every prefix here is far below 10,000 tokens
    off = body(CONVERSATION)
    place_breakpoints(off, CacheConfig(enabled=False))
    assert marked(off) == [] and off["system"] == "Be careful."
    one_off = body(CONVERSATION)
    place_breakpoints(one_off, CacheConfig(), rolling=False)  # a summary request: asked once
    assert marked(one_off) == ["tool tool2", "system"]
    model = AnthropicModel("claude-sonnet-4-5", api_key="sk-ant-test")
    summary = ModelRequest(tuple(CONVERSATION), system="Summarize.", purpose="compact")
    assert marked(model._prepare(summary)[0]) == ["system"]  # the adapter asks a summary once
    turn = ModelRequest(tuple(CONVERSATION), system="Work.", tools=tuple(TOOLS))
    assert marked(model._prepare(turn)[0]) == ["tool tool2", "system", "message 2", "message 4"]
    asyncio.run(model.aclose())
    with pytest.raises(Exception, match="5m or 1h"):
        CacheConfig(ttl="10m")  # type: ignore[arg-type]


def test_usage_reports_reads_and_writes_apart() -> None:
    wire = anthropic.types.Message.model_validate(
        {
            "id": "m",
            "type": "message",
            "role": "assistant",
            "model": "claude",
            "content": [],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {
                "input_tokens": 50,
                "output_tokens": 7,
                "cache_read_input_tokens": 3000,
                "cache_creation_input_tokens": 400,
                "cache_creation": {"ephemeral_5m_input_tokens": 100, "ephemeral_1h_input_tokens": 300},
            },
        }
    )
    usage = usage_from_wire(wire)
    assert usage == Usage(3450, 7, cached_tokens=3000, cache_write_tokens=400, cache_write_1h_tokens=300)
    assert usage.uncached_input_tokens == 50
    event = usage.to_event()
    assert event["input_tokens"] == 3450  # the whole prompt, as before, for existing readers
    assert event["cache_read_input_tokens"] == 3000 and event["cache_creation_input_tokens"] == 400
    assert Usage.from_event(event) == usage


def test_the_real_sdk_reads_the_first_requests_prefix_from_the_simulator() -> None:
    system = "You are careful. " * 400  # about 1,700 tokens: above the 1,024 minimum

    async def go(base_url: str) -> list[Usage]:
        model = AnthropicModel("claude-sonnet-4-5", base_url=base_url, api_key="sk-ant-test", max_retries=0)
        try:
            first = await model.complete(
                ModelRequest((Message.user("hello"),), system=system, tools=tuple(TOOLS))
            )
            history = (Message.user("hello"), first.message, Message.user("and again"))
            second = await model.complete(ModelRequest(history, system=system, tools=tuple(TOOLS)))
            return [first.usage, second.usage]
        finally:
            await model.aclose()

    with cache_sim.serve() as sim:
        first, second = asyncio.run(go(sim.base_url))
    assert first.cached_tokens == 0 and first.cache_write_tokens > 1024
    assert second.cached_tokens == first.cache_write_tokens  # everything the first one wrote
    assert second.cache_write_tokens > 0  # the new turn, for the next request


# --- a long run on the Anthropic adapter ------------------------------------------------------


class Worker:
    """The simulator's replies for a run: reads files in turn, notes when asked, summarizes when
    a request has no tools, and answers after ``turns`` agent turns."""

    def __init__(self, files: list[str], turns: int) -> None:
        self.files, self.turns, self.agent_turns = files, turns, 0

    def __call__(self, request: Mapping[str, Any]) -> tuple[list[dict[str, Any]], str]:
        if not request.get("tools"):
            return [{"type": "text", "text": "Summary: files were read; the task goes on. " * 20}], "end_turn"
        choice = request.get("tool_choice") or {}
        if choice.get("type") == "tool":
            call = {
                "type": "tool_use",
                "id": f"n{self.agent_turns}",
                "name": choice["name"],
                "input": {"text": "x"},
            }
            return [call], "tool_use"
        self.agent_turns += 1
        if self.agent_turns >= self.turns:
            return [{"type": "text", "text": "done"}], "end_turn"
        path = self.files[self.agent_turns % len(self.files)]
        read = {
            "type": "tool_use",
            "id": f"t{self.agent_turns}",
            "name": "read_file",
            "input": {"path": path},
        }
        return [{"type": "text", "text": f"Step {self.agent_turns}."}, read], "tool_use"


def test_fifty_turns_read_most_input_from_the_cache_and_each_compaction_writes_once(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    files = []
    for i in range(12):
        name = f"data/f{i}.txt"
        (tmp_path / name).write_text(f"line {i} of the order service notes, stock and status.\n" * 90)
        files.append(name)
    sink = ListSink()
    events = EventBus([sink])
    notes = tmp_path / "NOTES.md"
    context = build_context(
        ContextConfig(window=24_000, ratio=0.7, notes_path=notes, workspace=tmp_path), events=events
    )
    with cache_sim.serve(Worker(files, 50)) as sim:
        model = AnthropicModel(
            "claude-sonnet-4-5", base_url=sim.base_url, api_key="sk-ant-test", max_retries=0
        )
        agent = Agent(
            model,
            builtin_tools(tmp_path),
            context=context,
            events=events,
            config=AgentConfig(max_iterations=60, max_output_tokens=512),
        )
        result = agent.run("Read the files under data/ one by one.")
    assert result.stop == "end_turn", result.detail
    assert result.compactions >= 2

    # The agent's calls, each marked with whether a compaction came before it.
    calls: list[tuple[bool, Usage]] = []
    compacted = False
    for event in sink.events:
        if event["type"] == "compaction":
            compacted = True
        elif event["type"] == "model_call" and event["purpose"] == "agent":
            calls.append((compacted, Usage.from_event(event["usage"])))
            compacted = False
    assert len(calls) == 50
    steady = [u for (after, u), previous in zip(calls[1:], calls, strict=False) if not after]
    read = sum(u.cached_tokens for u in steady)
    assert read / sum(u.input_tokens for u in steady) >= 0.85, read
    # Between compactions each call reads everything the previous one read or wrote.
    for (after, usage), (_, previous) in zip(calls[1:], calls, strict=False):
        if not after:
            assert usage.cached_tokens >= previous.cached_tokens + previous.cache_write_tokens
    # After a compaction the new prefix is written once: that call reads at most the tools and
    # system prompt, and the call after it reads what it wrote.
    fixed = min(u.cached_tokens for _, u in calls[1:])
    for index, (after, usage) in enumerate(calls):
        if after and index + 1 < len(calls) and not calls[index + 1][0]:
            assert usage.cached_tokens <= fixed and usage.cache_write_tokens > 0
            follower = calls[index + 1][1]
            assert follower.cached_tokens >= usage.cached_tokens + usage.cache_write_tokens
    # Summaries are asked once: none of their messages is written to the cache.
    assert {e["strategy"] for e in sink.events if e["type"] == "compaction"}  # the default pipeline ran
    run_end = next(e for e in sink.events if e["type"] == "run_end")
    assert run_end["cost"]["status"] == "priced" and run_end["cost"]["priced_as"] == "claude-sonnet-4-5"
    assert (
        run_end["cost"]["cache_reads_usd"] > 0
        and run_end["usage"]["cache_read_input_tokens"] == agent.billed.cached_tokens
    )


def test_the_simulator_follows_the_documented_rules() -> None:
    clock = [0.0]
    cache = cache_sim.AnthropicCache(clock=lambda: clock[0])
    long = "x" * 8000  # about 2,000 tokens
    size = cache_sim.tokens_of({"type": "text", "text": long})
    request = {
        "system": [{"type": "text", "text": long, "cache_control": {"type": "ephemeral"}}],
        "messages": [],
    }
    assert cache.usage(request)["cache_creation_input_tokens"] == size
    assert cache.usage(request)["cache_read_input_tokens"] == size
    clock[0] += 301  # past the 5-minute lifetime
    assert cache.usage(request)["cache_read_input_tokens"] == 0
    short = {
        "system": [{"type": "text", "text": "tiny", "cache_control": {"type": "ephemeral"}}],
        "messages": [],
    }
    assert cache.usage(short)["cache_creation_input_tokens"] == 0  # below the minimum: not cached
    too_many = {
        "system": [
            {"type": "text", "text": str(i), "cache_control": {"type": "ephemeral"}} for i in range(5)
        ],
        "messages": [],
    }
    with pytest.raises(cache_sim.CacheRuleError):
        cache.usage(too_many)
    # The lookback: a breakpoint more than 20 blocks after the cached one misses it.
    base = [{"type": "text", "text": long, "cache_control": {"type": "ephemeral"}}]
    fresh = cache_sim.AnthropicCache()
    fresh.usage({"system": base, "messages": []})
    later = [{"role": "user", "content": [{"type": "text", "text": f"b{i}"} for i in range(25)]}]
    later[0]["content"][-1]["cache_control"] = {"type": "ephemeral"}
    system = [{"type": "text", "text": long}]  # no breakpoint of its own this time
    assert fresh.usage({"system": system, "messages": later})["cache_read_input_tokens"] == 0
    later[0]["content"] = later[0]["content"][:10]
    later[0]["content"][-1]["cache_control"] = {"type": "ephemeral"}
    assert fresh.usage({"system": system, "messages": later})["cache_read_input_tokens"] == size


# --- OpenAI and llama.cpp ---------------------------------------------------------------------


def test_openai_sends_one_prompt_cache_key_per_model_and_reports_cached_tokens() -> None:
    long = "Remember the order service. " * 300

    async def go(base_url: str) -> list[Usage]:
        model = OpenAIChatModel(
            "gpt-4.1", base_url=base_url, api_key="sk-test", max_retries=0, prompt_cache_key="session-7"
        )
        try:
            out = []
            for turn in ("one", "two"):
                response = await model.complete(ModelRequest((Message.user(turn),), system=long))
                out.append(response.usage)
            return out
        finally:
            await model.aclose()

    with cache_sim.serve() as sim:
        first, second = asyncio.run(go(sim.base_url))
        assert [b.get("prompt_cache_key") for b in sim.bodies] == ["session-7", "session-7"]
    assert first.cached_tokens == 0
    assert second.cached_tokens >= 1024 and second.cached_tokens % 128 == 0
    assert second.cache_write_tokens == 0  # OpenAI bills no writes


def test_prompt_cache_key_goes_to_openai_itself_unless_given() -> None:
    official = OpenAIChatModel("gpt-4.1", api_key="sk-test", prompt_cache_retention="24h")
    other = OpenAIChatModel("qwen", base_url="http://127.0.0.1:9/v1", api_key="x")
    request = ModelRequest((Message.user("hi"),))
    sent, _ = official._prepare(request)
    again, _ = official._prepare(request)
    assert sent["prompt_cache_key"] == again["prompt_cache_key"] and sent["prompt_cache_retention"] == "24h"
    assert "prompt_cache_key" not in other._prepare(request)[0]
    asyncio.run(official.aclose())
    asyncio.run(other.aclose())


def test_llama_cpp_cached_prompt_tokens_count_from_timings() -> None:
    from openai.types.chat import ChatCompletion

    reply = ChatCompletion.model_validate(
        {
            "id": "c",
            "object": "chat.completion",
            "created": 0,
            "model": "local",
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}
            ],
            "usage": {"prompt_tokens": 900, "completion_tokens": 3, "total_tokens": 903},
            "timings": {"cache_n": 850, "prompt_n": 50},
        }
    )
    assert openai_usage(reply) == Usage(900, 3, cached_tokens=850)
    assert json.loads(reply.model_dump_json())["timings"]["cache_n"] == 850

"""After a compaction the counter falls back from reported usage to the estimate: it must stay
close to the next request's real input.

Replays the shape of a real run (local SmolLM2, window 2048, trigger 1433): the provider's fixed
overhead is far below the estimate of the system prompt and tool schemas (JSON tool mode sends a
short tool list), so the usage-correction ratio drops to ~0.4; a kept reply cut off at
max_tokens really costs its 1,024 output tokens. Scaled by that ratio the reply counted ~440 and
the window ~961 tokens where the next request was 1,600.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tinyharness.context.accounting import Accountant
from tinyharness.context.config import ContextConfig
from tinyharness.context.manager import build_context
from tinyharness.context.tokens import Chars4Counter, HeuristicCounter
from tinyharness.messages import Message, ToolResultBlock, ToolUseBlock
from tinyharness.models.base import ModelRequest, ModelResponse, ToolSpec, Usage

SYSTEM = "You are a careful agent working in a workspace folder through tools. " * 4
REAL_FIXED = 420  # what the provider really spends on the system prompt and its tool list
TOOLS = tuple(
    ToolSpec(
        f"tool_{i}",
        "Reads, writes or searches files in the workspace, with many options described at length. " * 3,
        {
            "type": "object",
            "properties": {f"option_{j}": {"type": "string", "description": "an option"} for j in range(6)},
            "required": ["option_0"],
        },
    )
    for i in range(6)
)
LONG_REPLY = "The final result of read_file is: " * 113  # 3,842 characters, cut off at max_tokens
LONG_REPLY_TOKENS = 1024


def run_until_compaction() -> tuple[Any, list[dict[str, Any]], int, int]:
    """Returns the manager, its compaction events, its counter after the compaction and the
    real input tokens of the request that follows."""
    events: list[dict[str, Any]] = []

    class Bus:
        run_id = "test"

        def emit(self, type: str, **fields: Any) -> None:
            if type == "compaction":
                events.append(fields)

    context = build_context(ContextConfig("sliding-window", window=2048), events=Bus())
    real = HeuristicCounter()  # the "true" tokenizer agrees with the estimate on messages
    output: dict[int, int] = {}

    def real_input(messages: list[Message]) -> int:
        return REAL_FIXED + sum(output.get(id(m), real.count_message(m)) for m in messages)

    def respond(messages: list[Message], reply: Message, out: int, stop: str) -> None:
        request = ModelRequest(tuple(messages), SYSTEM, TOOLS)
        output[id(reply)] = out
        response = ModelResponse(reply, stop, Usage(real_input(messages), out))
        context.record_response(request, response)
        messages.append(reply)
        context.record_appended([reply])

    async def no_model(request: ModelRequest) -> ModelResponse:
        raise AssertionError("sliding-window calls no model")

    async def run() -> list[Message]:
        messages = [Message.user("Read each .py file here and note one line about each.")]
        messages = await context.prepare(SYSTEM, messages, no_model)
        call = ToolUseBlock("call_1", "read_file", {"path": "README.md", "start_line": 1, "end_line": 10})
        respond(messages, Message("assistant", (call,)), 53, "tool_use")
        error = "Error: 'README.md' does not exist in the workspace; use list_dir to see what is there"
        messages.append(Message("user", (ToolResultBlock("call_1", error, is_error=True),)))
        messages = await context.prepare(SYSTEM, messages, no_model)
        assert context.compactions == 0
        respond(messages, Message.assistant(LONG_REPLY), LONG_REPLY_TOKENS, "max_tokens")
        messages.append(Message.user("Your last reply was cut off at the output token limit. Continue."))
        return await context.prepare(SYSTEM, messages, no_model)

    after = asyncio.run(run())
    return context, events, context.tokens, real_input(after)


def test_counter_after_compaction_is_close_to_the_next_real_input() -> None:
    context, events, tokens, next_input = run_until_compaction()
    assert context.compactions == 1
    calibration = context.accountant.calibration
    assert calibration is not None and calibration.ratio < 0.6  # the fixed overhead was overestimated
    assert events[0]["tokens_after"] == tokens
    # Before the fix: ~0.6 of the real input (the 1,024-token reply counted ~440).
    assert tokens == pytest.approx(next_input, rel=0.1)
    # And the compaction knows the window is still over the trigger.
    assert next_input >= context.trigger.threshold
    assert tokens >= context.trigger.threshold


def test_a_reply_counts_at_its_reported_output_tokens() -> None:
    accountant = Accountant(HeuristicCounter())
    task = Message.user("task")
    accountant.absorb([task])
    reply = Message.assistant(LONG_REPLY)
    accountant.record_response(
        ModelRequest((task,), "sys"), ModelResponse(reply, "max_tokens", Usage(200, 1024))
    )
    # A ratio fitted on the request (here 200 reported for a tiny estimate: clamped to 4x)
    # applies to the estimated messages, not to the reply whose size the API reported.
    assert accountant.calibration is not None
    ratio = accountant.calibration.ratio
    assert accountant.estimate([reply]) == accountant.scale(accountant._fixed_raw) + 1024
    accountant.reset([task, reply])
    assert (
        accountant.tokens
        == accountant.scale(accountant._fixed_raw + accountant.raw.count_message(task)) + 1024
    )
    assert accountant.calibration.ratio == ratio


def test_reported_output_is_bounded_by_the_estimate() -> None:
    """Reasoning tokens the API bills as output but never sees again must not make a short
    reply look huge: the reported size is clamped like the usage-correction ratio."""
    accountant = Accountant(HeuristicCounter())
    task = Message.user("task")
    reply = Message.assistant("done")
    accountant.record_response(
        ModelRequest((task,), "sys"), ModelResponse(reply, "end_turn", Usage(10, 5000))
    )
    accountant.reset([task, reply])
    raw = accountant.raw.count_message(reply)
    assert accountant.estimate([reply]) - accountant.scale(accountant._fixed_raw) == round(raw * 4)


def test_chars4_stays_seed_000() -> None:
    """Without usage correction (``--counter chars4``) the reply is estimated as before."""
    accountant = Accountant(Chars4Counter(), calibrate=False)
    task = Message.user("task")
    reply = Message.assistant(LONG_REPLY)
    accountant.record_response(
        ModelRequest((task,), "sys"), ModelResponse(reply, "max_tokens", Usage(200, 1024))
    )
    accountant.reset([task, reply])
    assert accountant.tokens == len("sys") // 4 + len("task") // 4 + len(LONG_REPLY) // 4

"""Accounting modes, the trigger, incremental counting and the cache-friendly prefix measure."""

from __future__ import annotations

import pytest

from tinyharness.context.accounting import Accountant
from tinyharness.context.prefix import PrefixTracker
from tinyharness.context.tokens import Chars4Counter, HeuristicCounter
from tinyharness.context.trigger import Trigger
from tinyharness.errors import ConfigError
from tinyharness.messages import Message, ToolResultBlock, ToolUseBlock
from tinyharness.models.base import ModelRequest, ModelResponse, Usage


def reply(call_id: str) -> Message:
    return Message("assistant", (ToolUseBlock(call_id, "read_file", {"path": "a.py"}),))


def results(call_id: str, size: int = 400) -> Message:
    return Message("user", (ToolResultBlock(call_id, "x" * size),))


def turn(accountant: Accountant, history: list[Message], usage: Usage, purpose: str = "agent") -> Message:
    request = ModelRequest(tuple(history), system="sys", purpose=purpose)  # type: ignore[arg-type]
    message = reply(f"c{len(history)}")
    accountant.record_response(request, ModelResponse(message, "tool_use", usage))
    return message


def test_cumulative_mode_is_lesson_6() -> None:
    accountant = Accountant(Chars4Counter(), "cumulative", calibrate=False)
    history = [Message.user("task")]
    for total, usage in [(400, Usage(360, 40)), (1050, Usage(590, 60)), (1850, Usage(730, 70))]:
        history.append(turn(accountant, history, usage))
        history.append(results(history[-1].tool_uses[0].id))
        accountant.absorb(history[-2:])
        assert accountant.tokens == total
    turn(accountant, history, Usage(5000, 900), purpose="compact")
    assert accountant.tokens == 1850  # a compaction call does not count
    accountant.reset([Message.user("summary")])
    assert accountant.tokens == 0
    turn(accountant, [Message.user("summary")], Usage(230, 50))
    assert accountant.tokens == 280


def test_exercise_1_numbers() -> None:
    """Lesson 6, exercise 1: window 6000, ratio 0.75; per-call usage 1200, 1500, 900, 1100."""
    trigger = Trigger(6000, ratio=0.75)
    accountant = Accountant(Chars4Counter(), "cumulative", calibrate=False)
    totals = []
    for used in (1200, 1500, 900, 1100):
        turn(accountant, [Message.user("t")], Usage(used, 0))
        totals.append(accountant.tokens)
    assert totals == [1200, 2700, 3600, 4700]
    assert [trigger.should_compact(t) for t in totals] == [False, False, False, True]
    accountant.reset([Message.user("summary")])
    turn(accountant, [Message.user("summary")], Usage(300, 100))
    assert accountant.tokens == 400


def test_context_mode_is_last_usage_plus_appended_estimate() -> None:
    accountant = Accountant(Chars4Counter(), "context", calibrate=False)
    history = [Message.user("task")]
    accountant.absorb(history)
    message = turn(accountant, history, Usage(1000, 50))
    assert accountant.tokens == 1050
    history += [message, results(message.tool_uses[0].id, 4000)]
    fresh = accountant.absorb_tail(history)
    assert fresh == [history[-1]]  # the reply was accounted as output already
    assert accountant.tokens == 1050 + Chars4Counter().count_message(history[-1])


def test_context_mode_without_usage_estimates_the_window() -> None:
    accountant = Accountant(Chars4Counter(), "context", calibrate=False)
    history = [Message.user("t" * 400)]
    accountant.absorb(history)
    message = turn(accountant, history, Usage(0, 0))
    history += [message, results(message.tool_uses[0].id, 800)]
    accountant.absorb_tail(history)
    assert accountant.tokens == accountant.window_estimate == accountant.estimate(history)


def test_usage_corrects_the_estimate() -> None:
    accountant = Accountant(HeuristicCounter(), "context")
    history = [Message.user("orders " * 200)]
    accountant.absorb(history)
    raw = accountant.window_estimate
    turn(accountant, history, Usage(raw * 2, 10))
    assert accountant.calibration is not None and accountant.calibration.ratio == pytest.approx(2, rel=0.05)
    assert accountant.estimate(history) == pytest.approx(2 * raw, rel=0.05)


def test_counting_is_incremental() -> None:
    """A turn counts only what it appended, however long the history."""
    accountant = Accountant(HeuristicCounter(), "context")
    history = [Message.user("task")]
    for i in range(2000):
        history.append(reply(f"c{i}"))
        history.append(results(f"c{i}", 50))
    accountant.absorb(history)
    misses = accountant.raw.misses
    history.append(reply("new"))
    history.append(results("new"))
    accountant.absorb_tail(history)
    assert accountant.raw.misses - misses == 2


def test_trigger_ratio_and_buffer() -> None:
    assert Trigger(2000, ratio=0.7).threshold == 1400
    assert Trigger(30000, buffer=6000).threshold == 24000
    assert Trigger(10000).threshold == 7000
    assert not Trigger(30000, buffer=6000).should_compact(23999)
    assert Trigger(30000, buffer=6000).should_compact(24000)
    with pytest.raises(ConfigError):
        Trigger(1000, ratio=0.5, buffer=100)
    with pytest.raises(ConfigError):
        Trigger(1000, buffer=1000)


def test_prefix_share() -> None:
    tracker = PrefixTracker()
    history = [Message.user("task " * 50)]
    assert tracker.observe("sys", history) == 0.0
    history += [reply("a"), results("a", 100)]
    share = tracker.observe("sys", history)
    assert 0.3 < share < 1.0
    compacted = [Message.user("task " * 50 + "summary")]
    assert tracker.observe("sys", compacted) > 0.5  # the task still opens the request
    assert tracker.observe("other system", compacted) == 0.0


def test_the_fixed_part_and_the_messages_get_their_own_correction() -> None:
    """The system prompt and tool list can be tokenized quite unlike the messages (a local
    server in JSON mode, schemas...). Fitted as one ratio, the error moved to the messages as they
    grew; fitted apart (the messages' ratio from how usage grows between calls with the same
    fixed part), a window four times larger is still estimated within a few percent."""
    counter = Chars4Counter()
    system = "s" * 4000  # raw 1000 tokens; the provider counts 3000
    tools = ()

    def true_input(messages: list[Message]) -> int:
        return 3 * counter.count_text(system) + sum(counter.count_message(m) for m in messages)

    accountant = Accountant(counter, "context")
    history: list[Message] = [Message.user("task " * 50)]
    for i in range(4):
        request = ModelRequest(tuple(history), system=system, tools=tools, purpose="agent")
        answer = reply(f"c{i}")
        accountant.record_response(request, ModelResponse(answer, "tool_use", Usage(true_input(history), 0)))
        history += [answer, results(f"c{i}", 2000)]
    bigger = history + [m for i in range(4, 16) for m in (reply(f"c{i}"), results(f"c{i}", 2000))]
    assert accountant.estimate(bigger) == pytest.approx(true_input(bigger), rel=0.05)

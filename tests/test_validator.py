"""The request validator and the compaction invariants."""

from __future__ import annotations

import pytest

from tinyharness.context.validator import InvalidRequest, check_compaction, validate_messages
from tinyharness.messages import Message, TextBlock, ThinkingBlock, ToolResultBlock, ToolUseBlock

TASK = Message.user("task")
CALL = Message("assistant", (ThinkingBlock("hmm", "sig"), ToolUseBlock("a", "grep", {"pattern": "x"})))
RESULT = Message("user", (ToolResultBlock("a", "found"),))


def test_valid_history_passes() -> None:
    validate_messages([TASK, CALL, RESULT], signed_thinking=True)


@pytest.mark.parametrize(
    "history",
    [
        [],
        [Message.assistant("hi")],
        [TASK, TASK],
        [TASK, CALL],  # unanswered call
        [TASK, Message("user", (ToolResultBlock("zz", "?"),))],  # orphan result
        [TASK, CALL, Message("user", (ToolResultBlock("b", "?"),))],
        [Message("user", (ThinkingBlock("x", "s"),))],  # thinking from the user
        [TASK, Message("assistant", (TextBlock("a"), ThinkingBlock("x", "s")))],  # thinking late
    ],
)
def test_broken_histories_are_refused(history: list[Message]) -> None:
    with pytest.raises(InvalidRequest):
        validate_messages(history)


def test_unsigned_thinking_refused_only_for_signing_providers() -> None:
    unsigned = [TASK, Message("assistant", (ThinkingBlock("x"), TextBlock("a")))]
    validate_messages(unsigned)
    with pytest.raises(InvalidRequest):
        validate_messages(unsigned, signed_thinking=True)
    redacted = [TASK, Message("assistant", (ThinkingBlock("", redacted="opaque"), TextBlock("a")))]
    validate_messages(redacted, signed_thinking=True)


def test_compaction_must_keep_the_task_and_thinking_intact() -> None:
    before = [TASK, CALL, RESULT]
    check_compaction(before, [Message("user", (TextBlock("task"), TextBlock("[context: x]\ny")))])
    with pytest.raises(InvalidRequest):
        check_compaction(before, [Message.user("summary only")])
    edited = Message("assistant", (ThinkingBlock("edited", "sig"), ToolUseBlock("a", "grep", {})))
    with pytest.raises(InvalidRequest):
        check_compaction(before, [TASK, edited, RESULT])

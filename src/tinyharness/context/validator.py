"""The one validator every request passes before it reaches a model."""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import HarnessError
from ..messages import Message, ToolResultBlock, ToolUseBlock


class InvalidRequest(HarnessError):
    """A request would break the provider's rules; this is a harness bug, never sent."""


def validate_messages(messages: Sequence[Message]) -> None:
    """Check the provider-neutral rules: the history starts with a user message, roles
    alternate, every tool_use is answered by a tool_result in the very next message, and no
    tool_result refers to an id that was not asked for in the message before it."""
    if not messages:
        raise InvalidRequest("a request needs at least one message")
    if messages[0].role != "user":
        raise InvalidRequest("the first message must come from the user")
    for index, message in enumerate(messages):
        if index and message.role == messages[index - 1].role:
            raise InvalidRequest(f"messages {index - 1} and {index} both have role {message.role}")
        results = {b.tool_use_id for b in message.content if isinstance(b, ToolResultBlock)}
        if results:
            previous = messages[index - 1] if index else None
            asked = {b.id for b in previous.content if isinstance(b, ToolUseBlock)} if previous else set()
            orphans = results - asked
            if orphans or message.role != "user":
                raise InvalidRequest(f"message {index} has tool results with no call: {sorted(orphans)}")
        uses = [b.id for b in message.content if isinstance(b, ToolUseBlock)]
        if uses:
            if len(set(uses)) != len(uses):
                raise InvalidRequest(f"message {index} repeats a tool_use id")
            following = messages[index + 1] if index + 1 < len(messages) else None
            if following is None:
                raise InvalidRequest(f"message {index} ends the request with unanswered tool calls")
            answered = {b.tool_use_id for b in following.content if isinstance(b, ToolResultBlock)}
            missing = set(uses) - answered
            if missing:
                raise InvalidRequest(f"tool calls {sorted(missing)} in message {index} have no result")

"""The one validator every request passes before it reaches a model."""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import HarnessError
from ..messages import Message, Snapshot, ThinkingBlock, ToolResultBlock, ToolUseBlock, frozen
from .prefix import identical_prefix
from .rewrite import task_blocks


class InvalidRequest(HarnessError):
    """A request would break the provider's rules; this is a harness bug, never sent."""


def validate_messages(messages: Sequence[Message], *, signed_thinking: bool = False) -> None:
    """Check the provider-neutral rules: the history starts with a user message, roles
    alternate, every tool_use is answered by a tool_result in the very next message, and no
    tool_result refers to an id that was not asked for in the message before it. Thinking
    blocks sit only at the start of assistant messages; with ``signed_thinking`` (providers
    that sign them, Anthropic) each must still carry its signature."""
    _validate(messages, 0, signed_thinking)


def _validate(messages: Sequence[Message], start: int, signed_thinking: bool) -> None:
    """``validate_messages``, with the per-message checks run from index ``start`` on: a check
    at index i reads messages i - 1, i and i + 1 only, so the caller may skip the indices whose
    three messages were already validated together (``RequestValidator``)."""
    if not messages:
        raise InvalidRequest("a request needs at least one message")
    if messages[0].role != "user":
        raise InvalidRequest("the first message must come from the user")
    for index in range(start, len(messages)):
        message = messages[index]
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
    _validate_thinking(messages, signed_thinking, start)


class RequestValidator:
    """``validate_messages`` that remembers, per purpose, the last list it passed and re-checks
    a new list only from where it diverges.

    The agent's list only grows between compactions, so a request usually repeats the previous
    one (the very same message objects) and adds a message or two: checking those is O(new),
    not O(history). The leading messages that are the same objects (``is``, never equality) as
    those of the last valid list of the same purpose and thinking rule passed every check that
    reads only them; the last of them is checked again, since a tool_use is answered by the
    message after it. A rewritten list (compaction, a resumed history of equal copies) shares
    no leading object and is checked in full. The verdict and the error are always those of
    ``validate_messages``. Lists are kept as tuples (or snapshots), so a caller's list that grows in place
    later is never mistaken for the one that was checked; a refused list is not kept."""

    MAX_PURPOSES = 8

    def __init__(self) -> None:
        self._valid: dict[tuple[str, bool], tuple[Message, ...] | Snapshot] = {}

    def check(
        self, messages: Sequence[Message], *, purpose: str = "agent", signed_thinking: bool = False
    ) -> None:
        """Raise ``InvalidRequest`` exactly when ``validate_messages(messages, signed_thinking=...)``
        would, with the same message. ``purpose`` keeps the agent's list and the compaction or
        memory requests in separate caches, so alternating between them stays incremental."""
        current = frozen(messages)
        key = (purpose, signed_thinking)
        keep = identical_prefix(self._valid.get(key, ()), current)
        _validate(current, max(0, keep - 1), signed_thinking)
        self._valid.pop(key, None)
        if len(self._valid) >= self.MAX_PURPOSES:
            self._valid.pop(next(iter(self._valid)))
        self._valid[key] = current

    def clear(self) -> None:
        self._valid.clear()


def validate_thinking(messages: Sequence[Message], *, require_signed: bool = True) -> None:
    """Thinking blocks come from the model: only in assistant messages, before its text and tool
    calls, and (for providers that sign them) carrying their signature or redacted data, since a
    block that lost its signature is refused when sent back."""
    _validate_thinking(messages, require_signed, 0)


def _validate_thinking(messages: Sequence[Message], require_signed: bool, start: int) -> None:
    for index in range(start, len(messages)):
        message = messages[index]
        seen_other = False
        for block in message.content:
            if not isinstance(block, ThinkingBlock):
                seen_other = True
                continue
            if message.role != "assistant":
                raise InvalidRequest(f"message {index} is a user message with a thinking block")
            if seen_other:
                raise InvalidRequest(f"message {index} has a thinking block after other content")
            if require_signed and not block.signature and block.redacted is None:
                raise InvalidRequest(f"message {index} has a thinking block without its signature")


def check_compaction(before: Sequence[Message], after: Sequence[Message]) -> None:
    """The invariants every compaction step keeps, beyond ``validate_messages``: the user's first
    task message opens the new history unchanged, and every thinking block that survives is
    byte-for-byte one the model sent (none edited, none invented)."""
    validate_messages(after)
    validate_thinking(after, require_signed=False)
    if not before:
        return
    original = task_blocks(before[0])
    if after[0].role != "user" or after[0].content[: len(original)] != original:
        raise InvalidRequest("compaction lost or changed the first task message")
    known = {b for m in before for b in m.content if isinstance(b, ThinkingBlock)}
    for message in after:
        for block in message.content:
            if isinstance(block, ThinkingBlock) and block not in known:
                raise InvalidRequest("compaction changed a thinking block")

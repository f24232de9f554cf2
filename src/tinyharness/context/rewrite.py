"""Shared pieces for rewriting a history without breaking it.

Blocks that compaction inserts (summaries, notes read back, re-read files, "rounds dropped",
the project instructions, the pinned texts and the plan) are text blocks that start with a
tag, ``[context: KIND]``. They live in the head message,
after the user's own task blocks, so the task stays byte-identical at the front of the request.
At the next compaction they are recognized and replaced rather than piling up.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ..messages import Block, Message, TextBlock, group_rounds

TAG_PREFIX = "[context: "
SUMMARY = "summary of earlier work"
HANDOFF = "handoff"
NOTES = "NOTES.md read back"
FILES = "files re-read"
SKILLS = "skills in use"
DROPPED = "earlier rounds dropped"
PINNED = "pinned"
INSTRUCTIONS = "project instructions"
PLAN = "plan"


def tagged(kind: str, body: str) -> TextBlock:
    return TextBlock(f"{TAG_PREFIX}{kind}]\n{body}")


def tag_of(block: Block) -> str | None:
    if isinstance(block, TextBlock) and block.text.startswith(TAG_PREFIX):
        end = block.text.find("]", len(TAG_PREFIX))
        if end > 0:
            return block.text[len(TAG_PREFIX) : end]
    return None


def tag_body(block: TextBlock) -> str:
    return block.text.split("\n", 1)[1] if "\n" in block.text else ""


def task_blocks(head: Message) -> tuple[Block, ...]:
    """The user's own blocks of the first message: everything compaction did not insert."""
    own = tuple(b for b in head.content if tag_of(b) is None)
    return own or head.content


def tagged_blocks(head: Message, kinds: Iterable[str]) -> list[TextBlock]:
    wanted = set(kinds)
    return [b for b in head.content if isinstance(b, TextBlock) and tag_of(b) in wanted]


def with_head_blocks(head: Message, blocks: Sequence[Block]) -> Message:
    return Message("user", (*task_blocks(head), *blocks))


def rounds_after_head(messages: Sequence[Message]) -> list[list[Message]]:
    """API rounds after the first message (each starts with an assistant message)."""
    return group_rounds(messages[1:]) if messages else []


def flatten(rounds: Iterable[Sequence[Message]]) -> list[Message]:
    return [m for r in rounds for m in r]


def merge_adjacent(messages: Sequence[Message]) -> list[Message]:
    """Merge neighbours with the same role so roles alternate (tool results first in a merged
    user message, as providers expect them right after the assistant's calls)."""
    out: list[Message] = []
    for message in messages:
        if out and out[-1].role == message.role:
            merged = (*out[-1].content, *message.content)
            if message.role == "user":
                results = tuple(b for b in merged if b.type == "tool_result")
                merged = (*results, *(b for b in merged if b.type != "tool_result"))
            out[-1] = Message(message.role, merged)
        else:
            out.append(message)
    return out


def first_message_kept(before: Sequence[Message], after: Sequence[Message]) -> bool:
    """The strategy invariant: the user's task blocks open the new first message unchanged."""
    if not before:
        return not after
    if not after:
        return False
    original = task_blocks(before[0])
    return after[0].role == "user" and after[0].content[: len(original)] == original

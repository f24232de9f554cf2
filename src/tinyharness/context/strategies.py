"""Compaction strategies: each one a pure step from a message list to a shorter one.

A step gets everything it needs in a ``StepContext`` (no hidden state) and returns a new list;
the input is never mutated, and no step touches a file: ``offload`` hands what it cuts to the
``SpillWriter`` in its context (the manager's, see ``spill.py``). Steps that need no model
(``clear-tool-results``, ``sliding-window``, ``offload``) live here; ``summarize`` and
``restart`` live in ``summarize.py``. Every step keeps the head (the user's first task message),
keeps tool_use and tool_result together by cutting only between API rounds, leaves thinking
blocks untouched and returns alternating roles.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from ..errors import HarnessError
from ..history import describe_call, tool_calls_by_id
from ..messages import Block, Message, TextBlock, ToolResultBlock, ToolUseBlock
from .base import ModelCaller
from .rewrite import (
    DROPPED,
    FILES,
    NOTES,
    flatten,
    rounds_after_head,
    tag_body,
    tagged,
    tagged_blocks,
    task_blocks,
    with_head_blocks,
)
from .spill import SpillWriter

CLEARED_PREFIX = "[tool result cleared"
_READ_HEADER = re.compile(r"^(\S+) \(lines (\d+)-(\d+) of (\d+)\)\n")
_LINE_NUMBER = re.compile(r"^ *(\d+)\t", re.MULTILINE)
OFFLOADED_MARK = "[output truncated:"


class CompactionFailed(HarnessError):
    """A strategy could not produce a history (the summarizer failed, nothing to compact)."""


@dataclass(frozen=True)
class StepContext:
    """What a step may use. ``count`` is the calibrated token estimate of a request carrying a
    message list; ``target`` is the size the manager wants to get under."""

    system: str
    call_model: ModelCaller
    count: Callable[[Sequence[Message]], int]
    count_text: Callable[[str], int]
    keep_recent: int  # ContextConfig.keep_recent
    target: int
    model_window: int | None = None
    instructions: str | None = None
    spill: SpillWriter | None = None  # keeps offloaded output; without one it is cut
    offload_cap: int = 4000  # tokens one tool result may carry before it is offloaded
    summary_max_tokens: int = 1024
    summary_mode: str = "update"  # ContextConfig.summary_mode


class Strategy(Protocol):
    name: str
    calls_model: bool  # costs a model request
    lossy: bool  # drops content the agent cannot re-read (notes and files are restored after)

    async def apply(self, messages: list[Message], ctx: StepContext) -> list[Message]: ...


def recent_rounds(rounds: list[list[Message]], keep: int, budget: int | None, ctx: StepContext) -> int:
    """How many trailing rounds to keep: at most ``keep``, at least one, and fewer while they
    would take more than ``budget`` tokens on their own."""
    if not rounds:
        return 0
    n = min(max(keep, 1), len(rounds))
    while n > 1 and budget is not None and ctx.count(flatten(rounds[-n:])) > budget:
        n -= 1
    return n


# --- clear-tool-results -----------------------------------------------------------------------


class ClearToolResults:
    """Old tool results become a one-line placeholder naming the call, so the agent can make it
    again. The last ``keep_recent`` rounds stay verbatim. No model call."""

    name = "clear-tool-results"
    calls_model = False
    lossy = False
    MIN_CHARS = 200  # shorter results cost less than their placeholder would save

    async def apply(self, messages: list[Message], ctx: StepContext) -> list[Message]:
        rounds = rounds_after_head(messages)
        protected = recent_rounds(rounds, ctx.keep_recent, ctx.target // 2 if ctx.target else None, ctx)
        calls = tool_calls_by_id(messages)
        out = [messages[0]] if messages else []
        for index, round_ in enumerate(rounds):
            if index >= len(rounds) - protected:
                out.extend(round_)
                continue
            out.extend(self._clear(m, calls) for m in round_)
        return out

    def _clear(self, message: Message, calls: dict[str, ToolUseBlock]) -> Message:
        if message.role != "user" or not message.tool_results:
            return message
        changed = False
        blocks: list[Block] = []
        for block in message.content:
            if (
                isinstance(block, ToolResultBlock)
                and len(block.content) >= self.MIN_CHARS
                and not block.content.startswith(CLEARED_PREFIX)
            ):
                call = describe_call(calls.get(block.tool_use_id))
                text = (
                    f"{CLEARED_PREFIX} to save context: {call} returned {len(block.content)} "
                    "characters; call it again if you need them]"
                )
                blocks.append(ToolResultBlock(block.tool_use_id, text, block.is_error))
                changed = True
            else:
                blocks.append(block)
        return Message("user", tuple(blocks)) if changed else message


# --- sliding-window ---------------------------------------------------------------------------


class SlidingWindow:
    """Head plus the last rounds: at most ``keep_recent``, fewer while over the target, never
    fewer than one. No model call; the last resort, since what it drops is gone."""

    name = "sliding-window"
    calls_model = False
    lossy = True

    async def apply(self, messages: list[Message], ctx: StepContext) -> list[Message]:
        rounds = rounds_after_head(messages)
        if not rounds:
            return list(messages)
        head = messages[0]
        replaced = tagged_blocks(head, [DROPPED, NOTES, FILES])
        already = sum(_dropped_count(b) for b in tagged_blocks(head, [DROPPED]))
        # Summaries of earlier compactions stay; notes and files are re-added by the manager.
        kept = [b for b in head.content[len(task_blocks(head)) :] if b not in replaced]
        n = min(max(ctx.keep_recent, 1), len(rounds))
        while True:
            dropped = len(flatten(rounds[:-n])) + already
            marker = tagged(
                DROPPED,
                f"{dropped} earlier messages were dropped to fit the context window; "
                "NOTES.md and any files re-read below hold what was kept.",
            )
            blocks = [*kept, marker] if dropped else kept
            candidate = [with_head_blocks(head, blocks), *flatten(rounds[-n:])]
            if n <= 1 or ctx.count(candidate) <= ctx.target:
                return candidate
            n -= 1


def _dropped_count(block: TextBlock) -> int:
    match = re.match(r"(\d+) earlier", tag_body(block))
    return int(match.group(1)) if match else 0


# --- offload ----------------------------------------------------------------------------------


class Offload:
    """A tool result over ``offload_cap`` tokens is cut to a preview; the full text goes to a
    file in the run's state folder and the preview says where, so the agent can read it back.
    Idempotent: an offloaded result is never offloaded again, and the file name comes from the
    tool call id. No model call."""

    name = "offload"
    calls_model = False
    lossy = False
    PREVIEW_SHARE = 0.25  # of the cap
    PAGE_SHARE = 0.9  # of the cap, for a read_file page (room for the note that ends it)

    async def apply(self, messages: list[Message], ctx: StepContext) -> list[Message]:
        return [self.message(m, ctx) for m in messages]

    def message(self, message: Message, ctx: StepContext) -> Message:
        if message.role != "user" or not message.tool_results:
            return message
        blocks: list[Block] = []
        changed = False
        for block in message.content:
            if isinstance(block, ToolResultBlock) and OFFLOADED_MARK not in block.content:
                tokens = ctx.count_text(block.content)
                if tokens > ctx.offload_cap:
                    block = self._offload(block, tokens, ctx)
                    changed = True
            blocks.append(block)
        return Message("user", tuple(blocks)) if changed else message

    def _offload(self, block: ToolResultBlock, tokens: int, ctx: StepContext) -> ToolResultBlock:
        text = block.content
        page = _READ_HEADER.match(text)
        # A read_file page keeps all the lines that fit under the cap: the rest is read on
        # from the file itself, so a quarter would only cost extra calls (measured at window
        # 3000: a 1,700-character page over the cap by a few tokens came back as 358).
        share = self.PAGE_SHARE if page is not None else self.PREVIEW_SHARE
        keep_chars = int(len(text) * ctx.offload_cap * share / tokens)
        if page is not None:
            keep_chars -= len(OFFLOADED_MARK) + len(page.group(1)) + 100  # the note that ends it
        keep_chars = max(200, keep_chars)
        preview = text[:keep_chars]
        if page is not None and "\n" in preview:
            # A read_file page: cut at a line and point at the same file, which read_file
            # offers, rather than at a file under .tinyharness/, which it does not.
            preview = preview[: preview.rfind("\n")]
            shown = _LINE_NUMBER.findall(preview)
            next_line = int(shown[-1]) + 1 if shown else int(page.group(2))
            tail = (
                f"\n{OFFLOADED_MARK} only the lines above are shown; continue with "
                f"read_file(path={page.group(1)!r}, start_line={next_line})]"
            )
            return ToolResultBlock(block.tool_use_id, preview + tail, block.is_error)
        where = ctx.spill(block.tool_use_id, text) if ctx.spill is not None else None
        if where:
            tail = (
                f"\n...\n{OFFLOADED_MARK} {len(text)} characters (~{tokens} tokens) in all; the full "
                f"output is saved at {where}; read it with read_file(path={where!r}, start_line=..., "
                "end_line=...)]"
            )
        else:
            tail = (
                f"\n...\n{OFFLOADED_MARK} {len(text)} characters (~{tokens} tokens) in all; the rest was cut]"
            )
        return ToolResultBlock(block.tool_use_id, preview + tail, block.is_error)

"""The project instructions, the plan and the pins in the window, and the audit that checks
them after a compaction.

``with_anchors`` writes the project instructions (AGENTS.md, word for word), the pinned texts
and the current plan into the head message, after the
task, as tagged blocks (replacing the ones a former compaction wrote), so they sit in the part
of the request that only a compaction rewrites: between compactions the plan changes through
``todo`` calls appended to the history, and the cached prefix stays intact.

``audit`` reads the request a compaction produced and says what of the task, the instructions,
the pins and the plan is not in it. The built-in steps never lose them (the manager puts them
back after a lossy step), so a finding means a strategy broke its contract; the manager reports it as an
``audit`` event and puts the missing parts back.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from ..anchors import Anchors, PlanItem
from ..messages import Block, Message, TextBlock, ToolResultBlock, ToolUseBlock
from .rewrite import INSTRUCTIONS, PINNED, PLAN, tag_of, tagged

PLAN_HEADER = "Your plan (kept outside the conversation; update it with the todo tool):"
INSTRUCTIONS_HEADER = (
    "Project instructions (from the instruction files below; they hold for the whole task and "
    "take precedence over your defaults):"
)
PINS_HEADER = "Pinned (kept word for word through every summary; keep to them):"
_SHOWN = 120  # characters of a missing item named in the audit event


def anchor_blocks(anchors: Anchors) -> list[TextBlock]:
    """The instructions, pins and plan blocks, each only when there is something to show."""
    blocks = []
    if anchors.instructions:
        body = "\n\n".join(item.shown for item in anchors.instructions)
        blocks.append(tagged(INSTRUCTIONS, f"{INSTRUCTIONS_HEADER}\n{body}"))
    if anchors.pins:
        blocks.append(tagged(PINNED, f"{PINS_HEADER}\n{anchors.pins_text()}"))
    if anchors.plan:
        blocks.append(tagged(PLAN, f"{PLAN_HEADER}\n{anchors.plan_text()}"))
    return blocks


def with_anchors(
    messages: Sequence[Message], anchors: Anchors, task: Sequence[Block] | None = None
) -> list[Message]:
    """``messages`` with the head's pins and plan blocks brought up to date (right after the
    task blocks). ``task``: the task blocks the head must open with (put back when lost)."""
    if not messages:
        return list(messages)
    head = messages[0]
    own = tuple(b for b in head.content if tag_of(b) is None)  # the task as the head has it now
    opening = tuple(task) if task is not None else own
    ours = (INSTRUCTIONS, PINNED, PLAN)
    rest = [b for b in head.content if tag_of(b) is not None and tag_of(b) not in ours]
    new_head = Message("user", (*opening, *anchor_blocks(anchors), *rest))
    if new_head == head:
        return list(messages)
    return [new_head, *messages[1:]]


def audit(messages: Sequence[Message], anchors: Anchors, task: Sequence[Block]) -> list[dict[str, Any]]:
    """What of the task (its blocks opening the first message, unchanged), each instruction
    file and each pin (verbatim, anywhere in the request) and the current plan (its block, or
    the newest ``todo`` call with the same items) the request ``messages`` lacks; [] when
    everything is there."""
    missing: list[dict[str, Any]] = []
    if task and (not messages or tuple(messages[0].content[: len(task)]) != tuple(task)):
        text = "".join(b.text for b in task if isinstance(b, TextBlock))
        missing.append({"kind": "task", "text": _shown(text)})
    texts = list(_texts(messages))
    for item in anchors.instructions:
        if not any(item.text in text for text in texts):
            missing.append({"kind": "instructions", "text": _shown(item.source)})
    for pin in anchors.pins:
        if not any(pin in text for text in texts):
            missing.append({"kind": "pin", "text": _shown(pin)})
    if anchors.plan and not _plan_present(messages, texts, anchors):
        step = anchors.current
        missing.append({"kind": "plan", "text": _shown(step.content if step else anchors.plan_text())})
    return missing


def pins_missing(messages: Sequence[Message], anchors: Anchors) -> list[str]:
    """The pins and instruction texts not found verbatim anywhere in ``messages``."""
    texts = list(_texts(messages))
    kept = [*(item.text for item in anchors.instructions), *anchors.pins]
    return [text for text in kept if not any(text in seen for seen in texts)]


def _plan_present(messages: Sequence[Message], texts: list[str], anchors: Anchors) -> bool:
    if any(anchors.plan_text() in text for text in texts):
        return True
    for message in reversed(messages):  # the newest todo call holds the plan the model sent
        for block in reversed(message.content):
            if isinstance(block, ToolUseBlock) and block.name == "todo" and isinstance(block.input, dict):
                items = block.input.get("items")
                return isinstance(items, list) and _same_plan(items, anchors.plan)
    return False


def _same_plan(items: list[Any], plan: list[PlanItem]) -> bool:
    sent = [(i.get("content", "").strip(), i.get("status")) for i in items if isinstance(i, dict)]
    return sent == [(item.content, item.status) for item in plan]


def _texts(messages: Sequence[Message]) -> Iterator[str]:
    """Every string of a request a pin could sit in: text, tool output and tool arguments."""
    for message in messages:
        for block in message.content:
            if isinstance(block, TextBlock):
                yield block.text
            elif isinstance(block, ToolResultBlock):
                yield block.content
            elif isinstance(block, ToolUseBlock):
                yield from _strings(block.input)


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _shown(text: str) -> str:
    return text if len(text) <= _SHOWN else text[: _SHOWN - 1] + "…"

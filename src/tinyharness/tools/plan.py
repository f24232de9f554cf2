"""The ``todo`` and ``pin`` tools: the model writes its plan and pins what it must not lose.

Both write to an ``Anchors`` object (the run's state, outside the history), which the context
manager puts back after every compaction. ``todo`` takes the whole list each time (as Claude
Code's TodoWrite and deepagents' write_todos do): a model that rewrites the list cannot leave
a half-applied edit, and the list it sent is the plan. The schemas bound every string and the
list's length, so a small model in JSON tool mode cannot run away inside one argument.
"""

from __future__ import annotations

from typing import Any

from ..anchors import (
    MAX_ITEM_CHARS,
    MAX_PIN_CHARS,
    MAX_PLAN_ITEMS,
    PLAN_STATUSES,
    AnchorError,
    Anchors,
    plan_items,
)
from ..events import EventBus
from .base import Tool, ToolError

PLAN_TOOL_NAMES = ("todo", "pin")

_TODO_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "items": {
            "type": "array",
            "description": "The whole plan, in order: every step, with its status.",
            # At least one step: offered an empty list, Qwen2.5-Coder-0.5B in JSON mode sent
            # todo(items=[]) three times in a row instead of a plan (measured).
            "minItems": 1,
            "maxItems": MAX_PLAN_ITEMS,
            "items": {
                "type": "object",
                "properties": {
                    "content": {
                        "type": "string",
                        "description": "The step, in a few words.",
                        "maxLength": MAX_ITEM_CHARS,
                    },
                    "status": {"enum": list(PLAN_STATUSES)},
                },
                "required": ["content", "status"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["items"],
    "additionalProperties": False,
}

_PIN_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "text": {
            "type": "string",
            "description": "The exact text to keep: a constraint, a decision, a value you must not lose.",
            "maxLength": MAX_PIN_CHARS,
        }
    },
    "required": ["text"],
    "additionalProperties": False,
}

TODO_DESCRIPTION = (
    "Write your plan for the task: the whole list of steps, each pending, in_progress or done "
    "(one in_progress at a time). Send the complete list every time you change a status or a "
    "step. The plan is kept outside the conversation and shown to you again after old messages "
    "are summarized, so use it for work of several steps."
)
PIN_DESCRIPTION = (
    "Pin a short text that must stay word for word in your context for the rest of the task "
    "(a requirement, a decision, an exact value). Pinned texts survive every summary of the "
    "conversation; pin only what you must not lose."
)


def plan_tools(anchors: Anchors, events: EventBus | None = None, *, pin: bool = True) -> list[Tool]:
    """``todo`` (and ``pin`` unless ``pin=False``) bound to ``anchors``; with ``events``, each
    change is reported as a ``plan`` or ``pin`` event."""

    def todo(items: list[dict[str, Any]]) -> str:
        if not items:
            raise ToolError("send the whole plan: at least one step, each with content and status")
        try:
            anchors.set_plan(plan_items(items))
        except AnchorError as exc:
            raise ToolError(str(exc)) from None
        working = sum(item.status == "in_progress" for item in anchors.plan)
        extra = " Keep one step in_progress at a time." if working > 1 else ""
        if events is not None:
            events.emit("plan", **plan_event(anchors))
        summary = anchors.plan_summary() or "the plan is empty"
        return f"Plan saved: {summary}.{extra}"

    def pin_text(text: str) -> str:
        try:
            added = anchors.add_pin(text)
        except AnchorError as exc:
            raise ToolError(str(exc)) from None
        if not added:
            return "Already pinned."
        if events is not None:
            events.emit("pin", text=text, source="model", pins=len(anchors.pins))
        return "Pinned: it stays in your context word for word after every summary."

    tools = [Tool("todo", TODO_DESCRIPTION, _TODO_SCHEMA, todo)]
    if pin:
        tools.append(Tool("pin", PIN_DESCRIPTION, _PIN_SCHEMA, pin_text))
    return tools


def plan_event(anchors: Anchors) -> dict[str, Any]:
    """The fields of a ``plan`` event: the items, how many are done, the current step."""
    current = anchors.current
    return {
        "items": [{"content": item.content, "status": item.status} for item in anchors.plan],
        "done": anchors.done,
        "total": len(anchors.plan),
        "current": current.content if current is not None else None,
    }

"""Shared pieces of the hardening suites (faults, crashes, bad input, secrets, concurrency):
script builders, a model wrapper that validates every request it receives, history checks
and the suite size knob.

``TINYHARNESS_SUITE_SCALE`` (default 1) multiplies the size of the long suites; bench-size runs
use e.g. ``TINYHARNESS_SUITE_SCALE=10``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tinyharness.context.validator import validate_messages
from tinyharness.messages import Message, ToolResultBlock
from tinyharness.models.base import Model, ModelRequest, ModelResponse

KNOWN_STOPS = frozenset(
    {"end_turn", "max_iterations", "token_budget", "stuck", "max_tokens", "context_overflow", "error"}
)


def scaled(default: int) -> int:
    """``default`` times ``TINYHARNESS_SUITE_SCALE`` (a positive number, default 1)."""
    raw = os.environ.get("TINYHARNESS_SUITE_SCALE", "1")
    try:
        factor = float(raw)
    except ValueError:
        factor = 1.0
    return max(1, int(default * max(factor, 0.01)))


def tool_turn(*uses: tuple[str, str, Any], purpose: str | None = "agent") -> dict[str, Any]:
    response: dict[str, Any] = {
        "stop_reason": "tool_use",
        "content": [{"type": "tool_use", "id": i, "name": n, "input": a} for i, n, a in uses],
        "usage": {"input_tokens": 100, "output_tokens": 20},
    }
    if purpose is not None:
        response["purpose"] = purpose
    return response


def answer(text: str, purpose: str | None = "agent") -> dict[str, Any]:
    response: dict[str, Any] = {
        "stop_reason": "end_turn",
        "content": [{"type": "text", "text": text}],
        "usage": {"input_tokens": 200, "output_tokens": 10},
    }
    if purpose is not None:
        response["purpose"] = purpose
    return response


def write_script(path: Path, responses: Sequence[dict[str, Any]]) -> str:
    # ASCII escapes: a script may hold lone surrogates, which only escaped JSON can carry.
    path.write_text(json.dumps({"responses": list(responses)}), encoding="utf-8")
    return str(path)


def read_events(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


class ValidatingModel:
    """Passes requests on to ``inner`` after checking each with the one request validator;
    a violation is recorded (and raised, so the run cannot quietly go on)."""

    def __init__(self, inner: Model) -> None:
        self.inner = inner
        self.name = inner.name
        self.requests = 0
        self.violations: list[str] = []

    @property
    def context_window(self) -> int | None:
        return self.inner.context_window

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self.requests += 1
        try:
            validate_messages(request.messages)
        except Exception as exc:
            self.violations.append(f"request {self.requests} ({request.purpose}): {exc}")
            raise
        return await self.inner.complete(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


def unanswered_tool_calls(messages: Sequence[Message]) -> list[str]:
    """Ids of tool_use blocks that have no tool_result in the message right after them."""
    lost: list[str] = []
    for index, message in enumerate(messages):
        uses = [b.id for b in message.tool_uses]
        if not uses:
            continue
        following = messages[index + 1] if index + 1 < len(messages) else None
        answered = (
            {b.tool_use_id for b in following.content if isinstance(b, ToolResultBlock)}
            if following is not None
            else set()
        )
        lost.extend(u for u in uses if u not in answered)
    return lost

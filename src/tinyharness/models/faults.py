"""Fault injection: a ``Model`` wrapper that makes a chosen share of requests fail.

``FaultyModel(inner, rate, seed)`` answers most requests from ``inner`` and, for a seeded random
share ``rate`` of them, does one of these instead:

* raises the typed errors the real adapters raise once the SDK's own retries are used up:
  ``rate_limit`` (HTTP 429) and ``server_error`` (HTTP 500) and ``connection`` (a dropped
  connection) as ``ModelError``, ``timeout`` as ``ModelTimeout``, ``context_length`` as
  ``ContextLengthExceeded``;
* returns a malformed response a real server can send: ``bad_json`` (a tool call whose
  arguments are a string that is not JSON), ``unknown_tool`` (a tool name nobody offered),
  ``empty`` (no content at all), ``cut_off`` (a reply stopped at the output limit in the middle
  of a tool call).

A fault never consumes a response of ``inner``: the request it replaces is simply not served,
so a scripted model's script stays aligned with the requests that do reach it. ``injected``
records what was done, in order, for assertions and reports.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from ..errors import ContextLengthExceeded, ModelError, ModelTimeout
from ..messages import Message, TextBlock, ToolUseBlock
from .base import Model, ModelRequest, ModelResponse, Usage

ERROR_KINDS = ("rate_limit", "server_error", "timeout", "connection", "context_length")
MALFORMED_KINDS = ("bad_json", "unknown_tool", "empty", "cut_off")
FAULT_KINDS = ERROR_KINDS + MALFORMED_KINDS


@dataclass(frozen=True, slots=True)
class Injected:
    """One injected fault: the 1-based request number, its purpose and the kind."""

    request: int
    purpose: str
    kind: str


class FaultyModel:
    """Wraps ``inner``; each request fails with probability ``rate`` (0 to 1), the kind drawn
    uniformly from ``kinds``. ``purposes`` limits faults to requests of those purposes."""

    def __init__(
        self,
        inner: Model,
        rate: float,
        seed: int,
        kinds: Iterable[str] = FAULT_KINDS,
        *,
        purposes: Iterable[str] = ("agent", "compact", "memory", "flush"),
    ) -> None:
        if not 0.0 <= rate <= 1.0:
            raise ValueError(f"rate must be between 0 and 1, got {rate}")
        chosen = tuple(kinds)
        unknown = sorted(set(chosen) - set(FAULT_KINDS))
        if unknown or not chosen:
            raise ValueError(f"unknown fault kinds {unknown}; choose from {FAULT_KINDS}")
        self.inner = inner
        self.rate = rate
        self.kinds = chosen
        self.purposes = frozenset(purposes)
        self.name = f"faulty({inner.name})"
        self.injected: list[Injected] = []
        self.requests = 0
        self._random = random.Random(seed)

    @property
    def context_window(self) -> int | None:
        return self.inner.context_window

    def counts(self) -> Counter[str]:
        """How many faults of each kind were injected."""
        return Counter(fault.kind for fault in self.injected)

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self.requests += 1
        # Draw both numbers on every request so the fault pattern depends only on the seed and
        # the request count, not on which requests happened to be eligible.
        roll, pick = self._random.random(), self._random.randrange(len(self.kinds))
        if request.purpose not in self.purposes or roll >= self.rate:
            return await self.inner.complete(request)
        kind = self.kinds[pick]
        self.injected.append(Injected(self.requests, request.purpose, kind))
        return _fault(kind, self.requests, request)

    async def aclose(self) -> None:
        await self.inner.aclose()


def _fault(kind: str, number: int, request: ModelRequest) -> ModelResponse:
    """Raise the error of ``kind`` or return its malformed response."""
    if kind == "rate_limit":
        raise ModelError("faulty: rate limited after retries; wait (HTTP 429 from the fault injector)")
    if kind == "server_error":
        raise ModelError("faulty: the server failed after retries (HTTP 500 from the fault injector)")
    if kind == "timeout":
        raise ModelTimeout("faulty: no answer from the fault injector in time, after retries")
    if kind == "connection":
        raise ModelError("faulty: cannot reach the fault injector (connection dropped)")
    if kind == "context_length":
        raise ContextLengthExceeded("faulty: the request does not fit the context (injected)")
    usage = Usage(10, 5)
    call_id = f"fault_{number}"
    if kind == "empty":
        return ModelResponse(Message("assistant", ()), "end_turn", usage)
    if request.final_only or request.purpose != "agent":
        # No tools were offered: a malformed reply here is an empty one.
        return ModelResponse(Message("assistant", ()), "end_turn", usage)
    if kind == "bad_json":
        use = ToolUseBlock(call_id, "read_file", '{"path": "README.md"')
        return ModelResponse(Message("assistant", (use,)), "tool_use", usage)
    if kind == "unknown_tool":
        use = ToolUseBlock(call_id, "launch_rockets", {"target": "moon"})
        return ModelResponse(Message("assistant", (use,)), "tool_use", usage)
    if kind == "cut_off":
        blocks = (TextBlock("Let me write the whole"), ToolUseBlock(call_id, "write_file", '{"path": "a'))
        return ModelResponse(Message("assistant", blocks), "max_tokens", usage)
    raise ValueError(f"unknown fault kind {kind!r}")  # pragma: no cover - checked in __init__

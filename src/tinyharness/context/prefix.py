"""How much of each request repeats the previous request's prefix (prompt-cache friendliness).

Providers cache a request's longest prefix seen before; everything after the first changed byte
is billed in full. The measure works message by message: the system prompt and the leading
messages shared with the previous request (the same objects, or equal ones) count as repeated,
as does the common start of the first message that differs. Serialized sizes are cached per
message, so a turn serializes only its new messages.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from ..messages import Message, message_to_dict


class PrefixTracker:
    def __init__(self) -> None:
        self._previous: tuple[str, tuple[Message, ...]] | None = None
        self._sizes: dict[int, tuple[Message, str]] = {}
        self.last_share: float | None = None
        self.shares: list[float] = []

    def _text(self, message: Message) -> str:
        hit = self._sizes.get(id(message))
        if hit is not None and hit[0] is message:
            return hit[1]
        text = json.dumps(message_to_dict(message), ensure_ascii=False, default=str)
        self._sizes[id(message)] = (message, text)
        return text

    def observe(self, system: str, messages: Sequence[Message]) -> float:
        """Record one request; returns the share (0..1) of its bytes that repeat the previous
        request's prefix (0 for the first request)."""
        current = tuple(messages)
        total = len(system) + sum(len(self._text(m)) for m in current)
        shared = 0
        if self._previous is not None:
            old_system, old = self._previous
            shared = _common(system, old_system)
            if shared == len(system):
                for index, message in enumerate(current):
                    if index >= len(old):
                        break
                    before = old[index]
                    if before is message or before == message:
                        shared += len(self._text(message))
                        continue
                    shared += _common(self._text(message), self._text(before))
                    break
        self._previous = (system, current)
        live = {id(m) for m in current}
        if len(self._sizes) > 4 * max(len(live), 256):
            self._sizes = {k: v for k, v in self._sizes.items() if k in live}
        share = shared / total if total else 0.0
        self.last_share = share
        self.shares.append(share)
        return share

    @property
    def mean_share(self) -> float:
        return sum(self.shares[1:]) / (len(self.shares) - 1) if len(self.shares) > 1 else 0.0


def _common(a: str, b: str) -> int:
    limit = min(len(a), len(b))
    if a[:limit] == b[:limit]:
        return limit
    low, high = 0, limit  # binary search on prefix equality: O(n log n) worst, fast in practice
    while low < high:
        mid = (low + high + 1) // 2
        if a[:mid] == b[:mid]:
            low = mid
        else:
            high = mid - 1
    return low

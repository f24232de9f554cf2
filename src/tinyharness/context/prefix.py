"""How much of each request repeats the previous request's prefix (prompt-cache friendliness).

Providers cache a request's longest prefix seen before; everything after the first changed byte
is billed in full. The measure works message by message: the system prompt and the leading
messages shared with the previous request (the same objects, or equal ones) count as repeated,
as does the common start of the first message that differs. Sizes (``message_size``) are cached per
message, and the leading messages that are the very objects of the previous request reuse its
running total, so a turn costs its new messages (plus a pointer comparison per message).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from itertools import compress, count
from operator import is_not

from ..messages import Message, Snapshot, frozen, known_prefix, message_to_dict
from .tokens import message_parts

# ``json.dumps(value, ensure_ascii=False, default=str)``, without building an encoder per call.
_ENCODER = json.JSONEncoder(ensure_ascii=False, default=str)


# What a block's framing adds to its strings when serialized (keys, quotes, type and id).
BLOCK_FRAME = 40


def message_size(message: Message) -> int:
    """A message's size as a request carries it: the characters of its strings (texts, tool
    names and arguments, results) plus a fixed frame per block. Why not the length of its JSON:
    encoding every new message cost about 10 µs, a fifth of the whole context path a turn."""
    return sum(map(len, message_parts(message))) + BLOCK_FRAME * len(message.content)


class PrefixTracker:
    def __init__(self) -> None:
        self._previous: tuple[str, tuple[Message, ...] | Snapshot] | None = None
        self._previous_body = 0  # size of the previous request's messages
        self._sizes: dict[int, tuple[Message, int]] = {}
        self.last_share: float | None = None
        self.shares: list[float] = []

    def _length(self, message: Message) -> int:
        hit = self._sizes.get(id(message))
        if hit is not None and hit[0] is message:
            return hit[1]
        size = message_size(message)
        self._sizes[id(message)] = (message, size)
        return size

    def _size(self, messages: Sequence[Message]) -> int:
        return sum(map(self._length, messages))

    def observe(self, system: str, messages: Sequence[Message]) -> float:
        """Record one request; returns the share (0..1) of its bytes that repeat the previous
        request's prefix (0 for the first request).

        Incremental: the leading messages that are the very objects of the previous request
        keep their sizes (the previous total minus the part that left), so a turn that only
        appended costs the new messages; a rewritten list (compaction) costs what changed."""
        current = frozen(messages)
        old_system, old = self._previous if self._previous is not None else ("", ())
        keep = identical_prefix(old, current)
        kept = self._previous_body - self._size(old[keep:])  # == size of current[:keep]
        body = kept + self._size(current[keep:])
        total = len(system) + body
        shared = 0
        if self._previous is not None:
            shared = _common(system, old_system)
            if shared == len(system):
                shared += kept  # the identical prefix repeats in full
                for index in range(keep, min(len(old), len(current))):
                    before, message = old[index], current[index]
                    if before is message or before == message:
                        shared += self._length(message)
                        continue
                    # the first message that differs: the common start of its serialized form
                    common = _common(
                        _ENCODER.encode(message_to_dict(message)), _ENCODER.encode(message_to_dict(before))
                    )
                    shared += min(common, self._length(message))
                    break
        self._previous = (system, current)
        self._previous_body = body
        if len(self._sizes) > 4 * max(len(current), 256):
            live = {id(m) for m in current}
            self._sizes = {k: v for k, v in self._sizes.items() if k in live}
        share = shared / total if total else 0.0
        self.last_share = share
        self.shares.append(share)
        return share

    @property
    def mean_share(self) -> float:
        return sum(self.shares[1:]) / (len(self.shares) - 1) if len(self.shares) > 1 else 0.0


def identical_prefix(old: Sequence[object], new: Sequence[object]) -> int:
    """How many leading items of ``new`` are the very objects (``is``) at the same positions
    of ``old``. Identity, not equality: an equal copy may serialize differently (1 vs 1.0).

    Two snapshots of one ``Transcript`` epoch (the agent's requests between compactions) are
    answered without a walk. Otherwise the walk runs in C (``map(is_not)``), a few nanoseconds
    per item (about a millisecond at 10,000 messages on a busy machine). The last answer for two
    tuples is remembered (tuples are immutable, and the memo holds them so their ids stay
    theirs): the validator, the prefix metric and the usage calibration all compare the same
    two requests, and only the first of them walks."""
    global _last_walk
    known = known_prefix(old, new)  # two snapshots of one Transcript that only grew: O(1)
    if known is not None:
        return known
    memo = _last_walk
    if memo[0] is old and memo[1] is new:
        return memo[2]
    limit = min(len(old), len(new))
    if limit == 0 or old[0] is not new[0]:
        keep = 0
    elif not any(map(is_not, old, new)):  # the common case: the list only grew
        keep = limit
    else:
        keep = next(compress(count(), map(is_not, old, new)))
    if type(old) in _IMMUTABLE and type(new) in _IMMUTABLE:
        _last_walk = (old, new, keep)
    return keep


_last_walk: tuple[object, object, int] = ((), (), 0)
_IMMUTABLE = (tuple, Snapshot)


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

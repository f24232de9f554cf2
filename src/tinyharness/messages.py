"""The one provider-neutral message type and its serializer.

Messages are Anthropic-shaped: a role (``user`` or ``assistant``) and a tuple of content blocks
(text, thinking, tool_use, tool_result). The system prompt is not a message; it travels beside
the list in a model request. ``to_dict``/``from_dict`` are the neutral serializer, used by the
scripted model file, the event stream and the Anthropic adapter; the OpenAI adapter converts
from these types in its own module.

May import nothing of the package: this is the ground floor. Read-only queries over a message
list live beside it in ``history``.
"""

from __future__ import annotations

import json
import operator
import weakref
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import count, islice
from typing import Any, Literal, SupportsIndex, TypeAlias, overload

Role = Literal["user", "assistant"]


@dataclass(frozen=True, slots=True)
class TextBlock:
    text: str
    type: Literal["text"] = field(default="text", init=False)


@dataclass(frozen=True, slots=True)
class ThinkingBlock:
    """Model reasoning. ``signature`` must be sent back unchanged; ``redacted`` holds opaque data."""

    thinking: str
    signature: str = ""
    redacted: str | None = None
    type: Literal["thinking"] = field(default="thinking", init=False)


@dataclass(frozen=True, slots=True)
class ToolUseBlock:
    """A tool call. ``input`` is normally a dict; a str holds raw arguments the model sent
    that could not be decoded (the loop reports them back as an error result)."""

    id: str
    name: str
    input: Any
    type: Literal["tool_use"] = field(default="tool_use", init=False)


@dataclass(frozen=True, slots=True)
class ToolResultBlock:
    """A tool call's result. Beside its text, what the harness knows of it, so nothing parses
    the text to learn it: ``truncated`` (cut to the result cap), ``next_line`` (a read that
    stopped before the end: the line to read next), ``refused`` (the guide refused the call and
    ``content`` says why). Saved with the session; never sent to a model's API."""

    tool_use_id: str
    content: str
    is_error: bool = False
    type: Literal["tool_result"] = field(default="tool_result", init=False)
    truncated: bool = False
    next_line: int | None = None
    refused: bool = False

    def meta(self) -> dict[str, Any]:
        """The metadata that is set, as saved (empty for a plain result)."""
        out: dict[str, Any] = {}
        if self.truncated:
            out["truncated"] = True
        if self.next_line is not None:
            out["next_line"] = self.next_line
        if self.refused:
            out["refused"] = True
        return out


Block: TypeAlias = TextBlock | ThinkingBlock | ToolUseBlock | ToolResultBlock


@dataclass(frozen=True, slots=True)
class Message:
    role: Role
    content: tuple[Block, ...]

    @classmethod
    def user(cls, text: str) -> Message:
        return cls("user", (TextBlock(text),))

    @classmethod
    def assistant(cls, text: str) -> Message:
        return cls("assistant", (TextBlock(text),))

    @property
    def text(self) -> str:
        """All text blocks joined; thinking and tool blocks are left out."""
        return "".join(b.text for b in self.content if isinstance(b, TextBlock))

    @property
    def tool_uses(self) -> list[ToolUseBlock]:
        return [b for b in self.content if isinstance(b, ToolUseBlock)]

    @property
    def tool_results(self) -> list[ToolResultBlock]:
        return [b for b in self.content if isinstance(b, ToolResultBlock)]


# --- serializer -------------------------------------------------------------------------------


def block_to_dict(block: Block, *, meta: bool = True) -> dict[str, Any]:
    """The block as a dict (Anthropic's shape); a tool result's metadata under ``"meta"``
    unless ``meta`` is False (what goes on the wire, or is counted as the model's input)."""
    if isinstance(block, TextBlock):
        return {"type": "text", "text": block.text}
    if isinstance(block, ThinkingBlock):
        if block.redacted is not None:
            return {"type": "redacted_thinking", "data": block.redacted}
        return {"type": "thinking", "thinking": block.thinking, "signature": block.signature}
    if isinstance(block, ToolUseBlock):
        return {"type": "tool_use", "id": block.id, "name": block.name, "input": block.input}
    out: dict[str, Any] = {
        "type": "tool_result",
        "tool_use_id": block.tool_use_id,
        "content": block.content,
    }
    if block.is_error:
        out["is_error"] = True
    if meta and (saved := block.meta()):
        out["meta"] = saved
    return out


def block_from_dict(data: dict[str, Any]) -> Block:
    kind = data.get("type")
    if kind == "text":
        return TextBlock(str(data["text"]))
    if kind == "thinking":
        return ThinkingBlock(str(data.get("thinking", "")), str(data.get("signature", "")))
    if kind == "redacted_thinking":
        return ThinkingBlock("", "", redacted=str(data["data"]))
    if kind == "tool_use":
        return ToolUseBlock(str(data["id"]), str(data["name"]), data.get("input", {}))
    if kind == "tool_result":
        meta = data.get("meta")
        saved: dict[str, Any] = meta if isinstance(meta, dict) else {}
        next_line = saved.get("next_line")
        return ToolResultBlock(
            str(data["tool_use_id"]),
            _result_text(data.get("content", "")),
            bool(data.get("is_error")),
            truncated=bool(saved.get("truncated")),
            next_line=next_line if isinstance(next_line, int) and not isinstance(next_line, bool) else None,
            refused=bool(saved.get("refused")),
        )
    raise ValueError(f"unknown content block type {kind!r}")


def _result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return json.dumps(content, ensure_ascii=False)


def message_to_dict(message: Message) -> dict[str, Any]:
    return {"role": message.role, "content": [block_to_dict(b) for b in message.content]}


def message_from_dict(data: dict[str, Any]) -> Message:
    role = data.get("role")
    if role not in ("user", "assistant"):
        raise ValueError(f"message role must be 'user' or 'assistant', got {role!r}")
    content = data.get("content", [])
    if isinstance(content, str):
        return Message(role, (TextBlock(content),))
    return Message(role, tuple(block_from_dict(b) for b in content))


def messages_to_dicts(messages: Iterable[Message]) -> list[dict[str, Any]]:
    return [message_to_dict(m) for m in messages]


def messages_from_dicts(data: Iterable[dict[str, Any]]) -> list[Message]:
    return [message_from_dict(d) for d in data]


# --- API rounds -------------------------------------------------------------------------------


def group_rounds(messages: Sequence[Message]) -> list[list[Message]]:
    """Split a history into API rounds: each assistant message starts a round, and the user
    messages after it (its tool results) belong to it. User messages before the first assistant
    message form the head round. Cutting between rounds never separates a tool_use from its
    tool_result."""
    rounds: list[list[Message]] = []
    for message in messages:
        if message.role == "assistant" or not rounds:
            rounds.append([message])
        else:
            rounds[-1].append(message)
    return rounds


# --- a history that knows it only grew --------------------------------------------------------

_epochs = count(1)
# id(snapshot) -> (snapshot, epoch): the snapshot is held so its id stays its own.
_SNAPSHOTS: OrderedDict[int, tuple[Snapshot, int]] = OrderedDict()
MAX_SNAPSHOTS = 16


class Snapshot(Sequence[Message]):
    """The first ``len`` messages of a ``Transcript`` as they were when it was taken: an
    immutable sequence that equals the tuple of them (and pickles as one).

    Taking it costs O(1), where a tuple would copy the whole history every request (about 100
    ns a message on a busy machine, the one per-turn cost that grew with the history). It reads
    the transcript's own list, which only grows at its end while this view is live; before any
    other change the transcript hands its live views a copy of its messages (``freeze``)."""

    __slots__ = ("__weakref__", "_items", "_length")

    def __init__(self, items: list[Message], length: int) -> None:
        self._items = items
        self._length = length

    def __len__(self) -> int:
        return self._length

    @overload
    def __getitem__(self, index: SupportsIndex) -> Message: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[Message, ...]: ...

    def __getitem__(self, index: SupportsIndex | slice) -> Message | tuple[Message, ...]:
        if isinstance(index, slice):
            start, stop, step = index.indices(self._length)
            if step > 0:
                return tuple(self._items[start:stop:step])
            return tuple(self._items[i] for i in range(start, stop, step))
        i = operator.index(index)
        if i < 0:
            i += self._length
        if not 0 <= i < self._length:
            raise IndexError("snapshot index out of range")
        return self._items[i]

    def __iter__(self) -> Iterator[Message]:
        return islice(self._items, self._length)

    def __reversed__(self) -> Iterator[Message]:
        items = self._items
        return (items[i] for i in range(self._length - 1, -1, -1))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Snapshot):
            return self is other or tuple(self) == tuple(other)
        if isinstance(other, tuple):
            return tuple(self) == other
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return f"Snapshot({tuple(self)!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (tuple, (tuple(self),))

    def _freeze(self, items: list[Message]) -> None:
        self._items = items


class Transcript(list[Message]):
    """The agent's message list: a ``list`` that knows whether it only grew.

    Between compactions a history only grows, yet every request is checked, counted and
    compared with the one before it (validator, token ledger, prefix share, checkpoint). Finding
    how much of a request repeats the previous one by walking both lists costs O(history) per
    turn, about a millisecond at 10,000 messages. Here ``append``, ``extend`` and ``+=`` are
    growth; every other change (assignment, deletion, insert, pop, sort...) starts a new
    ``epoch``. Two ``snapshot()`` tuples of one epoch share their leading messages (the very
    objects) up to the shorter one's length, which ``known_prefix`` answers in O(1)."""

    def __init__(self, messages: Iterable[Message] = ()) -> None:
        super().__init__(messages)
        self._epoch = next(_epochs)
        self._snapshot: Snapshot | None = None
        # The snapshots that may still read this list (see ``Snapshot``); by reference, since
        # a snapshot hashes as its tuple, which may hold unhashable tool input.
        self._views: list[weakref.ref[Snapshot]] = []
        self._prune_at = 64

    @property
    def epoch(self) -> int:
        """Changes whenever the list changes other than by growing at its end."""
        return self._epoch

    def snapshot(self) -> Snapshot:
        """The messages as an immutable sequence (the same one while nothing changed), taken in
        O(1) and registered with this epoch for ``known_prefix``."""
        cached = self._snapshot
        if cached is not None and len(cached) == len(self):
            return cached
        snap = Snapshot(self, len(self))
        if len(self._views) >= self._prune_at:
            # Dropped views are pruned when the list doubled since the last pruning: amortised
            # O(1) per snapshot even while many stay alive (a caller keeping every request).
            self._views = [ref for ref in self._views if ref() is not None]
            self._prune_at = max(64, 2 * len(self._views))
        self._views.append(weakref.ref(snap))
        _SNAPSHOTS[id(snap)] = (snap, self._epoch)
        if len(_SNAPSHOTS) > MAX_SNAPSHOTS:
            _SNAPSHOTS.popitem(last=False)
        self._snapshot = snap
        return snap

    def __reduce_ex__(self, protocol: SupportsIndex) -> tuple[Any, ...]:
        return (Transcript, (list(self),))  # a copy is a new list: a new epoch

    def _rewritten(self) -> None:
        """Called before any change other than growth: the live snapshots keep what they saw
        (one copy shared by all of them), and a new epoch starts."""
        live = [view for view in (ref() for ref in self._views) if view is not None]
        if live:
            frozen = list(self)
            for view in live:
                view._freeze(frozen)
        self._views, self._prune_at = [], 64
        self._epoch = next(_epochs)
        self._snapshot = None

    # Every list method that can change what is already there starts a new epoch.
    def __setitem__(self, index: Any, value: Any) -> None:
        self._rewritten()
        super().__setitem__(index, value)

    def __delitem__(self, index: SupportsIndex | slice) -> None:
        self._rewritten()
        super().__delitem__(index)

    def __imul__(self, times: SupportsIndex) -> Transcript:
        self._rewritten()
        return super().__imul__(times)

    def insert(self, index: SupportsIndex, message: Message) -> None:
        self._rewritten()
        super().insert(index, message)

    def pop(self, index: SupportsIndex = -1) -> Message:
        self._rewritten()
        return super().pop(index)

    def remove(self, message: Message) -> None:
        self._rewritten()
        super().remove(message)

    def clear(self) -> None:
        self._rewritten()
        super().clear()

    def sort(self, *args: Any, **kwargs: Any) -> None:
        self._rewritten()
        super().sort(*args, **kwargs)

    def reverse(self) -> None:
        self._rewritten()
        super().reverse()


def frozen(messages: Sequence[Message]) -> tuple[Message, ...] | Snapshot:
    """``messages`` as an immutable sequence: itself when it is one (a tuple, a ``Snapshot``),
    else a tuple copy. What a check keeps to compare the next request with."""
    return messages if isinstance(messages, tuple | Snapshot) else tuple(messages)


def known_prefix(old: Sequence[object], new: Sequence[object]) -> int | None:
    """How many leading items ``old`` and ``new`` share as the very objects, when both are
    snapshots of one epoch of a ``Transcript`` (then it is the shorter one's length); None when
    that is not known, so the caller compares them itself."""
    a, b = _SNAPSHOTS.get(id(old)), _SNAPSHOTS.get(id(new))
    if a is None or b is None or a[0] is not old or b[0] is not new or a[1] != b[1]:
        return None
    return min(len(old), len(new))

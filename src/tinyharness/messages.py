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
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

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
    tool_use_id: str
    content: str
    is_error: bool = False
    type: Literal["tool_result"] = field(default="tool_result", init=False)


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


def block_to_dict(block: Block) -> dict[str, Any]:
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
        return ToolResultBlock(
            str(data["tool_use_id"]), _result_text(data.get("content", "")), bool(data.get("is_error"))
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

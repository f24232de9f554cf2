"""JSON tool mode: tool calls for models and servers without native tool calling.

Small local models behind llama.cpp return no ``tool_calls`` (measured with SmolLM2-135M and
Qwen2.5-Coder-0.5B), but the server enforces a JSON schema given as ``response_format`` with its
grammar sampler. So in this mode every reply is one JSON *action*::

    {"tool": "<tool name>", "arguments": {...}}             # call a tool
    {"tool": "final_answer", "arguments": {"answer": ...}}  # answer and stop

The schema is an ``anyOf`` with one branch per tool (its own ``input_schema`` as ``arguments``)
plus the ``final_answer`` branch, so the grammar constrains the arguments too. The answer is a
tool like the others, not a separate ``{"final": ...}`` shape: with a "final" key on offer, the
first key of the first action was "final" with p=0.92 for Qwen2.5-Coder-0.5B (0.59 for the
1.5B), and both answered the task by echoing it. Strings the model writes freely are bounded
by ``maxLength`` in the schema (the grammar ends them), since a frequency penalty, the usual
cure for repetition, corrupts constrained output. The protocol is also
described in text before the system prompt, because a model follows a grammar better when it
knows what it is for. History is sent as plain text: earlier actions as the assistant's JSON,
tool results as user messages ``Result of <tool> (<id>):``.

Adapters use :func:`plan_request` before a call and :func:`reply_message` after it (both wire
adapters take the same path); nothing here talks to a server. Invalid JSON from the model never
raises: it becomes a text reply.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, cast, get_args

from ..errors import ConfigError
from ..messages import Block, Message, TextBlock, ThinkingBlock, ToolResultBlock, ToolUseBlock
from .base import ModelRequest, StopReason, ToolSpec

ToolMode = Literal["native", "json"]
TOOL_MODES: tuple[str, ...] = get_args(ToolMode)

ACTION_SCHEMA_NAME = "action"

_CALL_ID = re.compile(r"^call_(\d+)$")
_PARTIAL_FINAL = re.compile(
    r'^\s*(?:```[a-zA-Z]*\s*)?\{\s*(?:"final"\s*:|"tool"\s*:\s*"final_answer"\s*,\s*"arguments"\s*:'
    r'\s*\{\s*"answer"\s*:)\s*"(.*)$',
    re.DOTALL,
)
_FENCE = re.compile(r"^\s*```[a-zA-Z]*\s*\n?(.*?)\n?\s*```\s*$", re.DOTALL)


@dataclass(frozen=True, slots=True)
class JsonModePlan:
    """What to send in JSON mode. ``schema`` is None when the reply is free text (no tools);
    ``expects_action`` is False when the schema is the caller's ``response_schema``."""

    system: str
    messages: tuple[Message, ...]
    schema: dict[str, Any] | None
    expects_action: bool


FINAL_TOOL = "final_answer"
UNBOUNDED_TOOLS = frozenset({"write_file", "edit_file", "update_notes", "shell", "memory"})
FINAL_ARGUMENT = "answer"
MAX_ANSWER_CHARS = 2000  # the grammar ends an answer here instead of a repetition loop
MAX_SHORT_STRING_CHARS = 400  # note text and other free one-line strings

# Measured with SmolLM2-135M: without this line after a tool result it calls tools at random
# until stopped; with it, it answers once it has what it needs.
NEXT_ACTION_HINT = f"Reply with your next JSON action, or call {FINAL_TOOL} if you can answer now."
FINAL_SPEC = ToolSpec(
    FINAL_TOOL,
    "Give your final answer to the user; this ends the task.",
    {
        "type": "object",
        "properties": {FINAL_ARGUMENT: {"type": "string", "maxLength": MAX_ANSWER_CHARS}},
        "required": [FINAL_ARGUMENT],
        "additionalProperties": False,
    },
)


def check_tool_mode(tool_mode: str) -> ToolMode:
    """``tool_mode`` if it is a valid mode; ConfigError otherwise."""
    if tool_mode in TOOL_MODES:
        return cast(ToolMode, tool_mode)
    raise ConfigError(f"tool mode must be one of {', '.join(TOOL_MODES)}, not {tool_mode!r}")


def action_schema(
    tools: Sequence[ToolSpec],
    *,
    final_only: bool = False,
    messages: Sequence[Message] = (),
    tool_choice: str | None = None,
    final_allowed: bool = True,
) -> dict[str, Any]:
    """The JSON schema of one action: a call of one of ``tools`` or of ``final_answer``; with
    ``tool_choice``, a call of that tool only; with ``final_allowed`` False, not of
    ``final_answer`` (the protocol text still names it, so the prompt prefix stays the same).
    A tool's ``choices`` (given ``messages``) narrow its string arguments to an ``enum``; a
    forced call must give the narrowed arguments, first (measured with SmolLM2-135M: a note
    written after its fixed ``path`` is about that file, a note written before it mostly
    repeats a path)."""
    if final_only or not tools:
        return _branch(FINAL_SPEC, messages)
    forced = [tool for tool in tools if tool.name == tool_choice]
    if forced:
        return _branch(forced[0], messages, forced=True)
    offered = (*tools, FINAL_SPEC) if final_allowed else tuple(tools)
    return {"anyOf": [_branch(tool, messages) for tool in offered]}


def _branch(tool: ToolSpec, messages: Sequence[Message], *, forced: bool = False) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "tool": {"const": tool.name},
            "arguments": _bounded(_narrowed(tool, messages, forced=forced), tool.name),
        },
        "required": ["tool", "arguments"],
        "additionalProperties": False,
    }


def _bounded(schema: dict[str, Any], tool_name: str) -> dict[str, Any]:
    """Free string arguments get a ``maxLength`` (file contents and edits excepted: they must
    hold whatever the file needs), so a model repeating itself inside a string is cut by the
    grammar, not by the output limit."""
    if tool_name in UNBOUNDED_TOOLS:
        return schema
    properties: dict[str, Any] = schema.get("properties", {})
    bounded = {
        name: {**spec, "maxLength": MAX_SHORT_STRING_CHARS}
        for name, spec in properties.items()
        if spec.get("type") == "string" and "enum" not in spec and "maxLength" not in spec
    }
    return {**schema, "properties": properties | bounded} if bounded else schema


def _narrowed(tool: ToolSpec, messages: Sequence[Message], *, forced: bool = False) -> dict[str, Any]:
    schema = tool.input_schema or {"type": "object"}
    choices = tool.choices(messages) if tool.choices is not None else {}
    properties: dict[str, Any] = dict(schema.get("properties", {}))
    strings = {
        name: choice for name, choice in choices.items() if properties.get(name, {}).get("type") == "string"
    }
    narrowed = {
        name: {**properties[name], "enum": list(values)}
        for name, values in strings.items()
        if values and not isinstance(values, int)
    }
    # A bound: the grammar ends the string there (the 0.5B, offered one line of the file as
    # edit_file's old text, wrote its new line as one expression repeated to max_tokens).
    bounded = {
        name: {**properties[name], "maxLength": min(bound, properties[name].get("maxLength", bound))}
        for name, bound in strings.items()
        if isinstance(bound, int) and bound > 0
    }
    properties |= bounded
    if not narrowed:
        return {**schema, "properties": properties} if bounded else schema
    if not forced:
        return {**schema, "properties": properties | narrowed}
    # Narrowed arguments first (the grammar writes properties in order), with their enums.
    ordered = narrowed | {name: spec for name, spec in properties.items() if name not in narrowed}
    required = [*narrowed, *(n for n in schema.get("required", []) if n not in narrowed)]
    return {**schema, "properties": ordered, "required": required}


def protocol_prompt(tools: Sequence[ToolSpec], *, final_only: bool = False) -> str:
    """The text that explains the JSON protocol and lists the tools. Kept short, with tools as
    one-line signatures and a concrete example: small models copy placeholders literally."""
    answer = f'{{"tool": "{FINAL_TOOL}", "arguments": {{"{FINAL_ARGUMENT}": "<your answer>"}}}}'
    if final_only or not tools:
        return f"Tools are not available now. Reply with exactly one JSON object and nothing else:\n{answer}"
    example = next((t for t in tools if t.name == "read_file"), None)
    call = (
        '{"tool": "read_file", "arguments": {"path": "README.md"}}'
        if example
        else '{"tool": "<tool name>", "arguments": {<arguments>}}'
    )
    lines = [
        "You act by replying with exactly one JSON object and nothing else.",
        f"To call a tool, for example: {call}",
        "After a tool call, the next message gives you its result.",
        f"When you have what the task asks for, call {FINAL_TOOL} with your answer.",
        "",
        "Tools:",
    ]
    offered = (*tools, FINAL_SPEC)
    lines.extend(f"- {_signature(tool)}: {_first_sentence(tool.description)}" for tool in offered)
    return "\n".join(lines)


def _signature(tool: ToolSpec) -> str:
    properties: dict[str, Any] = tool.input_schema.get("properties", {})
    required = set(tool.input_schema.get("required", []))
    params = [
        f"{name}{'' if name in required else '?'}: {spec.get('type', 'any')}"
        for name, spec in properties.items()
    ]
    return f"{tool.name}({', '.join(params)})"


def _first_sentence(text: str) -> str:
    text = " ".join(text.split())
    end = text.find(". ")
    return text if end < 0 else text[: end + 1]


def plan_request(request: ModelRequest) -> JsonModePlan:
    """The system prompt, text-only history and schema to send for ``request`` in JSON mode."""
    history = history_as_text(request.messages)
    if request.response_schema is not None:
        return JsonModePlan(request.system, history, request.response_schema, False)
    if not request.tools and not request.final_only:
        # Nothing to call (a summary, say): a free-text answer needs no protocol.
        return JsonModePlan(request.system, history, None, False)
    # With tools, a final-only request keeps the same protocol text (the grammar alone allows
    # only the answer): the prompt prefix stays the one the server has cached, so the answer
    # costs the new tokens, not the whole window again (minutes for a small model on 2 cores).
    protocol = protocol_prompt(request.tools, final_only=not request.tools)
    system = f"{request.system}\n\n{protocol}" if request.system else protocol
    schema = action_schema(
        request.tools,
        final_only=request.final_only,
        messages=request.messages,
        tool_choice=request.tool_choice,
        final_allowed=request.final_allowed,
    )
    return JsonModePlan(system, history, schema, True)


def history_as_text(messages: Sequence[Message]) -> tuple[Message, ...]:
    """``messages`` with tool calls and results rewritten as text; thinking is dropped."""
    tool_names: dict[str, str] = {}
    converted: list[Message] = []
    for message in messages:
        parts: list[str] = []
        hint_at = -1  # the hint follows the last result, before the harness's words after it
        for block in message.content:
            if isinstance(block, TextBlock):
                if block.text:
                    parts.append(block.text)
            elif isinstance(block, ToolUseBlock):
                tool_names[block.id] = block.name
                parts.append(action_text(block))
            elif isinstance(block, ToolResultBlock):
                name = tool_names.get(block.tool_use_id, "tool")
                flag = " (error)" if block.is_error else ""
                parts.append(f"Result of {name} ({block.tool_use_id}){flag}:\n{block.content}")
                hint_at = len(parts)
        if hint_at >= 0:
            # On every result message, so the prefix stays stable; before what the harness adds
            # after the results (a nudge, the answer prompt ending with the task's words), so
            # those words are the last the model reads before its action.
            parts.insert(hint_at, NEXT_ACTION_HINT)
        if parts:
            converted.append(Message(message.role, (TextBlock("\n\n".join(parts)),)))
    return tuple(converted)


def action_text(call: ToolUseBlock) -> str:
    """A tool call written as the JSON action the model would have produced."""
    return json.dumps({"tool": call.name, "arguments": call.input}, ensure_ascii=False)


@dataclass
class CallIds:
    """The ids an adapter gives tool calls that come without one (every JSON-mode action): see
    ``next_call_id``. One per adapter, so ids never repeat within a run."""

    last_issued: int = 0

    def next(self, messages: Sequence[Message]) -> str:
        call_id, self.last_issued = next_call_id(messages, self.last_issued)
        return call_id


def reply_message(
    text: str,
    *,
    truncated: bool,
    expects_action: bool,
    messages: Sequence[Message],
    call_ids: CallIds,
    thinking: Sequence[ThinkingBlock] = (),
) -> tuple[Message, StopReason]:
    """The assistant message and stop reason for a JSON-mode reply, whatever wire it came over:
    an action becomes a tool call (with the next id) or a final answer; a reply that answers a
    caller's own schema, or free text, stays text. ``thinking`` (reasoning the server returned
    beside the text) goes first, as in a native reply."""
    blocks: tuple[Block, ...]
    stop_reason: StopReason
    if expects_action:
        blocks, stop_reason = parse_reply(text, truncated=truncated, call_id=call_ids.next(messages))
    else:
        blocks, stop_reason = (TextBlock(text),), "max_tokens" if truncated else "end_turn"
    return Message("assistant", (*thinking, *blocks)), stop_reason


def next_call_id(messages: Sequence[Message], last_issued: int) -> tuple[str, int]:
    """A ``call_<n>`` id above every such id in ``messages`` and above ``last_issued`` (so ids
    stay unique after a resume and after compaction); returns the id and its number."""
    highest = last_issued
    for message in messages:
        for block in message.content:
            if isinstance(block, ToolUseBlock):
                match = _CALL_ID.match(block.id)
                if match:
                    highest = max(highest, int(match.group(1)))
    return f"call_{highest + 1}", highest + 1


def parse_reply(text: str, *, truncated: bool, call_id: str) -> tuple[tuple[Block, ...], StopReason]:
    """The content blocks and stop reason for a JSON-mode reply.

    A tool action becomes a ``ToolUseBlock`` with ``call_id``; a ``final_answer`` call (or the
    older ``{"final": ...}`` shape) becomes text.
    Anything else (invalid JSON, another shape) is returned as the raw text, with a
    ``max_tokens`` stop when the reply was cut; a final answer cut short keeps its text."""
    action = decode_json_object(text)
    if isinstance(action, dict):
        name = action.get("tool", action.get("name"))
        if name == FINAL_TOOL:
            answer = _arguments(action.get("arguments", action.get("input")))
            value = answer.get(FINAL_ARGUMENT) if isinstance(answer, dict) else answer
            final_text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
            return (TextBlock(final_text),), "end_turn"
        if isinstance(name, str) and name:
            arguments = _arguments(action.get("arguments", action.get("input")))
            return (ToolUseBlock(call_id, name, arguments),), "tool_use"
        if "final" in action:
            final = action["final"]
            answer = final if isinstance(final, str) else json.dumps(final, ensure_ascii=False)
            return (TextBlock(answer),), "end_turn"
    if truncated:
        partial = _partial_final(text)
        return (TextBlock(text if partial is None else partial),), "max_tokens"
    return (TextBlock(text),), "end_turn"


def decode_json_object(text: str) -> Any:
    """The JSON value in ``text``, tolerating a Markdown fence and text around one object;
    None when there is none."""
    fenced = _FENCE.match(text)
    candidate = fenced.group(1) if fenced else text
    try:
        return json.loads(candidate)
    except ValueError:
        pass
    start = candidate.find("{")
    if start < 0:
        return None
    try:
        value, _ = json.JSONDecoder().raw_decode(candidate[start:])
    except ValueError:
        return None
    return value


def _arguments(raw: Any) -> Any:
    """Arguments as a dict when possible; otherwise the raw text, for the loop to report."""
    if raw is None:
        return {}
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, str):
        # Some models double-encode the arguments as a JSON string.
        try:
            decoded = json.loads(raw)
        except ValueError:
            return raw
        return decoded if isinstance(decoded, dict) else raw
    return json.dumps(raw, ensure_ascii=False)


def final_so_far(text: str) -> str | None:
    """The final answer decoded so far from a streaming ``{"final": "...`` reply, or None while
    the reply is not (yet) a final answer; what a UI shows token by token in JSON mode."""
    return _partial_final(text)


class AnswerStream:
    """What a streaming adapter shows of its reply's text deltas: every delta as it comes in
    native mode; in JSON mode only the final answer's new text as it decodes (an action that
    calls a tool shows nothing). Both wire adapters stream through it."""

    def __init__(self, tool_mode: ToolMode) -> None:
        self._json = tool_mode == "json"
        self._raw = ""
        self._shown = ""

    def feed(self, delta: str) -> str:
        """The text to show for ``delta``; empty when there is nothing new to show."""
        if not self._json:
            return delta
        self._raw += delta
        answer = final_so_far(self._raw)
        # A decode that no longer extends what was shown (a trimmed escape) waits for more.
        if answer is None or not answer.startswith(self._shown) or len(answer) <= len(self._shown):
            return ""
        new, self._shown = answer[len(self._shown) :], answer
        return new


def _partial_final(text: str) -> str | None:
    """The answer so far of a ``{"final": "...`` reply cut by the token limit, or None."""
    match = _PARTIAL_FINAL.match(text)
    if match is None:
        return None
    body = match.group(1)
    # The cut may fall inside an escape sequence (at most 6 chars, as in \u00e9): trim it.
    for end in range(len(body), max(len(body) - 7, -1), -1):
        try:
            value = json.loads(f'"{body[:end]}"')
        except ValueError:
            continue
        return value if isinstance(value, str) else None
    return None

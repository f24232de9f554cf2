"""Anthropic Messages adapter, through the official ``anthropic`` SDK (``AsyncAnthropic``).

The neutral messages are Anthropic-shaped, so the wire mapping is the neutral serializer
(:func:`..messages.block_to_dict`) with two fixes the API demands:
- a ``tool_use`` whose ``input`` is not a dict (raw arguments that did not decode) is sent with
  ``input: {}``: the API requires an object, and the raw text already reached the model in the
  error result the loop wrote for that call;
- empty text blocks are left out (the API rejects them).

Thinking blocks round-trip exactly: ``thinking`` with its ``signature``, and
``redacted_thinking`` with its opaque ``data``, as received. ``stop_reason``: ``tool_use`` ->
``tool_use``; ``max_tokens`` and ``model_context_window_exceeded`` (the output was cut) ->
``max_tokens``; ``end_turn``, ``stop_sequence``, ``refusal``, ``pause_turn`` -> ``end_turn``.
Usage counts cached input too (``cache_read_input_tokens`` + ``cache_creation_input_tokens``),
so ``input_tokens`` is the whole prompt, as with the other adapters; the reads and the writes
are reported apart (``Usage.cached_tokens``, ``Usage.cache_write_tokens``), since a write costs
1.25x (5 minutes) or 2x (1 hour) the input price and a read 0.1x.

Prompt caching (:class:`CacheConfig`, on by default): the Messages API caches nothing without
``cache_control`` breakpoints, at most 4 a request. They go where they pay: the last tool (the
tool list), the system prompt, and two rolling ones on the history: the last block of the
latest message (this request writes its whole prefix) and the last block of the message that
ended the previous request (which that request wrote, so this one reads it exactly even when
the turn added more than the API's 20-block lookback). After a compaction the history is new:
its prefix is written once by the next request and read by the ones after it.

``tool_mode="json"`` speaks the :mod:`.json_mode` protocol by prompt alone and parses the reply
tolerantly: the Messages API has no grammar-enforced schema for it (llama.cpp's ``/v1/messages``
ignores ``output_config``). A ``response_schema`` goes out as ``output_config.format``.
"""

from __future__ import annotations

import functools
import json
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import anthropic
from anthropic.types import Message as WireMessage

from ..errors import ConfigError, ModelError
from ..messages import Block, Message, TextBlock, ThinkingBlock, ToolUseBlock, block_to_dict
from . import json_mode
from .base import ModelRequest, ModelResponse, StopReason, StreamItem, ToolSpec, Usage
from .providers import ANTHROPIC
from .wire import ReplyText, WireModel, WireOptions

if TYPE_CHECKING:
    from typing_extensions import Unpack

# Wire stop reasons that are not end_turn (the output was cut, or tools were called).
_STOP_REASONS: dict[str, StopReason] = {
    "tool_use": "tool_use",
    "max_tokens": "max_tokens",
    "model_context_window_exceeded": "max_tokens",
}


MAX_BREAKPOINTS = 4  # the Messages API's limit of cache_control blocks per request
CacheTTL = Literal["5m", "1h"]


@dataclass(frozen=True)
class CacheConfig:
    """How the adapter asks the Messages API to cache the prompt.

    - ``enabled``: place ``cache_control`` breakpoints (tools, system, the rolling two).
    - ``ttl``: how long an entry lives unread, ``"5m"`` (a write costs 1.25x input) or ``"1h"``
      (2x; for runs whose turns are minutes apart, such as a human in a chat).
    - ``min_tokens``: leave out a breakpoint whose prefix is shorter (estimated at 3 characters
      a token, so a short prefix is never taken for a long one). The API caches nothing below
      its per-model minimum (1,024 to 4,096 tokens) anyway; 0 places every breakpoint.
    """

    enabled: bool = True
    ttl: CacheTTL = "5m"
    min_tokens: int = 0

    def __post_init__(self) -> None:
        if self.ttl not in ("5m", "1h"):
            raise ConfigError(f"cache ttl must be 5m or 1h, not {self.ttl!r}")
        if self.min_tokens < 0:
            raise ConfigError(f"cache min_tokens must be 0 or more, not {self.min_tokens}")

    def control(self) -> dict[str, str]:
        """The ``cache_control`` value of one breakpoint."""
        return {"type": "ephemeral", "ttl": "1h"} if self.ttl == "1h" else {"type": "ephemeral"}


class AnthropicModel(WireModel[anthropic.AsyncAnthropic, WireMessage]):
    """A ``Model`` over the Messages API (``providers.ANTHROPIC`` unless ``provider`` names
    another). ``thinking`` is passed through as the request's ``thinking`` setting (e.g.
    ``{"type": "enabled", "budget_tokens": 2048}``). ``client`` replaces the SDK client the
    provider would build; the model closes it in :meth:`aclose`. ``cache`` says where and how
    long the prompt is cached (see :class:`CacheConfig`)."""

    def __init__(
        self,
        model: str,
        *,
        thinking: Mapping[str, Any] | None = None,
        client: anthropic.AsyncAnthropic | None = None,
        count_client: anthropic.Anthropic | None = None,
        cache: CacheConfig | None = None,
        **options: Unpack[WireOptions],
    ) -> None:
        provider = options.get("provider") or ANTHROPIC
        super().__init__(model, ANTHROPIC, client, provider.anthropic_client, **options)
        self.cache = cache or CacheConfig()
        self.thinking = dict(thinking) if thinking else None
        # Token counting is synchronous (the context accountant calls it between turns), so it
        # has a synchronous client of its own, made on first use with the same settings.
        self._count_client = count_client
        self._framing: int | None = None  # tokens count_tokens adds around one user message
        self._count_cached = functools.lru_cache(maxsize=4096)(self._count_message)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamItem]:
        """Text deltas as the API sends them (``messages.stream``), then the same ModelResponse
        as ``complete``. In JSON tool mode the deltas are the final answer as it decodes."""
        params, finish = self._prepare(request)
        shown = json_mode.AnswerStream(self.tool_mode)
        try:
            async with self._client.messages.stream(**params) as events:
                async for delta in events.text_stream:
                    if text := shown.feed(delta):
                        yield text
                wire = await events.get_final_message() if _began(events) else None
        except anthropic.APIError as exc:
            raise self._error(exc) from exc
        if wire is None:
            # The server closed the stream before a message began (llama.cpp's /v1/messages does
            # now and then; the SDK then fails an assert): nothing was shown, so ask once whole.
            yield await self.complete(request)
            return
        yield finish(wire)

    def _prepare(
        self, request: ModelRequest
    ) -> tuple[dict[str, Any], Callable[[WireMessage], ModelResponse]]:
        """The request's parameters, and the function that turns the reply into a response."""
        if self.tool_mode == "json":
            plan = json_mode.plan_request(request)
            params = self._params(plan.system, plan.messages, request)
            place_breakpoints(params, self.cache, rolling=_continues_history(request))
            return params, lambda wire: self._json_mode_response(wire, request, plan.expects_action)
        params = self._params(request.system, request.messages, request)
        if request.tools:
            params["tools"] = [tool_to_wire(tool) for tool in request.tools]
            if request.final_only:
                # Tools stay defined (history may hold tool_use blocks, which need them).
                params["tool_choice"] = {"type": "none"}
            elif request.tool_choice and not self.thinking:
                # Extended thinking allows only "auto" (and "none"): then the prompt asks alone.
                params["tool_choice"] = {"type": "tool", "name": request.tool_choice}
            elif not request.final_allowed and not self.thinking:
                params["tool_choice"] = {"type": "any"}
        place_breakpoints(params, self.cache, rolling=_continues_history(request))
        return params, _native_response

    def count_tokens(self, text: str) -> int:
        """Exact tokens of ``text`` by the Messages API's ``count_tokens`` endpoint (used with
        ``--counter exact``): the count of ``text`` as one user message, less that message's
        own framing (measured once). Each distinct text is counted once."""
        if not text:
            return 0
        if self._framing is None:
            self._framing = max(0, self._count_message(".") - 1)
        return max(0, self._count_cached(text) - self._framing)

    def _count_message(self, text: str) -> int:
        if self._count_client is None:
            self._count_client = self.provider.anthropic_sync_client(**self._connection)
        try:
            counted = self._count_client.messages.count_tokens(
                model=self.model, messages=[{"role": "user", "content": text}]
            )
        except anthropic.APIError as exc:
            error = self._error(exc)
            raise ModelError(f"{error} (while counting tokens; --counter auto needs no endpoint)") from exc
        return int(counted.input_tokens)

    async def aclose(self) -> None:
        await self._client.close()
        if self._count_client is not None:
            self._count_client.close()

    # --- helpers ------------------------------------------------------------------------------

    def _params(self, system: str, messages: Sequence[Message], request: ModelRequest) -> dict[str, Any]:
        params: dict[str, Any] = {
            "model": self.model,
            "max_tokens": request.max_tokens,
            "messages": messages_to_wire(messages),
        }
        if system:
            params["system"] = system
        if self.thinking:
            params["thinking"] = self.thinking
        if request.response_schema is not None:
            params["output_config"] = {"format": {"type": "json_schema", "schema": request.response_schema}}
        return params

    async def _create(self, params: dict[str, Any]) -> WireMessage:
        try:
            wire: WireMessage = await self._client.messages.create(**params)
        except anthropic.APIError as exc:
            raise self._error(exc) from exc
        return wire

    def _read_reply(self, reply: WireMessage) -> ReplyText:
        received = blocks_from_wire(reply.content)
        return ReplyText(
            "".join(b.text for b in received if isinstance(b, TextBlock)),
            stop_reason_from_wire(reply.stop_reason) == "max_tokens",
            tuple(b for b in received if isinstance(b, ThinkingBlock)),
            usage_from_wire(reply),
        )


# --- wire conversion (pure functions) ---------------------------------------------------------


def _native_response(wire: WireMessage) -> ModelResponse:
    blocks = blocks_from_wire(wire.content)
    return ModelResponse(
        Message("assistant", blocks), stop_reason_from_wire(wire.stop_reason), usage_from_wire(wire)
    )


def tool_to_wire(tool: ToolSpec) -> dict[str, Any]:
    return {
        "name": tool.name,
        "description": tool.description,
        "input_schema": tool.input_schema or {"type": "object", "properties": {}},
    }


def messages_to_wire(messages: Sequence[Message]) -> list[dict[str, Any]]:
    return [
        {"role": m.role, "content": [block_to_wire(b) for b in m.content if not _is_empty_text(b)]}
        for m in messages
    ]


def _is_empty_text(block: Block) -> bool:
    return isinstance(block, TextBlock) and not block.text


def block_to_wire(block: Block) -> dict[str, Any]:
    out = block_to_dict(block, meta=False)
    if isinstance(block, ToolUseBlock) and not isinstance(block.input, dict):
        out["input"] = {}
    return out


def blocks_from_wire(content: Sequence[Any]) -> tuple[Block, ...]:
    """Response content blocks as neutral blocks. Server-side tool blocks (web search, code
    execution) have no neutral form and are left out."""
    blocks: list[Block] = []
    for block in content:
        kind = getattr(block, "type", None)
        if kind == "text":
            blocks.append(TextBlock(block.text))
        elif kind == "thinking":
            blocks.append(ThinkingBlock(block.thinking, block.signature))
        elif kind == "redacted_thinking":
            blocks.append(ThinkingBlock("", "", redacted=block.data))
        elif kind == "tool_use":
            blocks.append(ToolUseBlock(block.id, block.name, block.input))
    return tuple(blocks)


def stop_reason_from_wire(stop_reason: str | None) -> StopReason:
    return _STOP_REASONS.get(stop_reason or "", "end_turn")


def usage_from_wire(wire: WireMessage) -> Usage:
    """The reply's usage; ``input_tokens`` is the whole prompt (the API's ``input_tokens`` are
    only what came after the last breakpoint), reads and writes apart."""
    usage = wire.usage
    if usage is None:
        return Usage()
    read = usage.cache_read_input_tokens or 0
    written = usage.cache_creation_input_tokens or 0
    split = getattr(usage, "cache_creation", None)
    written_1h = (getattr(split, "ephemeral_1h_input_tokens", 0) or 0) if split is not None else 0
    return Usage(
        (usage.input_tokens or 0) + read + written, usage.output_tokens or 0, read, written, written_1h
    )


# --- prompt caching (pure functions) ----------------------------------------------------------


def _continues_history(request: ModelRequest) -> bool:
    """Whether the next request will repeat this one's messages: the agent's turns and the notes
    flush (which shares them) do; a summary or a memory extraction is asked once, so writing its
    messages to the cache would cost 1.25x for nothing."""
    return request.purpose in ("agent", "flush")


def place_breakpoints(params: dict[str, Any], cache: CacheConfig, *, rolling: bool = True) -> None:
    """Put ``cache_control`` on the request's blocks (in place): the last tool, the system
    prompt's last block and, with ``rolling``, the last block of the message that ended the
    previous request (the last user message before the latest assistant reply) and the last
    block of the latest message. At most :data:`MAX_BREAKPOINTS`; a breakpoint whose prefix is
    shorter than ``cache.min_tokens`` is left out. Nothing when caching is off."""
    if not cache.enabled:
        return
    control = cache.control()
    measure = cache.min_tokens > 0  # sizes cost a pass over the history: only when they decide
    spots: list[dict[str, Any]] = []  # the blocks, in prompt order (tools, system, messages)
    sizes: list[int] = []  # characters of the prompt up to and including each spot
    seen = 0
    tools = params.get("tools") or []
    if measure:
        seen += sum(len(json.dumps(tool, ensure_ascii=False)) for tool in tools)
    if tools:
        spots.append(tools[-1])
        sizes.append(seen)
    system = params.get("system")
    if isinstance(system, str) and system:
        params["system"] = [{"type": "text", "text": system}]
        seen += len(system)
        spots.append(params["system"][-1])
        sizes.append(seen)
    messages = params.get("messages") or []
    ends: list[tuple[int, int]] = []  # (message index, characters through it)
    for index, message in enumerate(messages):
        if measure:
            seen += len(json.dumps(message["content"], ensure_ascii=False))
        ends.append((index, seen))
    for index, size in _rolling(messages, ends) if rolling else []:
        block = _cacheable_block(messages[index]["content"])
        if block is not None:
            spots.append(block)
            sizes.append(size)
    for block, size in list(zip(spots, sizes, strict=True))[-MAX_BREAKPOINTS:]:
        if size // 3 >= cache.min_tokens:
            block["cache_control"] = dict(control)


def _rolling(messages: Sequence[Mapping[str, Any]], ends: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The messages that get a rolling breakpoint: the one that ended the previous request
    (the last user message before the latest assistant message), then the latest message."""
    if not messages:
        return []
    latest = ends[-1]
    previous = None
    for index in range(len(messages) - 1, -1, -1):
        if messages[index]["role"] == "assistant":
            user_before = next((i for i in range(index - 1, -1, -1) if messages[i]["role"] == "user"), None)
            previous = ends[user_before] if user_before is not None else None
            break
    return [previous, latest] if previous is not None and previous[0] != latest[0] else [latest]


def _cacheable_block(content: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """The last block of a message that may carry ``cache_control`` (thinking blocks may not)."""
    for block in reversed(content):
        if block.get("type") not in ("thinking", "redacted_thinking"):
            return block
    return None


def _began(events: Any) -> bool:
    """Whether the stream brought a message's start (the SDK's snapshot asserts there is one)."""
    try:
        return events.current_message_snapshot is not None
    except AssertionError:
        return False

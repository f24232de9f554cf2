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
so ``input_tokens`` is the whole prompt, as with the other adapters.

``tool_mode="json"`` speaks the :mod:`.json_mode` protocol by prompt alone and parses the reply
tolerantly: the Messages API has no grammar-enforced schema for it (llama.cpp's ``/v1/messages``
ignores ``output_config``). A ``response_schema`` goes out as ``output_config.format``.
"""

from __future__ import annotations

import functools
import os
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any, Literal, overload

import anthropic
from anthropic.types import Message as WireMessage

from ..errors import ConfigError, ModelError
from ..messages import Block, Message, TextBlock, ThinkingBlock, ToolUseBlock, block_to_dict
from ..settings import stored_key
from . import json_mode
from ._sdk_errors import map_sdk_error
from .base import (
    DEFAULT_MAX_RETRIES,
    DEFAULT_TIMEOUT,
    ModelRequest,
    ModelResponse,
    StopReason,
    StreamItem,
    ToolSpec,
    Usage,
)
from .json_mode import ToolMode

_MAX_TOKENS_STOPS = ("max_tokens", "model_context_window_exceeded")


class AnthropicModel:
    """A ``Model`` over the Messages API. ``thinking`` is passed through as the request's
    ``thinking`` setting (e.g. ``{"type": "enabled", "budget_tokens": 2048}``). ``client``
    replaces the SDK client the model would build; the model closes it in :meth:`aclose`."""

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        tool_mode: ToolMode = "native",
        timeout: float = DEFAULT_TIMEOUT,
        max_retries: int = DEFAULT_MAX_RETRIES,
        context_window: int | None = None,
        thinking: Mapping[str, Any] | None = None,
        name: str | None = None,
        client: anthropic.AsyncAnthropic | None = None,
        count_client: anthropic.Anthropic | None = None,
    ) -> None:
        self.model = model
        self.name = name or model
        self.tool_mode: ToolMode = json_mode.check_tool_mode(tool_mode)
        self.thinking = dict(thinking) if thinking else None
        self._window = context_window
        self._client = client or _make_client(base_url, api_key, timeout, max_retries)
        self.base_url = str(self._client.base_url)
        self._call_ids = json_mode.CallIds()
        # Token counting is synchronous (the context accountant calls it between turns), so it
        # has a synchronous client of its own, made on first use with the same settings.
        self._count_client = count_client
        self._count_settings = (base_url, api_key, timeout, max_retries)
        self._framing: int | None = None  # tokens count_tokens adds around one user message
        self._count_cached = functools.lru_cache(maxsize=4096)(self._count_message)

    @property
    def context_window(self) -> int | None:
        return self._window

    async def complete(self, request: ModelRequest) -> ModelResponse:
        params, finish = self._prepare(request)
        return finish(await self._create(params))

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
                wire = await events.get_final_message()
        except anthropic.APIError as exc:
            raise map_sdk_error(exc, provider="anthropic", base_url=self.base_url) from exc
        yield finish(wire)

    def _prepare(
        self, request: ModelRequest
    ) -> tuple[dict[str, Any], Callable[[WireMessage], ModelResponse]]:
        """The request's parameters, and the function that turns the reply into a response."""
        if self.tool_mode == "json":
            plan = json_mode.plan_request(request)
            params = self._params(plan.system, plan.messages, request)
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
            base_url, api_key, timeout, max_retries = self._count_settings
            self._count_client = _make_client(base_url, api_key, timeout, max_retries, sync=True)
        try:
            counted = self._count_client.messages.count_tokens(
                model=self.model, messages=[{"role": "user", "content": text}]
            )
        except anthropic.APIError as exc:
            error = map_sdk_error(exc, provider="anthropic", base_url=self.base_url)
            raise ModelError(f"{error} (while counting tokens; --counter auto needs no endpoint)") from exc
        return int(counted.input_tokens)

    def tools_text(self, tools: Sequence[ToolSpec]) -> str | None:
        """The protocol text JSON tool mode sends for ``tools``; None for native tools."""
        return json_mode.protocol_prompt(tools) if self.tool_mode == "json" and tools else None

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
            raise map_sdk_error(exc, provider="anthropic", base_url=self.base_url) from exc
        return wire

    def _json_mode_response(
        self, wire: WireMessage, request: ModelRequest, expects_action: bool
    ) -> ModelResponse:
        received = blocks_from_wire(wire.content)
        message, stop_reason = json_mode.reply_message(
            "".join(b.text for b in received if isinstance(b, TextBlock)),
            truncated=stop_reason_from_wire(wire.stop_reason) == "max_tokens",
            expects_action=expects_action,
            messages=request.messages,
            call_ids=self._call_ids,
            thinking=tuple(b for b in received if isinstance(b, ThinkingBlock)),
        )
        return ModelResponse(message, stop_reason, usage_from_wire(wire))


@overload
def _make_client(
    base_url: str | None, api_key: str | None, timeout: float, max_retries: int
) -> anthropic.AsyncAnthropic: ...


@overload
def _make_client(
    base_url: str | None, api_key: str | None, timeout: float, max_retries: int, *, sync: Literal[True]
) -> anthropic.Anthropic: ...


def _make_client(
    base_url: str | None, api_key: str | None, timeout: float, max_retries: int, *, sync: bool = False
) -> anthropic.AsyncAnthropic | anthropic.Anthropic:
    has_env_key = bool(os.environ.get("ANTHROPIC_API_KEY") or os.environ.get("ANTHROPIC_AUTH_TOKEN"))
    if api_key is None and not has_env_key:
        # `tinyharness keys set anthropic`; only for Anthropic's own API, never another server.
        api_key = stored_key("anthropic", base_url)
    if api_key is None and not has_env_key:
        if base_url is None and not os.environ.get("ANTHROPIC_BASE_URL"):
            # The SDK would only fail at the first request, with a TypeError.
            raise ConfigError(
                "anthropic: no API key; set ANTHROPIC_API_KEY, run `tinyharness keys set anthropic`, "
                "or pass an api key"
            )
        api_key = "unused"  # a local server (llama.cpp) checks none, the SDK wants one
    client_class = anthropic.Anthropic if sync else anthropic.AsyncAnthropic
    return client_class(api_key=api_key, base_url=base_url, timeout=timeout, max_retries=max_retries)


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
    out = block_to_dict(block)
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
    if stop_reason == "tool_use":
        return "tool_use"
    if stop_reason in _MAX_TOKENS_STOPS:
        return "max_tokens"
    return "end_turn"


def usage_from_wire(wire: WireMessage) -> Usage:
    usage = wire.usage
    if usage is None:
        return Usage()
    cached = (usage.cache_read_input_tokens or 0) + (usage.cache_creation_input_tokens or 0)
    return Usage(
        (usage.input_tokens or 0) + cached, usage.output_tokens or 0, usage.cache_read_input_tokens or 0
    )

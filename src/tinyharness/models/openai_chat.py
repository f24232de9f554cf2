"""OpenAI Chat Completions adapter, through the official ``openai`` SDK (``AsyncOpenAI``).

One class for every server that speaks this wire format (OpenAI, vLLM, Ollama, llama.cpp,
DeepSeek, Qwen...): vendors differ only by ``base_url`` and ``api_key``.

Wire mapping, neutral -> Chat Completions:
- the system prompt is the first ``system`` message;
- assistant ``tool_use`` blocks become ``tool_calls`` with JSON-string arguments (an input that
  is already a str, i.e. raw arguments the model sent that did not decode, is sent unchanged);
- ``tool_result`` blocks become ``tool`` messages, placed before any text of the same turn;
- thinking blocks are dropped: this wire has no field to send them back in.

Chat Completions -> neutral: ``reasoning_content`` (DeepSeek, llama.cpp, vLLM's ``reasoning``)
becomes a ``ThinkingBlock``; tool-call arguments that are not a JSON object are kept as the
raw string (the loop reports the error to the model); ``finish_reason`` ``tool_calls`` ->
``tool_use``, ``length`` -> ``max_tokens``, anything else -> ``end_turn``.

``tool_mode="json"`` uses :mod:`.json_mode` instead of native tool calls: the action schema
goes out as ``response_format`` and the reply is parsed back into a ``ToolUseBlock``.
Retries (429, 5xx, timeouts) are the SDK's own ``max_retries``; what is left after them is
mapped to typed errors by :func:`._sdk_errors.map_sdk_error`.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any, cast

import openai
from openai.lib.streaming.chat import ChatCompletionStreamState
from openai.types.chat import ChatCompletion

from ..errors import ConfigError, ModelError
from ..messages import Block, Message, TextBlock, ThinkingBlock, ToolResultBlock, ToolUseBlock
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

# A stand-in key for servers that check none (local llama.cpp, vLLM, Ollama): the SDK refuses to
# start without one.
UNUSED_API_KEY = "unused"


class OpenAIChatModel:
    """A ``Model`` over Chat Completions. ``client`` replaces the SDK client the model would build
    (tests pass one with a fake transport); the model closes it in :meth:`aclose`."""

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
        temperature: float | None = None,
        frequency_penalty: float | None = None,
        free_text_penalty_only: bool = False,
        name: str | None = None,
        client: openai.AsyncOpenAI | None = None,
    ) -> None:
        self.model = model
        self.name = name or model
        self.tool_mode: ToolMode = json_mode.check_tool_mode(tool_mode)
        self.temperature = temperature
        self.frequency_penalty = frequency_penalty
        # Under a JSON schema every reply repeats the same structural tokens; a frequency
        # penalty then pushes string values to "" (measured with Qwen2.5-Coder-0.5B).
        self.free_text_penalty_only = free_text_penalty_only
        self._window = context_window
        self._client = client or _make_client(base_url, api_key, timeout, max_retries)
        self.base_url = str(self._client.base_url)
        # OpenAI's own API rejects ``max_tokens`` for reasoning models; other servers (DeepSeek,
        # older vLLM and Ollama) know only ``max_tokens``.
        official = "api.openai.com" in self.base_url
        self._max_tokens_param = "max_completion_tokens" if official else "max_tokens"
        self._call_ids = json_mode.CallIds()

    @property
    def context_window(self) -> int | None:
        return self._window

    async def complete(self, request: ModelRequest) -> ModelResponse:
        params, finish = self._prepare(request)
        return finish(await self._create(params))

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamItem]:
        """Text deltas as the server sends them, then the same ModelResponse as ``complete``.
        In JSON tool mode the deltas are the final answer's text as it decodes (an action that
        calls a tool shows nothing)."""
        params, finish = self._prepare(request)
        params["stream"] = True
        params["stream_options"] = {"include_usage": True}
        state: ChatCompletionStreamState[Any] = ChatCompletionStreamState()
        shown = json_mode.AnswerStream(self.tool_mode)
        try:
            chunks = await self._client.chat.completions.create(**params)
            async for chunk in chunks:
                state.handle_chunk(chunk)
                delta = chunk.choices[0].delta.content if chunk.choices else None
                if delta and (text := shown.feed(delta)):
                    yield text
        except openai.APIError as exc:
            raise map_sdk_error(exc, provider="openai", base_url=self.base_url) from exc
        # The snapshot, not get_final_completion(): that one parses the content and raises on a
        # reply cut by the length limit, which must come back as a max_tokens stop instead.
        yield finish(cast(ChatCompletion, state.current_completion_snapshot))

    def _prepare(
        self, request: ModelRequest
    ) -> tuple[dict[str, Any], Callable[[ChatCompletion], ModelResponse]]:
        """The request's parameters, and the function that turns the reply into a response."""
        if self.tool_mode == "json":
            plan = json_mode.plan_request(request)
            params = self._params(plan.system, plan.messages, request.max_tokens)
            if plan.schema is not None:
                name = json_mode.ACTION_SCHEMA_NAME if plan.expects_action else "response"
                params["response_format"] = json_schema_format(name, plan.schema)
                if self.free_text_penalty_only:
                    params.pop("frequency_penalty", None)
            return params, lambda reply: self._json_mode_response(reply, request, plan.expects_action)
        params = self._params(request.system, request.messages, request.max_tokens)
        if request.tools:
            params["tools"] = [tool_to_wire(tool) for tool in request.tools]
            if request.final_only:
                # Tools stay in the request (a stable, cacheable prefix) but may not be called.
                params["tool_choice"] = "none"
            elif request.tool_choice:
                params["tool_choice"] = {"type": "function", "function": {"name": request.tool_choice}}
            elif not request.final_allowed:
                params["tool_choice"] = "required"
        if request.response_schema is not None:
            params["response_format"] = json_schema_format("response", request.response_schema)
        if self.free_text_penalty_only and ("tools" in params or "response_format" in params):
            params.pop("frequency_penalty", None)
        return params, lambda reply: self._native_response(reply, request)

    def _native_response(self, response: ChatCompletion, request: ModelRequest) -> ModelResponse:
        choice = _first_choice(response)
        message, stop_reason = message_from_wire(
            choice.message, choice.finish_reason, lambda: self._call_ids.next(request.messages)
        )
        return ModelResponse(message, stop_reason, usage_from_wire(response))

    def tools_text(self, tools: Sequence[ToolSpec]) -> str | None:
        """The protocol text JSON tool mode sends for ``tools``; None for native tools."""
        return json_mode.protocol_prompt(tools) if self.tool_mode == "json" and tools else None

    async def aclose(self) -> None:
        await self._client.close()

    # --- helpers ------------------------------------------------------------------------------

    def _params(self, system: str, messages: Sequence[Message], max_tokens: int) -> dict[str, Any]:
        wire: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
        wire.extend(messages_to_wire(messages))
        params: dict[str, Any] = {
            "model": self.model,
            "messages": wire,
            self._max_tokens_param: max_tokens,
        }
        if self.temperature is not None:
            params["temperature"] = self.temperature
        if self.frequency_penalty is not None:
            params["frequency_penalty"] = self.frequency_penalty
        return params

    async def _create(self, params: dict[str, Any]) -> ChatCompletion:
        try:
            response: ChatCompletion = await self._client.chat.completions.create(**params)
        except openai.APIError as exc:
            raise map_sdk_error(exc, provider="openai", base_url=self.base_url) from exc
        return response

    def _json_mode_response(
        self, response: ChatCompletion, request: ModelRequest, expects_action: bool
    ) -> ModelResponse:
        choice = _first_choice(response)
        reasoning = reasoning_from_wire(choice.message)
        message, stop_reason = json_mode.reply_message(
            choice.message.content or "",
            truncated=choice.finish_reason == "length",
            expects_action=expects_action,
            messages=request.messages,
            call_ids=self._call_ids,
            thinking=(ThinkingBlock(reasoning),) if reasoning else (),
        )
        return ModelResponse(message, stop_reason, usage_from_wire(response))


def _make_client(
    base_url: str | None, api_key: str | None, timeout: float, max_retries: int
) -> openai.AsyncOpenAI:
    if api_key is None and not os.environ.get("OPENAI_API_KEY"):
        # `tinyharness keys set openai`; only for OpenAI's own API, never another server.
        api_key = stored_key("openai", base_url)
    server_given = base_url is not None or bool(os.environ.get("OPENAI_BASE_URL"))
    if api_key is None and server_given and not os.environ.get("OPENAI_API_KEY"):
        api_key = UNUSED_API_KEY
    try:
        return openai.AsyncOpenAI(
            api_key=api_key, base_url=base_url, timeout=timeout, max_retries=max_retries
        )
    except openai.OpenAIError as exc:
        raise ConfigError(
            "openai: no API key; set OPENAI_API_KEY, run `tinyharness keys set openai`, or pass an api key "
            f"(or a base URL for a server that needs none): {exc}"
        ) from exc


def _first_choice(response: ChatCompletion) -> Any:
    if not response.choices:
        raise ModelError("openai: the server returned no choices; check the model name and server")
    return response.choices[0]


# --- wire conversion (pure functions) ---------------------------------------------------------


def json_schema_format(name: str, schema: dict[str, Any]) -> dict[str, Any]:
    """A ``response_format`` that asks the server to enforce ``schema``."""
    return {"type": "json_schema", "json_schema": {"name": name, "schema": schema}}


def tool_to_wire(tool: ToolSpec) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description,
            "parameters": tool.input_schema or {"type": "object", "properties": {}},
        },
    }


def messages_to_wire(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """Neutral messages as Chat Completions messages (without the system message)."""
    wire: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "assistant":
            wire.append(_assistant_to_wire(message))
        else:
            wire.extend(_user_to_wire(message))
    return wire


def _assistant_to_wire(message: Message) -> dict[str, Any]:
    text = message.text
    calls = [
        {
            "id": call.id,
            "type": "function",
            "function": {"name": call.name, "arguments": arguments_to_wire(call.input)},
        }
        for call in message.tool_uses
    ]
    out: dict[str, Any] = {"role": "assistant", "content": text if text or not calls else None}
    if calls:
        out["tool_calls"] = calls
    return out


def _user_to_wire(message: Message) -> list[dict[str, Any]]:
    # Tool messages must follow the assistant's tool_calls directly, so they go first.
    out: list[dict[str, Any]] = [
        {"role": "tool", "tool_call_id": result.tool_use_id, "content": _result_text(result)}
        for result in message.tool_results
    ]
    text = message.text
    if text or not out:
        out.append({"role": "user", "content": text})
    return out


def _result_text(result: ToolResultBlock) -> str:
    # The wire has no error flag; say it in the content unless the tool already did.
    if result.is_error and not result.content.lower().startswith("error"):
        return f"Error: {result.content}"
    return result.content


def arguments_to_wire(arguments: Any) -> str:
    """Tool-call arguments as the JSON string the wire wants; a str is already raw JSON text."""
    if isinstance(arguments, str):
        return arguments
    return json.dumps(arguments, ensure_ascii=False)


def arguments_from_wire(raw: str | None) -> Any:
    """The decoded arguments object, or the raw string when it is not a JSON object."""
    if raw is None or not raw.strip():
        return {}  # servers send "" for a call without arguments
    try:
        decoded = json.loads(raw)
    except ValueError:
        return raw
    return decoded if isinstance(decoded, dict) else raw


def reasoning_from_wire(message: Any) -> str:
    """The reasoning text of a response message; servers put it beside ``content``."""
    for field_name in ("reasoning_content", "reasoning"):
        value = getattr(message, field_name, None)
        if isinstance(value, str) and value:
            return value
    return ""


def message_from_wire(
    message: Any, finish_reason: str | None, new_call_id: Callable[[], str]
) -> tuple[Message, StopReason]:
    """A response message as a neutral assistant message, with the neutral stop reason."""
    blocks: list[Block] = []
    reasoning = reasoning_from_wire(message)
    if reasoning:
        blocks.append(ThinkingBlock(reasoning))
    text = message.content or getattr(message, "refusal", None) or ""
    if text:
        blocks.append(TextBlock(text))
    for call in message.tool_calls or ():
        function = getattr(call, "function", None)
        if function is None:
            continue  # a custom (non-function) tool call: nothing here can run it
        call_id = call.id or new_call_id()
        blocks.append(ToolUseBlock(call_id, function.name, arguments_from_wire(function.arguments)))
    has_calls = any(isinstance(b, ToolUseBlock) for b in blocks)
    return Message("assistant", tuple(blocks)), stop_reason_from_wire(finish_reason, has_calls)


def stop_reason_from_wire(finish_reason: str | None, has_tool_calls: bool) -> StopReason:
    if finish_reason == "length":
        return "max_tokens"
    # Some servers (Ollama) report "stop" together with tool calls; the calls decide.
    if finish_reason == "tool_calls" or has_tool_calls:
        return "tool_use"
    return "end_turn"


def usage_from_wire(response: ChatCompletion) -> Usage:
    usage = response.usage
    if usage is None:
        return Usage()
    details = usage.prompt_tokens_details
    cached = (details.cached_tokens or 0) if details is not None else 0
    return Usage(usage.prompt_tokens or 0, usage.completion_tokens or 0, cached)

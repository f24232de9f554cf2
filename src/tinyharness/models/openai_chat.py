"""OpenAI Chat Completions adapter, through the official ``openai`` SDK (``AsyncOpenAI``).

One class for every server that speaks this wire format (OpenAI, vLLM, Ollama, llama.cpp,
DeepSeek, Groq...): vendors differ only by their ``providers.Provider`` (base URL, key), which
builds the SDK client; what does not depend on the wire is ``wire.WireModel``.

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
mapped to typed errors that say what to set for the provider (``Provider.error``).

Prompt caching is the server's own (OpenAI caches prefixes of 1,024 tokens and more by itself):
the adapter sends a ``prompt_cache_key``, one per model instance unless given, so OpenAI routes
a run's requests to the same cache, and ``prompt_cache_retention`` when set (``"24h"`` on the
models that offer it). Both go only to OpenAI's own API unless passed explicitly: other servers
may reject fields they do not know. Cached tokens come back as ``Usage.cached_tokens``, from
``usage.prompt_tokens_details.cached_tokens`` or, from llama.cpp's server, ``timings.cache_n``.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from typing import TYPE_CHECKING, Any, cast

import openai
from openai.lib.streaming.chat import ChatCompletionStreamState
from openai.types.chat import ChatCompletion

from ..errors import ModelError
from ..messages import Block, Message, TextBlock, ThinkingBlock, ToolResultBlock, ToolUseBlock
from . import json_mode
from .base import ModelRequest, ModelResponse, StopReason, StreamItem, ToolSpec, Usage
from .providers import OPENAI
from .wire import ReplyText, WireModel, WireOptions

if TYPE_CHECKING:
    from typing_extensions import Unpack


class OpenAIChatModel(WireModel[openai.AsyncOpenAI, ChatCompletion]):
    """A ``Model`` over Chat Completions, for any provider of this wire (``providers.OPENAI``
    unless ``provider`` names another). ``client`` replaces the SDK client the provider would
    build (tests pass one with a fake transport); the model closes it in :meth:`aclose`."""

    def __init__(
        self,
        model: str,
        *,
        temperature: float | None = None,
        frequency_penalty: float | None = None,
        free_text_penalty_only: bool = False,
        client: openai.AsyncOpenAI | None = None,
        prompt_cache_key: str | None = None,
        prompt_cache_retention: str | None = None,
        **options: Unpack[WireOptions],
    ) -> None:
        provider = options.get("provider") or OPENAI
        super().__init__(model, OPENAI, client, provider.openai_client, **options)
        self.temperature = temperature
        self.frequency_penalty = frequency_penalty
        # Under a JSON schema every reply repeats the same structural tokens; a frequency
        # penalty then pushes string values to "" (measured with Qwen2.5-Coder-0.5B).
        self.free_text_penalty_only = free_text_penalty_only
        # OpenAI's own API rejects ``max_tokens`` for reasoning models; other servers (DeepSeek,
        # older vLLM and Ollama) know only ``max_tokens``.
        official = OPENAI.is_official(self.base_url)
        self._max_tokens_param = "max_completion_tokens" if official else "max_tokens"
        # Sent to OpenAI's own API by default; other servers may reject fields they do not know.
        self._cache_params: dict[str, str] = {}
        if prompt_cache_key is not None or official:
            self._cache_params["prompt_cache_key"] = prompt_cache_key or f"tinyharness-{uuid.uuid4().hex}"
        if prompt_cache_retention is not None:
            self._cache_params["prompt_cache_retention"] = prompt_cache_retention

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
            raise self._error(exc) from exc
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
        params.update(self._cache_params)
        return params

    async def _create(self, params: dict[str, Any]) -> ChatCompletion:
        try:
            response: ChatCompletion = await self._client.chat.completions.create(**params)
        except openai.APIError as exc:
            raise self._error(exc) from exc
        return response

    def _read_reply(self, reply: ChatCompletion) -> ReplyText:
        choice = _first_choice(reply)
        reasoning = reasoning_from_wire(choice.message)
        return ReplyText(
            choice.message.content or "",
            choice.finish_reason == "length",
            (ThinkingBlock(reasoning),) if reasoning else (),
            usage_from_wire(reply),
        )


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
    """The reply's usage; cached prompt tokens from ``prompt_tokens_details.cached_tokens``,
    else from llama.cpp's ``timings.cache_n`` (the prompt tokens its cache held)."""
    usage = response.usage
    if usage is None:
        return Usage()
    details = usage.prompt_tokens_details
    cached = (details.cached_tokens or 0) if details is not None else 0
    if not cached:
        timings = getattr(response, "timings", None)
        cache_n = timings.get("cache_n") if isinstance(timings, dict) else None
        cached = cache_n if isinstance(cache_n, int) and cache_n > 0 else 0
    prompt = usage.prompt_tokens or 0
    return Usage(prompt, usage.completion_tokens or 0, min(cached, prompt))

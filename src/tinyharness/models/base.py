"""The model seam: one request type, one response type, one small protocol."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from ..messages import Message

Purpose = Literal["agent", "compact", "memory", "flush", "plan"]
DEFAULT_TIMEOUT = 120.0  # seconds per model request, for every adapter and --timeout
DEFAULT_MAX_RETRIES = 3  # retries on 429/5xx/timeouts, for every adapter and --max-retries
StopReason = Literal["end_turn", "tool_use", "max_tokens"]


# Given the messages of a request: argument name -> the values it can take now (see ToolSpec):
# a list (the grammar's enum), or an int, the longest value it may be now (the grammar's
# maxLength ends a longer one). The tools layer provides it with the spec (read_file's reads the
# workspace and, through ``history``, which files the messages already hold); JSON-mode adapters
# call it to build the grammar. It must only read: no model calls, no writes.
Choice = Sequence[str] | int
ChoiceMap = Mapping[str, Choice]
Choices = Callable[[Sequence[Message]], ChoiceMap]


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """What a model is told about a tool: its name, description and JSON schema. ``choices``,
    when set, narrows string arguments to the values that make sense now (read_file's path to
    files that exist) or bounds their length: a grammar-constrained model (JSON tool mode)
    cannot name anything else, nor run on past the bound.
    It is not shown to the model, so the prompt stays the same from call to call."""

    name: str
    description: str
    input_schema: dict[str, Any]
    choices: Choices | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class Usage:
    """Tokens of one call (or a run's sum). ``input_tokens`` is the whole prompt, cached or
    not; of it, ``cached_tokens`` were read from the server's prompt cache and
    ``cache_write_tokens`` written to it (Anthropic bills those apart; 0 when the server does
    not say), ``cache_write_1h_tokens`` of them at the one-hour lifetime."""

    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    cache_write_tokens: int = 0
    cache_write_1h_tokens: int = 0

    @property
    def total(self) -> int:
        return self.input_tokens + self.output_tokens

    @property
    def uncached_input_tokens(self) -> int:
        """Prompt tokens billed at the plain input price: neither read from nor written to a cache."""
        return max(0, self.input_tokens - self.cached_tokens - self.cache_write_tokens)

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cached_tokens + other.cached_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
            self.cache_write_1h_tokens + other.cache_write_1h_tokens,
        )

    def to_event(self) -> dict[str, int]:
        """The ``usage`` of a ``model_call`` or ``run_end`` event: input and output always, the
        cache fields (named as the Anthropic API names them) when there are any."""
        out = {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens}
        if self.cached_tokens:
            out["cached_tokens"] = self.cached_tokens  # the field's older name, kept for readers
            out["cache_read_input_tokens"] = self.cached_tokens
        if self.cache_write_tokens:
            out["cache_creation_input_tokens"] = self.cache_write_tokens
        if self.cache_write_1h_tokens:
            out["cache_creation_1h_input_tokens"] = self.cache_write_1h_tokens
        return out

    @classmethod
    def from_event(cls, usage: Mapping[str, Any] | None) -> Usage:
        """The inverse of :meth:`to_event` (missing or malformed fields count 0)."""
        usage = usage or {}

        def get(*names: str) -> int:
            for name in names:
                value = usage.get(name)
                if isinstance(value, int) and not isinstance(value, bool):
                    return value
            return 0

        return cls(
            get("input_tokens"),
            get("output_tokens"),
            get("cache_read_input_tokens", "cached_tokens"),
            get("cache_creation_input_tokens"),
            get("cache_creation_1h_input_tokens"),
        )


@dataclass(frozen=True, slots=True)
class ModelRequest:
    """Everything one model call needs. ``final_only`` asks for a final answer with no tools
    (used when a limit stops the run); ``response_schema`` asks for JSON matching a schema
    (used by memory extraction); ``tool_choice`` names a tool of ``tools`` the reply must call
    (the notes flush before a compaction, the task focus's reads); ``final_allowed`` False asks
    for a tool call, not the final answer (a plan that is not done yet, see ``tools.coverage``)."""

    messages: Sequence[Message]  # a tuple, or the agent's O(1) ``Snapshot`` of its history
    system: str = ""
    tools: tuple[ToolSpec, ...] = ()
    purpose: Purpose = "agent"
    max_tokens: int = 1024
    final_only: bool = False
    response_schema: dict[str, Any] | None = None
    tool_choice: str | None = None
    final_allowed: bool = True


@dataclass(frozen=True, slots=True)
class ModelResponse:
    message: Message
    stop_reason: StopReason
    usage: Usage = field(default_factory=Usage)


@runtime_checkable
class Model(Protocol):
    """A model server. Implementations translate requests to one wire format."""

    name: str

    @property
    def context_window(self) -> int | None:
        """The window in tokens, when the model knows it."""
        ...

    async def complete(self, request: ModelRequest) -> ModelResponse: ...

    async def aclose(self) -> None: ...


# What ``stream`` yields: text deltas of the reply as they arrive, then the whole ModelResponse.
StreamItem = str | ModelResponse


@runtime_checkable
class StreamingModel(Protocol):
    """A model that can also stream. ``stream`` is optional: callers use :func:`stream_reply`,
    which falls back to ``complete`` for a model without it. The last item is the full
    ModelResponse, exactly what ``complete`` would have returned; the text deltas before it add
    up to the reply's visible text (tool calls and thinking are not streamed)."""

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamItem]: ...


async def stream_reply(model: Model, request: ModelRequest) -> AsyncIterator[StreamItem]:
    """Text deltas then the ModelResponse, from ``model.stream`` or, for a model that cannot
    stream, from ``complete`` (its whole text as one delta)."""
    if isinstance(model, StreamingModel):
        async for item in model.stream(request):
            yield item
        return
    response = await model.complete(request)
    if response.message.text:
        yield response.message.text
    yield response


@runtime_checkable
class SendsToolsAsText(Protocol):
    """A model whose adapter sends the tool list as text of its own (JSON tool mode: a short
    protocol in the system prompt, not the schemas), so the token count of a request's fixed
    part is that text's, not the schemas'."""

    def tools_text(self, tools: Sequence[ToolSpec]) -> str | None:
        """The text sent for ``tools``, or None when they go as schemas (native tools)."""
        ...


@runtime_checkable
class CountsTokens(Protocol):
    """A model that can count tokens exactly with its own tokenizer (``counter="exact"``)."""

    def count_tokens(self, text: str) -> int: ...


@runtime_checkable
class SharedBySubAgents(Protocol):
    """A model one run tree shares, whose answers depend on which agent asks (the scripted
    model: a response may name the sub-agent that takes it). ``for_agent(label)`` is the model
    as the sub-agent started by the ``task`` call ``label`` sees it; models without this
    method are shared as they are."""

    def for_agent(self, label: str) -> Model: ...

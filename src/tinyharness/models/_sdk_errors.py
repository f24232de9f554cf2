"""One mapping from the ``openai`` and ``anthropic`` SDK exceptions to tinyharness's typed errors.

Both SDKs retry 429, 5xx, connection errors and timeouts themselves (``max_retries`` with
exponential backoff); an exception that reaches this module is what is left after those retries.
Both SDKs share the same shape (``APITimeoutError`` < ``APIConnectionError``, ``APIStatusError``
with ``status_code``, ``message`` and ``body``), so one function serves both adapters.
"""

from __future__ import annotations

import json
import sys

from ..errors import ContextLengthExceeded, ModelError, ModelTimeout

# Lower-case phrases that servers put in a "too long for the window" refusal:
# OpenAI's error code, llama.cpp's error type and message, vLLM/DeepSeek's wording, Anthropic's.
_CONTEXT_OVERFLOW_MARKERS = (
    "context_length_exceeded",
    "exceed_context_size",
    "exceeds the available context size",
    "maximum context length",
    "prompt is too long",
)

_SDK_MODULES = ("openai", "anthropic")


def is_context_overflow(status: int | None, text: str) -> bool:
    """True when an HTTP error says the prompt does not fit the model's context window."""
    lowered = text.lower()
    return status in (400, 413, 422) and any(m in lowered for m in _CONTEXT_OVERFLOW_MARKERS)


def map_sdk_error(
    exc: Exception,
    *,
    provider: str,
    base_url: str | None,
    unreachable_hint: str = "check the base URL and that the server is running",
    key_hint: str = "",
) -> ModelError:
    """The typed error for an SDK exception, with a one-line message that says what to do:
    ``unreachable_hint`` when nothing answers, ``key_hint`` (the key's variable) on a 401/403."""
    where = base_url or f"the {provider} API"
    if isinstance(exc, _sdk_classes("APITimeoutError")):
        return ModelTimeout(
            f"{provider}: no answer from {where} in time, after retries; "
            "raise the timeout or check that the server is not overloaded"
        )
    if isinstance(exc, _sdk_classes("APIConnectionError")):
        return ModelError(f"{provider}: cannot reach {where}; {unreachable_hint}")
    status = getattr(exc, "status_code", None)
    body = getattr(exc, "body", None)
    detail = _shorten(_server_message(body) or str(getattr(exc, "message", "") or exc))
    full_text = f"{getattr(exc, 'message', exc)} {json.dumps(body, default=str)}"
    if is_context_overflow(status, full_text):
        return ContextLengthExceeded(f"{provider}: the request does not fit the context: {detail}")
    if status in (401, 403):
        key = f" ({key_hint})" if key_hint else ""
        hint = f"check the API key{key} (and that it may use this model)"
    elif status == 404:
        hint = "check the model name and the base URL"
    elif status == 429:
        hint = "rate limited after retries; wait, lower the request rate or raise max retries"
    elif status in (408, 504):
        return ModelTimeout(f"{provider}: HTTP {status} from {where} after retries: {detail}")
    elif isinstance(status, int) and status >= 500:
        hint = "the server failed after retries; try again later"
    elif isinstance(status, int):
        hint = "the server rejected the request"
    else:
        hint = "unexpected failure"
    code = f"HTTP {status}" if status is not None else type(exc).__name__
    return ModelError(f"{provider}: {hint} ({code} from {where}): {detail}")


def _sdk_classes(name: str) -> tuple[type, ...]:
    """The exception class ``name`` of each SDK already imported. An exception from an SDK means
    that SDK is loaded, so neither adapter pays for importing the other SDK."""
    return tuple(getattr(sys.modules[m], name) for m in _SDK_MODULES if m in sys.modules)


def _server_message(body: object) -> str:
    """The server's own error message from a response body (OpenAI's SDK passes the inner
    ``error`` object, Anthropic's the whole body), or ""."""
    if isinstance(body, dict):
        inner = body.get("error")
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            return str(inner["message"])
        if isinstance(body.get("message"), str):
            return str(body["message"])
    return body if isinstance(body, str) else ""


def _shorten(text: str, limit: int = 300) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."

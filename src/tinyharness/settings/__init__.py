"""Settings that stay set: one config file and one keys file in the data home.

``$TINYHARNESS_HOME/config.json`` (see ``paths.data_home``) holds what a user sets once::

    {"default_model": "anthropic:claude-sonnet-4-5",
     "base_urls": {"openai": "http://127.0.0.1:11434/v1"},
     "permissions": {"allow": ["write_file:docs/*"], "deny": ["edit_file:*.lock"]},
     "mcpServers": {...},          # the Claude Desktop / Claude Code format
     "agents": {...},              # sub-agent profiles, by name
     "profiles": {...},            # model profiles, by name (see profiles.py, --profile)
     "memory_rerank": "local:qwen2.5-coder-0.5b",  # model that reorders memory search results
     "fetch_models": true,         # fetch a missing local model on first use without asking
     "prices": {"my-model": {"input": 1.0, "output": 4.0}}}   # dollars per million tokens

Every key is optional; keys this module does not know are kept as they are when a setting is
written, so other parts (and newer versions) can add their own. ``keys.json`` beside it holds API
keys, written with mode 0600 and never printed. Precedence, for every setting: the command-line
option, then the environment variable, then the config file, then the built-in default.

May import ``paths``, ``safefs`` (the file is written through it) and ``errors``.
"""

from __future__ import annotations

import json
import os
import string
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ..errors import ConfigError
from ..paths import data_home
from ..safefs import write_file

CONFIG_NAME = "config.json"
KEYS_NAME = "keys.json"
MODEL_ENV = "TINYHARNESS_MODEL"
BUILTIN_MODEL = "local"
# Keys with a meaning; each reader takes its own (mcpServers: the MCP client; agents: sub-agents).
KNOWN_KEYS = (
    "default_model",
    "base_urls",
    "permissions",
    "mcpServers",
    "agents",
    "memory_rerank",
    "profiles",
    "fetch_models",
    "prices",
)
PROVIDERS = ("openai", "anthropic")
KEY_ENV = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
BASE_URL_ENV = {"openai": "OPENAI_BASE_URL", "anthropic": "ANTHROPIC_BASE_URL"}
# A stored key goes only to the provider's own API (this exact origin: https, host, port 443),
# never to another server given by URL.
OFFICIAL_HOSTS = {"openai": "api.openai.com", "anthropic": "api.anthropic.com"}


@dataclass(frozen=True)
class Settings:
    """The config file, read and checked once."""

    default_model: str | None = None
    base_urls: Mapping[str, str] = field(default_factory=dict)
    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    mcp_servers: Mapping[str, Any] = field(default_factory=dict)
    agents: Mapping[str, Any] = field(default_factory=dict)
    profiles: Mapping[str, Any] = field(default_factory=dict)
    memory_rerank: str | None = None  # a model string, or "none"
    fetch_models: bool = False  # fetch a missing local model without asking
    prices: Mapping[str, Any] = field(default_factory=dict)  # checked by models.prices
    path: Path | None = None


def config_path() -> Path:
    return data_home() / CONFIG_NAME


def keys_path() -> Path:
    return data_home() / KEYS_NAME


def _read_json(path: Path, what: str) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read the {what} {path}: {exc}") from None
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"the {what} {path} is not valid JSON ({exc.msg}, line {exc.lineno}); fix it"
        ) from None
    if not isinstance(data, dict):
        raise ConfigError(f"the {what} {path} must hold a JSON object")
    return data


def _strings(value: Any, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"config: {where} must be a list of strings")
    return tuple(value)


def _mapping(value: Any, where: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ConfigError(f"config: {where} must be an object")
    return value


def load_settings(path: Path | None = None) -> Settings:
    """The settings in ``path`` (default: the config file); empty Settings when there is none.
    ConfigError, naming the file and the key, when it is malformed."""
    where = path or config_path()
    data = _read_json(where, "config file")
    model = data.get("default_model")
    if model is not None and (not isinstance(model, str) or not model.strip()):
        raise ConfigError("config: default_model must be a model string such as openai:gpt-4o-mini")
    base_urls = _mapping(data.get("base_urls"), "base_urls")
    if not all(isinstance(v, str) for v in base_urls.values()):
        raise ConfigError("config: base_urls must map a provider (openai, anthropic) to a URL")
    permissions = _mapping(data.get("permissions"), "permissions")
    rerank = data.get("memory_rerank")
    if rerank is not None and (not isinstance(rerank, str) or not rerank.strip()):
        raise ConfigError(
            'config: memory_rerank must be a model string such as local:qwen2.5-coder-0.5b, or "none"'
        )
    fetch_models = data.get("fetch_models", False)
    if not isinstance(fetch_models, bool):
        raise ConfigError("config: fetch_models must be true or false")
    return Settings(
        default_model=model.strip() if isinstance(model, str) else None,
        base_urls=base_urls,
        allow=_strings(permissions.get("allow"), "permissions.allow"),
        deny=_strings(permissions.get("deny"), "permissions.deny"),
        mcp_servers=_mapping(data.get("mcpServers"), "mcpServers"),
        agents=_mapping(data.get("agents"), "agents"),
        profiles=_mapping(data.get("profiles"), "profiles"),
        memory_rerank=rerank.strip() if isinstance(rerank, str) else None,
        fetch_models=fetch_models,
        prices=_mapping(data.get("prices"), "prices"),
        path=where,
    )


def _write_private(path: Path, data: Mapping[str, Any], *, mode: int) -> None:
    """Replace ``path`` atomically with ``data`` as JSON; the file is created with ``mode``
    (the temp file too, so a key is never readable by others, not even for a moment)."""
    text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    write_file(path, text.encode("utf-8"), mode=mode)


def set_config_value(key: str, value: Any, path: Path | None = None) -> Path:
    """Set one top-level key of the config file (None removes it), keeping every other key."""
    where = path or config_path()
    data = _read_json(where, "config file")
    if value is None:
        data.pop(key, None)
    else:
        data[key] = value
    _write_private(where, data, mode=0o644)
    return where


# --- the model --------------------------------------------------------------------------------


def resolve_model(option: str | None, settings: Settings | None = None) -> tuple[str, str]:
    """The model string to use and where it came from: the ``--model`` option, then
    ``$TINYHARNESS_MODEL``, then the config file's ``default_model``, then ``local``."""
    if option:
        return option, "--model"
    env = os.environ.get(MODEL_ENV, "").strip()
    if env:
        return env, f"${MODEL_ENV}"
    chosen = settings if settings is not None else load_settings()
    if chosen.default_model:
        return chosen.default_model, str(chosen.path or config_path())
    return BUILTIN_MODEL, "built-in default"


def resolve_base_url(provider: str, option: str | None, settings: Settings | None = None) -> str | None:
    """``--base-url``, then ``$OPENAI_BASE_URL``/``$ANTHROPIC_BASE_URL``, then the config file's
    ``base_urls[provider]``; None lets the SDK use the provider's own API."""
    if option:
        return option
    env_name = BASE_URL_ENV.get(provider)
    if env_name and os.environ.get(env_name):
        return os.environ[env_name]
    chosen = settings if settings is not None else load_settings()
    return chosen.base_urls.get(provider)


# --- API keys ---------------------------------------------------------------------------------


def _check_provider(provider: str) -> None:
    if provider not in PROVIDERS:
        raise ConfigError(f"unknown key name {provider!r}; use one of: {', '.join(PROVIDERS)}")


def set_key(provider: str, key: str) -> Path:
    """Store ``key`` for ``provider`` in the keys file (mode 0600)."""
    _check_provider(provider)
    key = key.strip()
    if not key:
        raise ConfigError("the key is empty; nothing stored")
    if any(ch.isspace() for ch in key):
        raise ConfigError("the key has spaces or line breaks in it; paste the key alone")
    where = keys_path()
    keys = _read_json(where, "keys file")
    keys[provider] = key
    _write_private(where, keys, mode=0o600)
    return where


def remove_key(provider: str) -> bool:
    _check_provider(provider)
    where = keys_path()
    keys = _read_json(where, "keys file")
    if provider not in keys:
        return False
    del keys[provider]
    _write_private(where, keys, mode=0o600)
    return True


def key_names() -> list[str]:
    """The names of the stored keys (never the keys)."""
    return sorted(str(name) for name in _read_json(keys_path(), "keys file"))


def is_official_origin(provider: str, url: str) -> bool:
    """Whether ``url`` points at ``provider``'s own API: scheme ``https``, host exactly the
    official one (letter case aside, as DNS ignores it), no user or password part, port 443 or
    none. Anything a URL parser could read two ways (spaces, controls, backslashes, non-ASCII)
    counts as another server."""
    host = OFFICIAL_HOSTS.get(provider)
    if host is None or not url or any(ch not in _URL_CHARACTERS for ch in url):
        return False
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError on a port that is not a number
    except ValueError:
        return False
    return parts.scheme.lower() == "https" and parts.netloc.lower() in (host, f"{host}:443")


# Printable ASCII without space or backslash: the characters every URL parser reads alike.
_URL_CHARACTERS = frozenset(string.ascii_letters + string.digits + "-._~:/?#[]@!$&'()*+,;=%")


def stored_key(provider: str, base_url: str | None = None) -> str | None:
    """The stored key for ``provider``, when the request goes to that provider's own API: a key
    set for OpenAI never goes to another server. ``base_url`` None means the server the SDK
    picks itself, which is ``$OPENAI_BASE_URL``/``$ANTHROPIC_BASE_URL`` when that is set."""
    if base_url is None:
        base_url = os.environ.get(BASE_URL_ENV.get(provider, ""))
    if base_url is not None and not is_official_origin(provider, base_url):
        return None
    value = _read_json(keys_path(), "keys file").get(provider)
    return value if isinstance(value, str) and value else None

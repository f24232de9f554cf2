"""MCP server configuration in the format users already have (Claude Desktop, Claude Code,
Cursor)::

    {"mcpServers": {
        "fs":     {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "."],
                   "env": {"DEBUG": "0"}},
        "remote": {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}}
    }}

A server with ``command`` runs as a subprocess over stdio; one with ``url`` is reached over
Streamable HTTP, or SSE with ``"type": "sse"``. ``${VAR}`` and ``${VAR:-default}`` in a command,
its arguments, env values, a URL or header values are read from the environment, so a token need
not sit in the file. ``"timeout"`` (seconds per tool call) and ``"disabled": true`` are
optional. A server's tools count as read-only (no write permission needed, handed to
sub-agents) only when this file says so: ``"trust": {"readOnly": true}`` for every tool of the
server, or ``"trust": {"readOnlyTools": ["search", ...]}`` for some; what a server says of its
own tools (``readOnlyHint``) is never trusted. Files are read in order
(``$TINYHARNESS_HOME/mcp.json`` first, then each ``--mcp FILE``); a later server of the same
name replaces an earlier one.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ..errors import ConfigError
from ..paths import data_home

Transport = Literal["stdio", "http", "sse"]
DEFAULT_CALL_TIMEOUT = 60.0  # seconds a tool call may take before the server counts as hung
DEFAULT_START_TIMEOUT = 30.0  # seconds a server may take to start and list its tools
HOME_CONFIG_NAME = "mcp.json"
TOKEN_ENV = "TINYHARNESS_MCP_TOKEN"  # the bearer token of ``tinyharness mcp serve --http``
DEFAULT_PORT = 8765  # of ``tinyharness mcp serve --http``
MAX_TOOL_NAME = 64  # the longest function name OpenAI's and Anthropic's APIs accept
_NAME_CHARS = re.compile(r"[^A-Za-z0-9_-]")
_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_TRANSPORT_ALIASES: dict[str, Transport] = {
    "stdio": "stdio",
    "http": "http",
    "streamable-http": "http",
    "streamable_http": "http",
    "streamablehttp": "http",
    "sse": "sse",
}


@dataclass(frozen=True)
class McpServerConfig:
    """One server: a command to run (stdio) or a URL to reach (http, sse)."""

    name: str
    transport: Transport
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    timeout: float = DEFAULT_CALL_TIMEOUT
    start_timeout: float = DEFAULT_START_TIMEOUT
    source: str = ""  # the file it came from, for error messages
    read_only: bool = False  # the user trusts every tool of this server to only read
    read_only_tools: frozenset[str] = frozenset()  # ... or these tools of it

    def trusts_read_only(self, tool: str) -> bool:
        """Whether the user's config says ``tool`` only reads (never the server's own word)."""
        return self.read_only or tool in self.read_only_tools

    def describe(self) -> str:
        if self.transport == "stdio":
            return " ".join([self.command or "", *self.args])
        return f"{self.url} ({self.transport})"


def mcp_tool_name(server: str, tool: str) -> str:
    """``mcp__<server>__<tool>`` (the Claude Code convention) with characters the model APIs
    refuse replaced by ``_``; a name over 64 characters is cut and ends with a short hash of
    the full name, so two long names stay apart."""
    name = f"mcp__{_NAME_CHARS.sub('_', server)}__{_NAME_CHARS.sub('_', tool)}"
    if len(name) <= MAX_TOOL_NAME:
        return name
    digest = hashlib.sha256(f"{server}\0{tool}".encode()).hexdigest()[:8]
    return f"{name[: MAX_TOOL_NAME - 9]}_{digest}"


def default_config_path() -> Path:
    return data_home() / HOME_CONFIG_NAME


def load_config(
    files: Sequence[str | os.PathLike[str]] = (),
    *,
    include_home: bool = True,
    environ: Mapping[str, str] | None = None,
    timeout: float = DEFAULT_CALL_TIMEOUT,
) -> list[McpServerConfig]:
    """The servers of ``$TINYHARNESS_HOME/mcp.json`` (when it exists and ``include_home``) and
    of ``files``, in order; ConfigError with the file and the server for anything malformed.
    ``timeout`` is the per-call limit of servers that do not set their own."""
    env = os.environ if environ is None else environ
    paths = [Path(f) for f in files]
    home = default_config_path()
    if include_home and home.is_file() and home.resolve() not in {p.resolve() for p in paths}:
        paths.insert(0, home)
    servers: dict[str, McpServerConfig] = {}
    for path in paths:
        for server in _read_file(path, env, timeout):
            servers.pop(server.name, None)  # a redefinition moves to its new place
            servers[server.name] = server
    names: dict[str, str] = {}
    for server in servers.values():
        key = _NAME_CHARS.sub("_", server.name)
        if key in names:
            raise ConfigError(
                f"MCP servers {names[key]!r} and {server.name!r} give their tools the same names "
                f"(mcp__{key}__...); rename one"
            )
        names[key] = server.name
    return list(servers.values())


def _read_file(path: Path, env: Mapping[str, str], timeout: float) -> list[McpServerConfig]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"MCP config {path} does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read MCP config {path}: {exc}") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(f"MCP config {path} is not valid JSON ({exc.msg}, line {exc.lineno})") from None
    if not isinstance(data, dict) or not isinstance(data.get("mcpServers"), dict):
        raise ConfigError(f'MCP config {path} needs an object {{"mcpServers": {{NAME: {{...}}}}}}')
    servers = []
    for name, entry in data["mcpServers"].items():
        where = f"MCP config {path}, server {name!r}"
        if not isinstance(entry, dict):
            raise ConfigError(f"{where}: expected an object with 'command' or 'url'")
        if entry.get("disabled") is True:
            continue
        if not name or not _NAME_CHARS.sub("", name):
            raise ConfigError(f"{where}: a server name needs letters or digits")
        servers.append(_server(name, entry, where, str(path), env, timeout))
    return servers


def _server(
    name: str, entry: dict[str, Any], where: str, source: str, env: Mapping[str, str], timeout: float
) -> McpServerConfig:
    def text(key: str) -> str | None:
        value = entry.get(key)
        if value is None:
            return None
        if not isinstance(value, str) or not value:
            raise ConfigError(f"{where}: '{key}' must be a non-empty string")
        return _expand(value, where, env)

    def strings(key: str) -> dict[str, str]:
        value = entry.get(key) or {}
        if not isinstance(value, dict) or not all(isinstance(v, str | int | float) for v in value.values()):
            raise ConfigError(f"{where}: '{key}' must be an object of strings")
        return {str(k): _expand(str(v), where, env) for k, v in value.items()}

    def seconds(key: str, default: float) -> float:
        value = entry.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
            raise ConfigError(f"{where}: '{key}' must be a positive number of seconds")
        return float(value)

    command, url = text("command"), text("url")
    kind = entry.get("type") or entry.get("transport")
    if kind is not None and (not isinstance(kind, str) or kind.lower() not in _TRANSPORT_ALIASES):
        raise ConfigError(f"{where}: 'type' must be stdio, http or sse, not {kind!r}")
    transport: Transport = _TRANSPORT_ALIASES[kind.lower()] if kind else ("stdio" if command else "http")
    if not command and not url:
        raise ConfigError(f"{where}: needs 'command' (and 'args') to start a local server, or a 'url'")
    if command and url:
        raise ConfigError(f"{where}: give 'command' (a local server) or 'url' (a remote one), not both")
    if transport == "stdio" and not command:
        raise ConfigError(f"{where}: a stdio server needs 'command' (and 'args')")
    if transport != "stdio" and not url:
        raise ConfigError(f"{where}: a {transport} server needs a 'url'")
    if url and not url.startswith(("http://", "https://")):
        raise ConfigError(f"{where}: 'url' must start with http:// or https://")
    read_only, read_only_tools = _trust(entry.get("trust"), where)
    args = entry.get("args") or []
    if not isinstance(args, list) or not all(isinstance(a, str | int | float) for a in args):
        raise ConfigError(f"{where}: 'args' must be a list of strings")
    return McpServerConfig(
        name=name,
        transport=transport,
        command=command,
        args=tuple(_expand(str(a), where, env) for a in args),
        env=strings("env"),
        cwd=text("cwd"),
        url=url,
        headers=strings("headers"),
        timeout=seconds("timeout", timeout),
        start_timeout=seconds("startTimeout", DEFAULT_START_TIMEOUT),
        source=source,
        read_only=read_only,
        read_only_tools=read_only_tools,
    )


def _trust(value: object, where: str) -> tuple[bool, frozenset[str]]:
    """``"trust": {"readOnly": bool, "readOnlyTools": [names]}``, both optional."""
    if value is None:
        return False, frozenset()
    if not isinstance(value, dict) or set(value) - {"readOnly", "readOnlyTools"}:
        raise ConfigError(
            f"{where}: 'trust' must be an object with 'readOnly' (true/false) and/or 'readOnlyTools'"
        )
    whole = value.get("readOnly", False)
    if not isinstance(whole, bool):
        raise ConfigError(f"{where}: 'trust.readOnly' must be true or false")
    tools = value.get("readOnlyTools", [])
    if not isinstance(tools, list) or not all(isinstance(t, str) and t for t in tools):
        raise ConfigError(f"{where}: 'trust.readOnlyTools' must be a list of tool names")
    return whole, frozenset(tools)


def _expand(value: str, where: str, env: Mapping[str, str]) -> str:
    def substitute(match: re.Match[str]) -> str:
        variable, default = match.group(1), match.group(2)
        if variable in env:
            return env[variable]
        if default is not None:
            return default
        raise ConfigError(f"{where}: ${{{variable}}} is used but not set in the environment")

    return _VARIABLE.sub(substitute, value)

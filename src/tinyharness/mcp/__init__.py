"""MCP (Model Context Protocol): any MCP server's tools in the agent, and tinyharness's memory
and notes served to other agents.

Modules: ``config`` (the ``mcpServers`` JSON files: Claude Desktop / Claude Code / Cursor
format), ``content`` (a tool result's text, image and resource content as text for the model),
``client`` (connections to servers over stdio and Streamable HTTP, their tools as ``Tool``\\ s
named ``mcp__<server>__<tool>``, restart after a crash or hang), ``server`` (``tinyharness mcp
serve``), ``cli`` (the ``mcp`` command).

May import ``tools``, ``memory``, ``history`` (to quote results as data), ``events``, ``procs``,
``redact``, ``terminal``, ``errors``, ``paths``, ``safefs``
(every file saved goes through it) and ``messages``; nothing here imports the agent loop or the
CLI.
"""

from typing import TYPE_CHECKING, Any

from .config import McpServerConfig, load_config, mcp_tool_name

if TYPE_CHECKING:
    from .client import McpServers, connect_servers

__all__ = ["McpServerConfig", "McpServers", "connect_servers", "load_config", "mcp_tool_name"]


def __getattr__(name: str) -> Any:
    # The SDK takes about a second to import: only a run that has MCP servers pays for it.
    if name in ("McpServers", "connect_servers"):
        from . import client

        return getattr(client, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

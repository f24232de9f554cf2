"""``tinyharness mcp serve``: the long-term memory store and a workspace's notes as MCP tools,
so Claude Code, Cursor or another tinyharness agent share one memory.

Tools: ``memory_search``, ``memory_add``, ``memory_list``, ``memory_show``, ``memory_history``,
``memory_forget``, ``notes_read``, ``notes_append``. Everything is scoped to one user: another
user's memories are never listed, found or shown (an id of theirs reads as unknown). Text is
redacted on the way in (before anything is stored) and on the way out (in case the store was
written by something else). Over HTTP the server binds to 127.0.0.1 unless told otherwise and
every request must carry ``Authorization: Bearer TOKEN``; others get 401.
"""

from __future__ import annotations

import hmac
import json
import socket
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations

from ..errors import ConfigError
from ..memory import MemoryItem, MemoryManager, MemoryStore, Scope
from ..redact import redact
from ..tools.base import ToolError as HarnessToolError
from ..tools.notes import NotesFile

SERVER_NAME = "tinyharness"
_READ = ToolAnnotations(read_only_hint=True, destructive_hint=False, open_world_hint=False)
_WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)
_FORGET = ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=False)
_MAX_LIMIT = 100


def _item(item: MemoryItem, score: float | None = None) -> dict[str, Any]:
    data: dict[str, Any] = {
        "id": item.id,
        "content": redact(item.content),
        "kind": item.kind,
        "version": item.version,
        "status": item.status,
        "since": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(item.valid_from)),
    }
    if score is not None:
        data["score"] = round(score, 4)
    if item.superseded_by:
        data["superseded_by"] = item.superseded_by
    if item.reason:
        data["reason"] = redact(item.reason)
    return data


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=1)


def build_server(
    store: MemoryStore,
    *,
    user: str,
    notes: NotesFile | None = None,
    agent: str = "tinyharness",
) -> MCPServer:
    """An MCP server over ``store`` for ``user``; memories it adds are stored under
    ``Scope(user, agent)``, the scope a tinyharness run of that user recalls from."""
    manager = MemoryManager(store)
    owned = Scope(user=user)
    stored = Scope(user=user, agent=agent)
    server = MCPServer(SERVER_NAME, instructions=f"Long-term memory and notes of user {user}.")

    def own(memory_id: str) -> MemoryItem:
        item = store.get(memory_id)
        if item is None or item.scope.user != user:
            raise ToolError(f"no memory with id {memory_id!r}")
        return item

    def limit_of(limit: int) -> int:
        return max(1, min(int(limit), _MAX_LIMIT))

    @server.tool(annotations=_READ)
    def memory_search(query: str, limit: int = 5) -> str:
        """Search the user's current long-term memories (full text and meaning); best first."""
        hits = store.search(redact(query), owned, limit=limit_of(limit))
        return _json([_item(hit.item, hit.score) for hit in hits])

    @server.tool(annotations=_WRITE)
    async def memory_add(content: str, kind: str = "fact") -> str:
        """Remember a fact, preference or constraint for later sessions (secrets are redacted
        before it is stored; an exact duplicate is not stored twice)."""
        if not redact(content).strip():
            raise ToolError("the memory is empty")
        op = await manager.remember(content, stored, kind=kind)
        return _json({"op": op.op, "id": op.memory_id, "content": redact(op.content)})

    @server.tool(annotations=_READ)
    def memory_list(limit: int = 20) -> str:
        """The user's current memories, newest first."""
        return _json([_item(item) for item in store.list_items(owned, limit=limit_of(limit))])

    @server.tool(annotations=_READ)
    def memory_show(id: str) -> str:
        """One memory version in full, by id."""
        return _json(_item(own(id)))

    @server.tool(annotations=_READ)
    def memory_history(id: str) -> str:
        """Every version of a memory, oldest first (updates and deletions keep the old ones)."""
        own(id)
        return _json([_item(item) for item in store.history(id)])

    @server.tool(annotations=_FORGET)
    def memory_forget(id: str, reason: str = "forgotten on request") -> str:
        """Delete a current memory (it stays in its history)."""
        item = own(id)
        if not item.is_current:
            raise ToolError(f"memory {id} is already {item.status}")
        return _json(_item(store.delete(id, reason=redact(reason))))

    if notes is not None:

        @server.tool(annotations=_READ)
        def notes_read() -> str:
            """The workspace's notes file (NOTES.md)."""
            return redact(notes.read()) or "(no notes yet)"

        @server.tool(annotations=_WRITE)
        def notes_append(text: str) -> str:
            """Append one line to the workspace's notes file (secrets are redacted first)."""
            try:
                return notes.append(text)
            except HarnessToolError as exc:
                raise ToolError(str(exc)) from None

    return server


# --- HTTP -------------------------------------------------------------------------------------

Scope_ = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
App = Callable[[Scope_, Receive, Send], Awaitable[None]]


class BearerAuth:
    """ASGI middleware: an HTTP request without ``Authorization: Bearer <token>`` gets 401."""

    def __init__(self, app: App, token: str) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Scope_, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            given = dict(scope.get("headers") or []).get(b"authorization", b"")
            if not hmac.compare_digest(given, self.expected):
                body = b'{"error": "unauthorized: send Authorization: Bearer <token>"}'
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [
                            (b"content-type", b"application/json"),
                            (b"www-authenticate", b'Bearer realm="tinyharness"'),
                            (b"content-length", str(len(body)).encode()),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


def bind(host: str, port: int) -> socket.socket:
    """A listening socket (port 0: a free one); ConfigError when the address is taken."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise ConfigError(f"cannot listen on {host}: {exc.strerror}") from None
    family, _, _, _, address = infos[0]
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
    except OSError as exc:
        sock.close()
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror}; choose another --port") from None
    sock.listen(64)
    sock.setblocking(False)
    return sock


async def serve_http(server: MCPServer, sock: socket.socket, token: str, host: str) -> None:
    """Serve ``server`` over Streamable HTTP at ``/mcp`` on ``sock`` until cancelled."""
    import uvicorn

    app = BearerAuth(server.streamable_http_app(host=host), token)
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    await uvicorn.Server(config).serve(sockets=[sock])

"""Connections to MCP servers, and their tools as tinyharness ``Tool``\\ s.

``McpServers`` starts every configured server at once (stdio subprocesses, Streamable HTTP or
SSE endpoints) through the official ``mcp`` SDK, lists their tools, and offers each one as
``mcp__<server>__<tool>`` with the server's own JSON schema. The tools are ordinary registry
tools: permission rules, result caps, timeouts, events and the run log apply as to any other.
A tool gets the risk "read" only when the user's config trusts it (``"trust"``, see ``config``);
what the server's annotations say (``readOnlyHint``) is untrusted and changes nothing.

Limits. A server's stderr goes through a pipe of which only the last ``STDERR_KEEP`` bytes are
kept. Bytes on stdout that are not UTF-8 are replaced (U+FFFD) and the result says so, instead
of stopping the SDK's reader and leaving every call to wait out its timeout. A JSON-RPC line
that cannot be read (nested too deep, say) ends the connection at once with that reason, so a
start or a call fails fast instead of waiting out its timeout. Tool descriptions longer than
``MAX_DESCRIPTION`` characters and input schemas over ``MAX_SCHEMA_CHARS`` (or nested deeper
than ``MAX_SCHEMA_DEPTH``) are cut or replaced, and an ``mcp_server`` event (state ``trimmed``)
says so.

Faults. A server that does not start is a ``ConfigError`` naming it, with the end of its
stderr. A server that crashes or hangs during a call gives that call an error result (the call
is not retried: its effect is unknown), is restarted once, and the run goes on; after a second
fault its tools answer that it is down. Every server is stopped when the ``async with`` block
ends, however it ends (an exception, Ctrl-C, cancellation): stdio servers run in their own
process group; after the SDK closes the connection, every process that carries the server's
tag (``procs``: its group, and daemons that left it with ``setsid``) is sent SIGTERM, then
SIGKILL, whatever the SDK did.

Each connection lives in one asyncio task that owns the SDK's context managers (they must be
entered and left in the same task); calls from the loop's tasks share the session.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import importlib.metadata
import json
import logging
import os
import shutil
import sys
import threading
import time
from collections import deque
from collections.abc import Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any, TextIO

import anyio
import httpx2
import mcp_types as types
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.sse import sse_client
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from ..errors import ConfigError
from ..events import EventBus
from ..history import quoted
from ..procs import TAG_ENV, end_tagged, new_tag, tagged
from ..redact import redact
from ..safefs import write_file
from ..tools.base import DEFAULT_RESULT_CAP, Tool, ToolError
from .config import McpServerConfig, mcp_tool_name
from .content import result_text, shown_path

_FAULT_CODES = (types.CONNECTION_CLOSED, types.REQUEST_TIMEOUT)
_STDERR_TAIL_LINES = 6
_STDERR_TAIL_CHARS = 600
_STOP_WAIT = 10.0  # seconds to let a connection close before its task is cancelled
_TIMEOUT_GRACE = 10.0  # the registry's own timeout, past the server's, as a backstop
_MAX_PAGES = 100  # tools/list pages read from one server
STDERR_KEEP = 64 * 1024  # bytes of a server's stderr kept (the tail); the rest is counted, not kept
MAX_DESCRIPTION = 2_000  # characters of a tool's description the model sees
MAX_SCHEMA_CHARS = 20_000  # characters of a tool's input schema (as JSON) the model sees
MAX_SCHEMA_DEPTH = 32  # nesting of a tool's input schema
_NOT_UTF8 = "[the server sent bytes that are not UTF-8 (or U+FFFD itself); each is shown as \ufffd]\n"


class ServerFault(Exception):
    """The server crashed, hung or dropped the connection (as opposed to refusing a call)."""


def _client_version() -> str:
    try:
        return importlib.metadata.version("tinyharness")
    except importlib.metadata.PackageNotFoundError:  # pragma: no cover - source checkout
        return "0"


# Run before a stdio server on Linux: the kernel kills it when the thread that started it (the
# event loop's) dies, so a tinyharness killed with SIGKILL leaves no server behind, not even a
# hung one that would never notice its stdin closing. Then it becomes the server (exec).
_DIE_WITH_PARENT = """\
import ctypes, os, signal, sys
ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
if os.getppid() != int(sys.argv[1]):
    sys.exit(1)  # the parent died before the line above
try:
    os.execvp(sys.argv[2], sys.argv[2:])
except OSError as exc:
    sys.exit(f"cannot run {sys.argv[2]}: {exc.strerror}")
"""


def _find_command(config: McpServerConfig) -> str:
    """The server's executable as a path; ConfigError when it cannot be found."""
    assert config.command is not None
    command = config.command
    if os.sep in command:
        where = Path(config.cwd or ".") / command
        if not where.is_file():
            raise FileNotFoundError(2, "not found", command)
        return os.path.abspath(where)  # not resolve(): a symlink's own name may matter to it
    search = config.env.get("PATH") or os.environ.get("PATH", os.defpath)
    found = shutil.which(command, path=search)
    if found is None:
        raise FileNotFoundError(2, "not found", command)
    return found


def _dying_with_us(command: str, args: list[str]) -> tuple[str, list[str]]:
    if not sys.platform.startswith("linux"):
        return command, args
    return sys.executable, ["-S", "-c", _DIE_WITH_PARENT, str(os.getpid()), command, *args]


def _reason(exc: BaseException) -> str:
    """One line for an exception, unwrapping the exception groups anyio raises."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, FileNotFoundError):
        return f"command not found: {exc.filename or exc}"
    if isinstance(exc, MCPError):
        return exc.message
    if isinstance(exc, httpx2.HTTPStatusError):
        return f"HTTP {exc.response.status_code} from {exc.request.url}"
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


class _StderrTail:
    """A pipe for a server's stderr; a thread keeps its last ``keep`` bytes and counts the rest,
    so a server that writes without end fills neither the disk nor the memory."""

    def __init__(self, keep: int = STDERR_KEEP) -> None:
        read_fd, write_fd = os.pipe()
        os.set_inheritable(write_fd, True)
        self.writer: TextIO = os.fdopen(write_fd, "w", encoding="utf-8", errors="replace")
        self._keep = keep
        self._chunks: deque[bytes] = deque()
        self._size = 0
        self.total = 0
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._read, args=(read_fd,), daemon=True, name="mcp-stderr")
        self._thread.start()

    def _read(self, fd: int) -> None:
        with contextlib.suppress(OSError):
            while chunk := os.read(fd, 65536):
                with self._lock:
                    self._chunks.append(chunk)
                    self._size += len(chunk)
                    self.total += len(chunk)
                    while self._size - len(self._chunks[0]) >= self._keep:
                        self._size -= len(self._chunks.popleft())
        os.close(fd)

    def kept(self) -> bytes:
        with self._lock:
            return b"".join(self._chunks)[-self._keep :]

    def tail(self, chars: int) -> str:
        return self.kept()[-chars:].decode("utf-8", "replace")

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.writer.close()  # the reader sees the end once the server's copies close too


@asynccontextmanager
async def _watched(transport: Any, unreadable: Any) -> Any:
    """``transport``'s streams, with a pump between the server's read stream and the session:
    a line the SDK could not read that looks like a JSON-RPC message (an answer someone is
    waiting for) ends the connection at once, with the reason given to ``unreadable``. Other
    lines that are not JSON (a server's log on stdout) pass as before."""
    async with transport as (read, write):
        send, receive = anyio.create_memory_object_stream[Any](0)

        async def pump() -> None:
            async with send:
                async for item in read:
                    if isinstance(item, Exception) and _looks_like_message(item):
                        unreadable(_unreadable_reason(item))
                        return
                    await send.send(item)
                unreadable("")  # the SDK stopped reading: the server exited, or its stdout broke

        async with anyio.create_task_group() as group:
            group.start_soon(pump)
            try:
                yield receive, write
            finally:
                group.cancel_scope.cancel()


def _looks_like_message(exc: Exception) -> bool:
    text = str(exc)
    return "input_value='{" in text or "recursion limit" in text


def _unreadable_reason(exc: BaseException) -> str:
    text = str(exc)
    if isinstance(exc, UnicodeDecodeError):
        return "the server wrote bytes on stdout that are not UTF-8"
    if "recursion limit" in text:
        return "the server sent a message nested too deeply to read (a too-deep schema?)"
    first = text.splitlines()[1].strip() if len(text.splitlines()) > 1 else text[:200]
    return f"the server sent a message that cannot be read ({first[:200]})"


class Connection:
    """One server. ``start`` connects and lists its tools; ``call`` runs one of them."""

    def __init__(self, config: McpServerConfig, events: EventBus) -> None:
        self.config = config
        self.events = events
        self.tools: list[types.Tool] = []
        self.down: str | None = None  # why its tools are unavailable for the rest of the run
        self.restarts_left = 1
        self.generation = 0  # bumped by each restart; a fault is handled once per generation
        self._client: Client | None = None
        self._task: asyncio.Task[None] | None = None
        self._stop: asyncio.Event | None = None
        self._stderr: _StderrTail | None = None
        self._tag = ""  # the processes of the current start carry it (procs)
        self._broken = ""  # why the transport ended under a running session
        self._dead: asyncio.Event | None = None  # set when it did
        self._lock = asyncio.Lock()
        self._last_fault = ""
        self._recovery: asyncio.Future[str] | None = None

    @property
    def name(self) -> str:
        return self.config.name

    # --- life cycle ---------------------------------------------------------------------------

    async def start(self) -> list[types.Tool]:
        """Connect and list the tools; ConfigError (with the server's stderr) if that fails."""
        started = time.monotonic()
        loop = asyncio.get_running_loop()
        ready: asyncio.Future[list[types.Tool]] = loop.create_future()
        ready.add_done_callback(lambda f: f.cancelled() or f.exception())  # retrieved, never lost
        self._stop = asyncio.Event()
        if self._stderr is None and self.config.transport == "stdio":
            self._stderr = _StderrTail()  # closed in stop(); the server writes to it while it runs
        self._broken = ""
        self._dead = asyncio.Event()
        self._task = asyncio.create_task(self._own(ready, self._stop), name=f"mcp-{self.name}")
        try:
            self.tools = await asyncio.wait_for(asyncio.shield(ready), timeout=self.config.start_timeout)
        except TimeoutError:
            await self._close_task(patient=False)
            reason = f"no answer within {self.config.start_timeout:g} s"
            raise ConfigError(self._start_error(reason)) from None
        except (Exception, BaseExceptionGroup) as exc:
            await self._close_task(patient=False)
            raise ConfigError(self._start_error(_reason(exc))) from None
        except BaseException:  # Ctrl-C or cancellation while it starts: stop it, then go on out
            await self._close_task(patient=False)
            raise
        self.events.emit(
            "mcp_server",
            server=self.name,
            state="started",
            transport=self.config.transport,
            tools=len(self.tools),
            seconds=round(time.monotonic() - started, 3),
        )
        return self.tools

    async def _own(self, ready: asyncio.Future[list[types.Tool]], stop: asyncio.Event) -> None:
        """Enter the transport and the session, publish them, hold them until told to stop."""
        try:
            async with AsyncExitStack() as stack:
                transport = await self._transport(stack)
                client = Client(
                    transport,
                    client_info=types.Implementation(name="tinyharness", version=_client_version()),
                )
                await stack.enter_async_context(client)
                tools = await _list_tools(client)
                self._client = client
                if not ready.done():
                    ready.set_result(tools)
                await stop.wait()
        except (Exception, BaseExceptionGroup) as exc:
            self._broken = self._broken or _reason(exc)
            if not ready.done():
                ready.set_exception(ConnectionError(self._broken))
            # else: the connection broke under a running session; calls see it and report it
        finally:
            self._client = None

    async def _transport(self, stack: AsyncExitStack) -> Any:
        config = self.config
        if config.transport == "stdio":
            assert config.command is not None and self._stderr is not None
            command, args = _dying_with_us(_find_command(config), list(config.args))
            self._tag = new_tag()
            parameters = StdioServerParameters(
                command=command,
                args=args,
                env={**config.env, TAG_ENV: self._tag},
                cwd=config.cwd,
                # "strict" would stop the SDK's reader on the first bad byte and leave every
                # call waiting out its timeout; replaced bytes show as U+FFFD and are said.
                encoding_error_handler="replace",
            )
            return _watched(stdio_client(parameters, errlog=self._stderr.writer), self._unreadable)
        assert config.url is not None
        if config.transport == "sse":
            return sse_client(config.url, headers=dict(config.headers), timeout=30.0)
        http = httpx2.AsyncClient(headers=dict(config.headers), timeout=httpx2.Timeout(30.0, read=300.0))
        await stack.enter_async_context(http)
        return streamable_http_client(config.url, http_client=http)

    async def stop(self) -> None:
        if self._recovery is not None and not self._recovery.done():  # a restart would outlive us
            await asyncio.wait({self._recovery}, timeout=self.config.start_timeout + _STOP_WAIT)
        await self._close_task()
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None

    def _unreadable(self, reason: str) -> None:
        """The connection cannot go on: calls waiting on it fail now, with ``reason``."""
        if self._stop is not None and self._stop.is_set():
            return  # our own shutdown
        if not reason:
            running = bool(self._tag and tagged(self._tag))
            reason = (
                "its stdout could not be read (bytes that are not UTF-8?) while it still runs"
                if running
                else "the server exited"
            )
        self._broken = self._broken or reason
        if self._dead is not None:
            self._dead.set()

    async def _close_task(self, *, patient: bool = True) -> None:
        """End the connection's task: let it close the session (``patient``), or cancel it at
        once (a start that failed or was interrupted); the SDK kills the server either way."""
        task, self._task = self._task, None
        if task is None:
            return
        if self._stop is not None:
            self._stop.set()
        done, _ = await asyncio.wait({task}, timeout=_STOP_WAIT if patient else 0)
        if not done:  # stuck on a server that answers nothing: cancel (the SDK still kills it)
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        if self._tag:  # whatever the SDK did: the server's group and its setsid daemons end too
            tag, self._tag = self._tag, ""
            await asyncio.to_thread(end_tagged, tag)

    def stderr_tail(self) -> str:
        """The last lines the server wrote on stderr, on one line, redacted."""
        if self._stderr is None:
            return ""
        text = self._stderr.tail(4 * _STDERR_TAIL_CHARS)
        lines = [line.strip() for line in text.splitlines() if line.strip()][-_STDERR_TAIL_LINES:]
        tail = " | ".join(lines)
        if len(tail) > _STDERR_TAIL_CHARS:
            tail = "..." + tail[-_STDERR_TAIL_CHARS:]
        return redact(tail)

    def _start_error(self, reason: str) -> str:
        tail = self.stderr_tail()
        where = f" (from {self.config.source})" if self.config.source else ""
        message = f"MCP server {self.name!r}{where} did not start: {redact(reason)}"
        if self.config.transport == "stdio":
            message += f"; command: {redact(self.config.describe())}"
            message += f"; its stderr ends: {tail}" if tail else "; it wrote nothing on stderr"
        return message

    # --- calls --------------------------------------------------------------------------------

    async def call(self, tool: str, args: dict[str, Any]) -> types.CallToolResult:
        """Run ``tool``; ToolError for a refused call, a crash, a hang or a server that is down."""
        async with self._lock:  # wait for a restart in progress
            client, generation = self._client, self.generation
        if self.down is not None:
            raise ToolError(f"MCP server {self.name!r} is down ({self.down}); its tools cannot run now")
        try:
            if client is None:
                raise ServerFault("the connection is closed")
            try:
                request = client.call_tool(tool, args, read_timeout_seconds=self.config.timeout)
                return await self._answer(request)
            except TimeoutError:
                raise ServerFault(f"no answer within {self.config.timeout:g} s") from None
            except MCPError as exc:
                if exc.code == types.REQUEST_TIMEOUT:
                    raise ServerFault(f"no answer within {self.config.timeout:g} s") from None
                if exc.code in _FAULT_CODES:
                    raise ServerFault(exc.message or "the connection closed") from None
                raise ToolError(f"MCP server {self.name!r} refused the call: {exc.message}") from None
            except (OSError, httpx2.HTTPError, BaseExceptionGroup) as exc:
                raise ServerFault(_reason(exc)) from None
        except ServerFault as fault:
            # Shielded: if the caller gives up (the registry's timeout, Ctrl-C), the restart still
            # finishes, so the server is never left half stopped or half started.
            self._recovery = asyncio.ensure_future(self._recover(generation, str(fault)))
            outcome = await asyncio.shield(self._recovery)
            raise ToolError(
                f"MCP server {self.name!r} failed during this call ({fault}); the call was not "
                f"retried and its effect is unknown; {outcome}"
            ) from None

    async def _answer(self, request: Any) -> types.CallToolResult:
        """The answer to ``request``; ServerFault as soon as the connection ends under it (a
        line it could not read), not after the call's whole timeout."""
        call = asyncio.ensure_future(request)
        dead = asyncio.ensure_future(self._dead.wait()) if self._dead is not None else None
        watch = {call} | ({self._task} if self._task is not None else set()) | ({dead} if dead else set())
        limit = self.config.timeout + 1.0
        try:
            done, _ = await asyncio.wait(watch, timeout=limit, return_when=asyncio.FIRST_COMPLETED)
        except BaseException:  # cancelled (Ctrl-C, the registry's timeout): the call goes too
            call.cancel()
            call.add_done_callback(lambda f: f.cancelled() or f.exception())  # retrieved, never lost
            raise
        finally:
            if dead is not None:
                dead.cancel()
        if call in done:
            return call.result()
        call.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await call
        if done:
            raise ServerFault(self._broken or "the connection closed")
        raise TimeoutError

    async def _recover(self, generation: int, reason: str) -> str:
        """Restart the server once per run; what happened, in words for the model."""
        async with self._lock:
            if generation != self.generation or self.down is not None:
                return self._last_fault  # a parallel call already handled this fault
            tail = self.stderr_tail()
            self.events.emit(
                "mcp_server", server=self.name, state="failed", message=reason, stderr=tail or None
            )
            await self._close_task()
            if self.restarts_left <= 0:
                self.down = f"it failed again: {reason}"
                self._last_fault = "it failed twice, so it stays down for the rest of this run"
                self.events.emit("mcp_server", server=self.name, state="down", message=self.down)
                return self._last_fault
            self.restarts_left -= 1
            self.generation += 1
            try:
                await self.start()
            except ConfigError as exc:
                self.down = f"restarting it failed: {exc}"
                self._last_fault = "restarting it failed, so its tools stay unavailable for this run"
                self.events.emit("mcp_server", server=self.name, state="down", message=str(exc))
                return self._last_fault
            self._last_fault = "the server was restarted; you may call its tools again"
            self.events.emit("mcp_server", server=self.name, state="restarted", tools=len(self.tools))
            return self._last_fault


async def _list_tools(client: Client) -> list[types.Tool]:
    tools: list[types.Tool] = []
    cursor: str | None = None
    for _ in range(_MAX_PAGES):
        page = await client.list_tools(cursor=cursor)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if not cursor:
            break
    return tools


def _depth(value: Any, limit: int) -> int:
    """How deep ``value`` nests, counted up to ``limit + 1`` (no recursion)."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        item, level = stack.pop()
        if level > limit:
            return level
        deepest = max(deepest, level)
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else ()
        stack.extend((child, level + 1) for child in children if isinstance(child, dict | list))
    return deepest


def _input_schema(tool: types.Tool) -> tuple[dict[str, Any], str]:
    """The server's schema, minus what tool-calling APIs refuse or ignore at the top, and what
    was done to fit it ("" when nothing): a schema too large or too deep is replaced by an open
    object (the arguments are still checked by the server)."""
    raw = tool.input_schema or {}
    size = len(json.dumps(raw, default=str)) if _depth(raw, MAX_SCHEMA_DEPTH) <= MAX_SCHEMA_DEPTH else None
    if size is None or size > MAX_SCHEMA_CHARS:
        why = f"nested deeper than {MAX_SCHEMA_DEPTH}" if size is None else f"{size:,} characters"
        return {"type": "object", "properties": {}}, f"input schema ({why}) replaced by an open object"
    return _top_level(raw), ""


def _top_level(raw: dict[str, Any]) -> dict[str, Any]:
    schema = dict(raw)
    schema.pop("$schema", None)
    schema.setdefault("type", "object")
    if schema["type"] == "object":
        schema.setdefault("properties", {})
    return schema


class McpServers:
    """Every configured server, connected; ``tools`` are theirs as registry tools.

    ``save_dir`` (with ``root``, the workspace) is where images, audio, binary resources and
    results over ``result_cap`` characters are saved in full; the model is told the path.
    """

    def __init__(
        self,
        configs: Sequence[McpServerConfig],
        *,
        events: EventBus | None = None,
        save_dir: Path | None = None,
        root: Path | None = None,
        result_cap: int = DEFAULT_RESULT_CAP,
    ) -> None:
        self.events = events or EventBus()
        self.connections = [Connection(config, self.events) for config in configs]
        self.save_dir, self.root, self.result_cap = save_dir, root, result_cap
        self.tools: list[Tool] = []

    async def __aenter__(self) -> McpServers:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def start(self) -> None:
        """Start every server at once; if any fails, stop the others and raise ConfigError."""
        outcomes = await asyncio.gather(*(c.start() for c in self.connections), return_exceptions=True)
        failures = [str(o) for o in outcomes if isinstance(o, BaseException)]
        if failures:
            await self.aclose()
            for outcome in outcomes:
                if isinstance(outcome, BaseException) and not isinstance(outcome, Exception):
                    raise outcome  # KeyboardInterrupt or cancellation: not a configuration error
            raise ConfigError("; ".join(failures))
        self.tools = [self._tool(c, t) for c in self.connections for t in c.tools]
        names: dict[str, str] = {}
        for tool in self.tools:
            if tool.name in names:
                raise ConfigError(f"two MCP tools are both named {tool.name}: rename a server")
            names[tool.name] = tool.name

    async def aclose(self) -> None:
        """Stop every server; never raises (it runs on the way out of a failing run)."""
        await asyncio.gather(*(c.stop() for c in self.connections), return_exceptions=True)

    def _tool(self, connection: Connection, spec: types.Tool) -> Tool:
        # The server's own annotations (readOnlyHint) are untrusted: only the user's config counts.
        read_only = connection.config.trusts_read_only(spec.name)
        server, tool_name = connection.name, spec.name

        async def call(**args: Any) -> str:
            result = await connection.call(tool_name, args)
            text = result_text(result, save_dir=self.save_dir, root=self.root)
            if "\ufffd" in text:
                text = _NOT_UTF8 + text
            if result.is_error:
                raise ToolError(quoted("tool_output", text or "(no details)", server=server, tool=tool_name))
            return self._capped_note(text) + quoted("tool_output", text, server=server, tool=tool_name)

        call.__name__ = mcp_tool_name(server, tool_name)
        description = (spec.description or spec.title or f"The {tool_name} tool").strip()
        schema, schema_note = _input_schema(spec)
        trimmed = []
        if len(description) > MAX_DESCRIPTION:
            trimmed.append(f"description cut from {len(description):,} to {MAX_DESCRIPTION:,} characters")
            description = description[:MAX_DESCRIPTION] + " [...]"
        if schema_note:
            trimmed.append(schema_note)
        if trimmed:
            message = f"tool {tool_name!r}: " + "; ".join(trimmed)
            self.events.emit("mcp_server", server=server, state="trimmed", message=message)
        return Tool(
            name=mcp_tool_name(server, tool_name),
            description=f"{description} (from the MCP server {server!r})",
            input_schema=schema,
            function=call,
            risk="read" if read_only else "write",
            server=server,
            # The registry's limit, a backstop: the call's own limit, then a restart (stop, start).
            timeout=connection.config.timeout + _STOP_WAIT + connection.config.start_timeout + _TIMEOUT_GRACE,
        )

    def _capped_note(self, text: str) -> str:
        """For a result the registry will cut: a first line saying where the whole is, so the
        cut keeps it (the registry keeps the head and the tail)."""
        if len(text) <= self.result_cap:
            return ""
        saved = ""
        if self.save_dir is not None:
            digest = hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()[:16]
            path = self.save_dir / f"result-{digest}.txt"
            try:
                written = write_file(path, text.encode("utf-8", "replace"), self.root)
                saved = f"; the whole result is saved in {shown_path(written, self.root)}"
            except OSError:
                saved = ""
        return f"[MCP result of {len(text):,} characters, cut to fit{saved}]\n"


async def connect_servers(
    configs: Sequence[McpServerConfig],
    *,
    events: EventBus | None = None,
    save_dir: Path | None = None,
    root: Path | None = None,
    result_cap: int = DEFAULT_RESULT_CAP,
) -> McpServers:
    """Started servers (``await servers.aclose()`` when done), or ConfigError."""
    servers = McpServers(configs, events=events, save_dir=save_dir, root=root, result_cap=result_cap)
    await servers.start()
    return servers


def quiet_sdk_logs() -> None:
    """Keep the SDK's log records (tracebacks of a server's bad output, among others) off the
    user's stderr: faults reach the user as tinyharness's own one-line messages."""
    logger = logging.getLogger("mcp")
    if not any(isinstance(h, logging.NullHandler) for h in logger.handlers):
        logger.addHandler(logging.NullHandler())
    logger.propagate = False

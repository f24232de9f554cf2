"""Per-call overhead of an MCP tool (stdio and Streamable HTTP) against a built-in tool.

    python -m bench.mcp_overhead [--small]

Every row is the wall time of one tool call through ``ToolRegistry.execute`` (argument
validation, permission check, timeout, result cap: the path the agent loop takes), median and
95th percentile over sequential calls, all in this process run:

- a built-in tool (``calculator``, run in a worker thread as built-ins are);
- the ``echo`` tool of the MCP reference server ``server-everything`` over stdio, then over
  Streamable HTTP (both through ``McpServers``: quoting, content conversion, fault handling);
- the same stdio call made with the bare SDK (``Client.call_tool``), the naive way: what the
  harness adds on top of the protocol.

Needs the reference servers (``make setup`` installs them under tests/mcp_servers).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from bench import ROOT, markdown_table, median
from tinyharness.mcp.config import McpServerConfig
from tinyharness.tools.base import ToolRegistry, function_tool
from tinyharness.tools.calculator import calculator

EVERYTHING = ROOT / "tests" / "mcp_servers" / "node_modules" / ".bin" / "mcp-server-everything"


@dataclass
class Row:
    label: str
    times: list[float] = field(default_factory=list)  # seconds per call

    @property
    def p50(self) -> float:
        return median(self.times)

    @property
    def p95(self) -> float:
        ordered = sorted(self.times)
        return ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]


@dataclass
class Result:
    calls: int
    rows: list[Row]
    start_seconds: dict[str, float]


async def _time(label: str, calls: int, call: Callable[[], Awaitable[Any]]) -> Row:
    row = Row(label)
    for _ in range(max(3, calls // 10)):  # warm-up: first calls pay for imports and caches
        await call()
    for _ in range(calls):
        started = time.perf_counter()
        await call()
        row.times.append(time.perf_counter() - started)
    return row


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def _wait_for_port(port: int, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            await asyncio.sleep(0.1)
            continue
        writer.close()
        await writer.wait_closed()
        return
    raise RuntimeError(f"server-everything did not listen on port {port}")


async def _measure(calls: int) -> Result:
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    from tinyharness.events import EventBus, ListSink
    from tinyharness.mcp.client import McpServers, quiet_sdk_logs

    quiet_sdk_logs()
    rows: list[Row] = []
    builtin = ToolRegistry([function_tool(calculator)])
    rows.append(
        await _time(
            "built-in tool (calculator)", calls, lambda: builtin.execute("calculator", {"expression": "1+1"})
        )
    )

    port = _free_port()
    http_server = subprocess.Popen(
        [str(EVERYTHING), "streamableHttp"],
        env={**os.environ, "PORT": str(port)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    sink = ListSink()
    try:
        await _wait_for_port(port)
        configs = [
            McpServerConfig("stdio", "stdio", command=str(EVERYTHING), args=("stdio",)),
            McpServerConfig("http", "http", url=f"http://127.0.0.1:{port}/mcp"),
        ]
        async with McpServers(configs, events=EventBus([sink])) as servers:
            registry = ToolRegistry(servers.tools)
            for server in ("stdio", "http"):
                name = f"mcp__{server}__echo"
                transport = "stdio" if server == "stdio" else "Streamable HTTP"
                label = f"MCP tool, {transport} (server-everything echo)"
                rows.append(
                    await _time(label, calls, lambda name=name: registry.execute(name, {"message": "hi"}))
                )
    finally:
        http_server.terminate()
        http_server.wait(timeout=30)

    parameters = StdioServerParameters(command=str(EVERYTHING), args=["stdio"])
    with open(os.devnull, "w", encoding="utf-8") as quiet:
        client = Client(stdio_client(parameters, errlog=quiet))
        await client.__aenter__()
        try:
            rows.append(
                await _time(
                    "bare SDK call, stdio (Client.call_tool, no harness)",
                    calls,
                    lambda: client.call_tool("echo", {"message": "hi"}),
                )
            )
        finally:
            await client.__aexit__(None, None, None)
    starts = {
        e["server"]: e["seconds"]
        for e in sink.events
        if e["type"] == "mcp_server" and e["state"] == "started"
    }
    return Result(calls, rows, starts)


def run(*, small: bool = False, calls: int | None = None) -> Result | None:
    """The measurements, or None when the reference servers are not installed."""
    if not EVERYTHING.exists():
        return None
    return asyncio.run(_measure(calls or (30 if small else 300)))


def to_markdown(result: Result | None) -> str:
    if result is None:
        return "Pending: the MCP reference servers are not installed (run `make setup`)."
    base = result.rows[0].p50
    table = markdown_table(
        ["call", "p50 µs", "p95 µs", "p50 vs built-in"],
        [
            [row.label, f"{row.p50 * 1e6:,.0f}", f"{row.p95 * 1e6:,.0f}", f"{row.p50 / base:,.1f}x"]
            for row in result.rows
        ],
    )
    starts = ", ".join(f"{name} {seconds:.2f} s" for name, seconds in result.start_seconds.items())
    stdio, bare = result.rows[1], result.rows[3]  # the order _measure appends them in
    harness = stdio.p50 - bare.p50
    lines = [
        f"{result.calls} sequential calls per row after a warm-up, wall time of one call; "
        "every row ran in this same process run.",
        "",
        table,
        "",
        f"- Connect and list tools at start-up: {starts}.",
        f"- The harness adds {harness * 1e6:,.0f} µs per stdio call over the bare SDK call "
        "(validation, permission check, timeout, content conversion and quoting, events).",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.mcp_overhead", description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="30 calls per row instead of 300")
    args = parser.parse_args(argv)
    print(to_markdown(run(small=args.small)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

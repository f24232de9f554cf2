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
    times: list[float] = field(default_factory=list)  # wall seconds per call
    cpu: float = 0.0  # CPU seconds of this process (all threads) over all the calls

    @property
    def cpu_per_call(self) -> float:
        return self.cpu / len(self.times) if self.times else float("nan")

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


BLOCK = 10  # calls of one row in a row, before the next row's turn


async def _time_interleaved(calls: int, paths: list[tuple[str, Callable[[], Awaitable[Any]]]]) -> list[Row]:
    """Blocks of ``BLOCK`` calls of each path in turn until each has ``calls``: a burst of load
    on this shared machine then slows every row alike instead of one, and a call's leftovers
    (a stream closing in the background) rarely land in another row's time."""
    rows = [Row(label) for label, _ in paths]
    for _, call in paths:  # warm-up: first calls pay for imports and caches
        for _ in range(BLOCK):
            await call()
    for _ in range(max(1, calls // BLOCK)):
        for row, (_, call) in zip(rows, paths, strict=True):
            cpu = time.process_time()
            for _ in range(BLOCK):
                started = time.perf_counter()
                await call()
                row.times.append(time.perf_counter() - started)
            row.cpu += time.process_time() - cpu
    return rows


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
    builtin = ToolRegistry([function_tool(calculator)])
    port = _free_port()
    http_server = subprocess.Popen(
        [str(EVERYTHING), "streamableHttp"],
        env={**os.environ, "PORT": str(port)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    sink = ListSink()
    parameters = StdioServerParameters(command=str(EVERYTHING), args=["stdio"])
    try:
        await _wait_for_port(port)
        configs = [
            McpServerConfig("stdio", "stdio", command=str(EVERYTHING), args=("stdio",)),
            McpServerConfig("http", "http", url=f"http://127.0.0.1:{port}/mcp"),
        ]
        with open(os.devnull, "w", encoding="utf-8") as quiet:
            async with (
                McpServers(configs, events=EventBus([sink])) as servers,
                Client(stdio_client(parameters, errlog=quiet)) as bare,
            ):
                registry = ToolRegistry(servers.tools)
                echo = {"message": "hi"}
                rows = await _time_interleaved(
                    calls,
                    [
                        (
                            "built-in tool (calculator)",
                            lambda: builtin.execute("calculator", {"expression": "1+1"}),
                        ),
                        (
                            "MCP tool, stdio (server-everything echo)",
                            lambda: registry.execute("mcp__stdio__echo", echo),
                        ),
                        (
                            "MCP tool, Streamable HTTP (server-everything echo)",
                            lambda: registry.execute("mcp__http__echo", echo),
                        ),
                        (
                            "bare SDK call, stdio (Client.call_tool, no harness)",
                            lambda: bare.call_tool("echo", echo),
                        ),
                    ],
                )
    finally:
        http_server.terminate()
        http_server.wait(timeout=30)
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
        ["call", "wall p50 µs", "wall p95 µs", "p50 vs built-in", "agent-side CPU µs/call"],
        [
            [
                row.label,
                f"{row.p50 * 1e6:,.0f}",
                f"{row.p95 * 1e6:,.0f}",
                f"{row.p50 / base:,.1f}x",
                f"{row.cpu_per_call * 1e6:,.0f}",
            ]
            for row in result.rows
        ],
    )
    starts = ", ".join(f"{name} {seconds:.2f} s" for name, seconds in result.start_seconds.items())
    stdio, bare = result.rows[1], result.rows[3]  # the order _measure appends them in
    harness = stdio.cpu_per_call - bare.cpu_per_call
    lines = [
        f"{result.calls} calls per row after a warm-up, in blocks of {BLOCK} taking turns (so a burst "
        "of load slows all rows alike); every row ran in this same process run.",
        "",
        table,
        "",
        f"- Connect and list tools at start-up: {starts}.",
        "- CPU is this process's (the agent side: harness and SDK client, every thread), not the "
        "server's; wall time includes the server and the machine's load.",
        f"- The harness adds {harness * 1e6:,.0f} µs of CPU per stdio call over the bare SDK call "
        "(validation, permission check, timeout, content conversion and quoting).",
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

"""A small MCP server written with the official SDK, for the faults the reference servers do
not have: a crash, a hang, a 10 MB result, a server that never starts.

    python small_server.py [--fail-start] [--http PORT] [--pid-file PATH] [--calls-file PATH]

Tools: ``echo(text)``, ``big(chars)`` (that many characters), ``hang(seconds)``, ``crash()``
(the process kills itself mid-call), ``fail()`` (a tool error), ``counter()`` (calls so far in this
process), ``image()`` (a 2x1 PNG). ``--pid-file`` appends the process id at start;
``--calls-file`` gets a line per call of ``hang`` and ``counter``.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time

from mcp.server.mcpserver import MCPServer
from mcp_types import ImageContent, ToolAnnotations

PNG_2X1 = (
    "iVBORw0KGgoAAAANSUhEUgAAAAIAAAABCAIAAAB7QOjdAAAAEElEQVR4nGP4z8DAwMDAAAAPAAH/lMUJ2QAAAABJRU5ErkJggg=="
)
READ_ONLY = ToolAnnotations(read_only_hint=True)

server = MCPServer("small")
calls = 0
calls_file: str | None = None


def record(name: str) -> None:
    """Append the tool's name to --calls-file: what this server was really asked to do."""
    if calls_file:
        with open(calls_file, "a", encoding="utf-8") as f:
            f.write(name + "\n")


@server.tool(annotations=READ_ONLY)
def echo(text: str) -> str:
    """Return the text."""
    global calls
    calls += 1
    return f"echo: {text}"


@server.tool(annotations=READ_ONLY)
def big(chars: int) -> str:
    """Return that many characters."""
    return "x" * (chars - 3) + "END"


@server.tool(annotations=READ_ONLY)
def hang(seconds: float) -> str:
    """Sleep, then answer."""
    record("hang")
    time.sleep(seconds)
    return "woke up"


@server.tool(annotations=READ_ONLY)
def crash() -> str:
    """Kill this process in the middle of the call (SIGKILL: no clean-up, no answer)."""
    print("small server: killing myself on purpose", file=sys.stderr, flush=True)
    os.kill(os.getpid(), signal.SIGKILL)
    return "unreachable"


@server.tool(annotations=READ_ONLY)
def fail() -> str:
    """Raise an error."""
    raise ValueError("this tool always fails")


@server.tool()
def counter() -> str:
    """Count calls in this process (not marked read-only)."""
    record("counter")
    global calls
    calls += 1
    return f"call {calls} in process {os.getpid()}"


@server.tool(annotations=READ_ONLY)
def image() -> list[ImageContent]:
    """A tiny PNG."""
    return [ImageContent(type="image", data=PNG_2X1, mime_type="image/png")]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--fail-start", action="store_true")
    parser.add_argument("--http", type=int, metavar="PORT")
    parser.add_argument("--pid-file")
    parser.add_argument("--calls-file")
    args = parser.parse_args()
    global calls_file
    calls_file = args.calls_file
    if args.pid_file:
        with open(args.pid_file, "a", encoding="utf-8") as f:
            f.write(f"{os.getpid()}\n")
    if args.fail_start:
        print("small server: loading settings", file=sys.stderr)
        print("small server: error: the database password is wrong", file=sys.stderr)
        sys.exit(1)
    if args.http:
        server.run("streamable-http", host="127.0.0.1", port=args.http)
    else:
        server.run()


if __name__ == "__main__":
    main()

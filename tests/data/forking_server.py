"""An MCP server (official SDK) that leaves processes behind, for the child-process tests.

    python forking_server.py PIDS_FILE [--bad-utf8]

At start it forks a child that stays in its process group and ignores SIGTERM, and a daemon
that leaves the group with ``setsid``; both sleep. Their pids go to PIDS_FILE, one a line.
``echo`` answers; with ``--bad-utf8``, ``echo`` writes bytes that are not UTF-8 on stdout.
"""

from __future__ import annotations

import os
import signal
import sys
import time

from mcp.server.mcpserver import MCPServer


def _sleep_forever(ignore_term: bool) -> None:
    if ignore_term:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1):
        os.dup2(devnull, fd)
    while True:
        time.sleep(60)


def _spawn(pids_file: str) -> None:
    same_group = os.fork()
    if same_group == 0:
        _sleep_forever(ignore_term=True)
    first = os.fork()
    if first == 0:
        os.setsid()
        daemon = os.fork()
        if daemon == 0:
            _sleep_forever(ignore_term=True)
        with open(pids_file, "a", encoding="utf-8") as f:
            f.write(f"{daemon}\n")
        os._exit(0)  # the daemon is an orphan now
    os.waitpid(first, 0)
    with open(pids_file, "a", encoding="utf-8") as f:
        f.write(f"{same_group}\n")


server = MCPServer("forking")
BAD = "--bad-utf8" in sys.argv


@server.tool()
def echo(text: str) -> str:
    """Say it back."""
    if BAD:
        sys.stdout.buffer.write(b'{"jsonrpc": "2.0", "id": 99, "result": "\xff\xfe"}\n')
        sys.stdout.buffer.flush()
    return text


if __name__ == "__main__":
    _spawn(sys.argv[1])
    server.run("stdio")

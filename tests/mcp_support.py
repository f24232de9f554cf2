"""Shared pieces of the MCP tests: where the real servers are (the npm reference servers that
``make setup`` installs from tests/mcp_servers, and the SDK server beside them), config files,
free ports, and a look at which processes are alive."""

from __future__ import annotations

import json
import os
import socket
import sys
import time
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).parent / "mcp_servers"
BIN = HERE / "node_modules" / ".bin"
EVERYTHING = BIN / "mcp-server-everything"
FILESYSTEM = BIN / "mcp-server-filesystem"
SMALL = HERE / "small_server.py"

needs_node_servers = pytest.mark.skipif(
    not (EVERYTHING.exists() and FILESYSTEM.exists()),
    reason="the MCP reference servers are not installed: run make setup (npm ci in tests/mcp_servers)",
)


# The tools the user trusts as read-only (the server's own readOnlyHint counts for nothing).
SMALL_READ_ONLY = ["echo", "big", "hang", "crash", "fail", "image"]


def small_server(*args: str) -> dict[str, Any]:
    return {
        "command": sys.executable,
        "args": [str(SMALL), *args],
        "trust": {"readOnlyTools": SMALL_READ_ONLY},
    }


def write_config(path: Path, servers: dict[str, dict[str, Any]]) -> str:
    path.write_text(json.dumps({"mcpServers": servers}), encoding="utf-8")
    return str(path)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for_port(port: int, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise AssertionError(f"nothing listens on port {port} after {timeout} s")


def alive(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def wait_gone(pids: list[int], timeout: float = 15.0) -> list[int]:
    """The pids still alive after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(alive(p) for p in pids):
        time.sleep(0.1)
    return [p for p in pids if alive(p)]


def pids_in(path: Path) -> list[int]:
    return [int(line) for line in path.read_text().split()] if path.exists() else []


def processes_with(marker: str) -> list[int]:
    """Live processes whose command line contains ``marker``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read().decode("utf-8", "replace")
        except OSError:
            continue
        if marker in cmdline and alive(int(entry)):
            found.append(int(entry))
    return found

"""``tinyharness mcp serve``: memory and notes as MCP tools, driven by the SDK's own client over
stdio and Streamable HTTP (with the bearer token, and 401 without it), and by a second
tinyharness agent through ``--mcp``. Checks the scoping by user and the redaction in and out."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx2
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from hardening_support import answer, tool_turn, write_script
from mcp_support import write_config
from tinyharness.cli import main
from tinyharness.memory import Scope, open_store

SECRET = "ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"  # a GitHub token's shape
TOOLS = {
    "memory_search",
    "memory_add",
    "memory_list",
    "memory_show",
    "memory_history",
    "memory_forget",
    "notes_read",
    "notes_append",
}


def serve_args(db: Path, workspace: Path, *extra: str) -> list[str]:
    return [
        "-m",
        "tinyharness",
        "mcp",
        "serve",
        "--memory",
        str(db),
        "--user",
        "ann",
        "--embedder",
        "none",
        "--workspace",
        str(workspace),
        *extra,
    ]


def text_of(result: Any) -> str:
    return "\n".join(block.text for block in result.content if hasattr(block, "text"))


async def exercise(client: Client, bob_id: str, planted_id: str) -> dict[str, Any]:
    """Every tool once, through ``client``; what came back."""
    seen: dict[str, Any] = {"tools": {t.name for t in (await client.list_tools()).tools}}
    added = json.loads(
        text_of(await client.call_tool("memory_add", {"content": f"Ann deploys with {SECRET}"}))
    )
    seen["added"] = added
    seen["search"] = json.loads(text_of(await client.call_tool("memory_search", {"query": "deploys"})))
    seen["list"] = json.loads(text_of(await client.call_tool("memory_list", {})))
    seen["show_planted"] = text_of(await client.call_tool("memory_show", {"id": planted_id}))
    bob = await client.call_tool("memory_show", {"id": bob_id})
    seen["show_bob"] = (bob.is_error, text_of(bob))
    seen["forget"] = json.loads(text_of(await client.call_tool("memory_forget", {"id": added["id"]})))
    seen["history"] = json.loads(text_of(await client.call_tool("memory_history", {"id": added["id"]})))
    seen["append"] = text_of(await client.call_tool("notes_append", {"text": f"token {SECRET}"}))
    seen["notes"] = text_of(await client.call_tool("notes_read", {}))
    return seen


def prepare(tmp_path: Path) -> tuple[Path, Path, str, str]:
    db, workspace = tmp_path / "memory.db", tmp_path / "ws"
    workspace.mkdir()
    (workspace / "NOTES.md").write_text(f"planted by hand: {SECRET}\n", encoding="utf-8")
    store = open_store(db, embedder="none")
    try:
        bob_id = store.add("Bob's private plan", Scope(user="bob", agent="tinyharness")).id
        planted_id = store.add(f"written around the redactor: {SECRET}", Scope(user="ann")).id
    finally:
        store.close()
    return db, workspace, bob_id, planted_id


def check(seen: dict[str, Any], db: Path, workspace: Path) -> None:
    assert seen["tools"] == TOOLS
    assert SECRET not in json.dumps(seen, default=sorted) and "[REDACTED:" in seen["added"]["content"]
    assert [hit["id"] for hit in seen["search"]] == [seen["added"]["id"]]
    assert "Bob" not in json.dumps(seen["list"]) and len(seen["list"]) == 2  # ann's two, not bob's
    assert "[REDACTED:" in seen["show_planted"]  # redacted on the way out too
    assert seen["show_bob"][0] and "no memory with id" in seen["show_bob"][1]
    assert seen["forget"]["status"] == "deleted"
    assert [v["status"] for v in seen["history"]] == ["deleted"]
    assert "[REDACTED:" in seen["notes"] and "token [REDACTED:" in seen["notes"]
    assert SECRET not in (workspace / "NOTES.md").read_text(encoding="utf-8").split("\n", 1)[1]
    store = open_store(db, embedder="none")
    try:
        stored = store.get(seen["added"]["id"])
        assert stored is not None and SECRET not in stored.content
        assert stored.scope == Scope(user="ann", agent="tinyharness")
    finally:
        store.close()


def test_serve_over_stdio_driven_by_the_sdk_client(tmp_path: Path) -> None:
    db, workspace, bob_id, planted_id = prepare(tmp_path)
    parameters = StdioServerParameters(command=sys.executable, args=serve_args(db, workspace))

    async def drive() -> dict[str, Any]:
        async with Client(stdio_client(parameters)) as client:
            return await exercise(client, bob_id, planted_id)

    check(asyncio.run(drive()), db, workspace)


def test_serve_over_http_needs_the_bearer_token(tmp_path: Path) -> None:
    db, workspace, bob_id, planted_id = prepare(tmp_path)
    server = subprocess.Popen(
        [sys.executable, *serve_args(db, workspace, "--http", "--port", "0")],
        stderr=subprocess.PIPE,
        text=True,
        env={k: v for k, v in os.environ.items() if k != "TINYHARNESS_MCP_TOKEN"},
    )
    try:
        assert server.stderr is not None
        first, second = server.stderr.readline(), server.stderr.readline()
        match = re.search(r"(http://127\.0\.0\.1:\d+/mcp)", first)
        assert match, first  # bound to this machine only by default
        url, token = match.group(1), second.split()[2]
        assert len(token) >= 32

        async def drive() -> tuple[int, int, dict[str, Any]]:
            async with httpx2.AsyncClient(timeout=30) as plain:
                # the server may still be starting: retry the first request for a while
                for _ in range(300):
                    try:
                        missing = (await plain.post(url, json={})).status_code
                        break
                    except httpx2.ConnectError:
                        await asyncio.sleep(0.1)
                wrong = (await plain.post(url, json={}, headers={"Authorization": "Bearer nope"})).status_code
            async with (
                httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30) as http,
                Client(streamable_http_client(url, http_client=http)) as client,
            ):
                return missing, wrong, await exercise(client, bob_id, planted_id)

        missing, wrong, seen = asyncio.run(drive())
    finally:
        server.terminate()
        server.communicate(timeout=30)  # reaps it and closes the stderr pipe
    assert (missing, wrong) == (401, 401)
    check(seen, db, workspace)


def test_serve_refuses_a_store_that_is_off_and_a_port_in_use(tmp_path: Path, capsys: Any) -> None:
    assert main(["mcp", "serve", "--memory", "off"]) == 2
    assert "--memory" in capsys.readouterr().err
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        argv = ["mcp", "serve", "--memory", str(tmp_path / "m.db"), "--http", "--port", str(port)]
        assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"cannot listen on 127.0.0.1:{port}" in err and err.count("\n") == 1


def test_a_second_tinyharness_agent_shares_the_memory_through_mcp(tmp_path: Path) -> None:
    db, workspace, _, _ = prepare(tmp_path)
    config = write_config(
        tmp_path / "mcp.json",
        {
            "memory": {
                "command": sys.executable,
                "args": serve_args(db, workspace),
                "trust": {"readOnlyTools": ["memory_search"]},
            }
        },
    )
    fact = "The staging database is rebuilt every Monday"
    script = write_script(
        tmp_path / "script.json",
        [
            tool_turn(("a1", "mcp__memory__memory_add", {"content": fact})),
            tool_turn(("s1", "mcp__memory__memory_search", {"query": "staging database"})),
            answer("remembered"),
        ],
    )
    agent_workspace = tmp_path / "agent"
    agent_workspace.mkdir()
    events = tmp_path / "events.jsonl"
    argv = ["run", "--model", f"scripted:{script}", "--workspace", str(agent_workspace), "--mcp", config]
    argv += ["--allow", "mcp__memory__memory_add", "--events", str(events), "--trace", "--no-log", "--quiet"]
    assert main([*argv, "remember the rebuild day"]) == 0
    store = open_store(db, embedder="none")
    try:
        hits = store.search("staging database", Scope(user="ann"))
    finally:
        store.close()
    assert [hit.item.content for hit in hits] == [fact]
    requests = [json.loads(line) for line in events.read_text(encoding="utf-8").splitlines()]
    last = [e for e in requests if e["type"] == "model_call"][-1]["request"]["messages"][-1]
    found = next(b["content"] for b in last["content"] if b.get("tool_use_id") == "s1")
    assert fact in found and '<tool_output server="memory" tool="memory_search">' in found

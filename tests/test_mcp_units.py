"""The small parts of MCP support that need no server: async tools in the registry (how MCP tools
run), the content conversion of every kind of MCP content, the progress lines, and the ``mcp
tools`` command without a config."""

from __future__ import annotations

import asyncio
import base64
import io
from pathlib import Path

import mcp_types as types
import pytest

from tinyharness.cli import main
from tinyharness.events import EventBus, ListSink
from tinyharness.mcp.content import result_text
from tinyharness.messages import ToolUseBlock
from tinyharness.progress import ProgressPrinter
from tinyharness.tools.base import Tool, ToolRegistry

PNG_2X1 = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAIAAAABCAIAAAB7QOjdAAAAEElEQVR4nGP4z8DAwMDAAAAPAAH/lMUJ2QAAAABJRU5ErkJggg=="
)


def test_an_async_tool_runs_on_the_loop_with_its_own_timeout_and_events_name_its_server() -> None:
    async def slow(seconds: float) -> str:
        await asyncio.sleep(seconds)
        return "slept"

    async def raises_timeout() -> str:
        raise TimeoutError("the remote side gave up")

    schema = {"type": "object", "properties": {"seconds": {"type": "number"}}}
    registry = ToolRegistry(
        [
            Tool("mcp__s__slow", "", schema, slow, server="s", timeout=0.2),
            Tool("mcp__s__raises", "", {"type": "object"}, raises_timeout, server="s"),
        ],
        timeout=60,
    )
    sink = ListSink()

    async def go() -> list[str]:
        events = EventBus([sink])
        fast = await registry.run_call(ToolUseBlock("a", "mcp__s__slow", {"seconds": 0}), events)
        late = await registry.run_call(ToolUseBlock("b", "mcp__s__slow", {"seconds": 5}), events)
        own = await registry.run_call(ToolUseBlock("c", "mcp__s__raises", {}), events)
        return [fast.content, late.content, own.content]

    fast, late, own = asyncio.run(go())
    assert fast == "slept"
    assert late == "Error: mcp__s__slow timed out after 0.2 s"  # the tool's limit, not the registry's 60
    assert own.startswith("Error: mcp__s__raises raised TimeoutError: the remote side gave up")
    assert {e["server"] for e in sink.events} == {"s"}
    assert {e["type"] for e in sink.events} == {"tool_call", "tool_result"}


def test_every_kind_of_content_becomes_text(tmp_path: Path) -> None:
    blob = base64.b64encode(b"\x00\x01binary").decode()
    result = types.CallToolResult(
        content=[
            types.TextContent(type="text", text="plain text"),
            types.ImageContent(type="image", data=base64.b64encode(PNG_2X1).decode(), mime_type="image/png"),
            types.AudioContent(type="audio", data=blob, mime_type="audio/wav"),
            types.EmbeddedResource(
                type="resource",
                resource=types.TextResourceContents(
                    uri="file:///a.txt", mime_type="text/plain", text="inside"
                ),
            ),
            types.EmbeddedResource(
                type="resource",
                resource=types.BlobResourceContents(
                    uri="file:///b.bin", mime_type="application/x", blob=blob
                ),
            ),
            types.ResourceLink(
                type="resource_link", uri="file:///c.md", name="c.md", mime_type="text/markdown"
            ),
        ]
    )
    text = result_text(result, save_dir=tmp_path / "saved", root=tmp_path)
    assert "plain text" in text
    assert (
        "[image (image/png, 73 bytes, 2x1 pixels): not shown, this model reads text only; saved to saved/"
        in text
    )
    assert "[audio (audio/wav, 8 bytes)" in text
    assert "[resource file:///a.txt (text/plain)]\ninside" in text
    assert "[resource file:///b.bin (application/x, 8 bytes)" in text
    assert "[resource link file:///c.md (c.md, text/markdown)]" in text
    assert blob not in text
    saved = sorted(p.suffix for p in (tmp_path / "saved").iterdir())
    assert saved == [".bin", ".png", ".wav"]
    structured = types.CallToolResult(content=[], structured_content={"temperature": 21})
    assert result_text(structured) == '{"temperature": 21}'
    broken = types.CallToolResult(
        content=[types.ImageContent(type="image", data="%%%", mime_type="image/png")]
    )
    assert "not shown" in result_text(broken)


def test_progress_lines_for_mcp_servers() -> None:
    stream = io.StringIO()
    printer = ProgressPrinter(stream, live=False)
    base = {"seq": 1, "ts": 0.0, "run_id": "r", "type": "mcp_server", "server": "fs"}
    printer.emit({**base, "state": "started", "tools": 14, "transport": "stdio", "seconds": 1.25})
    printer.emit({**base, "state": "failed", "message": "Connection closed", "stderr": "boom"})
    printer.emit({**base, "state": "restarted", "tools": 14})
    printer.emit({**base, "state": "down", "message": "it failed again"})
    assert stream.getvalue().splitlines() == [
        "[mcp] fs: 14 tools (stdio, 1.2 s)",
        "[mcp] fs failed: Connection closed; its stderr ends: boom",
        "[mcp] fs restarted",
        "[mcp] fs down: it failed again",
    ]


def test_mcp_tools_without_any_config_says_how_to_give_one(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["mcp", "tools"]) == 2
    err = capsys.readouterr().err
    assert "no MCP servers configured" in err and "--mcp FILE" in err

"""MCP configuration: the ``mcpServers`` format of Claude Desktop / Claude Code / Cursor, the
home config, ``${VAR}`` expansion, the tool-name contract, and bad files (exit 2, one line).
No server is started here."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tinyharness.cli import main
from tinyharness.errors import ConfigError
from tinyharness.mcp.config import load_config, mcp_tool_name
from tinyharness.models.base import ToolSpec
from tinyharness.models.json_mode import action_schema, protocol_prompt
from tinyharness.tools.base import Tool
from tinyharness.tools.permissions import Permissions

API_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")  # what OpenAI and Anthropic accept


def write(path: Path, data: object) -> Path:
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_claude_desktop_and_claude_code_entries_are_read(tmp_path: Path) -> None:
    config = write(
        tmp_path / "servers.json",
        {
            "mcpServers": {
                "fs": {
                    "command": "npx",
                    "args": ["-y", "server", "${WORK}"],
                    "env": {"LEVEL": "${LEVEL:-info}"},
                },
                "remote": {
                    "url": "https://example.invalid/mcp",
                    "headers": {"Authorization": "Bearer ${TOK}"},
                },
                "legacy": {"type": "sse", "url": "http://127.0.0.1:9/sse"},
                "off": {"command": "x", "disabled": True},
            }
        },
    )
    servers = load_config([config], environ={"WORK": "/w", "TOK": "t0k"})
    by_name = {s.name: s for s in servers}
    assert list(by_name) == ["fs", "remote", "legacy"]
    assert by_name["fs"].transport == "stdio" and by_name["fs"].args == ("-y", "server", "/w")
    assert by_name["fs"].env == {"LEVEL": "info"}
    assert by_name["remote"].transport == "http" and by_name["remote"].headers == {
        "Authorization": "Bearer t0k"
    }
    assert by_name["legacy"].transport == "sse"


def test_home_config_is_read_first_and_a_later_file_replaces_a_server(tmp_path: Path) -> None:
    from tinyharness.paths import data_home

    data_home().mkdir(parents=True, exist_ok=True)
    write(data_home() / "mcp.json", {"mcpServers": {"a": {"command": "home-a"}, "b": {"command": "home-b"}}})
    override = write(tmp_path / "o.json", {"mcpServers": {"a": {"command": "mine", "timeout": 5}}})
    servers = load_config([override])
    assert [(s.name, s.command, s.timeout) for s in servers] == [("b", "home-b", 60.0), ("a", "mine", 5.0)]
    assert load_config([override], include_home=False)[0].command == "mine"


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"servers": {}}, "needs an object"),
        ({"mcpServers": {"x": {}}}, "needs 'command'"),
        ({"mcpServers": {"x": {"command": "a", "url": "http://h"}}}, "not both"),
        ({"mcpServers": {"x": {"url": "ftp://h"}}}, "http:// or https://"),
        ({"mcpServers": {"x": {"command": "a", "args": "--flag"}}}, "'args' must be a list"),
        ({"mcpServers": {"x": {"command": "a", "timeout": 0}}}, "positive number"),
        ({"mcpServers": {"x": {"command": "a", "type": "websocket"}}}, "stdio, http or sse"),
        ({"mcpServers": {"x": {"command": "${NOT_SET_ANYWHERE}"}}}, "NOT_SET_ANYWHERE} is used but not set"),
        ({"mcpServers": {"a.b": {"command": "a"}, "a_b": {"command": "b"}}}, "same names"),
    ],
)
def test_bad_config_is_a_clear_error(tmp_path: Path, data: object, message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        load_config([write(tmp_path / "c.json", data)], environ={})


def test_bad_config_exits_2_with_one_line_before_any_model_call(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text('{"mcpServers": {"x": ', encoding="utf-8")
    argv = ["run", "--model", "scripted:/nonexistent.json", "--no-log", "--quiet", "--mcp", str(broken), "t"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not valid JSON" in err and "Traceback" not in err
    assert main(["run", "--mcp", str(tmp_path / "missing.json"), "--no-log", "--quiet", "t"]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_help_lists_the_mcp_options(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    out = capsys.readouterr().out
    assert "--mcp FILE" in out and "mcpServers" in out and "--mcp-timeout" in out
    with pytest.raises(SystemExit):
        main(["mcp", "serve", "--help"])
    out = capsys.readouterr().out
    for option in ("--memory", "--user", "--http", "--host", "--port", "--workspace"):
        assert option in out


@given(st.text(min_size=1, max_size=80), st.text(min_size=1, max_size=120))
def test_tool_names_always_suit_the_model_apis(server: str, tool: str) -> None:
    name = mcp_tool_name(server, tool)
    assert API_NAME.match(name) and name.startswith("mcp__")


def test_tool_names_follow_the_claude_code_convention() -> None:
    assert mcp_tool_name("fs", "read_file") == "mcp__fs__read_file"
    assert mcp_tool_name("every thing", "get-sum") == "mcp__every_thing__get-sum"
    long_a, long_b = mcp_tool_name("s", "x" * 70 + "a"), mcp_tool_name("s", "x" * 70 + "b")
    assert len(long_a) == 64 and long_a != long_b


def test_an_mcp_tool_not_marked_read_only_needs_permission_and_rules_match_it() -> None:
    def noop(**_: object) -> str:
        return ""

    writer = Tool("mcp__fs__write_file", "", {"type": "object"}, noop, risk="write", server="fs")
    reader = Tool("mcp__fs__read_file", "", {"type": "object"}, noop, risk="read", server="fs")
    Permissions().check(reader, {})
    with pytest.raises(Exception, match="permission denied"):
        Permissions().check(writer, {"path": "a"})
    Permissions(allow=["mcp__fs__*"]).check(writer, {"path": "a"})
    with pytest.raises(Exception, match="deny rule"):
        Permissions(allow=["mcp__fs__*"], deny=["mcp__fs__write_*"]).check(writer, {"path": "a"})
    with pytest.raises(Exception, match="deny rule"):
        Permissions(deny=["mcp__*"]).check(reader, {})


def test_json_tool_mode_offers_the_server_schema() -> None:
    schema = {
        "type": "object",
        "properties": {"message": {"type": "string", "description": "what to echo"}},
        "required": ["message"],
    }
    spec = ToolSpec("mcp__everything__echo", "Echo a message (from the MCP server 'everything')", schema)
    action = action_schema([spec])
    branch = next(b for b in action["anyOf"] if b["properties"].get("tool") == {"const": spec.name})
    assert branch["properties"]["arguments"] == schema
    assert "mcp__everything__echo" in protocol_prompt([spec])

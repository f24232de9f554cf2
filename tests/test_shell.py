"""The shell tool: off by default, risk "execute", allow and deny rules on the command, a yes/no
prompt, a timeout that kills the process group, an output cap, the workspace as working
directory, no stdin and no credentials in its environment."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import Any

import pytest

from hardening_support import answer, tool_turn
from tinyharness.agent import Agent
from tinyharness.errors import ConfigError
from tinyharness.models.scripted import ScriptedModel
from tinyharness.tools.base import ToolRegistry, ToolResult
from tinyharness.tools.builtin import builtin_tools
from tinyharness.tools.permissions import Permissions, command_segments
from tinyharness.tools.shell import check_shell_options, run_command, scrubbed_environment, shell_tool
from tinyharness.tools.workspace import Workspace

pytestmark = pytest.mark.skipif(not os.path.exists("/bin/sh"), reason="needs /bin/sh")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "hello.txt").write_text("hello\n", encoding="utf-8")
    return ws


def registry(root: Path, permissions: Permissions, **shell: Any) -> ToolRegistry:
    tools = ToolRegistry(permissions=permissions.with_workspace(Workspace(root)), timeout=20)
    tools.add(shell_tool(Workspace(root), **shell))
    return tools


def call(tools: ToolRegistry, command: str) -> ToolResult:
    return asyncio.run(tools.execute("shell", {"command": command}))


def test_the_shell_is_not_a_builtin_unless_asked_for(root: Path) -> None:
    assert "shell" not in builtin_tools(root).names
    tools = builtin_tools(root, shell=True)
    assert "shell" in tools.names
    tool = tools.get("shell")
    assert tool is not None and tool.risk == "execute"
    assert tool.input_schema["required"] == ["command"]


def test_refused_by_default_even_with_write_permission(root: Path) -> None:
    tools = builtin_tools(root, shell=True, permissions=Permissions(allow_write=True))
    result = asyncio.run(tools.execute("shell", {"command": "touch made.txt"}))
    assert not result.ok and "permission denied" in result.content
    assert not (root / "made.txt").exists()


def test_allowed_command_runs_in_the_workspace(root: Path) -> None:
    tools = registry(root, Permissions(allow=["shell:cat *", "shell:pwd"]))
    result = call(tools, "cat   hello.txt")
    assert result.ok and result.content == "exit code 0\nhello\n"
    assert call(tools, "pwd").content.splitlines()[1] == str(root.resolve())


def test_exit_code_and_stderr_reach_the_model(root: Path) -> None:
    tools = registry(root, Permissions(allow_execute=True))
    result = call(tools, "echo oops >&2; exit 3")
    assert result.ok and result.content.startswith("exit code 3\n") and "oops" in result.content


@pytest.mark.parametrize(
    "command",
    ["rm -rf x", "ls; rm -rf x", "ls && rm -rf x", "true || rm -rf x", "echo $(rm -rf x)", "ls | rm -rf x"],
)
def test_deny_rules_see_every_simple_command(root: Path, command: str) -> None:
    (root / "x").mkdir()
    tools = registry(root, Permissions(allow_execute=True, deny=["shell:rm *"]))
    result = call(tools, command)
    assert not result.ok and "deny rule 'shell:rm *'" in result.content
    assert (root / "x").is_dir()


def test_path_tricks_do_not_dodge_a_deny_rule(root: Path) -> None:
    """normpath would turn 'rm -rf a/../..' into '..'; commands are not paths."""
    tools = registry(root, Permissions(allow_execute=True, deny=["shell:rm *"]))
    assert not call(tools, "rm -rf a/../..").ok
    assert not call(tools, "  rm   -rf   a  ").ok


@pytest.mark.parametrize(
    "command",
    ["cat hello.txt; touch bad", "cat hello.txt && touch bad", "cat hello.txt > bad", "cat `touch bad`"],
)
def test_allow_rules_never_cover_compound_commands(root: Path, command: str) -> None:
    tools = registry(root, Permissions(allow=["shell:cat *"]))
    result = call(tools, command)
    assert not result.ok and "permission denied" in result.content
    assert not (root / "bad").exists()


def test_command_segments() -> None:
    assert command_segments("git  status") == ["git status"]
    assert command_segments("a; b && c | d") == ["a", "b", "c", "d"]
    assert command_segments("echo $(whoami)") == ["echo", "whoami"]


def test_the_prompt_decides_and_shows_the_command(root: Path) -> None:
    asked: list[str] = []

    def confirm(question: str) -> bool:
        asked.append(question)
        return "hello" in question

    tools = registry(root, Permissions(confirm=confirm))
    assert call(tools, "cat hello.txt").ok
    refused = call(tools, "touch nope")
    assert not refused.ok and "declined" in refused.content
    assert not (root / "nope").exists()
    assert asked == [
        "Allow execute tool shell(command='cat hello.txt')?",
        "Allow execute tool shell(command='touch nope')?",
    ]


def test_an_unanswerable_prompt_is_a_no(root: Path) -> None:
    def confirm(question: str) -> bool:
        raise EOFError

    result = call(registry(root, Permissions(confirm=confirm)), "touch x")
    assert not result.ok and not (root / "x").exists()


def test_timeout_kills_the_whole_process_group(root: Path) -> None:
    tools = registry(root, Permissions(allow_execute=True), timeout=1.0)
    result = call(tools, "(sleep 30; touch late.txt) & echo started; sleep 30")
    assert not result.ok and "timed out after 1 s" in result.content and "started" in result.content
    time.sleep(0.2)
    assert not (root / "late.txt").exists()


def test_background_children_are_killed_when_the_command_ends(root: Path) -> None:
    tools = registry(root, Permissions(allow_execute=True))
    assert call(tools, "(sleep 2; touch late.txt) > /dev/null 2>&1 &").ok
    time.sleep(2.5)
    assert not (root / "late.txt").exists()


def test_huge_output_is_capped_with_head_and_tail(root: Path) -> None:
    tools = registry(root, Permissions(allow_execute=True), output_cap=2000)
    result = call(tools, "seq 1 2000000")
    assert result.ok and len(result.content) < 2100
    assert result.content.startswith("exit code 0\n1\n2\n") and result.content.endswith("2000000\n")
    assert "bytes of output omitted" in result.content


def test_stdin_is_closed(root: Path) -> None:
    code, text = run_command("cat; echo done", root, timeout=5)
    assert code == 0 and text == "done\n"


def test_credentials_are_not_in_the_environment(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-should-not-leak")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_should_not_leak")
    env = scrubbed_environment()
    assert "OPENAI_API_KEY" not in env and "GITHUB_TOKEN" not in env and "PATH" in env
    code, text = run_command("env", root, timeout=5)
    assert code == 0 and "should-not-leak" not in text and "should_not_leak" not in text


@pytest.mark.parametrize(
    ("command", "message"), [("   ", "empty"), ("a\x00b", "NUL"), ("x" * 20_000, "limit")]
)
def test_bad_commands_are_clear_errors(root: Path, command: str, message: str) -> None:
    result = call(registry(root, Permissions(allow_execute=True)), command)
    assert not result.ok and message in result.content


def test_yes_needs_the_shell_and_allow_rules() -> None:
    check_shell_options(shell=True, yes=True, allow=["shell:pytest *"])
    check_shell_options(shell=True, yes=False, allow=[])
    with pytest.raises(ConfigError, match="--allow"):
        check_shell_options(shell=True, yes=True, allow=[])
    with pytest.raises(ConfigError, match="--allow"):
        check_shell_options(shell=True, yes=True, allow=["write_file:docs/*"])
    check_shell_options(shell=False, yes=True, allow=[])  # --yes alone agrees to fetch a local model


def test_through_the_agent_a_refused_command_is_an_error_result_and_the_loop_goes_on(root: Path) -> None:
    model = ScriptedModel(
        {
            "responses": [
                tool_turn(("s1", "shell", {"command": "touch evil"}), purpose=None),
                tool_turn(("s2", "shell", {"command": "cat hello.txt"}), purpose=None),
                answer("done", None),
            ]
        }
    )
    tools = builtin_tools(root, shell=True, permissions=Permissions(allow=["shell:cat *"]))
    result = Agent(model, tools).run("look around")
    assert result.stop == "end_turn"
    outcomes = [b for m in result.messages for b in m.tool_results]
    assert [b.is_error for b in outcomes] == [True, False]
    assert not (root / "evil").exists()


def cli(tmp: Path, root: Path, *flags: str) -> tuple[int, list[dict[str, Any]], str]:
    from hardening_support import read_events, write_script
    from tinyharness.cli import main

    script = write_script(
        tmp / "s.json",
        [
            tool_turn(("s1", "shell", {"command": "cat hello.txt"}), purpose=None),
            tool_turn(("s2", "shell", {"command": "touch made.txt"}), purpose=None),
            answer("done", None),
        ],
    )
    events = tmp / "e.jsonl"
    events.unlink(missing_ok=True)
    args = ["run", "--model", f"scripted:{script}", "--workspace", str(root), "--no-log", "--quiet"]
    code = main([*args, "--events", str(events), *flags, "task"])
    return code, read_events(events) if events.exists() else [], ""


def test_cli_without_shell_the_tool_does_not_exist(tmp_path: Path, root: Path) -> None:
    code, events, _ = cli(tmp_path, root)
    assert code == 0 and "shell" not in events[0]["tools"]
    assert all(not e["ok"] for e in events if e["type"] == "tool_result")


def test_cli_shell_with_allow_rule_and_yes(tmp_path: Path, root: Path) -> None:
    code, events, _ = cli(tmp_path, root, "--shell", "--yes", "--allow", "shell:cat *")
    assert code == 0 and "shell" in events[0]["tools"]
    assert [e["ok"] for e in events if e["type"] == "tool_result"] == [True, False]
    assert not (root / "made.txt").exists()


@pytest.mark.parametrize("flags", [["--shell", "--yes"], ["--shell", "--yes", "--allow", "write_file"]])
def test_cli_yes_without_shell_allow_rules_is_a_usage_error(
    tmp_path: Path, root: Path, flags: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, _ = cli(tmp_path, root, *flags)
    assert code == 2 and capsys.readouterr().err.count("\n") == 1

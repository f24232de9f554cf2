"""Permissions: levels, allow/deny rules, confirmation and the notes exemption."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from tinyharness.errors import ConfigError
from tinyharness.tools import (
    PermissionDenied,
    Permissions,
    Risk,
    Rule,
    Tool,
    ToolRegistry,
    Workspace,
    function_tool,
)


def make_tool(name: str, risk: Risk) -> Tool:
    def action(path: str = "") -> str:
        """Does something."""
        return "done"

    return function_tool(action, name=name, risk=risk)


READ = make_tool("read_file", "read")
WRITE = make_tool("write_file", "write")
EDIT = make_tool("edit_file", "write")
SHELL = make_tool("shell", "execute")
NOTE = make_tool("note", "write")


def allowed(policy: Permissions, tool: Tool, **args: Any) -> bool:
    try:
        policy.check(tool, args)
    except PermissionDenied:
        return False
    return True


def reason(policy: Permissions, tool: Tool, **args: Any) -> str:
    with pytest.raises(PermissionDenied) as caught:
        policy.check(tool, args)
    message = str(caught.value)
    assert "\n" not in message
    return message


def test_reads_are_always_allowed_and_writes_are_off_by_default() -> None:
    policy = Permissions()
    assert allowed(policy, READ, path="a.txt")
    assert "--allow-write" in reason(policy, WRITE, path="a.txt")


def test_allow_write_enables_writes_but_not_execute() -> None:
    policy = Permissions(allow_write=True)
    assert allowed(policy, WRITE, path="a.txt")
    assert allowed(policy, EDIT, path="a.txt")
    assert "off by default" in reason(policy, SHELL)


def test_allow_execute_enables_execute_tools() -> None:
    assert allowed(Permissions(allow_execute=True), SHELL)
    assert not allowed(Permissions(allow_execute=True), WRITE, path="a")


def test_allow_rule_by_tool_name() -> None:
    policy = Permissions(allow=["write_file"])
    assert allowed(policy, WRITE, path="anything/at/all.txt")
    assert not allowed(policy, EDIT, path="a.txt")


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("docs/a.md", True),
        ("docs/deep/b.md", True),
        ("./docs/a.md", True),
        ("docs//a.md", True),
        ("src/a.md", False),
        ("docs", False),
    ],
)
def test_allow_rule_with_a_path_pattern(path: str, expected: bool) -> None:
    assert allowed(Permissions(allow=["write_file:docs/*"]), WRITE, path=path) is expected


def test_extension_rule_matches_in_any_folder() -> None:
    policy = Permissions(allow=["edit_file:*.py"])
    assert allowed(policy, EDIT, path="src/pkg/mod.py")
    assert not allowed(policy, EDIT, path="README.md")


def test_deny_wins_over_allow_rules_and_levels() -> None:
    policy = Permissions(allow_write=True, allow=["write_file:*"], deny=["write_file:secrets/*"])
    message = reason(policy, WRITE, path="secrets/key.pem")
    assert "deny rule 'write_file:secrets/*'" in message
    assert allowed(policy, WRITE, path="public/key.pub")


def test_deny_applies_to_reads_and_to_exempt_tools() -> None:
    policy = Permissions(deny=["read_file:.env", "note"])
    assert "deny rule 'read_file:.env'" in reason(policy, READ, path=".env")
    assert allowed(policy, READ, path="src/.env.example")
    assert "deny rule 'note'" in reason(policy, NOTE, text="x")


@pytest.mark.parametrize(
    "spelling", ["secrets/key", "./secrets/key", "secrets//key", "secrets/./key", "secrets\\key"]
)
def test_deny_cannot_be_dodged_by_spelling_the_path_differently(spelling: str) -> None:
    policy = Permissions(allow_write=True, deny=["write_file:secrets/*"])
    assert not allowed(policy, WRITE, path=spelling)


def test_deny_sees_through_symlinks_when_bound_to_a_workspace(tmp_path: Path) -> None:
    (tmp_path / "secrets").mkdir()
    (tmp_path / "innocent").symlink_to(tmp_path / "secrets")
    policy = Permissions(allow_write=True, deny=["write_file:secrets/*"])
    assert allowed(policy, WRITE, path="innocent/key")  # unbound: only the spelling is known
    bound = policy.with_workspace(Workspace(tmp_path))
    assert not allowed(bound, WRITE, path="innocent/key")
    assert policy.workspace is None  # binding returns a copy


def test_notes_tools_need_no_write_permission() -> None:
    policy = Permissions()
    assert allowed(policy, NOTE, text="remember this")
    assert allowed(policy, make_tool("update_notes", "write"), content="all")
    assert not allowed(Permissions(exempt=()), NOTE, text="x")


def test_confirm_is_asked_when_no_rule_decides() -> None:
    questions: list[str] = []

    def yes(question: str) -> bool:
        questions.append(question)
        return True

    policy = Permissions(confirm=yes)
    assert allowed(policy, WRITE, path="a.txt", content="x" * 500)
    assert questions == ["Allow write tool write_file(path='a.txt', content=<500 characters>)?"]


def test_confirm_no_refuses_with_a_readable_reason() -> None:
    policy = Permissions(confirm=lambda question: False)
    assert "the user declined write_file(path='a.txt')" in reason(policy, WRITE, path="a.txt")


def test_confirm_that_cannot_read_an_answer_refuses() -> None:
    def closed_stdin(question: str) -> bool:
        raise EOFError

    assert not allowed(Permissions(confirm=closed_stdin), WRITE, path="a.txt")


def test_confirm_is_not_asked_when_a_rule_or_level_decides() -> None:
    questions: list[str] = []

    def ask(question: str) -> bool:
        questions.append(question)
        return True

    assert allowed(Permissions(allow=["write_file"], confirm=ask), WRITE, path="a")
    assert allowed(Permissions(allow_write=True, confirm=ask), WRITE, path="a")
    assert allowed(Permissions(confirm=ask), READ, path="a")
    assert not allowed(Permissions(deny=["write_file"], confirm=ask), WRITE, path="a")
    assert questions == []


def test_rules_are_parsed_and_validated() -> None:
    assert Rule.parse("edit_file:src/*.py") == Rule("edit_file", "src/*.py")
    assert Rule.parse(" write_file ") == Rule("write_file")
    assert str(Rule("edit_file", "*.py")) == "edit_file:*.py"
    for bad in ["", ":docs/*", "write_file:"]:
        with pytest.raises(ConfigError, match="bad permission rule"):
            Permissions(allow=[bad])


def test_a_single_rule_string_is_one_rule() -> None:
    policy = Permissions(allow="write_file:docs/*")
    assert policy.allow == (Rule("write_file", "docs/*"),)


def test_path_rules_do_not_match_tools_without_a_path() -> None:
    calc = make_tool("calculator", "write")
    assert not allowed(Permissions(allow=["calculator:*"]), calc)
    assert allowed(Permissions(allow=["calculator"]), calc)


def test_command_argument_is_the_subject_for_execute_tools() -> None:
    def shell(command: str) -> str:
        """Run a command."""
        return ""

    tool = function_tool(shell, risk="execute")
    policy = Permissions(allow=["shell:git status*"], deny=["shell:*rm -rf*"])
    assert allowed(policy, tool, command="git status --short")
    assert not allowed(policy, tool, command="git status; rm -rf /")
    assert not allowed(policy, tool, command="ls")


def test_registry_reports_refusals_and_never_runs_the_tool(tmp_path: Path) -> None:
    ran: list[str] = []

    def write_file(path: str, content: str) -> str:
        """Write."""
        ran.append(path)
        return "ok"

    registry = ToolRegistry(
        [function_tool(write_file, risk="write")], permissions=Permissions(deny=["write_file"])
    )
    result = asyncio.run(registry.execute("write_file", {"path": "a", "content": "b"}))
    assert not result.ok
    assert result.content.startswith("Error: permission denied: write_file(path='a'")
    assert ran == []

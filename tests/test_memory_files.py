"""The ``memory`` tool: Anthropic's memory-tool commands, confined to the memory folder."""

from __future__ import annotations

import asyncio
import contextlib
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tinyharness.memory.files import memory_tools
from tinyharness.tools.base import ToolError, ToolRegistry


def tool(folder: Path, **kwargs: Any) -> Any:
    return memory_tools(folder, **kwargs)[0].function


def test_create_view_edit_insert_rename_delete(tmp_path: Path) -> None:
    memory = tool(tmp_path / "mem")
    assert "created" in memory(command="create", path="/memories/prefs.md", file_text="tea\ncoffee\n")
    assert (tmp_path / "mem" / "prefs.md").read_text() == "tea\ncoffee\n"
    with pytest.raises(ToolError, match="already exists"):
        memory(command="create", path="/memories/prefs.md", file_text="x")
    view = memory(command="view", path="/memories/prefs.md")
    assert "     1\ttea\n     2\tcoffee" in view
    assert memory(command="view", path="/memories/prefs.md", view_range=[2, -1]).endswith("     2\tcoffee")
    memory(command="str_replace", path="/memories/prefs.md", old_str="coffee", new_str="water")
    memory(command="insert", path="/memories/prefs.md", insert_line=0, insert_text="# drinks")
    assert (tmp_path / "mem" / "prefs.md").read_text() == "# drinks\ntea\nwater\n"
    with pytest.raises(ToolError, match="not found"):
        memory(command="str_replace", path="/memories/prefs.md", old_str="juice", new_str="x")
    memory(command="rename", old_path="/memories/prefs.md", new_path="/memories/archive/prefs.md")
    assert "/memories/archive/" in memory(command="view", path="/memories")
    memory(command="delete", path="/memories/archive")
    assert not (tmp_path / "mem" / "archive").exists()
    with pytest.raises(ToolError, match="itself"):
        memory(command="delete", path="/memories")


def test_writes_are_redacted_and_capped(tmp_path: Path) -> None:
    memory = tool(tmp_path, max_file_chars=100)
    out = memory(command="create", path="k.md", file_text="token ghp_16C7e42F292c6912E7710c838347Ae178B4a")
    assert "redacted" in out
    assert "ghp_" not in (tmp_path / "k.md").read_text()
    with pytest.raises(ToolError, match="at most 100"):
        memory(command="create", path="big.md", file_text="x" * 101)
    assert not (tmp_path / "big.md").exists()


def test_long_files_are_paginated(tmp_path: Path) -> None:
    memory = tool(tmp_path)
    memory(command="create", path="long.md", file_text="".join(f"line {i}\n" for i in range(1, 1001)))
    first = memory(command="view", path="long.md")
    assert "line 400" in first and "line 401" not in first and "view_range [401, 1000]" in first


@pytest.mark.parametrize(
    "path",
    [
        "/memories/../secret",
        "../secret",
        "/memories/..\\secret",
        "..\\..\\etc\\passwd",
        "/memories/%2e%2e/x",
        "%252e%252e/x",
        "/etc/passwd",
        "/memoriesX/a",
        "C:\\x",
        "a/\x00b",
    ],
)
def test_traversal_is_refused(tmp_path: Path, path: str) -> None:
    (tmp_path / "secret").write_text("s")
    memory = tool(tmp_path / "mem")
    with pytest.raises(ToolError):
        memory(command="create", path=path, file_text="x")
    with pytest.raises(ToolError):
        memory(command="view", path=path)


def test_symlink_out_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (tmp_path / "mem").mkdir()
    os.symlink(outside, tmp_path / "mem" / "link")
    memory = tool(tmp_path / "mem")
    with pytest.raises(ToolError, match="outside"):
        memory(command="create", path="/memories/link/x.md", file_text="x")
    assert not (outside / "x.md").exists()


def test_registry_reports_errors_as_results(tmp_path: Path) -> None:
    registry = ToolRegistry(memory_tools(tmp_path))
    result = asyncio.run(registry.execute("memory", {"command": "view", "path": "/memories/../../etc"}))
    assert not result.ok and "refused" in result.content
    result = asyncio.run(registry.execute("memory", {"command": "fly"}))
    assert not result.ok


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.sampled_from(["..", ".", "a", "b", "%2e%2e", "%2e.", "..\\", "\\", "/", "~", "%2f", "．．"]),
        max_size=6,
    )
)
def test_any_spelling_stays_inside(parts: list[str]) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "mem"
        memory = tool(root)
        path = "/memories/" + "/".join(parts) + "/f.md"
        with contextlib.suppress(ToolError):
            memory(command="create", path=path, file_text="x")
        created = [p for p in Path(tmp).rglob("f.md")]
        assert all(p.resolve().is_relative_to(root.resolve()) for p in created)

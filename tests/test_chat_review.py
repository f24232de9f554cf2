"""The chat's write review without a terminal: the diff shown before a write, yes / no / always
(deny rules still win), snapshots and /undo, and how streamed text is split for the screen."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tinyharness.chat.render import settled
from tinyharness.chat.review import WriteReview, always_pattern, proposed_change
from tinyharness.tools.builtin import builtin_tools
from tinyharness.tools.permissions import Permissions
from tinyharness.tools.workspace import Workspace


def test_the_diff_of_a_new_file_an_edit_and_an_edit_that_cannot_apply(tmp_path: Path) -> None:
    space = Workspace(tmp_path)
    new = proposed_change(space, "write_file", {"path": "docs/a.md", "content": "one\ntwo"})
    assert new.splitlines() == ["--- /dev/null", "+++ b/docs/a.md", "@@ -0,0 +1,2 @@", "+one", "+two"]
    (tmp_path / "b.py").write_text("x = 1\ny = 2\n")
    edit = proposed_change(space, "edit_file", {"path": "b.py", "old": "y = 2", "new": "y = 3"})
    assert "-y = 2\n+y = 3\n" in edit and edit.startswith("--- a/b.py\n+++ b/b.py\n")
    twice = proposed_change(space, "edit_file", {"path": "b.py", "old": " = ", "new": "="})
    assert "found 2 times" in twice
    escape = proposed_change(space, "write_file", {"path": "../x", "content": ""})
    assert escape.startswith("write_file ../x:")


def test_always_allows_the_folder_deny_still_wins_and_undo_puts_files_back(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "old.md").write_text("before")
    asked: list[tuple[str, str]] = []
    answers = iter(["a", "n"])

    def ask(diff: str, what: str, pattern: str) -> str:
        asked.append((what, pattern))
        return next(answers)

    review = WriteReview(tmp_path, ask)
    tools = builtin_tools(tmp_path, permissions=Permissions(deny=["write_file:docs/secret*"]))
    review.attach(tools)

    def write(path: str, content: str) -> bool:
        return asyncio.run(tools.execute("write_file", {"path": path, "content": content})).ok

    review.begin_turn()
    assert write("docs/old.md", "after")  # asked, answered always
    assert write("docs/new.md", "fresh")  # the folder is allowed now: not asked
    assert not write("docs/secret.md", "x")  # deny wins over always
    assert not write("top.md", "x")  # another folder: asked, answered no
    review.end_turn()
    assert asked == [("write_file docs/old.md", "docs/*"), ("write_file top.md", "top.md")]
    assert review.undoable() == ["docs/new.md", "docs/old.md", "docs/secret.md", "top.md"]
    review.undo()
    assert (tmp_path / "docs" / "old.md").read_text() == "before"
    assert not (tmp_path / "docs" / "new.md").exists()
    assert not (tmp_path / "top.md").exists()
    assert review.undoable() == []


def test_always_pattern() -> None:
    assert always_pattern("./src/pkg/mod.py") == "src/pkg/*"
    assert always_pattern("README.md") == "README.md"


def test_streamed_text_is_split_after_complete_paragraphs_outside_code_fences() -> None:
    assert settled("one line") == ("", "one line")
    assert settled("para one\n\npara two") == ("para one", "para two")
    fenced = "intro\n\n```\ncode\n\nmore code"
    assert settled(fenced) == ("intro", "```\ncode\n\nmore code")  # never inside an open fence
    assert settled("```\na\n\nb\n```\n\nafter") == ("```\na\n\nb\n```", "after")

"""File tools through the registry, as the model calls them, plus the built-in tool contract."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest

from tinyharness.tools import (
    BUILTIN_TOOL_NAMES,
    NotesFile,
    Permissions,
    ToolRegistry,
    ToolResult,
    builtin_tools,
)
from tinyharness.tools import files as files_module


@pytest.fixture
def root(tmp_path: Path) -> Path:
    workspace = tmp_path / "ws"
    (workspace / "src").mkdir(parents=True)
    (workspace / "src" / "app.py").write_text("import os\n\ndef main():\n    return 1\n")
    (workspace / "README.md").write_text("# Demo\nTODO: write docs\n")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text("TODO secret\n")
    return workspace


@pytest.fixture
def tools(root: Path) -> ToolRegistry:
    return builtin_tools(root, permissions=Permissions(allow_write=True))


def call(registry: ToolRegistry, name: str, **args: Any) -> ToolResult:
    return asyncio.run(registry.execute(name, args))


def ok(registry: ToolRegistry, name: str, **args: Any) -> str:
    result = call(registry, name, **args)
    assert result.ok, result.content
    return result.content


def error(registry: ToolRegistry, name: str, **args: Any) -> str:
    result = call(registry, name, **args)
    assert not result.ok, result.content
    return result.content


# --- the contract: names and arguments ----------------------------------------------------------


def test_builtin_tools_have_the_contract_names_arguments_and_risks(root: Path) -> None:
    registry = builtin_tools(root)
    assert registry.names == list(BUILTIN_TOOL_NAMES)
    signatures = {
        spec.name: (
            sorted(spec.input_schema["properties"]),
            spec.input_schema["required"],
        )
        for spec in registry.specs
    }
    assert signatures == {
        "read_file": (["end_line", "path", "start_line"], ["path"]),
        "list_dir": (["path"], ["path"]),
        "grep": (["path", "pattern"], ["pattern", "path"]),
        "write_file": (["content", "path"], ["path", "content"]),
        "edit_file": (["new", "old", "path"], ["path", "old", "new"]),
        "calculator": (["expression"], ["expression"]),
        "current_time": ([], []),
        "note": (["path", "text"], ["text"]),  # path is additive: note(text) as SPEC says still works
        "update_notes": (["content"], ["content"]),
    }
    tools = [registry.get(name) for name in registry.names]
    assert [tool.name for tool in tools if tool is not None and tool.risk == "write"] == [
        "write_file",
        "edit_file",
        "note",
        "update_notes",
    ]
    assert all(spec.description for spec in registry.specs)


def test_default_permissions_refuse_writes_but_allow_reads_and_notes(root: Path) -> None:
    registry = builtin_tools(root)
    assert "--allow-write" in error(registry, "write_file", path="a.txt", content="x")
    assert not (root / "a.txt").exists()
    assert "Demo" in ok(registry, "read_file", path="README.md")
    ok(registry, "note", text="remember")
    assert (root / "NOTES.md").read_text() == "remember\n"


def test_a_given_notes_file_is_used(root: Path, tmp_path: Path) -> None:
    notes = NotesFile(tmp_path / "elsewhere.md")
    ok(builtin_tools(root, notes=notes), "update_notes", content="plan")
    assert notes.read() == "plan\n"
    assert not (root / "NOTES.md").exists()


def test_calculator_and_clock_are_registered(tools: ToolRegistry) -> None:
    assert ok(tools, "calculator", expression="(12 + 8) * 3") == "60"
    assert "T" in ok(tools, "current_time")


# --- read_file ----------------------------------------------------------------------------------


def test_read_file_numbers_lines(tools: ToolRegistry) -> None:
    assert ok(tools, "read_file", path="src/app.py") == (
        "src/app.py (lines 1-4 of 4)\n     1\timport os\n     2\t\n     3\tdef main():\n     4\t    return 1"
    )


def test_read_file_line_range_is_one_based_and_inclusive(tools: ToolRegistry) -> None:
    assert ok(tools, "read_file", path="src/app.py", start_line=3, end_line=4) == (
        "src/app.py (lines 3-4 of 4)\n     3\tdef main():\n     4\t    return 1"
    )
    assert ok(tools, "read_file", path="src/app.py", start_line=2, end_line=99).startswith(
        "src/app.py (lines 2-4 of 4)"
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"start_line": 0}, "start_line must be 1 or more"),
        ({"start_line": 3, "end_line": 2}, "must not be before start_line"),
        ({"start_line": 9}, "past the end of src/app.py, which has 4 lines"),
    ],
)
def test_read_file_bad_ranges(tools: ToolRegistry, args: dict[str, int], message: str) -> None:
    assert message in error(tools, "read_file", path="src/app.py", **args)


def test_read_file_caps_output_and_says_how_to_continue(root: Path) -> None:
    (root / "big.txt").write_text("".join(f"row {n}\n" for n in range(1, 5001)))
    registry = builtin_tools(root, result_cap=2000)
    first = ok(registry, "read_file", path="big.txt")
    assert first.startswith("big.txt (lines 1-")
    assert "of 5000)" in first
    assert len(first) <= 2000
    last_shown = int(first.split("lines 1-")[1].split(" ")[0])
    assert f"row {last_shown}\n" in first + "\n"
    assert f"start_line={last_shown + 1})" in first
    following = ok(registry, "read_file", path="big.txt", start_line=last_shown + 1)
    assert f"\trow {last_shown + 1}\n" in following


def test_read_file_clips_a_huge_single_line(tools: ToolRegistry, root: Path) -> None:
    (root / "min.js").write_text("x" * 50_000 + "\nsecond\n")
    content = ok(tools, "read_file", path="min.js")
    assert "line cut, 50000 bytes in total" in content
    assert "\tsecond" in content
    assert len(content) < 5000


def test_read_file_refuses_binary_files(tools: ToolRegistry, root: Path) -> None:
    (root / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(100))
    assert "logo.png is a binary file (116 bytes)" in error(tools, "read_file", path="logo.png")


def test_read_file_decodes_invalid_utf8_with_replacement_and_says_so(tools: ToolRegistry, root: Path) -> None:
    (root / "latin1.txt").write_bytes("café\n".encode("latin-1"))
    content = ok(tools, "read_file", path="latin1.txt")
    assert "caf\ufffd" in content
    assert "not valid UTF-8" in content


def test_read_file_strips_bom_and_carriage_returns(tools: ToolRegistry, root: Path) -> None:
    (root / "win.txt").write_bytes(b"\xef\xbb\xbfone\r\ntwo\r\n")
    assert ok(tools, "read_file", path="win.txt") == "win.txt (lines 1-2 of 2)\n     1\tone\n     2\ttwo"


def test_read_file_empty_missing_folder_and_outside(tools: ToolRegistry, root: Path) -> None:
    (root / "empty.txt").write_text("")
    assert ok(tools, "read_file", path="empty.txt") == "empty.txt is empty."
    assert "does not exist" in error(tools, "read_file", path="nope.txt")
    assert "use list_dir" in error(tools, "read_file", path="src")
    assert "relative to the workspace" in error(tools, "read_file", path="../outside/secret.txt")


# --- list_dir -----------------------------------------------------------------------------------


def test_list_dir_sorted_with_folders_marked_and_sizes(tools: ToolRegistry, root: Path) -> None:
    (root / "src" / "data.bin").write_bytes(bytes(3000))
    assert ok(tools, "list_dir", path=".") == "./ (2 entries)\nREADME.md  24 B\nsrc/\n[1 .md file, 1 folder]"
    assert ok(tools, "list_dir", path="src") == (
        "src/ (2 entries)\napp.py  36 B\ndata.bin  2.9 KB\n[1 .bin file, 1 .py file]"
    )


def test_list_dir_marks_links_and_hides_outside_targets(tools: ToolRegistry, root: Path) -> None:
    (root / "escape").symlink_to(root.parent / "outside")
    (root / "code").symlink_to(root / "src")
    listing = ok(tools, "list_dir", path=".")
    assert "escape@ (link to outside the workspace; not accessible)" in listing
    assert "code/ (link to src)" in listing
    assert "secret" not in listing


def test_list_dir_caps_long_listings(tools: ToolRegistry, root: Path) -> None:
    many = root / "many"
    many.mkdir()
    for n in range(files_module.MAX_LIST_ENTRIES + 20):
        (many / f"f{n:04}.txt").write_text("")
    listing = ok(tools, "list_dir", path="many")
    assert listing.startswith(f"many/ ({files_module.MAX_LIST_ENTRIES + 20} entries)")
    assert "f0000.txt" in listing
    assert "20 more entries not shown" in listing
    assert listing.endswith(f"[{files_module.MAX_LIST_ENTRIES + 20} .txt files]")  # all counted


def test_list_dir_counts_each_kind_of_entry(tools: ToolRegistry, root: Path) -> None:
    """The listing's last line counts its entries by extension, folders and links apart, so a
    count is a number in the result (a small model answered "1" for a folder of 7 files)."""
    mixed = root / "mixed"
    (mixed / "sub").mkdir(parents=True)
    for name in ("a.py", "b.py", "c.PY", "d.md", "Makefile"):
        (mixed / name).write_text("x")
    (mixed / "up").symlink_to(root / "src")
    listing = ok(tools, "list_dir", path="mixed")
    assert listing.splitlines()[-1] == "[3 .py files, 1 .md file, 1 other file, 1 folder, 1 link]"


def test_list_dir_errors(tools: ToolRegistry, root: Path) -> None:
    (root / "empty").mkdir()
    assert ok(tools, "list_dir", path="empty") == "empty/ (0 entries)\n(empty folder)"
    # A file is answered, not refused: what it is, how to read it, and its folder's entries.
    answer = ok(tools, "list_dir", path="README.md")
    assert answer.startswith(
        "README.md is a file (24 B), not a folder; read it with read_file(path='README.md')"
    )
    assert "\nREADME.md  24 B\nempty/\nsrc/" in answer
    assert "relative to the workspace" in error(tools, "list_dir", path="/")


# --- grep ---------------------------------------------------------------------------------------


def test_grep_reports_path_line_and_text(tools: ToolRegistry) -> None:
    assert ok(tools, "grep", pattern=r"def \w+\(|TODO", path=".") == (
        "README.md:2: TODO: write docs\nsrc/app.py:3: def main():\n[2 matches in 2 files searched]"
    )


def test_grep_single_file_and_no_matches(tools: ToolRegistry) -> None:
    assert ok(tools, "grep", pattern="import", path="src/app.py").startswith("src/app.py:1: import os")
    assert ok(tools, "grep", pattern="nothing-here", path=".").startswith(
        "No matches for 'nothing-here' in ."
    )


def test_grep_skips_hidden_and_vendored_folders_and_binary_files(tools: ToolRegistry, root: Path) -> None:
    for folder in (".git", ".venv", "node_modules", "src/__pycache__"):
        (root / folder).mkdir(parents=True)
        (root / folder / "hit.txt").write_text("needle\n")
    (root / "blob.bin").write_bytes(b"needle\x00\x01")
    (root / "found.txt").write_text("a needle\n")
    output = ok(tools, "grep", pattern="needle", path=".")
    assert output.splitlines()[0] == "found.txt:1: a needle"
    assert "1 matches in" in output
    assert "1 binary, unreadable or very large files skipped" in output


def test_grep_does_not_follow_links_outside(tools: ToolRegistry, root: Path) -> None:
    (root / "leak.txt").symlink_to(root.parent / "outside" / "secret.txt")
    assert "secret" not in ok(tools, "grep", pattern="TODO", path=".")


def test_grep_caps_the_number_of_matches(tools: ToolRegistry, root: Path) -> None:
    (root / "many.txt").write_text("hit\n" * 1000)
    output = ok(tools, "grep", pattern="hit", path="many.txt")
    assert output.count("many.txt:") == files_module.MAX_GREP_MATCHES
    assert f"stopped at {files_module.MAX_GREP_MATCHES} matches" in output


def test_grep_skips_files_over_the_size_cap(
    tools: ToolRegistry, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(files_module, "MAX_GREP_FILE_BYTES", 100)
    (root / "huge.txt").write_text("needle\n" * 100)
    assert "No matches" in ok(tools, "grep", pattern="needle", path=".")
    assert "larger than 100 bytes" in error(tools, "grep", pattern="needle", path="huge.txt")


def test_grep_stops_after_the_file_count_cap(
    tools: ToolRegistry, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(files_module, "MAX_GREP_FILES", 2)
    for n in range(5):
        (root / "src" / f"m{n}.py").write_text("needle\n")
    assert "stopped after 2 files" in ok(tools, "grep", pattern="needle", path="src")


@pytest.mark.parametrize(
    ("pattern", "message"),
    [
        ("(unclosed", "invalid regular expression '(unclosed': missing ), unterminated"),
        ("[z-a]", "bad character range"),
        (r"(a)\1", "no backreferences"),
        ("foo(?=bar)", "lookaround"),
        ("(?<!x)y", "lookaround"),
        ("x" * 600, "longer than 500 characters"),
    ],
)
def test_grep_refuses_bad_or_unsupported_patterns(tools: ToolRegistry, pattern: str, message: str) -> None:
    assert message in error(tools, "grep", pattern=pattern, path=".")


def test_grep_refuses_binary_single_file_and_outside_paths(tools: ToolRegistry, root: Path) -> None:
    (root / "blob.bin").write_bytes(b"\x00abc")
    assert "binary file" in error(tools, "grep", pattern="abc", path="blob.bin")
    assert "relative to the workspace" in error(tools, "grep", pattern="TODO", path="..")


# --- write_file ---------------------------------------------------------------------------------


def test_write_file_creates_parents_and_writes_exact_content(tools: ToolRegistry, root: Path) -> None:
    content = "héllo\r\nno newline at end"
    assert ok(tools, "write_file", path="docs/guide/intro.md", content=content) == (
        "Created docs/guide/intro.md (24 characters, 2 lines)"
    )
    assert (root / "docs" / "guide" / "intro.md").read_bytes() == content.encode()


def test_write_file_overwrites_atomically_without_leftovers(tools: ToolRegistry, root: Path) -> None:
    assert ok(tools, "write_file", path="README.md", content="new\n").startswith("Overwrote")
    assert (root / "README.md").read_text() == "new\n"
    assert not [p for p in root.iterdir() if p.name.endswith(".tmp")]


def test_write_file_failure_keeps_the_old_file(
    tools: ToolRegistry, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def full_disk(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full_disk)
    assert "No space left on device" in error(tools, "write_file", path="README.md", content="x")
    assert (root / "README.md").read_text() == "# Demo\nTODO: write docs\n"
    assert sorted(p.name for p in root.iterdir()) == ["README.md", "src"]


def test_write_file_under_an_existing_file_is_a_clear_error(tools: ToolRegistry) -> None:
    message = error(tools, "write_file", path="README.md/inner.txt", content="x")
    assert message == "Error: 'README.md' is a file, so it cannot hold other files"


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
def test_named_pipes_are_refused_instead_of_blocking(tools: ToolRegistry, root: Path) -> None:
    os.mkfifo(root / "pipe")
    assert "not a regular file" in error(tools, "read_file", path="pipe")
    assert "not a regular file" in error(tools, "grep", pattern="x", path="pipe")
    assert "No matches" in ok(tools, "grep", pattern="never-there", path=".")


def test_write_file_refusals(tools: ToolRegistry, root: Path) -> None:
    assert "is a folder" in error(tools, "write_file", path="src", content="x")
    assert "relative to the workspace" in error(
        tools, "write_file", path="../outside/secret.txt", content="pwned"
    )
    (root / "escape").symlink_to(root.parent / "outside")
    assert "outside the workspace" in error(tools, "write_file", path="escape/new.txt", content="pwned")
    assert (root.parent / "outside" / "secret.txt").read_text() == "TODO secret\n"
    assert not (root.parent / "outside" / "new.txt").exists()


# --- edit_file ----------------------------------------------------------------------------------


def test_edit_file_replaces_exactly_one_occurrence(tools: ToolRegistry, root: Path) -> None:
    message = ok(tools, "edit_file", path="src/app.py", old="    return 1\n", new="    return 2\n")
    assert message == "Edited src/app.py: replaced 1 occurrence (now lines 4-4)"
    assert (root / "src" / "app.py").read_text() == "import os\n\ndef main():\n    return 2\n"


def test_edit_file_missing_text_leaves_the_file_alone(tools: ToolRegistry, root: Path) -> None:
    before = (root / "src" / "app.py").read_text()
    assert "old text not found in src/app.py" in error(
        tools, "edit_file", path="src/app.py", old="return 3", new="return 4"
    )
    assert (root / "src" / "app.py").read_text() == before


def test_edit_file_ambiguous_text_says_how_many_times(tools: ToolRegistry, root: Path) -> None:
    (root / "dup.txt").write_text("x = 1\nx = 1\nx = 1\n")
    assert "occurs 3 times in dup.txt" in error(tools, "edit_file", path="dup.txt", old="x = 1", new="x = 2")
    assert (root / "dup.txt").read_text() == "x = 1\nx = 1\nx = 1\n"


def test_edit_file_matches_windows_line_endings(tools: ToolRegistry, root: Path) -> None:
    (root / "win.txt").write_bytes(b"one\r\ntwo\r\nthree\r\n")
    ok(tools, "edit_file", path="win.txt", old="one\ntwo\n", new="uno\ndos\n")
    assert (root / "win.txt").read_bytes() == b"uno\r\ndos\r\nthree\r\n"


def test_edit_file_can_delete_text(tools: ToolRegistry, root: Path) -> None:
    assert "removed the text at line 1" in ok(
        tools, "edit_file", path="src/app.py", old="import os\n", new=""
    )
    assert (root / "src" / "app.py").read_text().startswith("\ndef main")


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [("", "x", "old must not be empty"), ("same", "same", "nothing would change")],
)
def test_edit_file_rejects_pointless_edits(tools: ToolRegistry, old: str, new: str, message: str) -> None:
    assert message in error(tools, "edit_file", path="src/app.py", old=old, new=new)


def test_edit_file_refuses_binary_and_non_utf8_files(tools: ToolRegistry, root: Path) -> None:
    (root / "blob.bin").write_bytes(b"ab\x00cd")
    (root / "latin1.txt").write_bytes("café".encode("latin-1"))
    assert "binary file" in error(tools, "edit_file", path="blob.bin", old="ab", new="x")
    assert "not valid UTF-8" in error(tools, "edit_file", path="latin1.txt", old="caf", new="x")
    assert (root / "latin1.txt").read_bytes() == "café".encode("latin-1")


def test_parallel_edits_in_one_turn_do_not_lose_updates(tools: ToolRegistry, root: Path) -> None:
    (root / "many.txt").write_text("".join(f"item{n}\n" for n in range(30)))

    async def edit_all() -> list[ToolResult]:
        calls = [
            tools.execute("edit_file", {"path": "many.txt", "old": f"item{n}\n", "new": f"done{n}\n"})
            for n in range(30)
        ]
        return await asyncio.gather(*calls)

    results = asyncio.run(edit_all())
    assert all(result.ok for result in results)
    assert (root / "many.txt").read_text() == "".join(f"done{n}\n" for n in range(30))


def test_write_tools_need_permission(root: Path) -> None:
    registry = builtin_tools(root, permissions=Permissions())
    assert "permission denied" in error(registry, "edit_file", path="README.md", old="#", new="##")
    assert (root / "README.md").read_text().startswith("# Demo")


def test_read_file_path_choices_are_the_files_not_yet_read(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The grammar of a JSON-mode model gets read_file's path as an enum of real files, less
    the files already read (and not cut) in the window; a cut read stays open for paging."""
    from tinyharness.messages import Message, ToolResultBlock, ToolUseBlock
    from tinyharness.models import json_mode

    registry = builtin_tools(root)
    spec = next(s for s in registry.specs if s.name == "read_file")
    assert spec.choices is not None
    assert spec.choices([]) == {"path": ["README.md", "src/app.py"]}

    def read(call_id: str, path: str) -> list[Message]:
        result = call(registry, "read_file", path=path)
        use = ToolUseBlock(call_id, "read_file", {"path": path})
        return [Message("assistant", (use,)), Message("user", (ToolResultBlock(call_id, result.content),))]

    window = read("a", "./README.md")
    assert spec.choices(window) == {"path": ["src/app.py"]}
    schema = json_mode.action_schema(registry.specs, messages=window)
    branch = next(b for b in schema["anyOf"] if b["properties"].get("tool", {}).get("const") == "read_file")
    assert branch["properties"]["arguments"]["properties"]["path"]["enum"] == ["src/app.py"]
    assert spec.choices([*window, *read("b", "src/app.py")]) == {"path": ["README.md", "src/app.py"]}

    (root / "src" / "long.py").write_text("x = 1\n" * 5000)
    assert "if you need them: read_file(" in read("c", "src/long.py")[1].content[0].content  # type: ignore[union-attr]
    assert "src/long.py" in spec.choices(read("c", "src/long.py"))["path"]
    monkeypatch.setattr(files_module, "MAX_PATH_CHOICES", 2)
    assert spec.choices([]) == {}  # too many files to list: no constraint


def test_read_file_path_choices_leave_out_files_restored_whole_after_a_compaction(root: Path) -> None:
    """After a lossy compaction the files in use are read back into the head message: the ones
    put back whole are not offered again (their text is in the window), the ones cut to fit
    stay open."""
    from tinyharness.context.restore import files_block, workspace_reader
    from tinyharness.messages import Message

    (root / "src" / "long.py").write_text("x = 1\n" * 3000)
    spec = next(s for s in builtin_tools(root).specs if s.name == "read_file")
    assert spec.choices is not None
    block, restored = files_block(
        ["README.md", "src/long.py"], workspace_reader(root), lambda text: len(text) // 4, 2000, 1000
    )
    assert block is not None and restored == ["README.md", "src/long.py"]
    head = Message("user", (*Message.user("the task").content, block))
    assert spec.choices([head, Message.assistant("ok")]) == {"path": ["src/app.py", "src/long.py"]}
    assert spec.choices([Message.user("the task"), head]) == {
        "path": ["README.md", "src/app.py", "src/long.py"]
    }


def test_read_file_path_choices_skip_calls_with_raw_arguments(root: Path) -> None:
    """A read_file call whose arguments did not decode (its input is the raw text) names no
    path: the choices are made around it instead of failing the next JSON-mode request."""
    from tinyharness.messages import Message, ToolResultBlock, ToolUseBlock

    spec = next(s for s in builtin_tools(root).specs if s.name == "read_file")
    assert spec.choices is not None
    broken = [
        Message.user("task"),
        Message("assistant", (ToolUseBlock("c1", "read_file", '{"path": "README'),)),
        Message("user", (ToolResultBlock("c1", "Error: arguments are not valid JSON", is_error=True),)),
    ]
    assert spec.choices(broken) == {"path": ["README.md", "src/app.py"]}

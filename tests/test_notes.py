"""NotesFile: append vs overwrite, atomic writes, the on_write callback, the tools."""

from __future__ import annotations

import asyncio
import logging
import os
from pathlib import Path

import pytest

from tinyharness.tools import NotesFile, Permissions, ToolError, ToolRegistry


def test_read_returns_empty_text_when_the_file_is_missing(tmp_path: Path) -> None:
    assert NotesFile(tmp_path / "NOTES.md").read() == ""


def test_note_appends_one_line_per_call(tmp_path: Path) -> None:
    notes = NotesFile(tmp_path / "NOTES.md")
    notes.append("a.py parses input")
    notes.append("b.py writes output\n")
    assert (tmp_path / "NOTES.md").read_text() == "a.py parses input\nb.py writes output\n"


def test_append_starts_a_new_line_when_the_file_lacks_one(tmp_path: Path) -> None:
    (tmp_path / "NOTES.md").write_text("# Notes")
    notes = NotesFile(tmp_path / "NOTES.md")
    notes.append("first")
    assert notes.read() == "# Notes\nfirst\n"


def test_update_notes_overwrites_everything(tmp_path: Path) -> None:
    notes = NotesFile(tmp_path / "NOTES.md")
    notes.append("old detail")
    notes.overwrite("## Decisions\n- optimistic locking")
    assert notes.read() == "## Decisions\n- optimistic locking\n"
    notes.overwrite("")
    assert notes.read() == ""


def test_notes_folder_is_created(tmp_path: Path) -> None:
    notes = NotesFile(tmp_path / "run" / "notes" / "NOTES.md")
    notes.append("x")
    assert notes.read() == "x\n"


def test_empty_note_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ToolError, match="empty"):
        NotesFile(tmp_path / "NOTES.md").append(" \n ")
    assert not (tmp_path / "NOTES.md").exists()


def test_size_limit_points_to_update_notes(tmp_path: Path) -> None:
    notes = NotesFile(tmp_path / "NOTES.md", max_chars=20)
    notes.append("0123456789")
    with pytest.raises(ToolError, match="over the 20 limit; rewrite them shorter with update_notes"):
        notes.append("0123456789")
    assert notes.read() == "0123456789\n"


def test_on_write_reports_operation_and_characters(tmp_path: Path) -> None:
    events: list[tuple[str, int]] = []
    notes = NotesFile(tmp_path / "NOTES.md", on_write=lambda op, chars: events.append((op, chars)))
    notes.append("hello")
    notes.overwrite("all new")
    assert events == [("append", 6), ("overwrite", 8)]


def test_on_write_is_not_called_when_the_write_fails(tmp_path: Path) -> None:
    events: list[tuple[str, int]] = []
    notes = NotesFile(tmp_path / "NOTES.md", on_write=lambda *event: events.append(event))
    with pytest.raises(ToolError):
        notes.append("")
    assert events == []


def test_a_failing_callback_does_not_undo_or_fail_the_write(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(op: str, chars: int) -> None:
        raise RuntimeError("sink closed")

    notes = NotesFile(tmp_path / "NOTES.md", on_write=broken)
    with caplog.at_level(logging.ERROR):
        assert notes.append("kept").startswith("Noted in NOTES.md")
    assert notes.read() == "kept\n"
    assert "on_write callback failed" in caplog.text


@pytest.mark.parametrize("failing", ["replace", "fsync", "write"])
def test_a_failure_during_write_leaves_the_old_file_intact(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failing: str
) -> None:
    path = tmp_path / "NOTES.md"
    notes = NotesFile(path)
    notes.overwrite("precious\n")

    def crash(*args: object, **kwargs: object) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, failing, crash)
    with pytest.raises(ToolError, match=r"cannot write NOTES\.md: Input/output error"):
        notes.append("lost")
    with pytest.raises(ToolError):
        notes.overwrite("lost")
    monkeypatch.undo()
    assert path.read_text() == "precious\n"
    assert [p.name for p in tmp_path.iterdir()] == ["NOTES.md"]


def test_tools_have_seed_names_and_work_without_write_permission(tmp_path: Path) -> None:
    events: list[tuple[str, int]] = []
    notes = NotesFile(tmp_path / "NOTES.md", on_write=lambda op, n: events.append((op, n)))
    registry = ToolRegistry(notes.tools(), permissions=Permissions())
    assert registry.names == ["note", "update_notes"]
    first = asyncio.run(registry.execute("note", {"text": "step 1 done"}))
    second = asyncio.run(registry.execute("update_notes", {"content": "## Plan\n- step 2"}))
    assert first.ok and second.ok
    assert notes.read() == "## Plan\n- step 2\n"
    assert [op for op, _ in events] == ["append", "overwrite"]


def test_parallel_notes_in_one_turn_are_all_kept(tmp_path: Path) -> None:
    notes = NotesFile(tmp_path / "NOTES.md")
    registry = ToolRegistry(notes.tools())

    async def write_many() -> None:
        await asyncio.gather(*(registry.execute("note", {"text": f"n{i}"}) for i in range(40)))

    asyncio.run(write_many())
    assert sorted(notes.read().splitlines()) == sorted(f"n{i}" for i in range(40))


def test_a_note_about_a_file_starts_with_its_path(tmp_path: Path) -> None:
    """``note(text, path)`` writes ``path: text``."""
    notes = NotesFile(tmp_path / "NOTES.md")
    registry = ToolRegistry(notes.tools())
    result = asyncio.run(registry.execute("note", {"text": "parses the input", "path": "src/a.py"}))
    assert result.ok and notes.read() == "src/a.py: parses the input\n"


def test_update_notes_refuses_to_erase_most_notes(tmp_path: Path) -> None:
    """The 1.5B model called update_notes after each note with just that note, erasing the
    rest (21 of 22 notes lost). Such a rewrite is refused with what to do instead; a rewrite
    that keeps the notes, or a real consolidation, goes through."""
    notes = NotesFile(tmp_path / "NOTES.md")
    registry = ToolRegistry(notes.tools(), permissions=Permissions())
    lines = [f"src/m{i}.py: module {i} parses part {i} of the input" for i in range(6)]
    notes.overwrite("\n".join(lines))
    refused = asyncio.run(registry.execute("update_notes", {"content": "src/m6.py: module 6 writes output"}))
    assert not refused.ok and "would erase 6 of the 6 lines" in refused.content
    assert "use note" in refused.content
    assert notes.read().splitlines() == lines
    kept = asyncio.run(
        registry.execute("update_notes", {"content": "\n".join([*lines, "src/m6.py: output"])})
    )
    assert kept.ok and len(notes.read().splitlines()) == 7
    one_line = asyncio.run(registry.execute("update_notes", {"content": "modules m0-m6: the input"}))
    assert not one_line.ok  # drops most lines and is less than half as long: an append by mistake
    summary = "modules m0-m5 parse the input in six parts, one part each; m6 writes the output"
    merged = asyncio.run(registry.execute("update_notes", {"content": f"{summary}\n{summary}"}))
    assert merged.ok  # at least half as long: a consolidation, allowed
    # The library call (not the model's tool) still overwrites freely.
    notes.overwrite("fresh start")
    assert notes.read() == "fresh start\n"


def test_short_notes_may_be_rewritten_freely(tmp_path: Path) -> None:
    notes = NotesFile(tmp_path / "NOTES.md")
    registry = ToolRegistry(notes.tools(), permissions=Permissions())
    notes.overwrite("a\nb\nc")
    assert asyncio.run(registry.execute("update_notes", {"content": "d"})).ok

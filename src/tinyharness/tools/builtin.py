"""The built-in tool set: file tools confined to a workspace, calculator, clock and notes,
in one registry guarded by Permissions."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import replace

from .base import DEFAULT_RESULT_CAP, ToolRegistry, function_tool
from .calculator import calculator
from .clock import current_time
from .coverage import FileSetPlan, guard_note
from .files import ReadState, file_tools
from .focus import TaskFocus
from .notes import DEFAULT_NOTES_NAME, NotesFile
from .permissions import Permissions
from .shell import DEFAULT_SHELL_TIMEOUT, shell_tool
from .workspace import Workspace

BUILTIN_TOOL_NAMES = (
    "read_file",
    "list_dir",
    "grep",
    "write_file",
    "edit_file",
    "calculator",
    "current_time",
    "note",
    "update_notes",
)


def notes_since(notes: NotesFile) -> Callable[[], str]:
    """The note lines written since now: files they name are done in this run. Lines from
    earlier runs do not count, or a question about a file noted last week could not read it."""
    before = set(notes.read().splitlines())

    def written() -> str:
        return "\n".join(line for line in notes.read().splitlines() if line not in before)

    return written


def builtin_tools(
    workspace: Workspace | str | os.PathLike[str],
    *,
    notes: NotesFile | None = None,
    permissions: Permissions | None = None,
    result_cap: int = DEFAULT_RESULT_CAP,
    timeout: float = 60.0,
    shell: bool = False,
    read_state: ReadState | None = None,
    focus: TaskFocus | None = None,
    path_choices: bool = True,
    overwrite: bool = True,
    file_set: FileSetPlan | None = None,
) -> ToolRegistry:
    """A registry with every built-in tool.

    ``notes`` defaults to ``NOTES.md`` in the workspace. ``permissions`` defaults to
    ``Permissions()``: reading is allowed, writing is refused until the caller allows it; the
    policy is bound to the workspace so path rules also see real paths. ``shell=True`` adds the
    ``shell`` tool (risk "execute", so still refused unless the permissions let it run), with a
    time limit below the registry's so the command is killed, not abandoned. ``read_state``,
    ``focus``, ``path_choices``, ``overwrite`` and ``file_set`` go to the file tools (see
    ``file_tools``); ``file_set`` also checks the notes on its files and fixes the path of the
    one it asks for.
    """
    space = workspace if isinstance(workspace, Workspace) else Workspace(workspace)
    notes_file = notes if notes is not None else NotesFile(space.root / DEFAULT_NOTES_NAME)
    policy = (permissions if permissions is not None else Permissions()).with_workspace(space)
    registry = ToolRegistry(permissions=policy, result_cap=result_cap, timeout=timeout)
    notes_tools = notes_file.tools()
    if focus is not None:  # a notes task's plan: which file to note next (see tools.focus)
        if focus.notes_text is None:
            focus.notes_text = notes_since(notes_file)
        notes_tools = [
            replace(tool, choices=focus.note_choices) if tool.name == "note" else tool for tool in notes_tools
        ]
    files = file_tools(
        space,
        output_cap=result_cap,
        read_state=read_state,
        notes_text=notes_since(notes_file),
        focus=focus,
        path_choices=path_choices,
        overwrite=overwrite,
        file_set=file_set,
    )
    if file_set is not None:
        # A note must not be a tool's description (measured: the 0.5B wrote read_file's as a note).
        known = [tool.description.split(". ", 1)[0] for tool in files]
        notes_tools = [
            guard_note(tool, file_set, known) if tool.name == "note" else tool for tool in notes_tools
        ]
    for tool in [
        *files,
        function_tool(calculator),
        function_tool(current_time),
        *notes_tools,
    ]:
        registry.add(tool)
    if shell:
        limit = max(1.0, min(DEFAULT_SHELL_TIMEOUT, timeout * 0.9))
        registry.add(shell_tool(space, timeout=limit, output_cap=result_cap))
    return registry

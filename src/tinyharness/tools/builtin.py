"""The built-in tool set: file tools confined to a workspace, calculator, clock and notes,
in one registry guarded by Permissions."""

from __future__ import annotations

import os
from collections.abc import Callable

from .base import DEFAULT_RESULT_CAP, ToolRegistry, function_tool
from .calculator import calculator
from .clock import current_time
from .files import ReadState, file_tools
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
    path_choices: bool = True,
    overwrite: bool = True,
) -> ToolRegistry:
    """A registry with every built-in tool.

    ``notes`` defaults to ``NOTES.md`` in the workspace. ``permissions`` defaults to
    ``Permissions()``: reading is allowed, writing is refused until the caller allows it; the
    policy is bound to the workspace so path rules also see real paths. ``shell=True`` adds the
    ``shell`` tool (risk "execute", so still refused unless the permissions let it run), with a
    time limit below the registry's so the command is killed, not abandoned. ``read_state``,
    ``path_choices`` and ``overwrite`` go to the file tools (see ``file_tools``). The tools know
    nothing of the task; a guide (``tinyharness.guide``) shapes and checks their calls.
    """
    space = workspace if isinstance(workspace, Workspace) else Workspace(workspace)
    notes_file = notes if notes is not None else NotesFile(space.root / DEFAULT_NOTES_NAME)
    policy = (permissions if permissions is not None else Permissions()).with_workspace(space)
    registry = ToolRegistry(permissions=policy, result_cap=result_cap, timeout=timeout)
    notes_tools = notes_file.tools()
    files = file_tools(
        space,
        output_cap=result_cap,
        read_state=read_state,
        notes_text=notes_since(notes_file),
        path_choices=path_choices,
        overwrite=overwrite,
    )
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

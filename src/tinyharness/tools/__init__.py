"""Tools: plain typed functions, the registry that runs them, workspace confinement and
permissions.

May import ``messages``, ``procs`` (ending what a command leaves behind), ``history`` (which
files were read, for read_file's path choices),
``models.base`` (for ToolSpec), ``events``, ``errors``, ``redact``, ``safefs`` (files
opened beneath the workspace), ``anchors`` (the plan and pins the todo and pin tools write) and
``sqlitedb`` (the index search_history reads); never context, memory or
the loop."""

from .base import (
    DEFAULT_RESULT_CAP,
    AllowAll,
    PermissionDenied,
    PermissionPolicy,
    Risk,
    Tool,
    ToolError,
    ToolRegistry,
    ToolResult,
    ToolStopped,
    function_tool,
    raise_if_stopped,
    stop_requested,
)
from .builtin import BUILTIN_TOOL_NAMES, builtin_tools
from .calculator import calculator
from .clock import current_time
from .files import file_tools
from .notes import NOTES_TOOL_NAMES, NotesFile
from .permissions import Permissions, Rule
from .shell import shell_tool
from .workspace import Workspace, atomic_write_text

__all__ = [
    "BUILTIN_TOOL_NAMES",
    "DEFAULT_RESULT_CAP",
    "NOTES_TOOL_NAMES",
    "AllowAll",
    "NotesFile",
    "PermissionDenied",
    "PermissionPolicy",
    "Permissions",
    "Risk",
    "Rule",
    "Tool",
    "ToolError",
    "ToolRegistry",
    "ToolResult",
    "ToolStopped",
    "Workspace",
    "atomic_write_text",
    "builtin_tools",
    "calculator",
    "current_time",
    "file_tools",
    "function_tool",
    "raise_if_stopped",
    "shell_tool",
    "stop_requested",
]

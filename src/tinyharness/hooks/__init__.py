"""User hooks in Claude Code's settings shape: shell commands run at points of a run.

``config`` reads them (``hooks`` in config.json, and a project's ``.agents/hooks.json`` once the
user trusts that file), ``runner`` runs one command (argv, or ``sh -c`` of the user's string, in
its own process group, the event's JSON on stdin, killed at its timeout) and ``runtime`` is the
``Hooks`` object the run attaches: a registry hook for PreToolUse/PostToolUse, the agent's
``RunHooks`` for SessionStart/UserPromptSubmit/Stop, and the context manager's PreCompact.
``cli`` holds ``tinyharness hooks list|trust``.

May import ``agent``, ``anchors``, ``errors``, ``events``, ``messages``, ``paths``, ``redact``,
``safefs``, ``settings`` and ``tools``.
"""

from .config import EVENTS, HookCommand, load_hooks, parse_hooks
from .runner import HookOutcome, run_hook
from .runtime import Hooks

__all__ = ["EVENTS", "HookCommand", "HookOutcome", "Hooks", "load_hooks", "parse_hooks", "run_hook"]

"""Permissions: the one place that decides whether a tool call may run.

Order of decision for a call:

1. a deny rule that matches refuses it (deny wins over everything, at every level);
2. read tools and exempt tools (the notes tools) run;
3. an allow rule that matches, or the level switch (``allow_write`` / ``allow_execute``), lets it run;
4. otherwise ``confirm`` (an interactive yes/no prompt) decides; without one it is refused.

Rules are fnmatch patterns: ``write_file`` matches every call of that tool, and
``write_file:docs/*`` or ``edit_file:*.py`` also match the call's path (``*`` crosses folders).
Paths are compared in normalised form. When the workspace is known, a deny rule matches the
path as spelled or as its real path (links resolved), and an allow rule only the real path: so
``./docs/a``, ``docs//a`` or a symlink into a denied folder cannot dodge a deny rule, and
``docs/link/x`` with ``docs/link -> ../src`` is not let through by ``write_file:docs/*``.

A ``command`` argument (the shell tool) is not a path: rules see it with its whitespace
collapsed. A deny rule also matches each simple command inside a compound one (``a; b``,
``a && b``, ``a | b``, ``$(b)``...), so ``shell:rm *`` refuses ``ls; rm -rf x``. An allow rule
matches only a simple command: ``shell:git status*`` never lets ``git status; curl ... | sh``
run without asking.
"""

from __future__ import annotations

import copy
import posixpath
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

from ..errors import ConfigError
from .base import PermissionDenied, Tool, ToolError
from .notes import NOTES_TOOL_NAMES
from .workspace import Workspace

Confirm = Callable[[str], bool]
# The argument a rule's pattern is matched against, in order of preference.
SUBJECT_ARGUMENTS = ("path", "command")
_PREVIEW_CHARS = 80


@dataclass(frozen=True)
class Rule:
    """``tool`` or ``tool:subject`` as fnmatch patterns."""

    tool: str
    subject: str | None = None

    @classmethod
    def parse(cls, text: str) -> Rule:
        tool, has_subject, subject = text.strip().partition(":")
        if not tool or (has_subject and not subject):
            raise ConfigError(
                f"bad permission rule {text!r}; use 'tool' or 'tool:pattern', e.g. 'write_file:docs/*'"
            )
        return cls(tool, subject if has_subject else None)

    def matches(self, tool_name: str, subjects: Iterable[str]) -> bool:
        if not fnmatchcase(tool_name, self.tool):
            return False
        if self.subject is None:
            return True
        return any(fnmatchcase(subject, self.subject) for subject in subjects)

    def __str__(self) -> str:
        return self.tool if self.subject is None else f"{self.tool}:{self.subject}"


class Permissions:
    """Implements ``PermissionPolicy``; ``allow`` and ``deny`` take rule strings or Rules."""

    def __init__(
        self,
        *,
        allow_write: bool = False,
        allow_execute: bool = False,
        allow: Iterable[Rule | str] = (),
        deny: Iterable[Rule | str] = (),
        confirm: Confirm | None = None,
        exempt: Iterable[str] = NOTES_TOOL_NAMES,
        workspace: Workspace | None = None,
    ) -> None:
        self.allow_write = allow_write
        self.allow_execute = allow_execute
        self.allow = _rules(allow)
        self.deny = _rules(deny)
        self.confirm = confirm
        self.exempt = frozenset(exempt)
        self.workspace = workspace

    def __repr__(self) -> str:
        allow = [str(rule) for rule in self.allow]
        deny = [str(rule) for rule in self.deny]
        return (
            f"Permissions(allow_write={self.allow_write}, allow_execute={self.allow_execute}, "
            f"allow={allow}, deny={deny}, confirm={'yes' if self.confirm else 'no'})"
        )

    def with_workspace(self, workspace: Workspace) -> Permissions:
        """A copy that also matches rules against real paths inside ``workspace``."""
        bound = copy.copy(self)
        bound.workspace = workspace
        return bound

    def check(self, tool: Tool, args: dict[str, Any]) -> None:
        subjects = self._subjects(args)
        command = args.get("command") if "path" not in args else None
        deny_subjects, allow_subjects = subjects, subjects
        if len(subjects) == 2:  # spelled and real: what is written is the real file
            allow_subjects = subjects[1:]
        if isinstance(command, str):
            segments = command_segments(command)
            deny_subjects = [*subjects, *segments]
            allow_subjects = subjects if segments == subjects else []
        for rule in self.deny:
            if rule.matches(tool.name, deny_subjects):
                raise PermissionDenied(
                    f"permission denied: {_describe(tool.name, args)} matches deny rule '{rule}'"
                )
        if tool.risk == "read" or tool.name in self.exempt:
            return
        if any(rule.matches(tool.name, allow_subjects) for rule in self.allow):
            return
        if (tool.risk == "write" and self.allow_write) or (tool.risk == "execute" and self.allow_execute):
            return
        if self.confirm is not None:
            if self._ask(tool, args):
                return
            raise PermissionDenied(f"permission denied: the user declined {_describe(tool.name, args)}")
        raise PermissionDenied(_refusal(tool))

    def always_refuses(self, tool: Tool) -> bool:
        """True when every call of ``tool`` would be refused, whatever its arguments: a deny
        rule for the whole tool, or a write/execute tool with no way to be allowed (no --allow-*
        flag, no allow rule naming it, nobody to ask). Such a tool is better not offered:
        measured with Qwen2.5-Coder-0.5B, a refused write_file was its top choice five times
        in a row until the run stopped as stuck."""
        if any(rule.subject is None and rule.matches(tool.name, []) for rule in self.deny):
            return True
        if tool.risk == "read" or tool.name in self.exempt or self.confirm is not None:
            return False
        if (tool.risk == "write" and self.allow_write) or (tool.risk == "execute" and self.allow_execute):
            return False
        return not any(fnmatchcase(tool.name, rule.tool) for rule in self.allow)

    def _ask(self, tool: Tool, args: dict[str, Any]) -> bool:
        assert self.confirm is not None
        try:
            return bool(self.confirm(f"Allow {tool.risk} tool {_describe(tool.name, args)}?"))
        except (EOFError, KeyboardInterrupt, OSError):  # no answer is a no
            return False

    def _subjects(self, args: Mapping[str, Any]) -> list[str]:
        key = next((key for key in SUBJECT_ARGUMENTS if isinstance(args.get(key), str)), None)
        if key is None:
            return []
        raw = args[key]
        if key == "command":  # not a path: normpath would turn 'rm a/../..' into '..'
            return [_collapse(raw)]
        subjects = [_normalise(raw)]
        if self.workspace is not None:
            try:
                real = self.workspace.relative(self.workspace.resolve(raw))
            except ToolError:
                pass  # not a workspace path: a file tool refuses it itself, with a better message
            else:
                subjects.append(real)
        return subjects


def _rules(rules: Iterable[Rule | str]) -> tuple[Rule, ...]:
    if isinstance(rules, str):  # a lone string would otherwise be read letter by letter
        rules = (rules,)
    return tuple(rule if isinstance(rule, Rule) else Rule.parse(rule) for rule in rules)


# Shell operators that chain or nest commands, and redirections (which write files).
_COMMAND_SPLIT = re.compile(r"\|\||&&|[;&|\n`()<>]|\$\(")


def _collapse(command: str) -> str:
    return " ".join(command.split())


def command_segments(command: str) -> list[str]:
    """The simple commands inside ``command``, whitespace collapsed: ``[command]`` itself when it
    has no shell operators, redirections or substitutions. Splitting ignores quoting on purpose:
    a quoted ``;`` makes an extra segment, which can only make a deny rule stricter."""
    collapsed = _collapse(command)
    parts = [_collapse(part) for part in _COMMAND_SPLIT.split(command)]
    parts = [part for part in parts if part]
    return [collapsed] if parts == [collapsed] else parts


def _normalise(path: str) -> str:
    cleaned = posixpath.normpath(path.replace("\\", "/"))
    return "." if cleaned in ("", ".") else cleaned.removeprefix("./")


def _describe(tool_name: str, args: Mapping[str, Any]) -> str:
    """``write_file(path='a.txt', content=<120 characters>)``: enough to decide, never huge."""
    parts = []
    for key, value in args.items():
        if isinstance(value, str) and (key not in SUBJECT_ARGUMENTS or len(value) > _PREVIEW_CHARS):
            parts.append(f"{key}=<{len(value)} characters>")
        else:
            parts.append(f"{key}={value!r}")
    return f"{tool_name}({', '.join(parts)})"


def _refusal(tool: Tool) -> str:
    if tool.server is not None:
        return (
            f"permission denied: {tool.name} comes from the MCP server {tool.server!r}, which the user's "
            f"MCP config does not trust as read-only; the user must rerun with --allow-write or --allow "
            f'\'{tool.name}\', or trust it in the config ("trust": {{"readOnlyTools": [...]}}). '
            "Do not retry this call"
        )
    if tool.risk == "execute":
        return (
            f"permission denied: {tool.name} runs commands, which is off by default; the user "
            "must enable execute tools (allow_execute) or add an allow rule"
        )
    return (
        f"permission denied: {tool.name} changes files and write permission is off; the user "
        "must rerun with --allow-write (library: Permissions(allow_write=True)) or add an "
        "allow rule. Do not retry this call"
    )

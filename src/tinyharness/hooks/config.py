"""Hook settings: Claude Code's shape, from config.json and a trusted project file.

::

    {"hooks": {"PostToolUse": [{"matcher": "write_file|edit_file",
                                "hooks": [{"type": "command", "command": "ruff format .", "timeout": 30}]}]}}

``matcher`` is a tool name, a regular expression matched against the whole name, ``*`` or ""
for every tool (only PreToolUse and PostToolUse use it). ``command`` is a string (run with
``sh -c``, as Claude Code does) or a list (run as argv, no shell). ``timeout`` is in seconds.

The user's hooks live in ``$TINYHARNESS_HOME/config.json``. A project's hooks live in
``.agents/hooks.json`` in the workspace, a file anyone who can commit to the repository can
write: they run only once the user has trusted that exact file (its SHA-256, recorded in
``$TINYHARNESS_HOME/trusted_hooks.json`` by ``tinyharness hooks trust`` or a yes on the
terminal). A changed file must be trusted again.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..paths import data_home
from ..safefs import Folder, write_file
from ..settings import config_path

EVENTS = ("PreToolUse", "PostToolUse", "UserPromptSubmit", "Stop", "PreCompact", "SessionStart")
TOOL_EVENTS = ("PreToolUse", "PostToolUse")
PROJECT_FILE = ".agents/hooks.json"
TRUST_FILE = "trusted_hooks.json"
DEFAULT_TIMEOUT = 60.0  # seconds, as Claude Code
MAX_FILE_BYTES = 1_000_000


@dataclass(frozen=True)
class HookCommand:
    """One configured command: for ``event``, on tools ``matcher`` names, from ``source``."""

    event: str
    command: str | tuple[str, ...]
    matcher: str = ""
    timeout: float = DEFAULT_TIMEOUT
    source: str = "config"

    def matches(self, tool: str | None) -> bool:
        if self.event not in TOOL_EVENTS or self.matcher in ("", "*"):
            return True
        return tool is not None and re.fullmatch(self.matcher, tool) is not None

    @property
    def argv(self) -> list[str]:
        """What is started: the argv as given, or ``sh -c`` of the user's string."""
        if isinstance(self.command, str):
            return ["sh", "-c", self.command]
        return list(self.command)

    @property
    def shown(self) -> str:
        return self.command if isinstance(self.command, str) else " ".join(self.command)

    def describe(self) -> dict[str, Any]:
        """For ``run_start`` and ``tinyharness hooks list``."""
        entry: dict[str, Any] = {"event": self.event, "command": self.shown, "timeout": self.timeout}
        if self.event in TOOL_EVENTS:
            entry["matcher"] = self.matcher or "*"
        entry["source"] = self.source
        return entry


def parse_hooks(data: Any, source: str) -> list[HookCommand]:
    """The commands of a ``hooks`` object; ConfigError naming ``source`` and the key when it is
    malformed."""
    if data is None:
        return []
    if not isinstance(data, dict):
        raise ConfigError(f'{source}: hooks must be an object of events, e.g. {{"PostToolUse": [...]}}')
    found: list[HookCommand] = []
    for event, groups in data.items():
        if event not in EVENTS:
            raise ConfigError(f"{source}: unknown hook event {event!r}; the events are {', '.join(EVENTS)}")
        if not isinstance(groups, list):
            raise ConfigError(f'{source}: hooks.{event} must be a list of {{"matcher", "hooks"}} objects')
        for n, group in enumerate(groups):
            where = f"{source}: hooks.{event}[{n}]"
            if not isinstance(group, dict) or not isinstance(group.get("hooks"), list):
                raise ConfigError(f'{where} must be an object with a "hooks" list')
            matcher = group.get("matcher", "")
            if not isinstance(matcher, str):
                raise ConfigError(f"{where}.matcher must be a string (a tool name or a regular expression)")
            if matcher not in ("", "*"):
                try:
                    re.compile(matcher)
                except re.error as exc:
                    why = f"{where}.matcher {matcher!r} is not a regular expression: {exc}"
                    raise ConfigError(why) from None
            for m, hook in enumerate(group["hooks"]):
                found.append(_command(hook, event, matcher, f"{where}.hooks[{m}]", source))
    return found


def _command(hook: Any, event: str, matcher: str, where: str, source: str) -> HookCommand:
    if not isinstance(hook, dict):
        raise ConfigError(f'{where} must be an object with "command"')
    kind = hook.get("type", "command")
    if kind != "command":
        raise ConfigError(f'{where}.type {kind!r} is not supported; only "command" hooks run')
    command = hook.get("command")
    if isinstance(command, list) and command and all(isinstance(part, str) for part in command):
        command = tuple(command)
    elif not isinstance(command, str) or not command.strip():
        raise ConfigError(f"{where}.command must be a command string or a list of arguments")
    timeout = hook.get("timeout", DEFAULT_TIMEOUT)
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
        raise ConfigError(f"{where}.timeout must be a positive number of seconds")
    return HookCommand(event, command, matcher, float(timeout), source)


def _read_json(path: Path, what: str) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read {what} {path}: {exc}") from None
    try:
        data = json.loads(text) if text.strip() else {}
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{what} {path} is not valid JSON ({exc.msg}, line {exc.lineno}); fix it") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{what} {path} must hold a JSON object")
    return data


def user_hooks(path: Path | None = None) -> list[HookCommand]:
    where = path or config_path()
    return parse_hooks(_read_json(where, "the config file").get("hooks"), str(where))


def project_file(workspace: Path) -> tuple[bytes, str] | None:
    """The project hooks file's bytes and SHA-256, read beneath the workspace (a link leading
    out is refused); None when there is none."""
    try:
        data, size = Folder(workspace).read(PROJECT_FILE, MAX_FILE_BYTES + 1)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ConfigError(f"cannot read {PROJECT_FILE}: {exc.strerror or exc}") from None
    if size > MAX_FILE_BYTES:
        raise ConfigError(f"{PROJECT_FILE} is {size} bytes; a hooks file holds at most {MAX_FILE_BYTES}")
    return data, hashlib.sha256(data).hexdigest()


def project_hooks(workspace: Path, data: bytes) -> list[HookCommand]:
    try:
        parsed = json.loads(data.decode("utf-8")) if data.strip() else {}
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{PROJECT_FILE} is not valid JSON ({exc}); fix it") from None
    if not isinstance(parsed, dict):
        raise ConfigError(f'{PROJECT_FILE} must hold a JSON object with "hooks"')
    return parse_hooks(parsed.get("hooks"), PROJECT_FILE)


def _trust_path() -> Path:
    return data_home() / TRUST_FILE


def trusted_digest(workspace: Path) -> str | None:
    entry = _read_json(_trust_path(), "the trusted hooks file").get(str(workspace.resolve()))
    return entry if isinstance(entry, str) else None


def trust(workspace: Path, digest: str) -> Path:
    """Record that the user trusts the project hooks file with ``digest`` in ``workspace``."""
    where = _trust_path()
    data = _read_json(where, "the trusted hooks file")
    data[str(workspace.resolve())] = digest
    # Atomic (readers see the old list or the new one), private, beneath the data folder.
    write_file(where, (json.dumps(data, indent=2) + "\n").encode("utf-8"), data_home(), mode=0o600)
    return where


@dataclass(frozen=True)
class LoadedHooks:
    commands: list[HookCommand]
    notice: str = ""  # one line for the user when project hooks were left out


def load_hooks(
    workspace: Path, *, ask: Callable[[str], bool] | None = None, project: bool = True
) -> LoadedHooks:
    """The user's hooks, then the project's when its file is trusted (``ask``, on a terminal,
    may trust it now; off a terminal an untrusted file only gives a notice)."""
    commands = user_hooks()
    found = project_file(workspace) if project else None
    if found is None:
        return LoadedHooks(commands)
    data, digest = found
    trusted = trusted_digest(workspace) == digest
    try:
        listed = project_hooks(workspace, data)
    except ConfigError as exc:
        if trusted:  # the user's own choice: their run stops on it
            raise
        return LoadedHooks(commands, f"{exc} (the project's hooks were not run)")
    if not listed:
        return LoadedHooks(commands)
    if trusted:
        return LoadedHooks([*commands, *listed])
    shown = "\n".join(f"  {h.event}: {h.shown}" for h in listed)
    question = (
        f"{PROJECT_FILE} in {workspace} defines {len(listed)} hook(s) that run commands on this "
        f"machine:\n{shown}\nRun them (now and until the file changes)?"
    )
    if ask is not None and ask(question):
        trust(workspace, digest)
        return LoadedHooks([*commands, *listed])
    notice = (
        f"{PROJECT_FILE} defines {len(listed)} hook(s) that were not run: project hooks run only "
        f"once you trust the file (`tinyharness hooks trust --workspace {workspace}`)"
    )
    return LoadedHooks(commands, notice)

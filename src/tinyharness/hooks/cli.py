"""``tinyharness hooks list|trust``: what hooks a run in a workspace would run, and trusting a
project's hooks file."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import ConfigError
from .config import PROJECT_FILE, project_file, project_hooks, trust, trusted_digest, user_hooks


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "hooks",
        help="list the hooks a run would run; trust a project's hooks file",
        description="Hooks are commands run at points of a run (PreToolUse, PostToolUse, "
        "UserPromptSubmit, Stop, PreCompact, SessionStart), configured as in Claude Code: "
        f"'hooks' in config.json (yours) and {PROJECT_FILE} in the workspace (the project's; "
        "run only once you trust that exact file). See docs/hooks.md.",
    )
    parser.add_argument("action", choices=["list", "trust"], help="list: show them; trust: run the project's")
    parser.add_argument("--workspace", default=".", help="workspace folder (default: .)")
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    workspace = Path(args.workspace).resolve()
    if not workspace.is_dir():
        raise ConfigError(f"workspace {args.workspace} is not a folder")
    found = project_file(workspace)
    if args.action == "trust":
        if found is None:
            raise ConfigError(f"{workspace} has no {PROJECT_FILE}; nothing to trust")
        listed = project_hooks(workspace, found[0])
        where = trust(workspace, found[1])
        print(f"trusted {len(listed)} hook(s) of {workspace / PROJECT_FILE} (recorded in {where})")
        return 0
    mine = user_hooks()
    theirs = project_hooks(workspace, found[0]) if found is not None else []
    trusted = found is not None and trusted_digest(workspace) == found[1]
    if not mine and not theirs:
        print(f"no hooks (none in config.json, no {PROJECT_FILE} in {workspace})")
        return 0
    for hook in [*mine, *theirs]:
        entry = hook.describe()
        matcher = f" [{entry['matcher']}]" if "matcher" in entry else ""
        state = "" if hook in mine or trusted else "  (not trusted: not run)"
        print(f"{hook.event}{matcher}: {hook.shown}  (timeout {hook.timeout:g} s, {hook.source}){state}")
    return 0

"""``tinyharness skills list``: the skills a run in a workspace offers, and the ones it cannot."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import ConfigError
from .loader import HOME_SOURCE, PROJECT_ROOTS, discover


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "skills",
        help="list the Agent Skills a run offers",
        description="Agent Skills are folders with a SKILL.md (front matter with name and "
        f"description). They are found in {', '.join(PROJECT_ROOTS)} of the workspace and in "
        f"{HOME_SOURCE} (read by the agent as /skills/...). See docs/skills.md.",
    )
    parser.add_argument("action", nargs="?", choices=["list"], default="list", help="list (the default)")
    parser.add_argument("--workspace", default=".", help="workspace folder (default: .)")
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    workspace = Path(args.workspace).resolve()
    if not workspace.is_dir():
        raise ConfigError(f"workspace {args.workspace} is not a folder")
    found = discover(workspace)
    if not found.skills and not found.problems:
        print(f"no skills (none in {', '.join(PROJECT_ROOTS)} of {workspace}, none in {HOME_SOURCE})")
        return 0
    width = max((len(s.name) for s in found.skills), default=0)
    for skill in found.skills:
        print(f"{skill.name:<{width}}  {skill.description}  [{skill.path}]")
    for problem in found.problems:
        print(f"skipped {problem.path}: {problem.reason}")
    return 0

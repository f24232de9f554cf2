"""What a repository already holds for agents, attached to a run: AGENTS.md instructions,
Agent Skills and hooks (see ``instructions``, ``skills`` and ``hooks``).

``ProjectConventions.load`` reads them once per command (asking, on a terminal, whether to trust
a project's hooks file); ``attach(agent, ...)`` wires them into one built agent (and
``attach_registry`` the hooks into a sub-agent's tools): the
instruction files into its anchors (kept through every compaction, audited) and a finder of
nested ones onto its tools, the skill list into its system prompt, the hooks onto its tools,
its loop and its context manager, and SKILL.md files still in use read back after a
compaction; the agent's ``run_start`` lists them. Entry points call these and nothing else of
the parts.

May import ``agent``, ``anchors``, ``context``, ``errors``, ``events``, ``hooks``,
``instructions``, ``messages``, ``models`` (the type of a tool's choices), ``settings``,
``skills`` and ``tools``.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .agent import Agent
from .anchors import Instruction
from .context.manager import ContextManager
from .context.restore import workspace_reader
from .context.tokens import HeuristicCounter
from .errors import ConfigError
from .events import EventBus
from .hooks import HookCommand, Hooks, load_hooks
from .instructions import DEFAULT_MAX_BYTES, InstructionFinder, ProjectInstructions
from .messages import Message
from .models.base import ChoiceMap
from .settings import config_path
from .skills import SkillSet, discover, home_mounts
from .tools.base import ToolRegistry

MAX_BYTES_KEY = "project_instructions_max_bytes"


@dataclass
class ProjectConventions:
    workspace: Path
    loader: ProjectInstructions | None
    instructions: list[Instruction]
    skills: SkillSet
    hook_commands: list[HookCommand]
    notices: list[str] = field(default_factory=list)  # one line each, for the user
    hooks: Hooks | None = None  # of the agent attached last

    @classmethod
    def load(
        cls,
        workspace: Path,
        *,
        instructions: bool = True,
        ask: Callable[[str], bool] | None = None,
    ) -> ProjectConventions:
        """The conventions of ``workspace``: instruction files unless ``instructions`` is
        False, skills, and the user's hooks plus the project's when trusted (``ask`` may
        trust them now)."""
        notices: list[str] = []
        loader = None
        found: list[Instruction] = []
        if instructions:
            loader = ProjectInstructions(workspace, max_bytes=_max_bytes(), on_notice=notices.append)
            found = loader.initial()
        skills = discover(workspace)
        notices.extend(f"skill {p.path} skipped: {p.reason}" for p in skills.problems)
        hooks = load_hooks(workspace, ask=ask)
        if hooks.notice:
            notices.append(hooks.notice)
        return cls(workspace, loader, found, skills, hooks.commands, notices)

    def system_prompt(self, base: str, window: int | None) -> str:
        """``base`` with the skill list after it (stable for the whole run: prompt-cache safe)."""
        section = self.skills.prompt_section(HeuristicCounter().count_text, window)
        return f"{base}\n\n{section}" if section else base

    def attach(self, agent: Agent, events: EventBus, session: str, report: Callable[[str], None]) -> None:
        """Wire the conventions into ``agent`` (see the module docstring); its ``run_start``
        lists them from then on."""
        context = agent.context
        window = context.context_window if context.context_window else None
        system = self.system_prompt(agent.config.system, window)
        agent.config = dataclasses.replace(agent.config, system=system)
        if agent.anchors is not None:
            for item in self.instructions:
                agent.anchors.add_instruction(item, notify=False)
            if self.loader is not None:
                agent.tools.hooks.append(InstructionFinder(self.loader, agent.anchors, events))
        state_dir = self.workspace / ".tinyharness" / "runs" / events.run_id
        self.hooks = Hooks(
            self.hook_commands,
            self.workspace,
            events=events,
            session=session,
            state_dir=state_dir,
            report=report,
        )
        if self.hooks:
            self.attach_registry(agent.tools)
            agent.hooks = self.hooks
        if isinstance(context, ContextManager):
            if self.hooks:
                context.before_compact = self.hooks.before_compact
            if self.skills.skills:
                context.in_use = self.skills.in_use
            if context.config.workspace is not None:
                context.file_reader = workspace_reader(context.config.workspace, home_mounts())
        self._offer_skill_paths(agent.tools)
        agent.run_info.update(self.run_info())

    def _offer_skill_paths(self, registry: ToolRegistry) -> None:
        """Where read_file's path is chosen from a list (the JSON tool mode's grammar), the
        skills' SKILL.md files join the list: the system prompt names them."""
        reader = registry.get("read_file")
        if reader is None or reader.choices is None or not self.skills.skills:
            return
        offered_by = reader.choices
        skill_files = [skill.path for skill in self.skills.skills]

        def choices(messages: Sequence[Message]) -> ChoiceMap:
            offered = offered_by(messages)
            paths = offered.get("path")
            if paths is None or isinstance(paths, int):
                return offered  # free: any path may be given
            paths = list(paths)
            return {**offered, "path": [*paths, *(p for p in skill_files if p not in paths)]}

        registry.add(dataclasses.replace(reader, choices=choices))

    def attach_registry(self, registry: ToolRegistry) -> None:
        """The hooks onto another registry (a sub-agent's tools)."""
        if self.hooks and self.hooks not in registry.hooks:
            registry.hooks.append(self.hooks)

    def run_info(self) -> dict[str, Any]:
        """What ``run_start`` lists: instruction files, skills and hooks (when there are any)."""
        info: dict[str, Any] = {}
        if self.instructions:
            info["instructions"] = [{"source": i.source, "chars": len(i.text)} for i in self.instructions]
        if self.skills.skills:
            info["skills"] = self.skills.listed()
        if self.hook_commands:
            info["hooks"] = [hook.describe() for hook in self.hook_commands]
        return info


def _max_bytes() -> int:
    """``project_instructions_max_bytes`` in config.json, else 32 KiB."""
    try:
        data = json.loads(config_path().read_text(encoding="utf-8") or "{}")
    except FileNotFoundError:
        return DEFAULT_MAX_BYTES
    except (OSError, ValueError):
        return DEFAULT_MAX_BYTES  # the settings reader reports a broken file itself
    value = data.get(MAX_BYTES_KEY, DEFAULT_MAX_BYTES) if isinstance(data, dict) else DEFAULT_MAX_BYTES
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ConfigError(f"config: {MAX_BYTES_KEY} must be a positive number of bytes")
    return value


__all__ = ["ProjectConventions"]

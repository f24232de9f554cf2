"""Finding skills, reading their front matter safely, and what the model is told of them."""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ..history import file_reads
from ..messages import Message, TextBlock, ToolResultBlock, ToolUseBlock
from ..paths import data_home
from ..safefs import Folder

SKILL_FILE = "SKILL.md"
HOME_PREFIX = "/skills"  # the user's skills folder as the file tools name it (read-only)
PROJECT_ROOTS = (".agents/skills", ".claude/skills")  # in the workspace, in this order
HOME_SOURCE = "$TINYHARNESS_HOME/skills"
MAX_SKILLS = 500  # folders looked at per root
MAX_HEAD_BYTES = 16 * 1024  # of a SKILL.md read for its front matter
MAX_NAME = 64
MAX_DESCRIPTION = 1024
_NAME = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
MIN_BUDGET = 300  # tokens the skill list may take at least
BUDGET_SHARE = 0.02  # of the context window the skill list may take
INTRO = (
    "Skills: folders of instructions (and scripts, templates, references) for particular jobs. "
    "When the task matches a skill, read its SKILL.md with read_file before you start and follow "
    "it; read the other files it names the same way, by their path in its folder. A skill costs "
    "nothing until you read it."
)
MORE = "More skills (read a SKILL.md to see what it does):"


class SkillError(ValueError):
    """A SKILL.md that cannot be used; the message says what to fix."""


@dataclass(frozen=True)
class Skill:
    """One skill: ``path`` is its SKILL.md as the file tools name it, ``source`` its root."""

    name: str
    description: str
    path: str
    source: str

    @property
    def folder(self) -> str:
        return self.path.rsplit("/", 1)[0]


@dataclass(frozen=True)
class SkillProblem:
    path: str
    reason: str


def parse_skill(text: str) -> tuple[str, str]:
    """``name`` and ``description`` from a SKILL.md's front matter (YAML between ``---``
    lines, read with the safe loader: no tags, no objects); SkillError when missing or wrong."""
    text = text.removeprefix("\ufeff")
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        raise SkillError("no front matter: the file must start with a line '---'")
    try:
        end = next(n for n, line in enumerate(lines[1:], 1) if line.strip() == "---")
    except StopIteration:
        raise SkillError("the front matter has no closing '---' line") from None
    block = "\n".join(lines[1:end])
    try:
        meta: Any = yaml.safe_load(block)
    except yaml.YAMLError as exc:
        # Many SKILL.md files in the wild have an unquoted ': ' in their description, which YAML
        # refuses; their top-level lines still read as 'key: value'.
        meta = _plain_fields(block)
        if "name" not in meta or "description" not in meta:
            raise SkillError(f"the front matter is not valid YAML ({str(exc).splitlines()[0]})") from None
    if not isinstance(meta, dict):
        raise SkillError("the front matter must be a mapping with name and description")
    name, description = meta.get("name"), meta.get("description")
    if not isinstance(name, str) or not _NAME.fullmatch(name) or len(name) > MAX_NAME:
        raise SkillError(f"name must be lowercase letters, digits and hyphens, at most {MAX_NAME} characters")
    if not isinstance(description, str) or not description.strip():
        raise SkillError("description is missing: say what the skill does and when to use it")
    description = " ".join(description.split())
    if len(description) > MAX_DESCRIPTION:
        raise SkillError(f"description is {len(description)} characters; at most {MAX_DESCRIPTION}")
    return name, description


def _plain_fields(block: str) -> dict[str, str]:
    """Top-level ``key: value`` lines (split at the first colon), for front matter YAML refuses."""
    fields: dict[str, str] = {}
    for line in block.splitlines():
        match = re.fullmatch(r"([A-Za-z][\w-]*):[ \t]*(.*)", line)
        if match and match.group(2).strip():
            fields[match.group(1)] = match.group(2).strip().strip("'\"")
    return fields


def home_mounts(home: Path | None = None) -> dict[str, Path]:
    """The read-only folders the file tools offer beside the workspace: the user's skills at
    ``/skills`` when that folder exists."""
    folder = (home if home is not None else data_home()) / "skills"
    return {HOME_PREFIX: folder} if folder.is_dir() else {}


def discover(workspace: Path, home: Path | None = None) -> SkillSet:
    """Every skill of the workspace and of the user; on a name found twice the first wins
    (``.agents/skills``, then ``.claude/skills``, then the user's)."""
    found = SkillSet()
    roots: list[tuple[Folder, str, str, str]] = []
    ws = Folder(workspace)
    for root in PROJECT_ROOTS:
        roots.append((ws, root, root, root))
    mounts = home_mounts(home)
    if HOME_PREFIX in mounts:
        roots.append((Folder(mounts[HOME_PREFIX]), ".", HOME_PREFIX, HOME_SOURCE))
    names: dict[str, str] = {}
    for folder, rel, shown, source in roots:
        for entry in _skill_folders(folder, rel):
            inner = entry if rel == "." else f"{rel}/{entry}"
            path = f"{shown}/{entry}/{SKILL_FILE}"
            try:
                data, _size = folder.read(f"{inner}/{SKILL_FILE}", MAX_HEAD_BYTES)
            except FileNotFoundError:
                continue
            except OSError as exc:
                found.problems.append(SkillProblem(path, f"cannot be read: {exc.strerror or exc}"))
                continue
            try:
                name, description = parse_skill(data.decode("utf-8", errors="replace"))
            except SkillError as exc:
                found.problems.append(SkillProblem(path, str(exc)))
                continue
            if name in names:
                why = f"skill {name!r} is also in {names[name]}, which is used"
                found.problems.append(SkillProblem(path, why))
                continue
            names[name] = path
            found.skills.append(Skill(name, description, path, source))
    return found


def _skill_folders(folder: Folder, rel: str) -> Iterator[str]:
    try:
        with folder.open_dir(rel) as (fd, _parts):
            entries = sorted(os.listdir(fd))[:MAX_SKILLS]
            kinds = {}
            for name in entries:
                try:
                    kinds[name] = os.stat(name, dir_fd=fd).st_mode
                except OSError:
                    continue
    except OSError:
        return
    for name in entries:
        if not name.startswith(".") and stat.S_ISDIR(kinds.get(name, 0)):
            yield name


@dataclass
class SkillSet:
    skills: list[Skill] = field(default_factory=list)
    problems: list[SkillProblem] = field(default_factory=list)
    # SKILL.md paths the model read, most recent last (see ``in_use``)
    active: list[str] = field(default_factory=list)

    def listed(self) -> list[dict[str, str]]:
        """For ``run_start``: each skill's name and where it is."""
        return [{"name": s.name, "path": s.path} for s in self.skills]

    def prompt_section(self, count: Callable[[str], int], window: int | None) -> str:
        """The system prompt's skill list: names and descriptions within the budget (a share of
        ``window``), then the others by name and path only; "" without skills."""
        if not self.skills:
            return ""
        budget = max(MIN_BUDGET, int((window or 0) * BUDGET_SHARE))
        lines = [INTRO]
        used = count(INTRO)
        rest: list[Skill] = []
        for skill in self.skills:
            line = f"- {skill.name}: {skill.description} (read {skill.path})"
            cost = count(line)
            if rest or used + cost > budget:
                rest.append(skill)
                continue
            lines.append(line)
            used += cost
        if rest:
            lines.append(MORE + " " + ", ".join(f"{s.name} ({s.path})" for s in rest))
        return "\n".join(lines)

    def in_use(self, before: Sequence[Message], after: Sequence[Message]) -> list[str]:
        """The SKILL.md files to read back after a compaction, most recent first: those the
        model read (in ``before``, or read back by an earlier compaction) that ``after`` still
        names (a skill's name or folder in the summary, the plan or the kept rounds) and does
        not already hold whole. A skill the compacted conversation no longer names is done."""
        paths = {s.path: s for s in self.skills}
        for path, _call, _result in file_reads(before):
            normal = path.strip().removeprefix("./")
            if normal in paths:
                if normal in self.active:
                    self.active.remove(normal)
                self.active.append(normal)
        texts = list(_texts(after))
        visible = {p.strip().removeprefix("./") for p, _c, _r in file_reads(after)}
        keep = []
        for path in list(self.active):
            skill = paths[path]
            if any(skill.name in text or skill.folder in text for text in texts):
                if path not in visible:
                    keep.append(path)
            else:
                self.active.remove(path)
        return list(reversed(keep))


def _texts(messages: Sequence[Message]) -> Iterator[str]:
    for message in messages:
        for block in message.content:
            if isinstance(block, TextBlock):
                yield block.text
            elif isinstance(block, ToolResultBlock):
                yield block.content
            elif isinstance(block, ToolUseBlock):
                yield str(block.input)

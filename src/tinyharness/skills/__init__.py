"""Agent Skills: folders with a ``SKILL.md`` (YAML front matter with ``name`` and
``description``, then instructions), in the open format Claude Code, Codex and deepagents load.

``loader`` finds them in the workspace's ``.agents/skills/`` and ``.claude/skills/`` and in
``$TINYHARNESS_HOME/skills/`` (which the file tools read, and never write, as ``/skills/...``);
``SkillSet`` writes their names and descriptions into the system prompt within a token budget
(the rest by name only) and says which skills are still in use after a compaction, so their
SKILL.md is read back; ``cli`` holds ``tinyharness skills list``. A skill's body costs nothing
until the model reads it with read_file.

May import ``errors``, ``history``, ``messages``, ``paths`` and ``safefs``.
"""

from .loader import HOME_PREFIX, Skill, SkillProblem, SkillSet, discover, home_mounts, parse_skill

__all__ = ["HOME_PREFIX", "Skill", "SkillProblem", "SkillSet", "discover", "home_mounts", "parse_skill"]

"""Model profiles: every per-model default in one frozen record, chosen once per run.

A small local model and a capable API model need different harnesses: the 0.5B needs a guide
that plans for it, notes flushed before each compaction, a result cap sized to its window,
write_file that cannot replace a file, no sub-agents and no long-term memory (measured, see the
docstrings of the options in ``cli``); a capable model needs none of that. Each of these
defaults is a field of ``Profile``, so ``run``, ``chat``, sub-agents and durable runs read the
same record, and a user picks one (``--profile NAME``) or defines one in config.json::

    {"profiles": {"small-api": {"base": "local", "memory": true}}}

``base`` names the profile the others fields change (default ``default``). Without
``--profile``, a ``local:`` model string gets ``local``, every other ``default``
(``profile_for``): the one place that tells a local model from another.

May import ``errors``, ``models`` and ``guide``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .errors import ConfigError
from .models.catalog import LOCAL_N_CTX

GUIDES = ("none", "plan")  # a profile's guide: none, or ``guide.PlanGuide``


@dataclass(frozen=True)
class Profile:
    """The per-model defaults; a command-line option given for a run wins over each.

    - ``guide``: "plan" (``guide.PlanGuide``) or "none";
    - ``classify``: the plan guide asks its one plan request (else exact path matches only);
    - ``plan_tools``: the todo and pin tools are offered;
    - ``flush_notes``: the model must take notes before each compaction;
    - ``window``: the context window when neither the option nor the model says (it sizes the
      result cap too);
    - ``overwrite``: write_file may replace an existing file;
    - ``subagents`` / ``subagent_concurrency``: the task tool, and children at once;
    - ``memory``: long-term memory without being asked for a store;
    - ``run_notes``: notes the task did not ask for go to the run's own notes under
      ``.tinyharness/`` (a guided run only).
    """

    name: str = "default"
    guide: str = "none"
    classify: bool = False
    plan_tools: bool = True
    flush_notes: bool = False
    window: int | None = None
    overwrite: bool = True
    subagents: bool = True
    subagent_concurrency: int | None = None
    memory: bool = True
    run_notes: bool = True

    def __post_init__(self) -> None:
        if self.guide not in GUIDES:
            raise ConfigError(
                f"profile {self.name}: guide must be one of {', '.join(GUIDES)}, got {self.guide!r}"
            )
        for name in ("window", "subagent_concurrency"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value <= 0):
                raise ConfigError(f"profile {self.name}: {name} must be a positive integer, got {value!r}")


DEFAULT = Profile("default")
LOCAL = Profile(
    "local",
    guide="plan",
    classify=True,
    plan_tools=False,
    flush_notes=True,
    window=LOCAL_N_CTX,
    overwrite=False,
    subagents=False,
    subagent_concurrency=1,
    memory=False,
)
BUILTIN: Mapping[str, Profile] = {"default": DEFAULT, "local": LOCAL}
_FIELDS = {f.name: f for f in dataclasses.fields(Profile) if f.name != "name"}


def is_local(model: str) -> bool:
    """Whether ``model`` is served by the local runtime (its provider is ``local``)."""
    return model.strip().partition(":")[0] == "local"


def defined_profiles(data: Mapping[str, Any]) -> dict[str, Profile]:
    """The built-in profiles and those of config.json's ``profiles`` (checked: a bad one is a
    ConfigError naming it)."""
    found = dict(BUILTIN)
    for name, spec in data.items():
        if not isinstance(spec, Mapping):
            raise ConfigError(f"config: profiles.{name} must be an object")
        base_name = spec.get("base", "default")
        base = found.get(str(base_name)) if base_name in found else None
        if base is None:
            raise ConfigError(f"config: profiles.{name}.base must name a profile ({', '.join(found)})")
        changes: dict[str, Any] = {}
        for key, value in spec.items():
            if key == "base":
                continue
            field = _FIELDS.get(key)
            if field is None:
                raise ConfigError(
                    f"config: profiles.{name}: unknown key {key!r} (known: {', '.join(_FIELDS)})"
                )
            if field.type in ("bool",) and not isinstance(value, bool):
                raise ConfigError(f"config: profiles.{name}.{key} must be true or false")
            changes[key] = value
        found[name] = dataclasses.replace(base, name=name, **changes)
    return found


def profile_for(model: str, name: str | None = None, defined: Mapping[str, Profile] | None = None) -> Profile:
    """The profile ``name`` picks, else ``local`` for a local model and ``default`` for the rest."""
    profiles = defined if defined is not None else BUILTIN
    if name is None:
        return profiles["local"] if is_local(model) else profiles["default"]
    if name not in profiles:
        raise ConfigError(f"--profile {name}: no such profile (known: {', '.join(profiles)})")
    return profiles[name]

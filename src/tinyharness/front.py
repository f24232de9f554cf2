"""The library's front door: ``tinyharness.Agent``.

``Agent("local", workspace="myproject").run(task)`` builds exactly what ``tinyharness run``
builds for that model and folder (its profile, tools, guide, context policy; see
``cli.assemble_agent``), as ``pydantic_ai.Agent("openai:...")`` takes a model string. Given a
model object, ``Agent(model, tools, config, ...)`` is the loop itself (``agent.Agent``), as
before. An agent built from a string holds files and a model server open: ``close()`` (or
``with``) ends them.

May import anything (it is the top floor, beside the CLI).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from . import agent as loop
from .models.base import Model
from .tools.base import Tool, ToolRegistry


class Agent(loop.Agent):
    """``agent.Agent``, also built from a model string (see the module docstring)."""

    def __init__(
        self,
        model: Model | str,
        tools: ToolRegistry | Iterable[Tool | Callable[..., Any]] = (),
        config: loop.AgentConfig | None = None,
        *,
        workspace: str | os.PathLike[str] | None = None,
        profile: str | None = None,
        options: Sequence[str] = (),
        **parts: Any,
    ) -> None:
        self._assembled: Any = None
        if not isinstance(model, str):
            super().__init__(model, tools, config, **parts)
            return
        from .cli import assemble_agent  # the CLI's assembly, so both build the same agent

        assembled = assemble_agent(model, workspace or ".", profile=profile, options=options)
        built = assembled.agent
        super().__init__(
            built.model,
            built.tools,
            config or built.config,
            context=built.context,
            events=built.events,
            memory=built.memory,
            anchors=built.anchors,
            guide=built.guide,
            **parts,
        )
        self._assembled = assembled

    def close(self) -> None:
        """End what an agent built from a model string holds open (its model server, files)."""
        if self._assembled is not None:
            assembled, self._assembled = self._assembled, None
            asyncio.run(assembled.aclose())

    def __enter__(self) -> Agent:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

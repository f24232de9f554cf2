"""Guides: what shapes a run for a model that cannot plan for itself, above the tools.

A ``Guide`` (``base``) is handed the task and the workspace once and shapes each next request,
narrows the tools' arguments, refuses calls with a reason, and saves its state with the
session. The tools know nothing of tasks; the agent asks its guide. ``PlanGuide`` (``planner``)
is the guide of a profile that plans: the plan chosen under a grammar (``plan``), the files the
task names (``focus``), the set of files a task is over (``coverage``), and where notes go.

May import ``messages``, ``history``, ``events``, ``errors``, ``models.base`` and ``tools`` (the
read state, the workspace, the notes file); never context, memory, the loop or the CLI.
"""

from .base import Ask, Guide, NoGuide, Reviewed, RunCall, Turn, refusal, reviewed_run
from .plan import KINDS, PlanOptions, Rank, Ranked, TaskPlan, plan_request, plan_schema, simple_rank
from .planner import PlanGuide, StepsGuide

__all__ = [
    "KINDS",
    "Ask",
    "Guide",
    "NoGuide",
    "PlanGuide",
    "PlanOptions",
    "Rank",
    "Ranked",
    "Reviewed",
    "RunCall",
    "StepsGuide",
    "TaskPlan",
    "Turn",
    "plan_request",
    "plan_schema",
    "refusal",
    "reviewed_run",
    "simple_rank",
]

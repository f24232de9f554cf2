"""Durable runs: many agent runs across worker processes and machines, on DBOS and PostgreSQL.

A run is a DBOS workflow; each model call (agent turns, compaction summaries, memory
extraction) and each tool call is a step whose result is recorded, so a run whose worker dies
is taken up by another worker, which replays the recorded steps and goes on from the first
unrecorded one. See ``steps`` for what is recorded and the rule for a step cut off mid-way,
``queue`` for submitting, workers and how a dead worker's runs move on.

Nothing here is needed for ``tinyharness run``: DBOS is imported only by these commands.

May import ``agent``, ``events``, ``messages``, ``models``, ``session``, ``errors``, ``redact``,
``paths``, ``terminal``.
"""

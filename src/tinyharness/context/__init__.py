"""Context management: token accounting, compaction strategies and the request validator.

May import ``messages``, ``history``, ``quoting``, ``safefs`` (files opened beneath the
workspace), ``models.base``, ``events``, ``errors`` and ``anchors`` (the plan and the pins it puts back);
never the
tools, memory, the loop or the CLI (the notes flush gets the tool specs and a function that runs
a call, not the tool registry)."""

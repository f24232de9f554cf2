"""Context management: token accounting, compaction strategies and the request validator.
May import ``messages``, ``models.base``, ``events`` and ``errors``; never the loop or the CLI."""

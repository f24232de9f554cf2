"""Retrieval: which workspace files and folders a task is about, when the task names none.

``RepoMap.build(root)`` walks the workspace once (confined as the file tools are: no link that
leads out, no hidden or vendored folders, no virtual environments, no binary files) and keeps,
per file, its path, its top-level definitions (``ast`` for Python, a line pattern per language
for the rest) and the start of its text. ``RepoMap.rank(task, k)`` ranks files and folders
against a task with BM25 over those fields, exact mentions of a path or a defined name first,
optionally fused with an embedder's ranking; ``RepoMap.repo_map_text(budget_tokens)`` is the map
as prompt text. Nothing here reads English: words are split from identifiers (``camelCase``,
``snake_case``), CJK text becomes characters and bigrams, and no stopword list is used.

Modules: ``terms`` (tokenising), ``symbols`` (definitions per language), ``repomap`` (the walk,
the map, ``Candidate``), ``rank`` (BM25 and fusion).

May import ``tools.workspace`` (confinement), ``memory.text`` (rank fusion) and
``memory.embed`` (the Embedder protocol); never the loop, context, models or the CLI.
"""

from .rank import RankConfig
from .repomap import Candidate, FileEntry, MapLimits, RepoMap

__all__ = ["Candidate", "FileEntry", "MapLimits", "RankConfig", "RepoMap"]

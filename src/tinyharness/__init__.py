"""tinyharness: the layer that keeps long-running LLM agents stable.

Subpackages: ``models`` (model adapters), ``tools`` (tools and the registry), ``context``
(token accounting and compaction). Top-level modules: ``messages``, ``events``, ``agent``
(the loop), ``cli``.
"""

__version__ = "0.1.0"

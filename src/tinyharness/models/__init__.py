"""Model adapters behind one protocol (``base.Model``).

May import ``messages``, ``errors``, ``safefs`` (every file written),
``paths`` (where fetched models are kept) and ``settings``
(stored API keys); nothing above them. A tool's ``ToolSpec.choices`` is a function the tools
layer hands down with the spec: JSON tool mode calls it without knowing what it reads."""

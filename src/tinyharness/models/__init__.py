"""Model adapters behind one protocol (``base.Model``).

May import ``messages``, ``errors``, ``paths`` (where fetched models are kept), ``terminal`` and
``settings`` (stored API keys); nothing above them. A tool's ``ToolSpec.choices`` is a function the tools
layer hands down with the spec: JSON tool mode calls it without knowing what it reads."""

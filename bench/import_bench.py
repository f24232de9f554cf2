"""Memory import into a store that already holds many of the same user's memories.

Every imported line is first looked up by its content hash in the user's scope (``find_by_hash``,
the same lookup ``add_unique`` makes behind every ``remember`` and MCP ``memory_add``). With only a
hash index beside the scope index, SQLite's planner chose the scope index and read all of the
user's current memories for each line: import grew with the store, not with the file. This
benchmark imports the same 5,000 lines (through the library call behind ``tinyharness memory
import``) into an empty store and into one that holds ``--existing`` memories of the same user,
side by side with the old indexes (``old``: the hash index alone, as before migration 3) and the
new one (``new``: hash and scope in one index), and prints each lookup's query plan.

    python bench/import_bench.py                      # SQLite: 5,000 into 0 and 67,000
    python bench/import_bench.py --pg-rows 1000000     # also PostgreSQL, 1M rows of one user

PostgreSQL rows need TINYHARNESS_BENCH_PG_URL or TINYHARNESS_TEST_PG_URL; the existing rows are
made in the server (``generate_series``), the import goes through the store.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import tempfile
import time
from pathlib import Path

from tinyharness.memory import Scope, open_store
from tinyharness.memory.ingest import import_file
from tinyharness.memory.sqlbase import scope_sql

USER = "alice"
# The indexes before migration 3, made in their original order (without statistics, SQLite's
# planner breaks a tie between two one-column equality indexes by that order).
OLD_INDEXES = [
    "DROP INDEX IF EXISTS memories_hash_scope",
    "DROP INDEX IF EXISTS memories_scope",
    "CREATE INDEX IF NOT EXISTS memories_hash ON memories(content_hash) WHERE status = 'current'",
    "CREATE INDEX memories_scope ON memories(user_id, agent_id, session_id) WHERE status = 'current'",
]


def write_lines(path: Path, count: int, tag: str) -> None:
    with path.open("w", encoding="utf-8") as handle:
        for i in range(count):
            speaker = "alice" if i % 2 else "bob"
            text = f"{tag} message {i}: the meeting about project {i % 113} moved to room {i % 17}"
            handle.write(json.dumps({"speaker": speaker, "text": text, "id": f"{tag}-{i}"}) + "\n")


def fill_sqlite(path: Path, existing: int) -> None:
    store = open_store(str(path), embedder="none")
    scope = Scope(USER)
    for start in range(0, existing, 5000):
        count = min(existing, start + 5000) - start
        store.add_many(
            [f"stored fact {start + i} about topic {(start + i) % 997}" for i in range(count)], scope
        )
    store.close()  # type: ignore[attr-defined]


def lookup_sql(mark: str, table: str) -> tuple[str, list[str]]:
    where, params = scope_sql(Scope(USER), mark)
    where[:0] = [f"content_hash = {mark}", "status = 'current'"]
    return f"SELECT id FROM {table} WHERE {' AND '.join(where)} LIMIT 1", ["0" * 64, *params]


def sqlite_plan(path: Path) -> str:
    sql, params = lookup_sql("?", "memories")
    with sqlite3.connect(path) as db:
        return "; ".join(str(row[3]) for row in db.execute(f"EXPLAIN QUERY PLAN {sql}", params))


def to_old_indexes(path: Path) -> None:
    with sqlite3.connect(path) as db:
        for statement in OLD_INDEXES:
            db.execute(statement)


def timed_import(url: str, lines: Path) -> tuple[float, int]:
    store = open_store(url, embedder="none")
    started = time.perf_counter()
    report = import_file(store, lines, user=USER)  # type: ignore[arg-type]
    elapsed = time.perf_counter() - started
    store.close()  # type: ignore[attr-defined]
    return elapsed, report.added


def sqlite_rows(existing: int, count: int, folder: Path) -> list[tuple[str, ...]]:
    lines = folder / "lines.jsonl"
    write_lines(lines, count, "new")
    base = folder / "filled.db"
    fill_sqlite(base, existing)
    rows = []
    for name, store_rows in (("empty", 0), (f"{existing:,}", existing)):
        for variant in ("old", "new"):
            db = folder / f"{name}-{variant}.db".replace(",", "")
            if store_rows:
                shutil.copy(base, db)
            else:
                open_store(str(db), embedder="none").close()  # type: ignore[attr-defined]
            # Opening the store runs the migrations (the new index); "old" puts the old one back.
            open_store(str(db), embedder="none").close()  # type: ignore[attr-defined]
            if variant == "old":
                to_old_indexes(db)
            plan = sqlite_plan(db)
            if variant == "old":
                elapsed, added = _import_keeping_old(db, lines)
            else:
                elapsed, added = timed_import(str(db), lines)
            rows.append(("sqlite", name, variant, f"{elapsed:.1f}", f"{added / elapsed:,.0f}", plan))
            print("| " + " | ".join(rows[-1]) + " |", flush=True)
    return rows


def _import_keeping_old(db: Path, lines: Path) -> tuple[float, int]:
    """Import with the old indexes: the store is opened (its migration recreates the new index),
    then the index is dropped again before the import starts."""
    store = open_store(str(db), embedder="none")
    to_old_indexes(db)
    started = time.perf_counter()
    report = import_file(store, lines, user=USER)  # type: ignore[arg-type]
    elapsed = time.perf_counter() - started
    store.close()  # type: ignore[attr-defined]
    return elapsed, report.added


def pg_rows(url: str, existing: int, count: int, folder: Path) -> list[tuple[str, ...]]:
    import psycopg

    lines = folder / "pg-lines.jsonl"
    write_lines(lines, count, "pg")
    prefix = "bench_import_"
    table = f"{prefix}memories"
    rows = []
    store = open_store(url, embedder="none")
    store.close()  # type: ignore[attr-defined]
    with psycopg.connect(url, autocommit=True) as db:
        db.execute(f"DROP TABLE IF EXISTS {prefix}memory_vectors, {table} CASCADE")
    from tinyharness.memory.pg_store import PostgresStore

    PostgresStore(url, table_prefix=prefix).close()
    with psycopg.connect(url, autocommit=True) as db:
        started = time.perf_counter()
        db.execute(
            f"INSERT INTO {table} (id, root_id, version, content, user_id, kind, content_hash, valid_from, "
            "last_access_at, body) SELECT md5('m' || i), md5('m' || i), 1, 'stored fact ' || i, %s, 'fact', "
            "encode(sha256(('f' || i)::bytea), 'hex'), 0, 0, 'stored fact ' || i "
            "FROM generate_series(1, %s) AS i",
            (USER, existing),
        )
        db.execute(f"ANALYZE {table}")
        filled = time.perf_counter() - started
        for variant in ("old", "new"):
            if variant == "old":
                db.execute(f"DROP INDEX IF EXISTS {prefix}memories_hash_scope")
                db.execute(
                    f"CREATE INDEX {prefix}memories_hash ON {table} (content_hash) WHERE status = 'current'"
                )
            else:
                db.execute(f"DROP INDEX IF EXISTS {prefix}memories_hash")
                db.execute(
                    f"CREATE INDEX IF NOT EXISTS {prefix}memories_hash_scope ON {table} "
                    "(content_hash, user_id, agent_id, session_id) WHERE status = 'current'"
                )
            db.execute(f"ANALYZE {table}")
            sql, params = lookup_sql("%s", table)
            plan = "; ".join(str(r[0]).strip() for r in db.execute(f"EXPLAIN {sql}", params))
            store = PostgresStore(url, table_prefix=prefix)
            if variant == "old":  # opening the store made the new index again and dropped the old
                db.execute(f"DROP INDEX IF EXISTS {prefix}memories_hash_scope")
                db.execute(
                    f"CREATE INDEX IF NOT EXISTS {prefix}memories_hash ON {table} (content_hash) "
                    "WHERE status = 'current'"
                )
                db.execute(f"ANALYZE {table}")
            started = time.perf_counter()
            report = import_file(store, lines, user=f"{USER}")  # type: ignore[arg-type]
            elapsed = time.perf_counter() - started
            store.close()
            db.execute(f"DELETE FROM {table} WHERE kind = 'message'")
            rows.append(
                (
                    "postgres",
                    f"{existing:,}",
                    variant,
                    f"{elapsed:.1f}",
                    f"{report.added / elapsed:,.0f}",
                    plan,
                )
            )
        db.execute(f"DROP TABLE IF EXISTS {prefix}memory_vectors, {table} CASCADE")
    print(f"(postgres: {existing:,} rows made in the server in {filled:.0f} s)")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--existing", type=int, default=67_000, help="the user's memories already stored")
    parser.add_argument("--lines", type=int, default=5_000, help="lines imported")
    parser.add_argument("--pg-rows", type=int, default=0, help="PostgreSQL: the user's rows already stored")
    parser.add_argument("--no-sqlite", action="store_true", help="PostgreSQL only")
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()[0]:.2f} (cores: {os.cpu_count()})", flush=True)
    with tempfile.TemporaryDirectory() as temp:
        folder = Path(temp)
        rows = [] if args.no_sqlite else sqlite_rows(args.existing, args.lines, folder)
        url = os.environ.get("TINYHARNESS_BENCH_PG_URL") or os.environ.get("TINYHARNESS_TEST_PG_URL")
        if args.pg_rows and url:
            rows += pg_rows(url, args.pg_rows, args.lines, folder)
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    print(f"\nimport of {args.lines:,} lines, embedder none (the de-dup lookup and the inserts only)\n")
    print("| backend | user's rows before | index | seconds | lines/s | lookup plan |")
    print("|---|---|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()

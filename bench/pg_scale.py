"""PostgreSQL memory search at scale: 10k, 100k and 1M memories, the store's search paths side by
side with the statements before them, and 8 clients through ``tinyharness mcp serve --http``.

    python -m bench.pg_scale [--sizes 10000,100000,1000000] [--vectors random,clustered]
                             [--queries 200] [--recall-queries 50] [--clients 8] [--keep]

Needs a PostgreSQL + pgvector server (TINYHARNESS_BENCH_PG_URL or TINYHARNESS_TEST_PG_URL; use a
server of your own for the large sizes: ``eval "$(scripts/pg-test-server.sh)"``) whose user may
create databases. Each store gets its own database (``pgscale_<vectors>_<size>``), so ``mcp
serve`` opens it as any user's store would be opened; ``--keep`` keeps it and a later run with
the same size reuses it (no ingest or build columns then).

For each size and kind of vectors (random unit vectors, the worst case of any approximate index,
or clustered like a sentence embedder's; the same memories and queries as bench/memory_bench.py's
scale part):

- ingest/s: the bulk load (``add_many`` in batches of 50,000 inside ``bulk_load``, COPY);
  build s: the HNSW index built once after it;
- p50 / p95 of a hybrid search (top 5, the query's words and a vector) by the store as it is
  (``new``), by the statements before this round (``naive``: every full-text match ranked, the
  newest-matches floor a separate walk, HNSW ef_search 100), the two taking turns query by query;
  text ms / vector ms: p50 of each half of the new search alone;
- recall: of the exact hybrid top 5 (the same search with every full-text match ranked and every
  vector compared: ``PostgresStore(exact=True)``), on the first ``--recall-queries`` queries;
- RSS MB: resident memory of this (searching) process and of its PostgreSQL backend (which counts
  the shared buffers it touched);
- MCP: ``--clients`` clients, each its own Streamable HTTP session with one ``tinyharness mcp
  serve --http`` process over the same database, calling ``memory_search`` one after another for
  ``--mcp-seconds``; p50 / p95 per request and requests per second overall. The server embeds the
  query with the hashing embedder the store's vectors are filed under (``hashing:384``), so each
  request is a hybrid search too; the vectors themselves are the bench's.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import math
import os
import secrets
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import numpy as np

from bench import ROOT, load_average
from bench.memory_bench import clustered, synthetic, vocabulary
from tinyharness.memory.base import Scope
from tinyharness.memory.embed import Vectors
from tinyharness.memory.pg_store import TS_CONFIG, PostgresStore, _vector_text
from tinyharness.memory.text import MAX_TERM_ROWS

PG_ENVS = ("TINYHARNESS_BENCH_PG_URL", "TINYHARNESS_TEST_PG_URL")
MODEL = "hashing:384"  # the vectors' model: what ``mcp serve --embedder hashing:384`` embeds queries with
USER = "bench-user"
BATCH = 50_000
BUILD_MEMORY = "6GB"  # maintenance_work_mem of the bench's databases


@dataclass
class Row:
    n: int
    vectors: str
    ingest_per_s: float
    build_s: float
    new_p50: float
    new_p95: float
    naive_p50: float
    naive_p95: float
    text_ms: float
    vector_ms: float
    new_recall: float
    naive_recall: float
    client_rss_mb: float
    backend_rss_mb: float
    mcp_p50: float = math.nan
    mcp_p95: float = math.nan
    mcp_per_s: float = math.nan
    mcp_rss_mb: float = math.nan
    load: str = ""


class NaiveStore(PostgresStore):
    """The statements before this round: every full-text match ranked (after a separate walk for
    the newest-matches floor of common words), HNSW with ef_search 100."""

    def _text_ranking(self, cur: Any, query: str, scope: Scope, limit: int) -> list[str]:
        plan = self._text_plan(cur, query, scope)
        if plan is None:
            return []
        score, score_params = self._score_sql(plan)
        matched = f"{plan.scope_sql} AND tsv @@ to_tsquery('{TS_CONFIG}', %s)"
        sql = (
            f"SELECT id FROM {self._t}memories WHERE {matched} AND seq >= %s "
            f"ORDER BY {score} DESC, seq LIMIT %s"
        )
        terms = [t for t, _ in plan.weights]
        matches = [" & ".join(terms), " | ".join(terms)]
        for match in matches if plan.all_common else matches[1:]:
            floor = 0
            if plan.all_common:
                cur.execute(
                    f"SELECT seq FROM {self._t}memories WHERE {matched} ORDER BY seq DESC OFFSET %s LIMIT 1",
                    [*plan.params, match, MAX_TERM_ROWS - 1],
                )
                floor = (cur.fetchone() or (0,))[0]
            cur.execute(sql, [*plan.params, match, floor, *score_params, limit])
            found = [r[0] for r in cur.fetchall()]
            if found:
                return found
        return []

    def _vector_ranking(self, cur: Any, qvec: Vectors, scope: Scope, limit: int) -> list[tuple[str, float]]:
        with cur.connection.transaction():  # the settings last as long as it (SET LOCAL)
            cur.execute("SELECT set_config('hnsw.ef_search', '100', true)")
            cur.execute("SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true)")
            return self._naive_nearest(cur, qvec, scope, limit)

    def _naive_nearest(self, cur: Any, qvec: Vectors, scope: Scope, limit: int) -> list[tuple[str, float]]:
        dim = int(qvec.shape[0])
        text = _vector_text(qvec)
        if dim in self._indexed_dims:
            nearest, params = self._nearest_sql(dim, scope)
            cur.execute(
                f"WITH hits AS MATERIALIZED ({nearest} LIMIT %s) SELECT id, 1 - distance FROM hits "
                "ORDER BY distance, id",
                [text, *params, text, limit],
            )
            found = [(r[0], float(r[1])) for r in cur.fetchall()]
            if len(found) >= limit:
                return found
        return self._exact_nearest(cur, text, dim, scope, limit)


def server_url() -> str | None:
    return next((os.environ[name] for name in PG_ENVS if os.environ.get(name)), None)


def database_url(url: str, database: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path="/" + database))


def ensure_database(url: str, database: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (database,)).fetchone() is None:
            conn.execute(f"CREATE DATABASE {database}")
        # What an operator gives a server that builds a 1M store's index (its graph is ~2 GB; the
        # store asks for 1 GB and never less than this): the session-12 1M build's setting.
        conn.execute(f"ALTER DATABASE {database} SET maintenance_work_mem = '{BUILD_MEMORY}'")
    with psycopg.connect(database_url(url, database), autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")


def drop_database(url: str, database: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")


def rss_mb(pid: int | str = "self") -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return math.nan


def queries(count: int, kind: str) -> tuple[list[str], Vectors]:
    """The bench's queries (memory_bench's scale part): three Zipf-drawn words and a vector."""
    rng = np.random.default_rng(11)
    words = np.array(vocabulary())
    picked = words[np.minimum(rng.zipf(1.3, size=(count, 3)) - 1, len(words) - 1)]
    vectors = rng.normal(size=(count, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    if kind == "clustered":
        vectors = clustered(count, seed=12)
    return [" ".join(row) for row in picked], vectors


def load(store: PostgresStore, n: int, kind: str) -> tuple[float, float]:
    """Bulk-load the bench's ``n`` memories; (memories per second, seconds of the index build)."""
    texts, vectors = synthetic(n)
    if kind == "clustered":
        vectors = clustered(n)
    scope = Scope(USER)
    nice_backend(store)
    started = time.perf_counter()
    with contextlib.ExitStack() as stack:
        stack.enter_context(store.bulk_load())
        for start in range(0, n, BATCH):
            store.add_many(texts[start : start + BATCH], scope, vectors=vectors[start : start + BATCH])
        loaded = time.perf_counter()
        ingest = n / (loaded - started)
    build = time.perf_counter() - loaded  # bulk_load's exit builds the index
    return ingest, build


def nice_backend(store: PostgresStore, niceness: int = 10) -> None:
    """Lower the priority of the store's PostgreSQL backend (the HNSW build runs there) when the
    server runs on this machine and this user may: the build takes minutes of a core."""
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        subprocess.run(["renice", "-n", str(niceness), "-p", str(backend_pid(store))], capture_output=True)


def timed_search(store: PostgresStore, query: str, vector: Vectors) -> tuple[float, list[str]]:
    began = time.perf_counter()
    hits = store.search(query, Scope(USER), limit=5, vector=vector.tolist())
    return (time.perf_counter() - began) * 1000, [hit.item.id for hit in hits]


def halves(store: PostgresStore, query: str, vector: Vectors) -> tuple[float, float]:
    """ms of the full-text ranking and of the vector ranking alone (a benchmark's look inside)."""
    scope = Scope(USER)
    with store._read() as cur:
        began = time.perf_counter()
        store._text_ranking(cur, query, scope, store.candidates)
        text_ms = (time.perf_counter() - began) * 1000
        began = time.perf_counter()
        store._vector_ranking(cur, vector, scope, store.candidates)
        return text_ms, (time.perf_counter() - began) * 1000


def percentile(values: Sequence[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * share))]


def backend_pid(store: PostgresStore) -> int:
    with store._read() as cur:
        cur.execute("SELECT pg_backend_pid()")
        return int(cur.fetchone()[0])


def measure(url: str, count: int, kind: str, recall_count: int, model: str) -> dict[str, float]:
    new = PostgresStore(url, vector_model=model)
    naive = NaiveStore(url, vector_model=model)
    exact = PostgresStore(url, vector_model=model, exact=True)
    try:
        words, vectors = queries(count, kind)
        for i in range(min(5, count)):  # warm-up: term counts, buffers
            timed_search(new, words[i], vectors[i])
            timed_search(naive, words[i], vectors[i])
        new_ms, naive_ms, new_hits, naive_hits = [], [], [], []
        for i in range(count):  # the two take turns, query by query
            ms, hits = timed_search(new, words[i], vectors[i])
            new_ms.append(ms)
            new_hits.append(hits)
            ms, hits = timed_search(naive, words[i], vectors[i])
            naive_ms.append(ms)
            naive_hits.append(hits)
        parts = [halves(new, words[i], vectors[i]) for i in range(min(count, 50))]
        new_recall, naive_recall = [], []
        for i in range(min(recall_count, count)):
            _, want = timed_search(exact, words[i], vectors[i])
            if want:
                new_recall.append(len(set(new_hits[i]) & set(want)) / len(want))
                naive_recall.append(len(set(naive_hits[i]) & set(want)) / len(want))
        return {
            "new_p50": statistics.median(new_ms),
            "new_p95": percentile(new_ms, 0.95),
            "naive_p50": statistics.median(naive_ms),
            "naive_p95": percentile(naive_ms, 0.95),
            "text_ms": statistics.median(p[0] for p in parts),
            "vector_ms": statistics.median(p[1] for p in parts),
            "new_recall": statistics.mean(new_recall) if new_recall else math.nan,
            "naive_recall": statistics.mean(naive_recall) if naive_recall else math.nan,
            "client_rss_mb": rss_mb(),
            "backend_rss_mb": rss_mb(backend_pid(new)),
        }
    finally:
        new.close()
        naive.close()
        exact.close()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def _mcp_clients(port: int, token: str, words: list[str], clients: int, seconds: float) -> list[float]:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    times: list[float] = []
    deadline = time.monotonic() + seconds

    async def one(index: int) -> None:
        headers = {"Authorization": f"Bearer {token}"}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(60.0)) as http,
            Client(streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=http)) as client,
        ):
            await client.call_tool("memory_search", {"query": words[index], "limit": 5})  # warm-up
            turn = index
            while time.monotonic() < deadline:
                began = time.perf_counter()
                await client.call_tool("memory_search", {"query": words[turn % len(words)], "limit": 5})
                times.append((time.perf_counter() - began) * 1000)
                turn += clients

    await asyncio.gather(*(one(i) for i in range(clients)))
    return times


def measure_mcp(
    url: str, kind: str, clients: int, seconds: float, model: str
) -> tuple[float, float, float, float]:
    """p50 and p95 ms per ``memory_search`` request, requests per second, ``clients`` at once,
    and the server process's resident memory (MB) after them.
    A store whose vectors are not filed under a hashing model is searched by text only (the
    server has no embedder for them)."""
    from tinyharness.mcp.client import quiet_sdk_logs

    quiet_sdk_logs()
    port, token = _free_port(), secrets.token_urlsafe(16)
    command = [sys.executable, "-m", "tinyharness", "mcp", "serve", "--http", "--port", str(port)]
    embedder = model if model.startswith("hashing:") else "none"
    command += ["--memory", url, "--user", USER, "--embedder", embedder]
    env = {**os.environ, "TINYHARNESS_MCP_TOKEN": token}
    with open(os.devnull, "w", encoding="utf-8") as quiet:
        server = subprocess.Popen(command, env=env, stdout=quiet, stderr=quiet, cwd=ROOT)
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
                time.sleep(0.2)
            words, _ = queries(200, kind)
            started = time.perf_counter()
            times = asyncio.run(_mcp_clients(port, token, words, clients, seconds))
            elapsed = time.perf_counter() - started
            held = rss_mb(server.pid)
        finally:
            server.terminate()
            server.wait(timeout=30)
    return statistics.median(times), percentile(times, 0.95), len(times) / elapsed, held


@contextlib.contextmanager
def store_database(
    url: str, n: int, kind: str, keep: bool, model: str, database: str | None = None
) -> Iterator[tuple[str, float, float]]:
    """(the database's URL, ingest/s, build s) of a store of ``n`` memories, loaded unless a kept
    one is there (then NaN for both). ``database``: another database than ``pgscale_<kind>_<n>``
    (one loaded some other way), never dropped."""
    keep = keep or database is not None
    database = database or f"pgscale_{kind}_{n}"
    ensure_database(url, database)
    target = database_url(url, database)
    store = PostgresStore(target, vector_model=model)
    try:
        held = store.count(Scope(USER))
        if held != n:
            store.drop_tables()
            store.close()
            store = PostgresStore(target, vector_model=model)
            ingest, build = load(store, n, kind)
        else:
            ingest = build = math.nan
    finally:
        store.close()
    try:
        yield target, ingest, build
    finally:
        if not keep:
            drop_database(url, database)


def bench(
    sizes: Sequence[int],
    kinds: Sequence[str],
    count: int,
    recall_count: int,
    clients: int,
    mcp_seconds: float,
    keep: bool,
    model: str = MODEL,
    database: str | None = None,
) -> list[Row]:
    url = server_url()
    if url is None:
        return []
    rows = []
    for n in sizes:
        for kind in kinds:
            with store_database(url, n, kind, keep, model, database) as (target, ingest, build):
                before = load_average()
                found = measure(target, count, kind, recall_count, model)
                mcp = measure_mcp(target, kind, clients, mcp_seconds, model) if clients else (math.nan,) * 4
                after = load_average()
                load = f"{before[0]:.1f}-{after[0]:.1f}" if before and after else ""
                rows.append(
                    Row(
                        n,
                        kind,
                        ingest,
                        build,
                        **found,
                        mcp_p50=mcp[0],
                        mcp_p95=mcp[1],
                        mcp_per_s=mcp[2],
                        mcp_rss_mb=mcp[3],
                        load=load,
                    )
                )
    return rows


HEADER = (
    f"{'memories':>9} {'vectors':>9} {'ingest/s':>9} {'build s':>8} {'new p50':>8} {'new p95':>8} "
    f"{'naive p50':>10} {'naive p95':>10} {'text ms':>8} {'vector ms':>10} {'recall':>7} {'naive rec':>10} "
    f"{'RSS MB':>7} {'pg RSS MB':>10} {'mcp p50':>8} {'mcp p95':>8} {'mcp req/s':>10} {'mcp RSS':>8} "
    f"{'load':>9}"
)


def format_row(r: Row) -> str:
    return (
        f"{r.n:9d} {r.vectors:>9} {r.ingest_per_s:9.0f} {r.build_s:8.1f} {r.new_p50:8.2f} {r.new_p95:8.2f} "
        f"{r.naive_p50:10.2f} {r.naive_p95:10.2f} {r.text_ms:8.2f} {r.vector_ms:10.2f} {r.new_recall:7.3f} "
        f"{r.naive_recall:10.3f} {r.client_rss_mb:7.0f} {r.backend_rss_mb:10.0f} {r.mcp_p50:8.2f} "
        f"{r.mcp_p95:8.2f} {r.mcp_per_s:10.1f} {r.mcp_rss_mb:8.0f} {r.load:>9}"
    )


NOTE = (
    "new: the store's search; naive: the statements before (every full-text match ranked, HNSW "
    "ef_search 100); times in ms (p50 / p95 of a top-5 hybrid search); recall: of the exact hybrid "
    "top 5 (every match ranked, every vector compared); RSS MB: the benchmark's process (which also "
    "generated and loaded the memories when it did) and its PostgreSQL backend (counting the shared "
    "buffers it touched), mcp RSS: the `mcp serve` process after serving; mcp: 8 clients at once "
    "through `tinyharness mcp serve --http`, ms per request; load: "
    "the 1-minute load average before and after"
)


def main(argv: Sequence[str] | None = None) -> str:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="10000,100000,1000000", help="comma list of store sizes")
    parser.add_argument("--vectors", default="random,clustered", help="comma list of random, clustered")
    parser.add_argument("--queries", type=int, default=200, help="searches per store and code")
    parser.add_argument("--recall-queries", type=int, default=50, help="of them, compared with exact search")
    parser.add_argument("--clients", type=int, default=8, help="concurrent MCP clients (0: no MCP row)")
    parser.add_argument("--mcp-seconds", type=float, default=20.0, help="how long the MCP clients search")
    parser.add_argument("--keep", action="store_true", help="keep the stores' databases for the next run")
    parser.add_argument(
        "--model",
        default=MODEL,
        help=f"the vectors' model name (default {MODEL}; another name: the MCP row searches by text only)",
    )
    parser.add_argument("--database", help="measure the store in this database (one size and kind)")
    parser.add_argument("--small", action="store_true", help="a quick pass: 2,000 memories, 40 queries")
    args = parser.parse_args(argv)
    lines = ["## PostgreSQL at scale: hybrid search (text + 384-d vector, top 5), new and naive"]
    if server_url() is None:
        lines.append(f"skipped: set {' or '.join(PG_ENVS)} to a PostgreSQL + pgvector server")
        print("\n".join(lines))
        return "\n".join(lines)
    sizes = [2000] if args.small else [int(s) for s in args.sizes.split(",")]
    count = 40 if args.small else args.queries
    print(lines[0], flush=True)
    print(HEADER, flush=True)
    lines.append(HEADER)
    for n in sizes:
        for row in bench(
            [n],
            args.vectors.split(","),
            count,
            min(args.recall_queries, count),
            args.clients,
            5.0 if args.small else args.mcp_seconds,
            args.keep,
            args.model,
            args.database,
        ):
            lines.append(format_row(row))
            print(lines[-1], flush=True)
    lines.append(NOTE)
    print(NOTE)
    return "\n".join(lines)


if __name__ == "__main__":
    main()

"""The SQLite store's vector index snapshot: what a new process pays before its first search.

One store of ``--size`` memories (the scale bench's texts and random 384-d vectors, one bulk
load) is opened again and again, each time by a fresh ``SQLiteStore`` (what a new process
does), and searched once; the runs take turns:

- ``rows``: no snapshot (as before there were snapshots): the index is built from every
  vector row (read, quantized);
- ``rows+close``: the same, then ``close``, which writes the snapshot (what the first process
  to search a large store now does once);
- ``snapshot``: the snapshot written by the previous open is read, checked (CRC-32, header,
  the database's highest row and vector count) and brought up to date;
- ``snapshot+changes``: as ``snapshot``, after another writer added 1% more memories since.

Also the snapshot's size and the time to write it, and whether every first search returned
the same top 5 as a search of the index built from the rows (it must: same index).

    python -m bench.index_snapshot --size 100000 --rounds 5
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from bench import progress
from bench.memory_bench import synthetic
from tinyharness.memory import index_file
from tinyharness.memory.base import Scope
from tinyharness.memory.sqlite_store import SQLiteStore

SCOPE = Scope(user="bench")


def first_search(
    path: Path, query: np.ndarray, *, write: bool = True, with_close: bool = False
) -> tuple[float, list[str], list[str]]:
    """Seconds from opening the store to the end of its first search (``with_close``: to the end
    of its close), the top 5 ids, and why a snapshot was refused (if one was)."""
    start = time.perf_counter()
    store = SQLiteStore(path, vector_model="bench", snapshot_min_rows=0 if write else 1 << 62)
    hits = store.search("", SCOPE, limit=5, vector=query.tolist())
    elapsed = time.perf_counter() - start
    refusals = list(store.snapshot_refusals)
    store.close()
    if with_close:
        elapsed = time.perf_counter() - start
    return elapsed, [hit.item.id for hit in hits], refusals


def run(size: int, rounds: int) -> str:
    texts, vectors = synthetic(size + size // 100 * rounds)
    queries = synthetic(rounds, seed=11)[1]
    lines: list[str] = []
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "memory.db"
        store = SQLiteStore(path, vector_model="bench")
        start = time.perf_counter()
        store.add_many(texts[:size], SCOPE, vectors=vectors[:size])
        ingest = time.perf_counter() - start
        store.close()
        snapshot = path.parent / index_file.snapshot_name(path, "bench")
        times: dict[str, list[float]] = {"rows": [], "rows+close": [], "snapshot": [], "snapshot+changes": []}
        same = 0
        written = size
        for round_ in range(rounds):
            query = queries[round_]
            progress(f"index snapshot: round {round_ + 1} of {rounds}")
            if snapshot.exists():
                os.unlink(snapshot)
            built, reference, _ = first_search(path, query, write=False)  # as before snapshots
            times["rows"].append(built)
            built, _, _ = first_search(path, query, with_close=True)  # builds, close writes the snapshot
            times["rows+close"].append(built)
            loaded, top, refusals = first_search(path, query)
            times["snapshot"].append(loaded)
            same += top == reference and not refusals
            writer = SQLiteStore(path, vector_model="bench")
            step = size // 100
            writer.add_many(texts[written : written + step], SCOPE, vectors=vectors[written : written + step])
            written += step
            writer.close()
            changed, _, refusals = first_search(path, query)
            times["snapshot+changes"].append(changed)
        index = SQLiteStore(path, vector_model="bench")
        index.search("", SCOPE, vector=queries[0].tolist())
        start = time.perf_counter()
        index._save_snapshot()
        save = time.perf_counter() - start
        index.close()
        megabytes = snapshot.stat().st_size / 1e6
    lines.append(f"## index snapshot: open + first vector search, {size:,} memories x 384-d, {rounds} rounds")
    lines.append(f"{'start from':20s} {'median s':>9s} {'min s':>7s} {'max s':>7s}")
    for name, values in times.items():
        lines.append(f"{name:20s} {statistics.median(values):9.3f} {min(values):7.3f} {max(values):7.3f}")
    lines.append(
        f"snapshot file {megabytes:.0f} MB, written in {save:.2f} s; bulk ingest {ingest:.1f} s; "
        f"same top 5 as the index built from the rows on {same} of {rounds}"
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=100_000, help="memories in the store")
    parser.add_argument("--rounds", type=int, default=5, help="opens of each kind")
    args = parser.parse_args(argv)
    report = run(args.size, args.rounds)
    print(report)
    return report


if __name__ == "__main__":
    main()

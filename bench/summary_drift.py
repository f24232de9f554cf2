"""Incremental against rewritten summaries on a real local model: which facts survive.

A conversation in three parts, each of four rounds of file reads, three of whose results state a
fact (a port, an error code, a decision...). After each part the history is compacted by
``summarize`` with the local model as the summarizer, once with ``--summary-mode update`` and
once with ``rewrite``, from the same history. Counted: the facts (their exact values) in the
window after the last compaction, and the tokens the summarizer read and wrote, as the server
reports them. The runs take minutes on 2 cores, so ``python -m bench`` reports the cached
result (bench/summary_drift.json); this module measures anew.

    python -m bench.summary_drift                 # the default local model
    python -m bench.summary_drift --model local:qwen2.5-coder-1.5b
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from typing import Any

from bench import HERE, load_line, progress
from tinyharness.context.config import ContextConfig
from tinyharness.context.manager import build_context
from tinyharness.events import EventBus, ListSink
from tinyharness.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock
from tinyharness.models.base import Model, ModelRequest, ModelResponse
from tinyharness.models.factory import load_model

CACHE = HERE / "summary_drift.json"

# (file, what its read shows, the exact value that must survive)
FACTS = [
    ("config/db.yaml", "port: 6543  # the staging database listens here", "6543"),
    ("src/auth.py", "raise AuthError('E4312: token expired')", "E4312"),
    ("NOTES-decision", "Decision: store sessions in SQLite, not Redis", "SQLite"),
    ("src/billing.py", "AMOUNT_UNIT = 'cents'  # amounts are integer cents", "cents"),
    ("config/limits.yaml", "max_upload_mb: 37", "37"),
    ("src/mail.py", "SMTP_HOST = 'relay.internal.example'", "relay.internal.example"),
    ("tests/test_api.py", "FAILED test_refund_twice - assert 409 == 200", "409"),
    ("src/orders.py", "LOCK_TIMEOUT_S = 12", "12"),
    ("docs/owners.md", "Refunds are owned by team Kestrel", "Kestrel"),
    ("src/cache.py", "TTL_SECONDS = 905", "905"),
    ("config/flags.yaml", "feature new_checkout: off until v2.8", "v2.8"),
    ("src/export.py", "CSV delimiter is ';' for the Lyon office", "Lyon"),
]
PARTS = 3
ROUNDS_PER_PART = 4
WINDOW = 3072  # the summarizer's output budget is a quarter of the trigger: 537 tokens
TIMEOUT = 1800.0  # seconds per request: a busy 2-core machine ran one summary in 6 minutes


class Counting:
    """The model's complete(), counting the tokens the server reports."""

    def __init__(self, model: Model) -> None:
        self.model = model
        self.read = 0
        self.written = 0
        self.calls = 0
        self.seconds = 0.0
        self.failures: list[str] = []

    async def __call__(self, request: ModelRequest) -> ModelResponse:
        started = time.perf_counter()
        try:
            response = await self.model.complete(request)
        except Exception as exc:  # reported in the table: a failed summary falls back
            self.failures.append(f"{type(exc).__name__}: {exc}"[:200])
            raise
        finally:
            self.seconds += time.perf_counter() - started
        self.calls += 1
        self.read += response.usage.input_tokens
        self.written += response.usage.output_tokens
        return response


def part(number: int) -> list[Message]:
    """Four rounds; three of them read a file that states one fact."""
    out: list[Message] = []
    facts = FACTS[number * 3 : number * 3 + 3]
    for r in range(ROUNDS_PER_PART):
        call_id = f"c{number}_{r}"
        # Results of a realistic size (about 1,300 characters): a summary must be smaller than
        # the rounds it replaces, or the step is refused as no reduction.
        filler = [f"def step_{number}_{r}_{i}(value):\n    return value + {i}" for i in range(24)]
        if r < len(facts):
            path, line, _value = facts[r]
            body = "\n".join([f"# {path}", "import os", *filler[:12], line, *filler[12:]])
        else:
            path, body = f"src/util{number}.py", "\n".join(filler)
        out.append(
            Message(
                "assistant",
                (TextBlock(f"Reading {path}."), ToolUseBlock(call_id, "read_file", {"path": path})),
            )
        )
        out.append(Message("user", (ToolResultBlock(call_id, body),)))
    return out


async def run_mode(model: Model, mode: str) -> dict[str, Any]:
    config = ContextConfig("summarize", window=WINDOW, ratio=0.7, keep_recent=1, summary_mode=mode)  # type: ignore[arg-type]
    sink = ListSink()
    context = build_context(config, events=EventBus([sink]))
    caller = Counting(model)
    messages = [Message.user("Review the project's configuration and code; keep every value you find.")]
    for number in range(PARTS):
        messages += part(number)
        context._calls_since_compaction = 5  # the agent worked in between (no storm guard)
        messages = await context.compact_now("sys", messages, caller)
        progress(f"summary drift: {mode}, compaction {number + 1}/{PARTS} done")
    window = "\n".join(
        [b.text for m in messages for b in m.content if isinstance(b, TextBlock)]
        + [b.content for m in messages for b in m.content if isinstance(b, ToolResultBlock)]
    )
    # Each part's fourth round states nothing, so the round kept verbatim holds no fact: every
    # fact counted went through a summary at least once.
    counted = FACTS[: PARTS * 3]
    kept = [value for _path, _line, value in counted if value in window]
    return {
        "mode": mode,
        "facts": len(counted),
        "kept": len(kept),
        "lost": [value for _p, _l, value in counted if value not in kept],
        "read": caller.read,
        "written": caller.written,
        "calls": caller.calls,
        "seconds": round(caller.seconds, 1),
        "steps": [e["strategy"] for e in sink.of_type("compaction")],
        "failures": caller.failures
        + [f"{e['strategy']}: {e['reason']}" for e in sink.of_type("compaction_fallback")],
    }


async def measure(model_name: str) -> dict[str, Any]:
    model = load_model(model_name, timeout=TIMEOUT)
    try:
        results = [await run_mode(model, mode) for mode in ("update", "rewrite")]
    finally:
        await model.aclose()
    return {"model": model_name, "load": load_line(), "results": results}


def to_markdown(data: dict[str, Any]) -> str:
    lines = [
        f"Real summarizer: `{data['model']}`, {PARTS} compactions of a conversation whose tool results "
        f"state {PARTS * 3} exact values; {data['load']}.",
        "",
        "| summary mode | values kept after the last compaction | lost | tokens read | tokens written "
        "| summarizer time | steps that ran |",
        "| --- | ---: | --- | ---: | ---: | ---: | --- |",
    ]
    failures = []
    for row in data["results"]:
        lost = ", ".join(row["lost"]) or "none"
        steps = ", ".join(row.get("steps", [])) or "-"
        lines.append(
            f"| {row['mode']} | {row['kept']} of {row['facts']} | {lost} | {row['read']:,} | "
            f"{row['written']:,} | {row['seconds']:.0f} s | {steps} |"
        )
        failures += [f"{row['mode']}: {failure}" for failure in row.get("failures", [])]
    if failures:
        lines += ["", "Summaries that failed or were refused (the compaction fell back):", ""]
        lines += [f"- {failure}" for failure in failures]
    return "\n".join(lines)


def cached_report() -> str:
    if not CACHE.exists():
        return "Not measured yet: run `python -m bench.summary_drift`."
    data = json.loads(CACHE.read_text(encoding="utf-8"))
    note = f"From the cache ({CACHE.name}; `python -m bench.summary_drift` measures again)."
    return f"{note}\n\n{to_markdown(data)}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="local", help="model string (default: local)")
    args = parser.parse_args(argv)
    data = asyncio.run(measure(args.model))
    CACHE.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    print(to_markdown(data))
    return 0


if __name__ == "__main__":
    sys.exit(main())

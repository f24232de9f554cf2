"""``python -m bench``: run every benchmark and write bench/RESULTS.md.

    python -m bench                 # the full suite (about 50 minutes on 2 shared cores; the
                                    # secrets, durable, e2e, peers and memory parts take most)
    python -m bench --small         # the quick version of every part
    python -m bench --only loop,e2e # some parts: loop, tokens, peers, memory, e2e, secrets, parallel,
                                    # mcp, tasks, grep, anchors, subagents, durable; the other
                                    # parts' sections of the results file are kept as they are
    python -m bench --output FILE   # write elsewhere (default: bench/RESULTS.md)

PostgreSQL rows (memory, durable) need TINYHARNESS_BENCH_PG_URL or TINYHARNESS_TEST_PG_URL;
without either they are skipped.

Progress goes to stderr; each part's own tables are printed as it finishes.

The results file is only ever written here, and holds only the current run's tables: each
section has a chart drawn from its own tables (bench/charts.py, PNGs in bench/charts/), a line
saying how to re-run it, and a link to bench/notes/<part>.md, where what a person writes about a
part lives (the reading of its numbers, earlier rounds, what was tried). Long per-run tables go
to bench/details/<part>.md, linked from the section. In the file, HTML comments mark where each
part's section begins: that is how ``--only`` finds the sections it keeps, and how ``--render``
redraws the charts and rewrites the file from the sections already there without running
anything.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import importlib
import io
import re
import time
from collections.abc import Callable
from pathlib import Path

from bench import HERE, charts, load_line, machine_line, progress


def _loop(small: bool) -> str:
    from bench import loop_overhead

    result = loop_overhead.run(small=small)
    lines = [
        "Harness CPU time per turn (model time excluded: an instant model and a no-op tool) against "
        "history length, median over many turns; the window is far above the history, so no "
        "compaction runs. Every row ran in this same process run.",
        "",
        loop_overhead.to_markdown(result),
        "",
    ]
    lines += [f"- {line}" for line in loop_overhead.headlines(result)]
    lines += [f"- {line}" for line in dominant(result)]
    return "\n".join(lines)


def dominant(result: object) -> list[str]:
    """Which per-turn parts grow with the history, largest first, at the largest size."""
    from bench.loop_overhead import ROWS, LoopResult

    assert isinstance(result, LoopResult)
    size = result.sizes[-1]
    parts = ["prefix", "calibration", "ledger", "validator", "checkpoint"]
    measured = [(result.get(p, size), p) for p in parts if result.get(p, size) is not None]
    measured.sort(reverse=True)
    lines = []
    for value, part in measured:
        growth = result.growth(part)
        grows = f"grows {growth:,.0f}x from {result.sizes[0]:,} messages" if growth else ""
        label = ROWS[part].lstrip("- ")
        lines.append(f"{label}: {value:,.0f} µs at {size:,} messages; {grows}")
    return lines


def _tokens(small: bool) -> str:
    from bench import context_bench

    report = _report(context_bench.main, small)
    legend = (
        "Columns: stop reason, tokens billed (input + output of every call), peak tokens of one "
        "agent request, requests over the window, model calls, compactions, share of the six task "
        "constraints and of the notes' facts present in the first request after each compaction "
        "(mean), mean repeated-prefix share of consecutive requests (prompt-cache friendliness)."
    )
    return f"{legend}\n\n```text\n{report}\n```"


def _peers(small: bool) -> str:
    from bench import peers_bench

    report = _report(peers_bench.main, small)
    legend = (
        "The workload of section 2 (same files, tool calls, tool outputs and summarizer; usage "
        "counted by one rule) through each harness's own loop and compaction, each with a fake "
        "model on that harness's model interface. Columns as in section 2, except: rewrites = "
        "agent requests whose history is not the previous request's plus new messages (a "
        "compaction, a cleared result), counted the same way for every harness; constraints and "
        "notes are measured in the first request after each rewrite; harness CPU = process CPU "
        "time of the run minus the model's and the tools', per agent request. Cache reads and "
        "writes: tokens of the row's requests the prompt-cache simulator (bench/cache_sim.py, the "
        "providers' documented rules) reads and writes with the row's Anthropic breakpoints; $ "
        "Sonnet and $ GPT-4.1: the run's dollars at claude-sonnet-4-6 and gpt-4.1 prices "
        "(models/prices.json), with that cache (OpenAI's automatic one for GPT-4.1). A peer that is not "
        "installed is a row saying so (`pip install -e '.[peers]'`; `make bench` installs them)."
    )
    return f"{legend}\n\n{report}"


def _memory(small: bool) -> str:
    try:
        memory_bench = importlib.import_module("bench.memory_bench")
    except Exception as exc:  # the memory engineer's module is optional here
        return f"Pending: bench/memory_bench.py is not importable yet ({type(exc).__name__}: {exc})."
    entry = getattr(memory_bench, "main", None)
    if entry is None:
        return "Pending: bench/memory_bench.py has no main() yet."
    report = _report(entry, small)
    return f"```text\n{report}\n```"


def _e2e(small: bool) -> str:
    from bench import e2e_local

    result = e2e_local.run(small=small)
    return f"Command: `{result.command}`\n\n{e2e_local.to_markdown(result)}"


def _secrets(small: bool) -> str:
    from bench import secrets_bench

    return _report(secrets_bench.main, small)


def _parallel(small: bool) -> str:
    from bench import parallel_calls

    rows = parallel_calls.run(small=small)
    lines = [
        "One model turn asks for N calls of a no-op tool; the loop runs them in parallel. Wall "
        "seconds for the whole run, and megabytes of SQL written to the run log and session store "
        "(statement text with bound values, from SQLite's trace hook). Every row ran in this same "
        "process run.",
        "",
        parallel_calls.to_markdown(rows),
        "",
    ]
    return "\n".join(lines + [f"- {line}" for line in parallel_calls.headlines(rows)])


def _mcp(small: bool) -> str:
    from bench import mcp_overhead

    return mcp_overhead.to_markdown(mcp_overhead.run(small=small))


def _tasks(small: bool) -> str:
    """The task suite and the acceptance run from their caches: hours of model time on 2 cores,
    so `make bench` reports what was measured and runs nothing new here (see the note)."""
    from bench import acceptance, task_suite

    runs = task_suite.cached_runs()
    note = (
        "From the cache (bench/.task_cache.json, bench/acceptance.json): these runs take hours on "
        "2 cores, so `python -m bench` only reports them. Run missing or new ones with "
        "`make bench-tasks` (python -m bench.task_suite; python -m bench.acceptance)."
    )
    suite = task_suite.to_markdown(runs) if runs else "No task runs cached yet."
    return f"{note}\n\n{suite}\n\n### Acceptance run\n\n{acceptance.cached_report()}"


def _grep(small: bool) -> str:
    from bench import grep_bench

    return grep_bench.to_markdown(grep_bench.run(small=small))


def _anchors(small: bool) -> str:
    """The simulated workloads run here; the real-model drift comparison takes minutes of model
    time on 2 cores, so it is reported from its cache (python -m bench.summary_drift)."""
    from bench import anchors_bench, summary_drift

    report = _report(anchors_bench.main, small)
    drift = summary_drift.cached_report()
    return f"{report}\n\n### Incremental against rewritten summaries on a local model\n\n{drift}"


def _subagents(small: bool) -> str:
    from bench import subagent_bench

    workload, rows = subagent_bench.run(small=small)
    legend = (
        "The same long task run by one agent and by an agent that hands the reading to sub-agents "
        "(the task tool), on a simulated model: tokens billed by every request of the run "
        "(sub-agents' included), the largest request of the parent and of one sub-agent, whether "
        "every file got its line in NOTES.md."
    )
    return f"{legend}\n\n{subagent_bench.to_markdown(workload, rows)}"


def _durable(small: bool) -> str:
    from bench import durable_bench

    return durable_bench.run(small=small)


def _report(entry: Callable[[list[str]], str], small: bool) -> str:
    """The report of a part whose module's ``main(argv)`` prints it (``--small`` for the quick
    pass)."""
    return _quiet(lambda: entry(["--small"] if small else []))


def _quiet(call: Callable[[], str]) -> str:
    """Run a part that prints its own report; keep stdout for the summary, return the report."""
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        report = call()
    return report if report else buffer.getvalue()


SECTIONS: dict[str, tuple[str, str, Callable[[bool], str]]] = {
    "loop": ("1. Loop overhead vs. history length", "python -m bench.loop_overhead", _loop),
    "tokens": ("2. Token economy on a long task", "python bench/context_bench.py", _tokens),
    "peers": ("2b. Compaction side by side with the peers", "python -m bench.peers_bench", _peers),
    "memory": ("3. Memory", "python bench/memory_bench.py", _memory),
    "e2e": ("4. Real model, end to end", "python -m bench.e2e_local", _e2e),
    "secrets": ("5. Secret redaction", "python -m bench.secrets_bench", _secrets),
    "parallel": ("6. Parallel tool calls with the run log", "python -m bench.parallel_calls", _parallel),
    "mcp": ("7. MCP tool call overhead", "python -m bench.mcp_overhead", _mcp),
    "tasks": ("8. Task suite and acceptance run on the local models", "python -m bench.task_suite", _tasks),
    "grep": ("9. grep: RE2 against Python's re", "python -m bench.grep_bench", _grep),
    "anchors": (
        "10. Pins, the plan and incremental summaries",
        "python -m bench.anchors_bench",
        _anchors,
    ),
    "subagents": ("11. Sub-agents on a long task", "python -m bench.subagent_bench", _subagents),
    "durable": (
        "12. Durable runs: workers and recorded steps",
        "python -m bench.durable_bench",
        _durable,
    ),
}
PARTS = tuple(SECTIONS)  # in the order they run


NOTES = HERE / "notes"  # bench/notes/<part>.md: hand-written analysis, never written here
_PART = "<!-- bench:part {} -->"
_NOTES = "<!-- bench:notes {} -->"
_MARKER = re.compile(r"^<!-- bench:(part|notes) ([a-z0-9_-]+) -->$", re.M)
_HEADER_END = "<!-- bench:sections -->"


def notes_text(part: str, notes_dir: Path | None = None) -> str:
    """The hand-written notes of ``part`` (bench/notes/<part>.md), verbatim, or ""."""
    path = (notes_dir or NOTES) / f"{part}.md"
    return path.read_text(encoding="utf-8").strip() if path.is_file() else ""


def parse_results(text: str) -> tuple[str, dict[str, str]]:
    """An existing RESULTS.md as (its header, part -> that part's generated text). What follows
    a part's generated text (its chart, re-run and notes lines; notes included by older
    versions of this file) is dropped: it is made again from the part's text and files."""
    head, sep, rest = text.partition(_HEADER_END)
    if not sep:
        return head, {}
    generated: dict[str, str] = {}
    marks = list(_MARKER.finditer(rest))
    for i, mark in enumerate(marks):
        kind, part = mark.group(1), mark.group(2)
        if kind == "part":
            stop = marks[i + 1].start() if i + 1 < len(marks) else len(rest)
            body = rest[mark.end() : stop]
            generated[part] = body.split(_TRAILER, 1)[0].strip()
    return head, generated


DETAILS = HERE / "details"  # bench/details/<part>.md: long tables moved out of RESULTS.md, written here
LONG_TABLE = 8  # rows: a table (after a section's first) longer than this goes to details, linked
LONG_FIRST_TABLE = 25  # rows: the same for a section's first table, its headline
LONG_LIST = 5  # items: a bullet list longer than this goes to details, linked
_TRAILER = "<!-- bench:trailer -->"


def split_details(part: str, text: str, details_dir: Path | None = None) -> str:
    """``text`` with its long tables (pipe tables, or runs of lines inside a code block, of more
    than ``LONG_TABLE`` rows) moved to bench/details/<part>.md, each replaced by a link, except
    the section's first table, its headline, which the chart draws. Every row stays one click
    away."""
    kept: list[str] = []
    moved: list[str] = []
    lines = text.splitlines()
    i, in_code, seen_table = 0, False, False
    link = f"[bench/details/{part}.md](details/{part}.md)"
    while i < len(lines):
        line = lines[i]
        if line.startswith("```"):
            in_code = not in_code
            kept.append(line)
            i += 1
            continue
        is_row = line.startswith("|") if not in_code else bool(line.strip())
        if not in_code and line.startswith("- "):
            j = i
            while j < len(lines) and lines[j].startswith("- "):
                j += 1
            if j - i > LONG_LIST:
                moved += ["## Notes of the run", "", *lines[i:j], ""]
                kept.append(f"({j - i} notes of the run: in {link})")
            else:
                kept.extend(lines[i:j])
            i = j
            continue
        if not is_row:
            kept.append(line)
            i += 1
            continue
        j = i
        while (
            j < len(lines)
            and not lines[j].startswith("```")
            and (lines[j].startswith("|") if not in_code else bool(lines[j].strip()))
        ):
            j += 1
        block = lines[i:j]
        title = next((kept[k] for k in range(len(kept) - 1, -1, -1) if kept[k].strip()), "")
        first_table = not seen_table
        seen_table = True
        if len(block) - 2 > (LONG_FIRST_TABLE if first_table else LONG_TABLE):
            fence = ["```text", *block, "```"] if in_code else block
            moved += [f"## {title.strip('`# ') or part}", "", *fence, ""]
            note = f"({len(block) - 2} rows: in {link})"
            kept.append(note if not in_code else f"... {len(block) - 2} rows: see bench/details/{part}.md")
        else:
            kept.extend(block)
        i = j
    if moved:
        folder = details_dir or DETAILS
        folder.mkdir(parents=True, exist_ok=True)
        body = "\n".join(moved)
        (folder / f"{part}.md").write_text(f"# Long tables of part {part}\n\n{body}\n", encoding="utf-8")
    return "\n".join(kept)


def render_results(
    header: str,
    generated: dict[str, str],
    notes_dir: Path | None = None,
    charts_dir: Path | None = None,
    details_dir: Path | None = None,
) -> str:
    """RESULTS.md: the header, then every part that has generated text, in PARTS order, each
    followed by its chart, how to re-run it and where its notes are."""
    out = [header.rstrip(), "", _HEADER_END]
    for part in PARTS:
        if part not in generated:
            continue
        text = split_details(part, generated[part], details_dir)
        text = re.sub(r"^(## [^\n]+)\n\n(Command: )", r"\1\n\2", text, count=1, flags=re.M)
        generated[part] = text
        out += [_PART.format(part), text.strip(), "", _TRAILER]
        chart = charts.draw(part, text, charts_dir or charts.CHARTS)
        rerun = f"Re-run: `python -m bench --only {part}` (alone: `{SECTIONS[part][1]}`)."
        notes = notes_text(part, notes_dir)
        if notes:
            rerun += f" Reading, earlier rounds and what was tried: [bench/notes/{part}.md](notes/{part}.md)."
        image = f"![{SECTIONS[part][0]}](charts/{chart.name}) " if chart is not None else ""
        out += [image + rerun, ""]
    return "\n".join(out).rstrip("\n") + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="the quick version of every part")
    parser.add_argument(
        "--only",
        default=",".join(PARTS),
        help=f"comma list of {', '.join(PARTS)}; the other parts' sections of an existing "
        "results file are kept",
    )
    parser.add_argument("--output", default=str(HERE / "RESULTS.md"), help="where to write the results")
    parser.add_argument(
        "--render",
        action="store_true",
        help="run nothing: redraw the charts and rewrite the results file from its sections",
    )
    args = parser.parse_args(argv)
    if args.render:
        output = Path(args.output)
        if not output.is_file():
            parser.error(f"{output} does not exist: run the bench first")
        header, sections = parse_results(output.read_text(encoding="utf-8"))
        text = render_results(_header("", header, whole=False, keep_runs=True), sections, **_beside(output))
        output.write_text(text, encoding="utf-8")
        progress(f"wrote {output} and its charts")
        return 0
    parts = [p for p in args.only.split(",") if p]
    unknown = sorted(set(parts) - set(PARTS))
    if unknown:
        parser.error(f"unknown part(s) {', '.join(unknown)}; choose from {', '.join(PARTS)}")
    output = Path(args.output)
    whole = parts == list(PARTS)
    kept: dict[str, str] = {}
    old_header = ""
    if not whole and output.is_file():
        old_header, kept = parse_results(output.read_text(encoding="utf-8"))
        if not kept:
            parser.error(
                f"{output} has no section markers (written by hand or by an older bench): run the "
                "whole bench once, or write elsewhere with --output"
            )
    flag = " --small" if args.small else ""
    command = "python -m bench" + flag + ("" if whole else f" --only {','.join(parts)}")
    generated = dict(kept)
    took_by_part: dict[str, float] = {}
    started_at = _now()
    start_load = load_line()
    begun = time.perf_counter()
    for part in parts:
        title, alone, function = SECTIONS[part]
        progress(f"{title} ...")
        load_before, when = load_line(), _now()
        started = time.perf_counter()
        text = function(args.small)
        took = time.perf_counter() - started
        took_by_part[part] = took
        progress(f"{title}: done in {took:.0f} s")
        generated[part] = "\n".join(
            [
                f"## {title}",
                f"Command: `{command}` (alone: `{alone}{flag}`); run on {when}, took {took:.0f} s. "
                f"Load at the start: {load_before}; at the end: {load_line()}.",
                "",
                text,
            ]
        )
        print(f"\n## {title}\n\n{text}", flush=True)
    total = time.perf_counter() - begun
    slowest = sorted(took_by_part.items(), key=lambda item: -item[1])
    split = ", ".join(f"{part} {took:.0f} s" for part, took in slowest)
    progress(f"all parts done in {total:.0f} s ({total / 60:.1f} min): {split}")
    run_line = (
        f"`{command}` on {started_at}, took {total:.0f} s ({total / 60:.1f} min): {split}. "
        f"Load at the start: {start_load}; at the end: {load_line()}."
    )
    header = _header(run_line, old_header, whole=whole)
    output.write_text(render_results(header, generated, **_beside(output)), encoding="utf-8")
    progress(f"wrote {output}")
    return 0


def _beside(output: Path) -> dict[str, Path]:
    """The charts and details folders of a results file: beside it, as its links expect."""
    return {"charts_dir": output.parent / "charts", "details_dir": output.parent / "details"}


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")


_FULL_RUN = "Whole run: "
_LATER_RUN = "Run since: "


def _header(run_line: str, old_header: str, *, whole: bool, keep_runs: bool = False) -> str:
    """The file's header. A whole run starts it afresh; a run of some parts keeps the last whole
    run's line and puts its own below it (only the latest: each section names its own run).
    ``keep_runs``: rewrite the header without a new run (``--render``)."""
    old = old_header.splitlines()
    full = [_FULL_RUN + run_line] if whole else [line for line in old if line.startswith(_FULL_RUN)]
    later = [] if whole else [line for line in old if line.startswith(_LATER_RUN)]
    if not whole:
        later = later[-1:] if keep_runs else [_LATER_RUN + run_line]
    lines = [
        "# Benchmark results",
        "",
        "Written by `python -m bench` (`make bench`); edit nothing here by hand. Each section's "
        "tables and chart come from the run its Command line names; the reading of the numbers "
        "and earlier rounds are in bench/notes/<part>.md, linked from each section. "
        "`python -m bench --only PART` rewrites only that part's section. "
        f"Machine: {machine_line()}.",
        "",
        *(full + later),
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())

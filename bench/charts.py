"""A chart per section of bench/RESULTS.md, drawn from the section's own generated tables.

``python -m bench`` calls :func:`draw` after each part with the markdown that part produced; the
PNG goes to bench/charts/<part>.png and the section links it. Nothing is typed in by hand: the
numbers are read back from the tables the run wrote (markdown pipe tables, or the fixed-width
text tables some parts print), so a chart can never disagree with its table.

Each part names what to draw in :data:`SPECS`: which table, which column gives the labels and
which numeric columns to plot. A part with no spec, or whose table has no numeric column, gets no
chart (and the section says so).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

CHARTS = Path(__file__).resolve().parent / "charts"

_NUMBER = re.compile(r"^[~<>≤≥+]?\s*(-?[\d,]*\.?\d+)\s*(%|x|ms|µs|s|min|MB|k|M)?\b")


@dataclass(frozen=True)
class Spec:
    """What to draw for a part.

    - ``title``: the chart's title.
    - ``table``: which table of the section (0 = the first).
    - ``values``: header words of the numeric columns to plot (a column matches when its header
      contains the words); empty = the first numeric column.
    - ``kind``: ``bar`` (one horizontal bar per row) or ``lines`` (the numeric columns are the x
      axis, one line per row: for a cost that should stay flat as something grows).
    - ``skip``: rows whose label starts with this are left out (sub-rows such as "- of which").
    - ``log``: a log scale when the values span more than this ratio.
    - ``labels``: the columns that name a row, numeric or not (a store size, say).
    """

    title: str
    table: int = 0
    values: tuple[str, ...] = ()
    kind: str = "bar"
    skip: str = ""
    log: float = 50.0
    max_rows: int = 16
    labels: tuple[str, ...] = ()  # header words of the columns that name a row (default: the text ones)


SPECS: dict[str, Spec] = {
    "loop": Spec("Harness CPU per turn (µs) against history length", kind="lines", skip="-", max_rows=6),
    "tokens": Spec("Tokens billed on the 300-round task, per strategy", values=("billed",)),
    "peers": Spec("Per strategy and per peer: tokens billed, and cost in dollars", values=("billed", "$")),
    "memory": Spec(
        "Hybrid search p50 (ms) by backend, store size and vectors",
        values=("p50",),
        labels=("backend", "memories", "vectors"),
    ),
    "e2e": Spec("The default model end to end", values=("value",)),
    "secrets": Spec("Secret redaction: recall and false positives", values=("recall", "false")),
    "parallel": Spec("Parallel tool calls: wall seconds by calls per turn", kind="lines", max_rows=3),
    "mcp": Spec("Tool call wall p50 (µs)", values=("wall p50",)),
    "tasks": Spec("Task suite: share of tasks passed (%) per model and variant", values=("passed",)),
    "grep": Spec("grep: ms per search over 2 MB of source", values=("grep tool", "Python re")),
    "anchors": Spec(
        "Pins and plan put back after every compaction (%)", values=("pins: put back", "plan: put back")
    ),
    "subagents": Spec("One agent against sub-agents: tokens billed", values=("tokens billed",)),
    "durable": Spec("Durable runs per minute by workers", values=("runs per minute",)),
}


@dataclass(frozen=True)
class Table:
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]


def tables(markdown: str) -> list[Table]:
    """The tables of a section: markdown pipe tables, then fixed-width tables inside code
    blocks (a header line of words separated by two or more spaces, rows below it)."""
    found: list[Table] = []
    lines = markdown.splitlines()
    in_code = False
    block: list[str] = []
    pipe: list[str] = []
    for line in [*lines, ""]:
        if line.startswith("```"):
            if in_code:
                found.extend(_fixed_width(block))
                block = []
            in_code = not in_code
            continue
        if in_code:
            block.append(line)
            continue
        if line.startswith("|"):
            pipe.append(line)
            continue
        if pipe:
            table = _pipe_table(pipe)
            if table is not None:
                found.append(table)
            pipe = []
    return found


def _cells(line: str) -> tuple[str, ...]:
    return tuple(cell.strip() for cell in line.strip().strip("|").split("|"))


def _pipe_table(lines: list[str]) -> Table | None:
    if len(lines) < 3 or not set(lines[1].replace("|", "").strip()) <= set("-: "):
        return None
    return Table(_cells(lines[0]), tuple(_cells(line) for line in lines[2:]))


def _fixed_width(block: list[str]) -> list[Table]:
    """Tables printed as aligned text: a header line whose columns are separated by two or more
    spaces and hold no number, then rows with as many whitespace-separated cells."""
    found = []
    header: tuple[str, ...] | None = None
    rows: list[tuple[str, ...]] = []
    for line in [*block, ""]:
        columns = tuple(cell for cell in re.split(r"\s{2,}", line.strip()) if cell)
        cells = tuple(line.split())
        if header is not None and cells and len(cells) == len(header):
            rows.append(cells)
            continue
        if header is not None and rows:
            found.append(Table(header, tuple(rows)))
        header, rows = None, []
        if len(columns) >= 3 and all(number(cell) is None for cell in columns):
            header = columns
    return found


def number(cell: str) -> float | None:
    """The number a table cell shows (``4,583,663``, ``100.0% (77/77)``, ``1.37x``, ``7.39``),
    or None for a cell that is not one (``-``, ``nan``, words)."""
    cell = cell.replace("**", "").strip()
    share = re.match(r"^(\d+)\s*(?:/|of)\s*(\d+)$", cell)
    if share is not None:  # "18/22", "10 of 10": a share, drawn as a percentage
        whole = float(share.group(2))
        return 100.0 * float(share.group(1)) / whole if whole else None
    match = _NUMBER.match(cell)
    if match is None:
        return None
    try:
        value = float(match.group(1).replace(",", ""))
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _numeric_columns(table: Table) -> list[int]:
    columns = []
    for index in range(len(table.header)):
        cells = [row[index] for row in table.rows if index < len(row)]
        if cells and sum(number(cell) is not None for cell in cells) * 2 >= len(cells):
            columns.append(index)
    return columns


def _label(table: Table, row: tuple[str, ...], numeric: list[int], names: tuple[str, ...] = ()) -> str:
    if names:
        wanted = [i for i, head in enumerate(table.header) if any(n.lower() in head.lower() for n in names)]
        words = [row[i] for i in wanted if i < len(row)]
    else:
        words = [cell for index, cell in enumerate(row) if index not in numeric and cell and cell != "-"]
    label = " · ".join(words[:3]) or row[0]
    return label if len(label) <= 48 else label[:47] + "…"


def draw(part: str, markdown: str, out_dir: Path = CHARTS) -> Path | None:
    """Draw ``part``'s chart from its section's markdown; the PNG's path, or None when the part
    has no spec or its table has nothing numeric to draw."""
    spec = SPECS.get(part)
    found = tables(markdown)
    if spec is None or spec.table >= len(found):
        return None
    table = found[spec.table]
    numeric = _numeric_columns(table)
    chosen = [i for i in numeric if any(v.lower() in table.header[i].lower() for v in spec.values)]
    chosen = chosen or numeric[:1]  # the named columns, else the first numeric one
    if spec.kind == "lines":
        chosen = numeric
    rows = [row for row in table.rows if not (spec.skip and row[0].startswith(spec.skip))][: spec.max_rows]
    if not chosen or not rows:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{part}.png"
    if spec.kind == "lines":
        chosen = [i for i in chosen if "growth" not in table.header[i].lower()]
        fig, ax = plt.subplots(figsize=(8, 4.2))
        for row in rows:
            ys = [number(row[i]) if i < len(row) else None for i in chosen]
            xs = [table.header[i] for i in chosen]
            points = [(x, y) for x, y in zip(xs, ys, strict=True) if y is not None]
            if points:
                ax.plot(
                    [p[0] for p in points],
                    [p[1] for p in points],
                    marker="o",
                    label=_label(table, row, chosen),
                )
        values = [number(row[i]) or 0.0 for row in rows for i in chosen if i < len(row)]
        _scale(ax, values, spec.log, axis="y")
        ax.legend(fontsize=7, loc="best")
    else:
        fig, axes = plt.subplots(
            1, len(chosen), figsize=(5.5 * len(chosen), 0.38 * len(rows) + 1.6), squeeze=False
        )
        labels = [_label(table, row, numeric, spec.labels) for row in rows]
        for ax, column in zip(axes[0], chosen, strict=True):
            values = [number(row[column]) if column < len(row) else None for row in rows]
            ax.barh(range(len(rows)), [v or 0.0 for v in values], color="#4c72b0")
            ax.set_yticks(range(len(rows)), labels if ax is axes[0][0] else [""] * len(rows), fontsize=7)
            ax.invert_yaxis()
            ax.set_xlabel(table.header[column], fontsize=8)
            _scale(ax, [v for v in values if v], spec.log, axis="x")
    fig.suptitle(spec.title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def _scale(ax: object, values: list[float], ratio: float, *, axis: str) -> None:
    positive = [v for v in values if v > 0]
    if positive and max(positive) / min(positive) > ratio:
        (ax.set_yscale if axis == "y" else ax.set_xscale)("log")  # type: ignore[attr-defined]

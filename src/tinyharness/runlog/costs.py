"""A run's cost as the run log shows it, read from the ``cost`` its ``run_end`` event carries
(the agent reckons it with the price table; this module only formats what was logged).

May import nothing of the package.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def _usd(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def money(value: float | None) -> str:
    """Dollars as a person reads them: 4 places below a dollar, cents above."""
    if value is None:
        return "?"
    return f"${value:,.2f}" if value >= 1 else f"${value:.4f}"


def cost_cell(cost: Mapping[str, Any] | None) -> str:
    """The ``cost`` column of ``tinyharness runs``: dollars, ``$0 local``, ``? unknown`` (the
    model has no known price), or ``-`` (nothing logged: a run still going, or killed)."""
    if not isinstance(cost, Mapping):
        return "-"
    if cost.get("status") == "local":
        return "$0 local"
    usd = _usd(cost.get("usd"))
    return "? unknown" if usd is None else money(usd)


def cost_line(cost: Mapping[str, Any] | None, usage: Mapping[str, Any] | None = None) -> str | None:
    """One line: the total and its split into uncached input, cache writes, cache reads and
    output (with their tokens when ``usage`` is given); None when nothing was logged."""
    if not isinstance(cost, Mapping):
        return None
    usage = usage if isinstance(usage, Mapping) else {}

    def tokens(*names: str) -> str:
        for name in names:
            value = usage.get(name)
            if isinstance(value, int):
                return f" ({value:,})"
        return ""

    status = cost.get("status")
    if status == "local":
        return "cost: $0 (local model, no charge)"
    if status == "unknown" or _usd(cost.get("usd")) is None:
        model = cost.get("priced_as") or "this model"
        return f"cost: price unknown for {model}; tokens only (add it under prices in config.json)"
    read = tokens("cache_read_input_tokens", "cached_tokens")
    written = tokens("cache_creation_input_tokens")
    inputs = usage.get("input_tokens")
    uncached = ""
    if isinstance(inputs, int):
        reads = usage.get("cache_read_input_tokens", usage.get("cached_tokens", 0))
        writes = usage.get("cache_creation_input_tokens", 0)
        if isinstance(reads, int) and isinstance(writes, int):
            uncached = f" ({max(0, inputs - reads - writes):,})"
    return (
        f"cost: {money(_usd(cost.get('usd')))} at {cost.get('priced_as')} prices · "
        f"input {money(_usd(cost.get('uncached_input_usd')))}{uncached} · "
        f"cache writes {money(_usd(cost.get('cache_writes_usd')))}{written or ' (0)'} · "
        f"cache reads {money(_usd(cost.get('cache_reads_usd')))}{read or ' (0)'} · "
        f"output {money(_usd(cost.get('output_usd')))}{tokens('output_tokens')}"
    )

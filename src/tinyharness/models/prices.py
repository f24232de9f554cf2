"""What a run costs in dollars: the price table and the arithmetic.

The table is data (``prices.json`` beside this module): dollars per million tokens for plain
input, cache writes (5-minute and 1-hour lifetimes), cache reads and output, for the current
Anthropic and OpenAI models, with the date it was taken from the providers' price pages. A user
adds or corrects models under ``prices`` in config.json (same fields; see docs/cost.md).

A model id finds its row exactly, else by the longest table key it starts with that ends at a
separator (``claude-sonnet-4-5-20250929`` -> ``claude-sonnet-4-5``; ``gpt-4.1-mini-2025-04-14``
-> ``gpt-4.1-mini``, never ``gpt-4.1``). Local models (``local:...``, a server on this machine,
the scripted model) cost 0 and say so; a model with no row costs ``None`` and says the price is
unknown, never a guessed 0. A model the table does not know on a loopback server (llama.cpp,
Ollama) counts as local.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, Literal
from urllib.parse import urlparse

from ..errors import ConfigError
from .base import Usage

STALE_AFTER_DAYS = 180  # a table older than this is flagged (`tinyharness models`)
PER = 1_000_000  # prices are per million tokens
_SEPARATORS = "-_.:@["
_PROVIDER_PREFIXES = ("anthropic:", "openai:")
Status = Literal["priced", "local", "unknown"]


@dataclass(frozen=True)
class Price:
    """Dollars per million tokens of one model. A cache write at the 5-minute lifetime costs
    ``cache_write_5m``, at one hour ``cache_write_1h``; OpenAI bills writes as plain input."""

    model: str
    input: float
    output: float
    cache_read: float
    cache_write_5m: float
    cache_write_1h: float
    provider: str = ""
    note: str = ""

    @classmethod
    def from_mapping(cls, model: str, data: Any, where: str) -> Price:
        """A row of the table or of config.json's ``prices``; ConfigError naming ``where``."""
        if not isinstance(data, Mapping):
            raise ConfigError(f"{where}: the price of {model!r} must be an object with input and output")

        def rate(name: str, default: float | None = None) -> float:
            value = data.get(name, default)
            if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
                raise ConfigError(
                    f"{where}: {model}.{name} must be a number of dollars per million tokens (0 or more)"
                )
            return float(value)

        plain = rate("input")
        write_5m = rate("cache_write_5m", plain)
        return cls(
            model,
            plain,
            rate("output"),
            rate("cache_read", plain),
            write_5m,
            rate("cache_write_1h", write_5m),
            str(data.get("provider", "")),
            str(data.get("note", "")),
        )


@dataclass(frozen=True)
class Cost:
    """Dollars of some usage, split by what the provider bills apart. ``status`` says whether
    the model was priced, is local (free) or has no known price (then every amount is None)."""

    status: Status
    model: str
    usage: Usage = field(default_factory=Usage)
    priced_as: str | None = None
    uncached_input: float | None = None
    cache_writes: float | None = None
    cache_reads: float | None = None
    output: float | None = None

    def __add__(self, other: Cost) -> Cost:
        """Two spans of spending (a chat's turns, perhaps on different models): unknown if
        either is, else priced if either is, else local."""
        statuses = {self.status, other.status}
        status: Status = "unknown" if "unknown" in statuses else "priced" if "priced" in statuses else "local"
        model = self.model if self.model == other.model else f"{self.model} + {other.model}"
        priced_as = self.priced_as if self.priced_as == other.priced_as else None

        def plus(a: float | None, b: float | None) -> float | None:
            return None if status == "unknown" else (a or 0.0) + (b or 0.0)

        return Cost(
            status,
            model,
            self.usage + other.usage,
            priced_as or self.priced_as or other.priced_as,
            plus(self.uncached_input, other.uncached_input),
            plus(self.cache_writes, other.cache_writes),
            plus(self.cache_reads, other.cache_reads),
            plus(self.output, other.output),
        )

    @property
    def usd(self) -> float | None:
        if self.status == "unknown":
            return None
        parts = (self.uncached_input, self.cache_writes, self.cache_reads, self.output)
        return sum(p or 0.0 for p in parts)

    def to_event(self) -> dict[str, Any]:
        """The ``cost`` of a ``run_end`` event."""
        out: dict[str, Any] = {"usd": _round(self.usd), "status": self.status}
        if self.priced_as:
            out["priced_as"] = self.priced_as
        if self.status != "unknown":
            out.update(
                uncached_input_usd=_round(self.uncached_input),
                cache_writes_usd=_round(self.cache_writes),
                cache_reads_usd=_round(self.cache_reads),
                output_usd=_round(self.output),
            )
        return out

    def short(self) -> str:
        """The status line's few characters: ``$0.0123``, ``$0 local``, ``price unknown``."""
        if self.status == "local":
            return "$0 local"
        return "price unknown" if self.status == "unknown" else money(self.usd)

    def describe(self) -> str:
        """One line for a person: dollars and their split, or why there are none."""
        usage = self.usage
        if self.status == "local":
            return f"$0 (local model, no charge) · {usage.total:,} tokens"
        if self.status == "unknown":
            return (
                f"price unknown for {self.model} · {usage.input_tokens:,} in "
                f"({usage.cached_tokens:,} cache reads, {usage.cache_write_tokens:,} cache writes) · "
                f"{usage.output_tokens:,} out (add it under prices in config.json)"
            )
        return (
            f"{money(self.usd)} · input {money(self.uncached_input)} ({usage.uncached_input_tokens:,}) · "
            f"cache writes {money(self.cache_writes)} ({usage.cache_write_tokens:,}) · "
            f"cache reads {money(self.cache_reads)} ({usage.cached_tokens:,}) · "
            f"output {money(self.output)} ({usage.output_tokens:,})"
        )


def money(value: float | None) -> str:
    """Dollars as a person reads them: cents to 4 places below a dollar, 2 above."""
    if value is None:
        return "?"
    return f"${value:,.2f}" if value >= 1 else f"${value:.4f}"


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 8)


@dataclass(frozen=True)
class PriceTable:
    """Prices by model, the date they were taken (``as_of``) and where from."""

    prices: Mapping[str, Price]
    as_of: dt.date
    sources: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def builtin(cls) -> PriceTable:
        """The table shipped with tinyharness."""
        text = resources.files(__package__).joinpath("prices.json").read_text(encoding="utf-8")
        return cls.from_json(json.loads(text), "prices.json")

    @classmethod
    def from_json(cls, data: Mapping[str, Any], where: str) -> PriceTable:
        try:
            as_of = dt.date.fromisoformat(str(data["as_of"]))
        except (KeyError, ValueError):
            raise ConfigError(f"{where}: as_of must be a date (YYYY-MM-DD)") from None
        models = data.get("models", {})
        if not isinstance(models, Mapping):
            raise ConfigError(f"{where}: models must be an object")
        prices = {name: Price.from_mapping(name, row, where) for name, row in models.items()}
        return cls(prices, as_of, dict(data.get("sources", {})))

    def with_overrides(self, extra: Mapping[str, Any] | None) -> PriceTable:
        """This table with config.json's ``prices`` added (a model named in both takes the
        user's price)."""
        if not extra:
            return self
        if not isinstance(extra, Mapping):
            raise ConfigError("config: prices must map a model id to its prices per million tokens")
        added = {name: Price.from_mapping(name, row, "config prices") for name, row in extra.items()}
        return PriceTable({**self.prices, **added}, self.as_of, self.sources)

    def lookup(self, model: str) -> Price | None:
        """The price of ``model`` (an id, with or without ``anthropic:``/``openai:``), or None."""
        name = model.strip()
        for prefix in _PROVIDER_PREFIXES:
            if name.startswith(prefix):
                name = name[len(prefix) :]
        if name in self.prices:
            return self.prices[name]
        matches = [
            key
            for key in self.prices
            if name.startswith(key) and name[len(key) : len(key) + 1] in _SEPARATORS
        ]
        return self.prices[max(matches, key=len)] if matches else None

    def age_days(self, today: dt.date | None = None) -> int:
        return ((today or dt.date.today()) - self.as_of).days

    def stale(self, today: dt.date | None = None) -> bool:
        """Older than :data:`STALE_AFTER_DAYS`: providers change prices, check them."""
        return self.age_days(today) > STALE_AFTER_DAYS

    def cost(self, model: str, usage: Usage, *, local: bool = False) -> Cost:
        """What ``usage`` of ``model`` costs."""
        if local or is_local_name(model):
            zero = 0.0
            return Cost("local", model, usage, None, zero, zero, zero, zero)
        price = self.lookup(model)
        if price is None:
            return Cost("unknown", model, usage)
        return cost_at(price, usage, model)


def cost_at(price: Price, usage: Usage, model: str | None = None) -> Cost:
    """``usage`` at ``price``: plain input, writes by lifetime, reads, output."""
    writes_1h = min(usage.cache_write_1h_tokens, usage.cache_write_tokens)
    writes_5m = usage.cache_write_tokens - writes_1h
    return Cost(
        "priced",
        model or price.model,
        usage,
        price.model,
        usage.uncached_input_tokens * price.input / PER,
        (writes_5m * price.cache_write_5m + writes_1h * price.cache_write_1h) / PER,
        usage.cached_tokens * price.cache_read / PER,
        usage.output_tokens * price.output / PER,
    )


def is_local_name(model: str) -> bool:
    """A model name that runs on this machine: ``local``, ``local:...``, ``scripted...``."""
    return model == "local" or model.startswith(("local:", "scripted"))


def is_local_url(base_url: str | None) -> bool:
    """A server on this machine (loopback): no one bills it."""
    if not base_url:
        return False
    host = urlparse(base_url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def model_cost(table: PriceTable, model: Any, usage: Usage) -> Cost:
    """What ``usage`` of a Model object costs: by its ``model`` id (or ``name``) in ``table``;
    free when it runs here (a ``local:`` model, or a model the table does not know on a loopback
    ``base_url``, such as llama.cpp or Ollama; a known id through a local proxy is still billed)."""
    name = str(getattr(model, "name", "") or "")
    wire_id = str(getattr(model, "model", "") or name)
    if is_local_name(name):
        return table.cost(name, usage, local=True)
    known = table.lookup(wire_id) is not None
    return table.cost(wire_id, usage, local=not known and is_local_url(getattr(model, "base_url", None)))

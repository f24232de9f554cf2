"""Which typed row an event adds: one table of columns per event type, instead of one
hand-written INSERT per type. Pure: no database here.

Every string value has passed through the redactor: the typed columns are cut from the
redacted body, and a value that was not a string there is redacted once it becomes one here.

May import ``redact``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from ..redact import redact

Stored = dict[str, Any]  # a redacted event, as read back from its JSON body
Column = Callable[[Stored], Any]


def as_int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def as_num(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def as_text(value: Any) -> str | None:
    """A value of a redacted event as text: a string is returned as it is (it was redacted with
    the body, and ``redact`` is idempotent: a second pass, about 100 µs a string, changes
    nothing); any other value is redacted once it is text."""
    if value is None or isinstance(value, str):
        return value
    return redact(str(value))


def _int(key: str) -> Column:
    return lambda e: as_int(e.get(key))


def _num(key: str) -> Column:
    return lambda e: as_num(e.get(key))


def _text(key: str) -> Column:
    return lambda e: as_text(e.get(key))


def _json(key: str) -> Column:
    return lambda e: json.dumps(e[key], ensure_ascii=False) if key in e else None


def _usage(e: Stored) -> dict[str, Any]:
    usage = e.get("usage")
    return usage if isinstance(usage, dict) else {}


def fields_json(e: Stored) -> str:
    """The event's own fields (not type, seq, ts, run_id) as JSON."""
    return json.dumps(
        {k: v for k, v in e.items() if k not in ("type", "seq", "ts", "run_id")}, ensure_ascii=False
    )


_STAMP: dict[str, Column] = {"seq": _int("seq"), "ts": _num("ts")}

# event type -> (table, columns after run_id). ``after_call`` of a compaction is filled by the
# writer (it depends on the calls before it, not on the event).
TYPED_ROWS: dict[str, tuple[str, dict[str, Column]]] = {
    "model_call": (
        "model_calls",
        {
            **_STAMP,
            "call": _int("call"),
            "purpose": _text("purpose"),
            "stop_reason": _text("stop_reason"),
            "input_tokens": lambda e: as_int(_usage(e).get("input_tokens")),
            "output_tokens": lambda e: as_int(_usage(e).get("output_tokens")),
            "cache_read_tokens": lambda e: as_int(
                _usage(e).get("cache_read_input_tokens", _usage(e).get("cached_tokens"))
            ),
            "cache_write_tokens": lambda e: as_int(_usage(e).get("cache_creation_input_tokens")),
            "usage": lambda e: json.dumps(_usage(e)) if _usage(e) else None,
            "tokens": _int("tokens"),
            "messages": _int("messages"),
            "duration": _num("duration"),
            "prefix_share": _num("prefix_share"),
            "request": _json("request"),
            "response": _json("response"),
        },
    ),
    "tool_call": (
        "tool_calls",
        {
            **_STAMP,
            "call_id": _text("call_id"),
            "name": _text("name"),
            "args": lambda e: json.dumps(e.get("args"), ensure_ascii=False),
        },
    ),
    "compaction": (
        "compactions",
        {
            **_STAMP,
            "n": _int("n"),
            "strategy": _text("strategy"),
            "tokens_before": _int("tokens_before"),
            "tokens_after": _int("tokens_after"),
            "messages_before": _int("messages_before"),
            "messages_after": _int("messages_after"),
        },
    ),
    "memory_write": (
        "memory_ops",
        {**_STAMP, "kind": lambda e: "write", "op": _text("op"), "body": fields_json},
    ),
    "memory_recall": (
        "memory_ops",
        {**_STAMP, "kind": lambda e: "recall", "op": _text("op"), "body": fields_json},
    ),
    "notes_write": ("notes_ops", {**_STAMP, "op": _text("op"), "chars": _int("chars"), "body": fields_json}),
    "error": (
        "errors",
        {**_STAMP, "stop": _text("stop"), "kind": _text("kind"), "message": _text("message")},
    ),
}


def typed_row(run_id: str, e: Stored) -> tuple[str, dict[str, Any]] | None:
    """The table and column values the event adds, or None for types with no typed row."""
    spec = TYPED_ROWS.get(str(e.get("type", "")))
    if spec is None:
        return None
    table, columns = spec
    return table, {"run_id": run_id, **{name: column(e) for name, column in columns.items()}}


def run_start_fields(e: Stored) -> str:
    """What a run_start says beyond the columns of ``runs``."""
    skip = {"type", "seq", "ts", "run_id", "task", "model", "session"}
    return json.dumps({k: v for k, v in e.items() if k not in skip}, ensure_ascii=False)


def tool_result_values(e: Stored) -> tuple[Any, ...]:
    """ok, chars, truncated, result_seq, result_ts of a tool_result."""
    return (
        int(bool(e.get("ok"))),
        as_int(e.get("chars")),
        int(bool(e.get("truncated"))),
        as_int(e.get("seq")),
        as_num(e.get("ts")),
    )

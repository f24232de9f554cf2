"""Reading the model's answers to the memory manager's requests: extracted facts and
consolidation decisions, tolerant of fences, prose, lists and bare strings."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .jsonloose import parse_json_loose


@dataclass(frozen=True, slots=True)
class Fact:
    """One extracted fact: its text, kind, subject (who or what it is about) and the time it
    happened as the model wrote it (ISO or free text; "" when it gave none)."""

    text: str
    kind: str = "fact"
    subject: str = ""
    time: str = ""


def parse_facts(text: str) -> list[Fact]:
    """Facts from the extraction answer; tolerant of fences, prose, lists and bare strings."""
    data = parse_json_loose(text)
    if data is None:
        stripped = text.strip()
        if not stripped or stripped.lower().strip(".。") in ("none", "nothing", "无", "没有", "null", "[]"):
            return []
        bullets = [
            line.strip()[2:].strip()
            for line in stripped.splitlines()
            if line.strip().startswith(("- ", "* "))
        ]
        return [Fact(b) for b in bullets if b]
    if isinstance(data, dict):
        data = data.get("facts", data.get("memories", []))
    if not isinstance(data, list):
        return []
    facts: list[Fact] = []
    for entry in data:
        if isinstance(entry, str) and entry.strip():
            facts.append(Fact(entry.strip()))
        elif isinstance(entry, dict):
            body = entry.get("text") or entry.get("fact") or entry.get("content")
            if isinstance(body, str) and body.strip():
                facts.append(
                    Fact(
                        body.strip(),
                        str(entry.get("kind", "fact")),
                        _string(entry.get("subject")),
                        _string(entry.get("time") or entry.get("date")),
                    )
                )
    return facts


def parse_operations(text: str) -> list[dict[str, Any]] | None:
    """The consolidation decisions, or None when the answer cannot be read."""
    data = parse_json_loose(text)
    if isinstance(data, dict):
        data = data.get("operations", data.get("memory"))
    if not isinstance(data, list):
        return None
    ops = []
    for entry in data:
        if isinstance(entry, dict):
            op = str(entry.get("op", entry.get("event", ""))).lower()
            ops.append({**entry, "op": op})
    return ops


def _string(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""

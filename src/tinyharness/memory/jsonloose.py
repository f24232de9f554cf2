"""Reading JSON from a model that was asked for JSON and may not have sent only JSON:
code fences, prose around the object, trailing commas, single quotes in small models' output."""

from __future__ import annotations

import json
import re
from typing import Any

_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)
_TRAILING_COMMA = re.compile(r",\s*([}\]])")


def _attempts(text: str) -> list[str]:
    candidates = [text]
    candidates += [m.group(1) for m in _FENCE.finditer(text)]
    for opener, closer in (("{", "}"), ("[", "]")):
        start, end = text.find(opener), text.rfind(closer)
        if start != -1 and end > start:
            candidates.append(text[start : end + 1])
    return candidates


def parse_json_loose(text: str) -> Any | None:
    """The first reading of ``text`` that decodes as JSON, or None."""
    for candidate in _attempts(text.strip()):
        for variant in (candidate, _TRAILING_COMMA.sub(r"\1", candidate)):
            try:
                return json.loads(variant)
            except (json.JSONDecodeError, ValueError):
                continue
    return None

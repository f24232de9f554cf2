"""The event stream: one JSON object per event, with ``type``, ``seq``, ``ts`` and ``run_id``.

An ``EventBus`` stamps events and hands them to sinks. Sinks implement ``EventSink``: the JSON
Lines file of ``--events``, the progress line of the CLI, the run log, a test's list.
"""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from typing import IO, Any, Protocol

Event = dict[str, Any]


class EventSink(Protocol):
    def emit(self, event: Event) -> None: ...


class EventBus:
    def __init__(self, sinks: list[EventSink] | None = None, run_id: str | None = None) -> None:
        self.sinks: list[EventSink] = list(sinks or [])
        self.run_id = run_id or uuid.uuid4().hex[:12]
        self._seq = 0

    def emit(self, type: str, **fields: Any) -> Event:
        self._seq += 1
        event: Event = {"type": type, "seq": self._seq, "ts": time.time(), "run_id": self.run_id}
        event.update(fields)
        for sink in self.sinks:
            sink.emit(event)
        return event


class ListSink:
    """Keeps every event in memory (tests, reports)."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def emit(self, event: Event) -> None:
        self.events.append(event)

    def of_type(self, type: str) -> list[Event]:
        return [e for e in self.events if e["type"] == type]


class JsonlSink:
    """Appends each event as one line of JSON and flushes, so a killed run keeps its events."""

    def __init__(self, path: str | Path) -> None:
        self._file: IO[str] = open(path, "a", encoding="utf-8")  # noqa: SIM115 - closed in close()

    def emit(self, event: Event) -> None:
        self._file.write(json.dumps(event, ensure_ascii=False, default=str) + "\n")
        self._file.flush()

    def close(self) -> None:
        self._file.close()

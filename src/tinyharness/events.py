"""The event stream: one JSON object per event, with ``type``, ``seq``, ``ts`` and ``run_id``.

An ``EventBus`` stamps events and hands them to sinks. Sinks implement ``EventSink``: the JSON
Lines file of ``--events``, the progress line of the CLI, the run log, a test's list.

Sinks that persist events (``JsonlSink`` here, the run log) write ``redacted_json(event)``: every
string passes through ``tinyharness.redact`` first, so no secret reaches a log file in clear.

May import: ``redact``, ``errors``, ``safefs``. Nothing else of the package.
"""

from __future__ import annotations

import contextlib
import contextvars
import io
import json
import re
import time
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO, Any, Protocol

from .errors import ConfigError
from .redact import redact
from .safefs import open_append

Event = dict[str, Any]


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


# Short strings come back in every event (keys, event types, tool names, stop reasons): their
# redaction is remembered, since ``redact`` is a pure function of its text. Measured: the
# redactor was most of a CLI turn's cost (about 50 strings per turn, nearly all repeats).
_CACHED_CHARS = 200
_CACHE_SIZE = 4096
_cleaned: dict[str, str] = {}


def _clean(text: str) -> str:
    """Redacted, and storable: a lone surrogate (legal in JSON, sent by some models) cannot be
    encoded as UTF-8 and would make a file or database write fail, so it becomes U+FFFD."""
    if len(text) > _CACHED_CHARS:
        return redact(_LONE_SURROGATE.sub("\ufffd", text))
    hit = _cleaned.get(text)
    if hit is None:
        hit = redact(_LONE_SURROGATE.sub("\ufffd", text))
        if len(_cleaned) >= _CACHE_SIZE:
            _cleaned.clear()  # simple bound; the repeats fill it again within a turn or two
        _cleaned[text] = hit
    return hit


def redact_value(value: Any) -> Any:
    """A JSON-shaped value with every string (keys included) passed through the redactor."""
    if isinstance(value, str):
        return _clean(value)
    if isinstance(value, dict):
        return {_clean(str(k)): redact_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [redact_value(v) for v in value]
    return value


def redacted_json(value: Any) -> str:
    """``value`` as one line of JSON with secrets redacted; what persisting sinks write."""
    return redacted_event(value)[0]


def redacted_event(value: Any) -> tuple[str, Any]:
    """``redacted_json(value)`` and the redacted value it encodes (what ``json.loads`` of it
    gives back: JSON types only), for a sink that stores both without parsing its own output."""
    plain = _redacted_plain(value, 0)
    if plain is _NOT_PLAIN:
        plain = _redacted_by_round_trip(value)
    return _STRICT.encode(plain), plain


def _redacted_by_round_trip(value: Any) -> Any:
    """Any value made JSON (``default=str``, tuples as lists, keys as JSON writes them), then
    redacted."""
    return redact_value(json.loads(_LOOSE.encode(value)))


_NOT_PLAIN = object()
_SCALARS = (int, float, bool, type(None))


def _redacted_plain(value: Any, depth: int) -> Any:
    """What ``_redacted_by_round_trip`` gives, without the round trip through JSON text, for a
    value made only of str, int, float, bool, None, lists, tuples and dicts with str keys (the
    exact types, not subclasses: an enum member encodes as its value), as events are; else
    _NOT_PLAIN. Why: the round trip was about half of what an event cost the run log."""
    kind = type(value)
    if kind is str:
        return _clean(value)
    if kind in _SCALARS:
        return value
    if depth > 64:
        return _NOT_PLAIN  # the round trip then says what is wrong (a cycle, say)
    if kind is dict:
        out = {}
        for key, item in value.items():
            if type(key) is not str:
                return _NOT_PLAIN
            plain = _redacted_plain(item, depth + 1)
            if plain is _NOT_PLAIN:
                return _NOT_PLAIN
            out[_clean(key)] = plain
        return out
    if kind is list or kind is tuple:
        items = []
        for item in value:
            plain = _redacted_plain(item, depth + 1)
            if plain is _NOT_PLAIN:
                return _NOT_PLAIN
            items.append(plain)
        return items
    return _NOT_PLAIN


# The two encodings above, built once (``json.dumps`` with options builds an encoder per call).
_LOOSE = json.JSONEncoder(ensure_ascii=False, default=str)
_STRICT = json.JSONEncoder(ensure_ascii=False)


def compaction_tokens(event: Mapping[str, Any]) -> tuple[Any, Any]:
    """The before and after counts a person is shown for a ``compaction`` event: the window's
    estimate on both sides when the event has it (the same counter, the same calibration, so an
    after that grew can only mean a compaction that grew the window), else the counter's
    ``tokens_before``/``tokens_after``. The counter itself may read the provider's reported usage
    before and an estimate after, two scales whose difference once showed "tokens 1345 -> 7566"."""
    before, after = event.get("window_before"), event.get("window_after")
    if isinstance(before, int) and isinstance(after, int):
        return before, after
    return event.get("tokens_before"), event.get("tokens_after")


class EventFileError(ConfigError):
    """The event stream's file cannot be written (a full disk, a file system gone read-only)."""


class EventSink(Protocol):
    def emit(self, event: Event) -> None: ...


Captured = list[tuple[str, dict[str, Any]]]


class EventBus:
    """Stamps a run's events. A sub-agent's bus also stamps every event with the run that
    started it (``parent_run_id``) and its ``depth`` (1 for a child of the top-level run); a
    top-level run's events carry neither."""

    def __init__(
        self,
        sinks: list[EventSink] | None = None,
        run_id: str | None = None,
        *,
        parent_run_id: str | None = None,
        depth: int = 0,
        after_seq: int = 0,
    ) -> None:
        """``after_seq``: the numbering goes on after it (more events of a run already logged)."""
        self.sinks: list[EventSink] = list(sinks or [])
        self.run_id = run_id or uuid.uuid4().hex[:12]
        self.parent_run_id = parent_run_id
        self.depth = depth
        self._seq = after_seq
        self._held: contextvars.ContextVar[Captured | None] = contextvars.ContextVar("held", default=None)

    @contextlib.contextmanager
    def hold(self) -> Iterator[Captured]:
        """Events emitted inside (by this task, and the tasks and threads it starts) go to the
        list instead of the sinks, unnumbered; the caller emits them later. A durable step
        does this, so its events are emitted in the same places whether the step runs or is
        answered from its record."""
        held: Captured = []
        token = self._held.set(held)
        try:
            yield held
        finally:
            self._held.reset(token)

    def child(self) -> EventBus:
        """A bus for a sub-agent of this run: a new run id, the same sinks."""
        return EventBus(self.sinks, parent_run_id=self.run_id, depth=self.depth + 1)

    def emit(self, type: str, **fields: Any) -> Event:
        held = self._held.get()
        if held is not None:
            held.append((type, dict(fields)))
            return {"type": type, "run_id": self.run_id, **fields}
        self._seq += 1
        event: Event = {"type": type, "seq": self._seq, "ts": time.time(), "run_id": self.run_id}
        if self.parent_run_id is not None:
            event["parent_run_id"] = self.parent_run_id
            event["depth"] = self.depth
        event.update(fields)
        for sink in self.sinks:
            sink.emit(event)
        return event

    def flush(self) -> None:
        """Ask every sink that keeps events back (the run log commits some of a turn's events
        together) to write them now. The loop calls it before it waits on anything outside the
        process: a model request, a hook."""
        for sink in self.sinks:
            flush = getattr(sink, "flush", None)
            if callable(flush):
                flush()


class ListSink:
    """Keeps every event in memory (tests, reports)."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def emit(self, event: Event) -> None:
        self.events.append(event)

    def of_type(self, type: str) -> list[Event]:
        return [e for e in self.events if e["type"] == type]


class JsonlSink:
    """Appends each event as one line of JSON and flushes, so a killed run keeps its events.
    Secrets are redacted (``redacted_json``): the file is a log, and logs keep no secrets.
    ``path`` may be an open stream (stdout for ``--output-format stream-json``), which the sink
    writes to but leaves open."""

    def __init__(self, path: str | Path | IO[str]) -> None:
        self._owned = isinstance(path, str | Path)
        # A file the user named (--events FILE): a link in its final place is not followed out;
        # or a stream already open (stdout, for --output-format stream-json), left open.
        self._file: IO[str] = (
            io.TextIOWrapper(open_append(path), encoding="utf-8") if isinstance(path, str | Path) else path
        )

    def emit(self, event: Event) -> None:
        try:
            self._file.write(redacted_json(event) + "\n")
            self._file.flush()
        except OSError as exc:
            raise EventFileError(
                f"cannot write the event stream to {self._file.name}: {exc.strerror or exc}"
            ) from None

    def close(self) -> None:
        if not self._owned:
            return
        with contextlib.suppress(OSError):  # a failed write already said why
            self._file.close()

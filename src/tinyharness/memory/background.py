"""Work that runs beside the searches: building an index in a thread while the exact way answers.

A ``Build`` runs one function in a daemon thread and keeps its result (or the error it raised)
for the thread that started it to pick up when it is done, without waiting. The function must
not touch what the searching thread uses: it gets its own database connection and copies.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class Build(Generic[T]):
    """``work()`` in a daemon thread; ``done``, ``wait``, then ``result`` (None if it raised:
    ``error`` says what)."""

    def __init__(self, work: Callable[[], T], name: str) -> None:
        self._work = work
        self._result: T | None = None
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._result = self._work()
        except Exception as exc:  # kept for the starting thread: a failed build means the exact way
            self.error = exc

    def done(self) -> bool:
        return not self._thread.is_alive()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for the build; whether it is done."""
        self._thread.join(timeout)
        return self.done()

    def result(self) -> T | None:
        return self._result if self.done() else None

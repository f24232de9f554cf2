"""The notes flush: before a compaction, the model must call the note tool.

A compaction summarizes or clears older messages; NOTES.md is what survives it whole (it is read
back after a lossy step). Capable models take notes when warned that results will be cleared,
but small ones do not: measured with SmolLM2-135M, asked in the task and warned near the
trigger, it never called ``note`` on its own. So, right before compacting, the manager sends
the history with a request to save notes and ``tool_choice`` set to the note tool (in JSON tool
mode the grammar then admits only that call), and runs the note calls like any tool call. This
is the memory flush some agent runtimes run before compaction, made binding for models that
would skip it. Like a summarizer request, it stays out of the history: the notes come back
through NOTES.md.

There is one request per file read in the window and not noted yet (by an earlier flush or in
NOTES.md), each showing the task and only that file's reads, with the note's ``path`` fixed to
that file; no cap, so no file read is left un-noted. When files were read but all are noted,
there is no request; the general request (no path) is only for a window without file reads.
Measured with SmolLM2-135M on this project's files:
- asked about four files at once, it wrote one path and nothing else; asked about one file
  with the path fixed, a line about that file;
- with each flush note left in the history, it copied their words into the next ones, and
  after the compaction it called ``note`` with the same words until the repetition guard
  stopped the run.
And with Qwen2.5-Coder-0.5B over 38 files at window 4096: with every file of the window in the
request, most wrong notes described a neighbouring file (its docstring); asked again when every
file was noted, it copied this module's prompt into NOTES.md (8 junk lines in one run); at
8192, a cap of 8 files per flush left 2 files never noted.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

from ..errors import ModelError, StopRun
from ..events import EventBus
from ..history import file_reads
from ..messages import Message, TextBlock, ToolResultBlock, ToolUseBlock
from ..models.base import ModelRequest, ToolSpec
from .base import ModelCaller
from .rewrite import task_blocks
from .strategies import OFFLOADED_MARK

# Runs one tool call the way the loop does (events, permissions, result cap), e.g.
# ``functools.partial(ToolRegistry.run_call, events=bus)`` bound to the agent's registry.
RunCall = Callable[[ToolUseBlock], Awaitable[ToolResultBlock]]

NOTE_TOOL = "note"
FLUSH_PROMPT = (
    "[context: the window is nearly full, so older messages will be summarized or removed now. "
    f"Call the {NOTE_TOOL} tool to save what you still need from them: findings and decisions, "
    "and what is left to do.]"
)
FILE_PROMPT = "Write a note with one line about what {path} does."
FILE_NOTE_TOKENS = 256  # one line; a small model that loops stops here, not at the agent's limit
FileReads = list[tuple[ToolUseBlock, ToolResultBlock]]
ECHO_SHARE = 0.5  # a general note sharing this much of its words with FLUSH_PROMPT is an echo


class FlushJournal(Protocol):
    """Where a flush records each ask (a file's path, "" for the general ask) as started before
    its model request and finished after its note calls, so that a run killed during a flush
    and resumed neither repeats an ask whose notes may already be written nor skips the rest:
    an ask that started and never finished has an unknown outcome and is not asked again (as a
    tool call cut off by a kill is not run again). The session implements it; the records last
    until the compaction after the flush is committed."""

    def flush_progress(self) -> Mapping[str, bool]: ...  # ask -> finished

    def flush_started(self, ask: str) -> None: ...

    def flush_finished(self, ask: str) -> None: ...


@dataclass
class NotesFlush:
    """Runs the flush for a ``ContextManager``. The manager passes the tools of the agent's last
    request (offered again, so the prompt prefix stays the same; the flush runs only when the
    note tool is among them); ``run_call`` runs the note calls the reply makes; ``notes_text``
    (optional) gives NOTES.md, whose named files need no note."""

    run_call: RunCall
    events: EventBus
    noted: set[str] = field(default_factory=set)  # files an earlier flush asked about
    notes_text: Callable[[], str] | None = None
    journal: FlushJournal | None = None

    @property
    def cut_off(self) -> bool:
        """A flush of a killed run is on record and its compaction was not committed: the
        resumed run finishes that flush first."""
        return self.journal is not None and bool(self.journal.flush_progress())

    @staticmethod
    def available(tools: Sequence[ToolSpec]) -> bool:
        return any(tool.name == NOTE_TOOL for tool in tools)

    async def __call__(
        self,
        system: str,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        call_model: ModelCaller,
        max_tokens: int,
    ) -> int:
        """Ask for the notes and write them; the number of notes written. A reply with no
        complete note skips its file; a failed request ends the flush. Both are reported,
        never raised."""
        # Every tool, as in the agent's requests, so the cached prefix stays the same.
        base = ModelRequest(
            tuple(messages), system, tuple(tools), "flush", max_tokens=max_tokens, tool_choice=NOTE_TOOL
        )
        written = 0
        reads = _reads_by_file(messages)
        if reads:
            asks: list[str | None] = [p for p in reads if not self._already_noted(p)]
        else:
            asks = [None]
        on_record = dict(self.journal.flush_progress()) if self.journal is not None else {}
        for path in asks:
            key = path or ""
            if key in on_record:  # asked by the run a kill cut off: never asked twice
                if not on_record[key]:
                    self._skipped(
                        f"the note{f' on {path}' if path else ''} was cut off by a crash; its outcome "
                        "is unknown, so it is not asked again (check NOTES.md)"
                    )
                if path:
                    self.noted.add(path)
                continue
            shown = _only_file(messages, reads[path]) if path else list(messages)
            if self.journal is not None:
                self.journal.flush_started(key)
            try:
                calls = await self._ask(replace(base, messages=tuple(shown)), call_model, path)
            except (ModelError, StopRun) as exc:
                self._skipped(f"the request failed ({exc})")
                break
            # An echo of the task or of the ask is no note: the 0.5B model wrote the task
            # ("Read README.md and tell me...") as README.md's note, and a file the notes name
            # is no longer offered to read_file.
            echoed = (_task_text(messages), prompt_for(path))
            calls = [c for c in calls if not any(_echoes(c, text, path) for text in echoed)]
            if not calls:
                self._skipped(f"the model wrote no complete note{f' on {path}' if path else ''}")
            for call in calls:
                result = await self.run_call(call)
                written += not result.is_error
            if self.journal is not None:
                self.journal.flush_finished(key)
            if path:
                self.noted.add(path)
        return written

    def _already_noted(self, path: str) -> bool:
        if path in self.noted:
            return True
        notes = self.notes_text() if self.notes_text is not None else ""
        return any(line.startswith(f"{path}:") for line in notes.splitlines())

    async def _ask(self, base: ModelRequest, call_model: ModelCaller, path: str | None) -> list[ToolUseBlock]:
        """One flush request: ``base`` with the ask about ``path`` (or a general one) added to
        its last message; the reply's complete note calls."""
        prompt = prompt_for(path)
        *earlier, last = base.messages
        request = replace(
            base,
            messages=(*earlier, Message("user", (*last.content, TextBlock(prompt)))),
            tools=tuple(self._about(spec, path) for spec in base.tools),
            max_tokens=min(base.max_tokens, FILE_NOTE_TOKENS) if path else base.max_tokens,
        )
        response = await call_model(request)
        if response.stop_reason == "max_tokens":
            return []
        return [c for c in response.message.tool_uses if c.name == NOTE_TOOL]  # others are not run

    @staticmethod
    def _about(spec: ToolSpec, path: str | None) -> ToolSpec:
        """The note tool with its ``path`` fixed to ``path`` (a grammar-only narrowing: the
        tool's description and schema, and so the prompt, stay the same)."""
        if path is None or spec.name != NOTE_TOOL:
            return spec
        return replace(spec, choices=lambda _messages: {"path": [path]})

    def _skipped(self, why: str) -> None:
        self.events.emit("context_warning", message=f"notes flush before compaction skipped: {why}")


def _reads_by_file(messages: Sequence[Message]) -> dict[str, FileReads]:
    """The read_file calls whose text is still in the window (not cleared or offloaded), by
    path, in the order the files were first read."""
    reads: dict[str, FileReads] = {}
    for path, call, result in file_reads(messages):
        if result.content.startswith("[") or OFFLOADED_MARK in result.content:
            continue  # a placeholder: there is nothing left to note from
        reads.setdefault(path, []).append((call, result))
    return reads


def _only_file(messages: Sequence[Message], reads: FileReads) -> list[Message]:
    """The task and one file's reads, nothing else: with other files in view, the 0.5B model
    described a neighbour (see the module docstring). The head's own blocks only, so notes
    read back into it cannot be copied either."""
    out = [Message("user", task_blocks(messages[0]))]
    for call, result in reads:
        out += [Message("assistant", (call,)), Message("user", (result,))]
    return out


def prompt_for(path: str | None) -> str:
    """The ask of a flush request: about one file, or the general one."""
    return FILE_PROMPT.format(path=path) if path else FLUSH_PROMPT


def _task_text(messages: Sequence[Message]) -> str:
    if not messages:
        return ""
    return " ".join(b.text for b in task_blocks(messages[0]) if isinstance(b, TextBlock))


def _echoes(call: ToolUseBlock, source: str, path: str | None) -> bool:
    """Whether the note's text is mostly words of ``source`` (ECHO_SHARE of its words of
    three letters or more; the file's own name does not count, a note may name its file)."""
    text = call.input.get("text") if isinstance(call.input, dict) else None
    if not isinstance(text, str) or not source:
        return False
    own = _words(path or "")
    words = _words(text) - own
    return bool(words) and len(words & (_words(source) - own)) >= ECHO_SHARE * len(words)


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z]+", text.lower()) if len(w) > 2}

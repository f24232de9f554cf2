"""The chat loop: read a prompt, run a turn (or a slash command), show it, repeat.

Each turn is ``Agent.run_stream`` on the conversation so far. Ctrl-C during a turn cancels it
(the model request with it) and closes whatever the turn left open: tool calls without a result
get an "interrupted" result, so the next request is valid and a resumed session never runs them
again; a second Ctrl-C leaves the chat. The conversation is checkpointed to the run log after
every step, as ``--session`` runs are, so ``/resume`` (or ``tinyharness chat --session NAME``)
continues it.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import time
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

from prompt_toolkit import PromptSession
from prompt_toolkit.history import FileHistory, InMemoryHistory
from prompt_toolkit.key_binding import KeyBindings
from rich.console import Console
from rich.markdown import Markdown
from rich.table import Table
from rich.text import Text

from ..agent import Agent, RunResult
from ..context.manager import ContextManager
from ..errors import HarnessError, ModelError, StopRun
from ..messages import Message, ToolResultBlock
from ..models.base import Usage
from ..models.prices import Cost, PriceTable, model_cost, money
from ..safefs import make_folder
from ..session import Session, close_orphans
from ..terminal import shown
from ..tools.plan import plan_event
from ..tools.shell import stop_running_commands
from .render import Outputs, TurnView, defusing, plan_step, show_diff
from .review import WriteReview

INTERRUPTED_RESULT = (
    "Interrupted by the user before this call's result was recorded; it may or may not have run. "
    "Check before repeating it."
)
HELP = [
    ("/help", "this list"),
    ("/context", "tokens in the window by part (system, tools, history, notes) and the trigger"),
    ("/cost", "what the conversation has cost: input, cache writes, cache reads, output"),
    ("/compact [instructions]", "compact the conversation now, with optional instructions"),
    ("/show [N]", "the whole output of tool call N (default: the last one)"),
    ("/notes", "show the notes file"),
    ("/memory search QUERY", "search long-term memory"),
    ("/plan", "show the agent's plan"),
    ("/model [NAME]", "show the model, or switch to NAME (the conversation goes on)"),
    ("/undo", "put back the files the last turn changed"),
    ("/clear", "start a new conversation"),
    ("/resume [N|NAME]", "list earlier conversations, or continue one by its number or name"),
    ("/exit", "leave (also Ctrl-D, or Ctrl-C twice)"),
]
_T = TypeVar("_T")
_RESUME_LIST = 20  # conversations /resume lists

# (model string, session name, the locked session or None, review) -> a ready agent
BuildAgent = Callable[[str, str, Any, WriteReview], Agent]


class Sessions(Protocol):
    """Where conversations are saved (the session store)."""

    def open(self, name: str) -> Session: ...

    def latest(self) -> str | None: ...

    def recent(self, limit: int = 20) -> Sequence[SavedInfo]: ...


class SavedInfo(Protocol):
    """A saved conversation as ``/resume`` lists it."""

    @property
    def name(self) -> str: ...

    @property
    def saved(self) -> float: ...

    @property
    def messages(self) -> int: ...

    @property
    def opening(self) -> str: ...


@dataclass
class ChatSetup:
    """What the command line hands the chat."""

    workspace: Path
    model: str
    build: BuildAgent
    close: Callable[[Agent], Awaitable[None]]
    notes_path: Path
    sessions: Sessions | None = None
    session: str | None = None
    history_file: Path | None = None
    search_memory: Callable[[str], list[str]] | None = None


class Interrupted(Exception):
    """The user pressed Ctrl-C during a turn or a command."""


class ChatSession:
    def __init__(self, setup: ChatSetup, console: Console) -> None:
        self.setup = setup
        self.console = console
        self.review = WriteReview(setup.workspace, self._ask_write)
        self.model = setup.model
        self.session = setup.session or time.strftime("chat-%Y%m%d-%H%M%S")
        self.pending_note = ""  # said to the agent with the next message (an undo, say)
        self.view: TurnView | None = None
        self.last_was_interrupt = False
        self._task: asyncio.Future[Any] | None = None
        self._pressed = self._signal_seen = False
        self.outputs = Outputs()
        self.spent: Cost | None = None  # the finished turns' cost (each turn's agent starts at 0)
        self.saved = self._open(self.session)
        self.agent = self._built(self.model, self.session, self.saved)
        self.agent.messages = self._history(self.saved)

    # --- the loop -----------------------------------------------------------------------------

    async def loop(self) -> None:
        prompt = PromptSession[str](history=self._input_history(), key_bindings=_bindings())
        self.console.print(
            Text(
                f"tinyharness chat · {self.model} · session {self.session} · {self.setup.workspace}\n"
                "Enter sends, Esc then Enter (or a line ending in \\) adds a line; /help lists commands.",
                style="dim",
            )
        )
        while True:
            try:
                text = await prompt.prompt_async("› ")
            except KeyboardInterrupt:
                if self.last_was_interrupt:
                    return
                self.last_was_interrupt = True
                self.console.print(Text("(Ctrl-C again, Ctrl-D or /exit to leave)", style="dim"))
                continue
            except EOFError:
                return
            self.last_was_interrupt = False
            text = text.strip()
            if not text:
                continue
            if text.startswith("/"):
                if await self.command(text):
                    return
                continue
            await self.turn(text)

    async def turn(self, text: str) -> None:
        if self.pending_note:
            text, self.pending_note = f"{self.pending_note}\n\n{text}", ""
        context = self.agent.context
        step = plan_step(plan_event(self.agent.anchors)) if self.agent.anchors is not None else ""
        self.view = TurnView(
            self.console,
            tokens=context.tokens,
            window=context.context_window,
            step=step,
            outputs=self.outputs,
            cost=lambda: self.cost().short(),
        )
        self.review.begin_turn()
        self.view.start()
        try:
            result = await self._cancellable(self._consume(text, self.view))
        except Interrupted:
            self.view.finish()
            self._close_interrupted()
            self.console.print(
                Text("⏹ interrupted; the conversation is kept (Ctrl-C again to leave)", "yellow")
            )
            self.last_was_interrupt = True
            return
        finally:
            self.spent = self.cost()  # the turn's spending, finished or interrupted
            self.agent.billed = Usage()
            self.view.finish()
            self.view = None
            self.review.end_turn()
        if not result.ok:
            self.console.print(Text(shown(f"[stopped: {result.stop}] {result.detail}"), style="red"))

    async def _consume(self, text: str, view: TurnView) -> RunResult:
        result: RunResult | None = None
        async for event in self.agent.run_stream(text, history=self.agent.messages, session=self.session):
            kind = event["type"]
            if kind == "text_delta":
                view.delta(str(event["text"]))
            elif kind == "result":
                result = event["result"]
            else:
                view.event(event)
        assert result is not None
        return result

    async def _cancellable(self, work: Coroutine[Any, Any, _T]) -> _T:
        """Run ``work``; the first Ctrl-C cancels it (Interrupted), a second one leaves."""
        loop = asyncio.get_running_loop()
        task = asyncio.ensure_future(work)
        self._task, self._pressed, self._signal_seen = task, False, False
        loop.add_signal_handler(signal.SIGINT, self._on_interrupt)
        try:
            return await task
        except asyncio.CancelledError:
            if not self._pressed:
                raise
            raise Interrupted() from None
        finally:
            loop.remove_signal_handler(signal.SIGINT)
            self._task = None

    def _on_interrupt(self) -> None:
        """Ctrl-C while work runs: cancel it; pressed again while it stops, leave."""
        if self._signal_seen:  # the Ctrl-C the write question already handled
            self._signal_seen = False
            return
        if self._pressed:
            raise KeyboardInterrupt
        self._pressed = True
        if self._task is not None:
            self._task.cancel()
        stop_running_commands()  # a tool thread cannot be cancelled; the shell's command can

    def _interrupt_from_question(self) -> None:
        """Ctrl-C at the write question: stop the turn now, before the agent goes on with the
        refusal (the signal's own callback comes later and is then ignored once)."""
        self._on_interrupt()
        self._signal_seen = True
        current = asyncio.current_task()
        if current is not None:
            current.cancel()  # the task running this tool call ends cancelled, so the loop stops

    def _close_interrupted(self) -> None:
        """Answer the calls the interrupted turn left open and end on the assistant's side, so
        the next request alternates correctly and no call is ever run twice."""
        messages = list(self.agent.messages)
        if messages and messages[-1].role == "assistant" and messages[-1].tool_uses:
            closed = tuple(
                ToolResultBlock(call.id, INTERRUPTED_RESULT, is_error=True) for call in messages[-1].tool_uses
            )
            messages.append(Message("user", closed))
        if messages and messages[-1].role == "user":
            messages.append(Message.assistant("(interrupted by the user)"))
        self.agent.messages = messages
        if self.agent.checkpoint is not None:
            self.agent.checkpoint.save(messages, {})

    def _ask_write(self, diff: str, what: str, pattern: str) -> str:
        """The write question, on the terminal: y, n or a. Ctrl-C here is a no (and stops the
        turn, through the signal handler the turn installed)."""
        if self.view is not None:
            self.view.pause()
        self.console.print(Text(f"⏺ {what} wants to make this change:", style="cyan"))
        show_diff(self.console, diff)
        previous = signal.getsignal(signal.SIGINT)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        try:
            while True:
                self.console.print(
                    f"Apply {what}? [y]es / [n]o / [a]lways for {pattern}: ",
                    end="",
                    markup=False,
                    highlight=False,
                )
                self.console.file.flush()
                answer = input().strip().lower()
                if answer in ("y", "yes"):
                    return "y"
                if answer in ("", "n", "no"):
                    return "n"
                if answer in ("a", "always"):
                    return "a"
        except EOFError:
            return "n"
        except KeyboardInterrupt:
            self._interrupt_from_question()
            return "n"
        finally:
            signal.signal(signal.SIGINT, previous)

    # --- slash commands -----------------------------------------------------------------------

    async def command(self, line: str) -> bool:
        """Run a slash command; True to leave the chat."""
        name, _, rest = line.partition(" ")
        rest = rest.strip()
        handler = {
            "/help": self._help,
            "/context": self._context,
            "/cost": self._cost,
            "/notes": self._notes,
            "/plan": self._plan,
            "/undo": self._undo,
        }.get(name)
        try:
            if name in ("/exit", "/quit"):
                return True
            if handler is not None:
                handler()
            elif name == "/compact":
                await self._compact(rest)
            elif name == "/memory":
                self._memory(rest)
            elif name == "/show":
                self._show(rest)
            elif name == "/model":
                await self._model(rest)
            elif name == "/clear":
                await self._switch(time.strftime("chat-%Y%m%d-%H%M%S"), [])
                self.console.print(Text(f"new conversation (session {self.session})", style="dim"))
            elif name == "/resume":
                await self._resume(rest)
            else:
                self.console.print(Text(f"unknown command {name}; /help lists them", style="red"))
        except Interrupted:
            self.console.print(Text("⏹ interrupted", style="yellow"))
        except HarnessError as exc:
            self.console.print(Text(shown(f"{name}: {exc}"), style="red"))
        return False

    def _help(self) -> None:
        table = Table(show_header=False, box=None)
        for command, what in HELP:
            table.add_row(command, what)
        self.console.print(table)

    def cost(self) -> Cost:
        """The conversation's cost: the finished turns' and the current one's so far."""
        agent = self.agent
        now = model_cost(agent.config.prices or PriceTable.builtin(), agent.model, agent.billed)
        return now if self.spent is None else self.spent + now

    def _cost(self) -> None:
        cost = self.cost()
        usage = cost.usage
        lines = Table(show_header=False, box=None)
        if cost.status == "priced":
            lines.add_row("priced as", str(cost.priced_as))
            for part, amount, tokens in (
                ("uncached input", cost.uncached_input, usage.uncached_input_tokens),
                ("cache writes", cost.cache_writes, usage.cache_write_tokens),
                ("cache reads", cost.cache_reads, usage.cached_tokens),
                ("output", cost.output, usage.output_tokens),
            ):
                lines.add_row(part, money(amount), f"{tokens:,} tokens")
            lines.add_row("total", money(cost.usd), f"{usage.total:,} tokens")
        elif cost.status == "local":
            lines.add_row("total", "$0", f"local model, no charge · {usage.total:,} tokens")
        else:
            lines.add_row("total", "price unknown", f"{cost.model} has no price in the table")
            lines.add_row("tokens", f"{usage.input_tokens:,} in", f"{usage.output_tokens:,} out")
            lines.add_row("", "", "add it under prices in config.json (see docs/cost.md)")
        self.console.print(lines)

    def _context(self) -> None:
        context = self.agent.context
        notes = self._read_notes()
        lines = Table(show_header=False, box=None)
        if isinstance(context, ContextManager):  # the estimate by part is the manager's own
            parts = context.breakdown(
                self.agent.config.system, self.agent.tools.specs, self.agent.messages, notes
            )
            for part in ("system", "tools", "history"):
                lines.add_row(part, f"{parts[part]:,}")
            anchors = self.agent.anchors
            if anchors is not None and anchors.instructions:  # in the history, kept word for word
                texts = "\n\n".join(item.shown for item in anchors.instructions)
                sources = ", ".join(item.source for item in anchors.instructions)
                label = f"  of which project instructions ({sources})"
                lines.add_row(label, f"{context.count_text(texts):,}")
            lines.add_row("notes file (read back at compaction)", f"{parts['notes']:,}")
        window = context.context_window
        lines.add_row("tokens in the window (counter)", f"{context.tokens:,}")
        if window:
            lines.add_row("window", f"{window:,}")
        compact_at = context.compact_at
        if compact_at:
            lines.add_row("compaction trigger", f"{compact_at:,} ({context.strategy or ''})")
        lines.add_row("messages", str(len(self.agent.messages)))
        self.console.print(lines)

    def _show(self, which: str) -> None:
        number = self.outputs.last if not which else int(which) if which.isdigit() else -1
        entry = self.outputs.get(number) if number > 0 else None
        if entry is None:
            last = self.outputs.last
            known = f"1 to {last}" if last else "none yet"
            self.console.print(Text(f"usage: /show N, a tool call's number ({known})", style="red"))
            return
        shown, content = entry
        self.console.print(Text.assemble(("⏺ ", "cyan"), (f"[{number}] ", "dim"), shown))
        if content is None:
            self.console.print(Text("  (its output is no longer kept)", style="dim"))
            return
        self.console.print(Text(content))

    def _built(self, model: str, session: str, saved: Session | None) -> Agent:
        """An agent from the setup, its tool outputs kept for /show."""
        agent = self.setup.build(model, session, saved, self.review)
        agent.tools.on_result = lambda call, block: self.outputs.keep(call.id, block.content)
        return agent

    def _read_notes(self) -> str:
        try:
            return self.setup.notes_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""

    def _notes(self) -> None:
        notes = self._read_notes()
        if notes.strip():
            self.console.print(Markdown(notes))
        else:
            self.console.print(Text(f"(no notes yet in {self.setup.notes_path})", style="dim"))

    def _plan(self) -> None:
        anchors = self.agent.anchors
        if anchors is None or not (anchors.plan or anchors.pins):
            self.console.print(Text("no plan yet (the agent writes one with its todo tool)", style="dim"))
            return
        if anchors.plan:
            self.console.print(Text(f"plan: {anchors.plan_summary()}", style="bold"))
            self.console.print(Text(anchors.plan_text()))
        if anchors.pins:
            self.console.print(Text("pinned:", style="bold"))
            self.console.print(Text(anchors.pins_text()))

    def _undo(self) -> None:
        if not self.review.undoable():
            self.console.print(Text("nothing to undo: the last turn changed no file", style="dim"))
            return
        restored = self.review.undo()
        self.console.print(Text(f"put back: {', '.join(restored)}", style="green"))
        self.pending_note = (
            "(The user undid your file changes of the last turn; these files are back as they "
            f"were before it: {', '.join(restored)}.)"
        )

    def _memory(self, rest: str) -> None:
        verb, _, query = rest.partition(" ")
        if verb != "search" or not query.strip():
            self.console.print(Text("usage: /memory search QUERY", style="red"))
            return
        if self.setup.search_memory is None:
            self.console.print(Text("long-term memory is off in this chat (--memory URL turns it on)", "dim"))
            return
        hits = self.setup.search_memory(query.strip())
        for hit in hits:
            self.console.print(Text(f"• {hit}"))
        if not hits:
            self.console.print(Text("(no memory matches)", style="dim"))

    async def _compact(self, instructions: str) -> None:
        context = self.agent.context
        if not isinstance(context, ContextManager):  # a policy without compaction steps
            self.console.print(Text("this agent's context policy cannot compact", style="red"))
            return
        before = context.tokens
        self.console.print(Text("compacting…", style="dim"))
        try:
            messages = await self._cancellable(
                context.compact_now(
                    self.agent.config.system,
                    self.agent.messages,
                    self.agent.call_model,
                    instructions=instructions,
                )
            )
        except (ModelError, StopRun) as exc:
            self.console.print(Text(shown(f"compaction failed: {exc}"), style="red"))
            return
        self.agent.messages = list(messages)
        if self.agent.checkpoint is not None:
            self.agent.checkpoint.save(self.agent.messages, {})
        self.console.print(Text(f"[compact] tokens {before:,} -> {context.tokens:,}", style="yellow"))

    async def _model(self, name: str) -> None:
        if not name:
            self.console.print(Text(f"model: {self.model}", style="dim"))
            return
        await self._switch(self.session, list(self.agent.messages), model=name)
        self.console.print(Text(f"model: {self.model}", style="dim"))

    async def _switch(self, session: str, history: list[Message] | None, *, model: str | None = None) -> None:
        """A new agent (new model, or another conversation: ``history`` None loads the saved
        one); the old agent is closed after the new one is built, so a bad model string leaves
        the chat as it was."""
        saved = self._open(session) if session != self.session else self.saved
        try:
            fresh = self._built(model or self.model, session, saved)
        except BaseException:
            if saved is not self.saved and saved is not None:
                saved.close()
            raise
        fresh.messages = self._history(saved) if history is None else history
        old, self.agent = self.agent, fresh
        if saved is not self.saved and self.saved is not None:
            self.saved.close()
        self.saved = saved
        self.model, self.session = model or self.model, session
        try:
            await self.setup.close(old)
        except HarnessError as exc:
            self.console.print(Text(shown(f"closing the previous model: {exc}"), style="red"))

    async def _resume(self, name: str) -> None:
        sessions = self.setup.sessions
        if sessions is None:
            self.console.print(Text("/resume needs the run log (drop --no-log)", style="red"))
            return
        listed = [info for info in sessions.recent(_RESUME_LIST) if info.name != self.session]
        if not name:
            self._list_sessions(listed)
            return
        session = listed[int(name) - 1].name if name.isdigit() and 0 < int(name) <= len(listed) else name
        if session == self.session:
            self.console.print(Text(f"session {session} is the one open now", style="dim"))
            return
        await self._switch(session, None)
        history = self.agent.messages
        if not history:
            self.console.print(Text(f"session {session!r} had no saved conversation: it starts now", "dim"))
            return
        self.console.print(Text(f"resumed session {session} ({len(history)} messages)", style="dim"))
        last = next((m.text for m in reversed(history) if m.role == "assistant" and m.text), "")
        if last:
            self.console.print(Markdown(last))

    def _list_sessions(self, listed: Sequence[SavedInfo]) -> None:
        if not listed:
            self.console.print(Text("no other saved conversation yet", style="dim"))
            return
        table = Table(show_header=False, box=None)
        for number, info in enumerate(listed, start=1):
            when = time.strftime("%Y-%m-%d %H:%M", time.localtime(info.saved))
            opening = info.opening if len(info.opening) <= 60 else info.opening[:60] + "…"
            table.add_row(str(number), info.name, when, f"{info.messages} messages", opening)
        self.console.print(table)
        self.console.print(Text("/resume N (or /resume NAME) continues one", style="dim"))

    def _open(self, name: str) -> Session | None:
        """The session ``name``, locked for this chat (None without a session store)."""
        if self.setup.sessions is None:
            return None
        session = self.setup.sessions.open(name)
        try:
            session.lock()
        except BaseException:
            session.close()
            raise
        return session

    @staticmethod
    def _history(session: Session | None) -> list[Message]:
        """A session's saved conversation, made valid: calls a run left without a result are
        answered as interrupted (never run again), and it ends on the assistant's side."""
        saved = session.load() if session is not None else None
        if saved is None:
            return []
        history, _ = close_orphans(saved.messages)
        if history and history[-1].role == "assistant" and history[-1].tool_uses:
            closed = tuple(
                ToolResultBlock(c.id, INTERRUPTED_RESULT, is_error=True) for c in history[-1].tool_uses
            )
            history.append(Message("user", closed))
        if history and history[-1].role == "user":
            history.append(Message.assistant("(interrupted)"))
        return history

    def _input_history(self) -> FileHistory | InMemoryHistory:
        path = self.setup.history_file
        if path is None:
            return InMemoryHistory()
        with contextlib.suppress(OSError):
            make_folder(path.parent)
            return FileHistory(str(path))
        return InMemoryHistory()

    async def close(self) -> None:
        try:
            await self.setup.close(self.agent)
        finally:
            if self.saved is not None:
                self.saved.close()


def _bindings() -> KeyBindings:
    bindings = KeyBindings()

    @bindings.add("escape", "enter")
    def _newline(event: Any) -> None:
        event.current_buffer.insert_text("\n")

    @bindings.add("enter")
    def _enter(event: Any) -> None:
        buffer = event.current_buffer
        if buffer.text.endswith("\\"):
            buffer.delete_before_cursor(1)
            buffer.insert_text("\n")
        else:
            buffer.validate_and_handle()

    return bindings


async def run_chat(setup: ChatSetup) -> int:
    console = defusing(Console())
    chat = ChatSession(setup, console)
    try:
        await chat.loop()
    finally:
        await chat.close()
    return 0

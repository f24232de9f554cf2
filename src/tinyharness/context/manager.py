"""``ContextManager``: the ``ContextPolicy`` the loop calls, and ``build_context`` for the CLI.

At each ``prepare`` (after a round's tool results are appended, before the next request, so the
request about to be sent is the one measured) the manager absorbs the new messages into the
accounting, offloads huge fresh tool outputs when ``offload`` is in the pipeline, and compacts
when the trigger fires or the next request would not fit the window. A compaction runs the
pipeline until the history is under the target, falls back to cheaper steps when one fails or
does not help, reads NOTES.md and the files in use back after a lossy step, recounts the window
and resets the counter. With a ``NotesFlush``, the model must first save notes (``flush.py``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from ..anchors import Anchors
from ..errors import ConfigError, HarnessError
from ..events import EventBus
from ..history import paths_still_visible, recent_file_paths, tool_calls_by_id
from ..messages import Message, TextBlock, ToolResultBlock
from ..models.base import CountsTokens, Model, ModelRequest, ModelResponse, SendsToolsAsText, ToolSpec
from .accounting import Accountant
from .audit import audit, with_anchors
from .base import DroppedLog, ModelCaller
from .config import DEFAULT_WINDOW, ContextConfig
from .flush import NOTE_TOOL, FlushJournal, NotesFlush, RunCall
from .pipeline import CircuitBreaker, parse_pipeline
from .prefix import PrefixTracker
from .restore import (
    EMPTY_NOTES,
    FileReader,
    files_block,
    notes_block,
    read_notes,
    workspace_reader,
)
from .rewrite import FILES, NOTES, SKILLS, tagged_blocks, task_blocks
from .spill import SpillFolder
from .strategies import CompactionFailed, Offload, SlidingWindow, StepContext, Strategy
from .tokens import count_tools, make_counter
from .trigger import Trigger
from .validator import InvalidRequest, check_compaction

TARGET_SHARE = 0.6  # of the trigger threshold a compaction aims for, so it is not re-triggered at once
NOTES_SHARE = 0.15  # of the threshold NOTES.md may take when read back
FILES_SHARE = 0.15  # of the threshold re-read files may take, in all
SKILLS_SHARE = 0.1  # of the threshold the SKILL.md files still in use may take, in all
SKILLS_INTRO = (
    "The skills you were using (their SKILL.md read again after the compaction; keep following them):\n"
)
OFFLOAD_SHARE = 0.25  # of the threshold one tool result may take before it is offloaded
WARN_SHARE = 0.8  # of the trigger threshold at which the model is asked to take notes
STORM_CALLS = 2  # agent calls a compaction must buy before another may call the model


@dataclass(frozen=True)
class _Step:
    """A strategy as one step of a compaction: a pipeline step, or a last resort the manager
    adds so that something can always shrink the history."""

    strategy: Strategy
    last_resort: bool

    @property
    def name(self) -> str:
        return self.strategy.name

    def enough(self, target: int, threshold: int) -> int:
        """The size at which the compaction stops before this step: the target for pipeline
        steps, and merely under the trigger for a last resort (it drops what it cuts)."""
        return threshold - 1 if self.last_resort else target


class ContextManager:
    """The context policy of one run, made from a ``ContextConfig``. ``model_window`` is the
    model's own window (the summarizer's requests must fit it; the trigger's window is the
    config's, else this one); ``exact_counter`` is the model's tokenizer for ``counter="exact"``;
    ``run_call`` runs the note calls of the notes flush (``flush_notes``); ``anchors`` (the
    plan and the pins) are put back after every lossy compaction and audited after every one;
    ``dropped`` receives every message a compaction takes out of the window."""

    def __init__(
        self,
        config: ContextConfig | None = None,
        *,
        events: EventBus | None = None,
        model_window: int | None = None,
        exact_counter: Callable[[str], int] | None = None,
        file_reader: FileReader | None = None,
        run_call: RunCall | None = None,
        tools_text: Callable[[Sequence[ToolSpec]], str | None] | None = None,
        flush_journal: FlushJournal | None = None,
        tool_specs: Callable[[], Sequence[ToolSpec]] | None = None,
        anchors: Anchors | None = None,
        dropped: DroppedLog | None = None,
    ) -> None:
        config = config or ContextConfig()
        # The agent's tools before its first request (a resumed run finishing a cut-off flush).
        self._tool_specs = tool_specs
        self.anchors = anchors
        self.dropped = dropped
        self.config = config
        # The one place the window is resolved: the user's, else the model's, else the default.
        self.trigger = Trigger(config.window or model_window or DEFAULT_WINDOW, config.ratio, config.buffer)
        try:
            raw = make_counter(config.counter, exact=exact_counter)
        except (ValueError, LookupError) as exc:
            raise ConfigError(f"--counter {config.counter}: {exc}") from None
        uses_usage = config.counter != "chars4"  # chars4: characters/4 of the window, uncorrected
        self.accountant = Accountant(
            raw, config.accounting, calibrate=uses_usage, tools_text=tools_text, usage_counts=uses_usage
        )
        self.pipeline: list[Strategy] = parse_pipeline(config.strategy)
        self.events = events
        self.file_reader = file_reader or (workspace_reader(config.workspace) if config.workspace else None)
        state_dir = config.state_dir
        if state_dir is None and config.workspace is not None:
            run = events.run_id if events is not None else "run"
            state_dir = config.workspace / ".tinyharness" / "runs" / run
        # The one writer of context management: offloaded outputs, in the run's state folder.
        self.spill = SpillFolder(state_dir / "offload", config.workspace) if state_dir else None
        self.model_window = model_window or self.trigger.window
        self.breaker = CircuitBreaker()
        self.flush: NotesFlush | None = None
        if config.flush_notes:
            if run_call is None:
                raise ConfigError("flush_notes (--flush-notes) needs a way to run the note calls (run_call)")
            notes = _reader(config.notes_path) if config.notes_path else None
            self.flush = NotesFlush(run_call, events or EventBus(), notes_text=notes, journal=flush_journal)
        self.prefix = PrefixTracker()
        self._offload = next((s for s in self.pipeline if isinstance(s, Offload)), None)
        self._compactions = 0
        self._calls_since_compaction = 0
        self._reserve = 1024  # output tokens of the next request, from the last agent request
        self._tools: tuple[ToolSpec, ...] = ()
        self._fresh: list[Message] = []
        self._warned = False  # the notes warning was given since the last compaction
        self._last_tokens = 0  # the count at the last prepare, and how much it grew since
        self._growth = 0
        self._forced_target: int | None = None  # set while the user asks for a compaction
        self._ctx: tuple[tuple[object, ...], StepContext] | None = None  # see _step_context
        # Awaited with the history and the reason (threshold, overflow, user) before each
        # compaction: the user's PreCompact hooks (see ``hooks``).
        self.before_compact: Callable[[list[Message], str], Awaitable[None]] | None = None
        # The files still in use to read back after a lossy compaction (the skills the model
        # follows), given the history before and after it: see ``skills.SkillSet.in_use``.
        self.in_use: Callable[[Sequence[Message], Sequence[Message]], list[str]] | None = None

    # --- the seam -----------------------------------------------------------------------------

    @property
    def tokens(self) -> int:
        return self.accountant.tokens

    @property
    def compactions(self) -> int:
        return self._compactions

    @property
    def prefix_share(self) -> float | None:
        """Share of the last agent request that repeated the previous one's prefix."""
        return self.prefix.last_share

    @property
    def context_window(self) -> int:
        return self.trigger.window

    @property
    def compact_at(self) -> int:
        return self.trigger.threshold

    @property
    def strategy(self) -> str:
        return ",".join(s.name for s in self.pipeline) or "none"

    def record_response(self, request: ModelRequest, response: ModelResponse) -> None:
        if request.purpose == "agent":
            self._calls_since_compaction += 1
            self._reserve = request.max_tokens
            self._tools = request.tools
            self.prefix.observe(request.system, request.messages)
        self.accountant.record_response(request, response)

    def record_appended(self, messages: Sequence[Message]) -> None:
        self._fresh.extend(self.accountant.absorb(messages))

    async def prepare(self, system: str, messages: list[Message], call_model: ModelCaller) -> list[Message]:
        self.accountant.set_fixed(system, self._tools)
        self._fresh.extend(self.accountant.absorb_tail(messages))
        fresh, self._fresh = self._fresh, []
        if not self.pipeline or not messages:
            return messages
        messages = self._offload_fresh(system, messages, fresh, call_model)
        self._growth, self._last_tokens = self.accountant.tokens - self._last_tokens, self.accountant.tokens
        if self._over_trigger():
            await self._flush_notes(system, messages, call_model)
            messages = await self._compact(system, messages, call_model, reason="threshold")
        elif self._should_warn(messages):
            messages = self._warn_before_compaction(messages)
        return messages

    async def compact_now(
        self,
        system: str,
        messages: list[Message],
        call_model: ModelCaller,
        *,
        instructions: str | None = None,
    ) -> list[Message]:
        """Compact now, whatever the count (the chat's ``/compact``); ``instructions`` add to
        the summarizer's for this compaction only."""
        self.accountant.set_fixed(system, self._tools)
        self._fresh.extend(self.accountant.absorb_tail(messages))
        if not messages:
            return messages
        saved = self.config
        if instructions:
            joined = f"{saved.instructions}\n{instructions}" if saved.instructions else instructions
            self.config = replace(saved, instructions=joined)
        # Asked for, a compaction goes as far as the steps can (down to the last round), not
        # just under the usual target, which a short conversation is already below.
        self._forced_target = 1
        try:
            return await self._compact(system, messages, call_model, reason="user")
        finally:
            self.config = saved
            self._forced_target = None

    def count_text(self, text: str) -> int:
        """Estimated tokens of ``text`` in this window's accounting."""
        return self.accountant.count_text(text)

    def breakdown(
        self, system: str, tools: Sequence[ToolSpec], messages: Sequence[Message], notes: str = ""
    ) -> dict[str, int]:
        """Estimated tokens of the next request by part, and of the notes file that is read back
        at compaction (the chat's ``/context``)."""
        history = self.accountant.estimate(messages) - self.accountant.fixed_tokens
        return {
            "system": self.accountant.count_text(system),
            "tools": self.accountant.scale(count_tools(self.accountant.raw, tools)),
            "history": max(0, history),
            "notes": self.accountant.count_text(notes),
        }

    def _should_warn(self, messages: list[Message]) -> bool:
        """Once between two compactions, when the count nears the trigger (WARN_SHARE of it, or
        one more turn growing as the last one did would cross it), the model has a note tool,
        and the newest message is the user's (tool results), so text can join it. Not with a
        notes flush, which asks at the compaction itself (and measured with SmolLM2-135M, the
        warning's words came back in the flush notes)."""
        tokens = self.accountant.tokens
        return (
            self.flush is None
            and not self._warned
            and max(tokens / WARN_SHARE, tokens + self._growth) >= self.trigger.threshold
            and any(tool.name == NOTE_TOOL for tool in self._tools)
            and messages[-1].role == "user"
        )

    def _warn_before_compaction(self, messages: list[Message]) -> list[Message]:
        """Tell the model that older tool results are about to go, so it can save what it still
        needs with the note tool (the warning Anthropic's context editing gives before clearing):
        NOTES.md is read back after a compaction, the cleared results are not."""
        self._warned = True
        share = round(100 * self.accountant.tokens / self.trigger.window)
        warning = TextBlock(
            f"[context: {share}% of the window is used; older tool results will be cleared soon. "
            f"Save what you still need from them with the {NOTE_TOOL} tool now.]"
        )
        self._emit(
            "context_warning", message=f"{share}% of the window used; the model was asked to take notes"
        )
        last = messages[-1]
        return [*messages[:-1], Message(last.role, (*last.content, warning))]

    async def _flush_notes(self, system: str, messages: list[Message], call_model: ModelCaller) -> None:
        """The notes flush, when there is one, the agent acted since the last compaction (so
        there is something new to save, and no flush per compaction in a storm), the newest
        message holds tool results, and the request still fits the window."""
        if self.flush is None:
            return
        # A flush a kill cut off is finished first, though this run has not asked the model yet.
        cut_off = self.flush.cut_off and self._calls_since_compaction == 0
        tools = tuple(self._tool_specs()) if cut_off and not self._tools and self._tool_specs else self._tools
        if (
            self.flush.available(tools)
            and (self._calls_since_compaction > 0 or cut_off)
            and messages[-1].tool_results
            and self.accountant.window_estimate < self.trigger.window
        ):
            await self.flush(system, messages, tools, call_model, self._reserve)

    async def recover(self, system: str, messages: list[Message], call_model: ModelCaller) -> list[Message]:
        """The provider refused the request as too long: the request was at least a window
        long, so the estimate is corrected upwards, then the history is compacted."""
        self.accountant.floor_ratio(self.trigger.window)
        self._emit("context_warning", message="context length exceeded; compacting and retrying once")
        if not self.pipeline or not messages:
            return messages
        return await self._compact(system, messages, call_model, reason="overflow")

    # --- checks -------------------------------------------------------------------------------

    def _over_trigger(self) -> bool:
        if self.trigger.should_compact(self.accountant.tokens):
            return True
        # Whatever the accounting mode, the next request must fit with room for its reply.
        reserve = min(self._reserve, self.trigger.window // 4)
        return self.accountant.window_estimate >= self.trigger.window - reserve

    @property
    def target(self) -> int:
        if self._forced_target is not None:
            return self._forced_target
        return int(self.trigger.threshold * TARGET_SHARE)

    def _step_context(self, system: str, call_model: ModelCaller) -> StepContext:
        """The steps' context; the same object while nothing it is made of changed (offload's
        check of fresh output asks for it every turn)."""
        key: tuple[object, ...] = (system, call_model, self.config, self._forced_target)
        key += (self.trigger, self.model_window, self.spill)
        if self._ctx is not None and self._ctx[0] == key:
            return self._ctx[1]
        ctx = self._new_step_context(system, call_model)
        self._ctx = (key, ctx)
        return ctx

    def _new_step_context(self, system: str, call_model: ModelCaller) -> StepContext:
        threshold = self.trigger.threshold
        return StepContext(
            system=system,
            call_model=call_model,
            count=self.accountant.estimate,
            count_text=self.accountant.count_text,
            keep_recent=self.config.keep_recent,
            target=self.target,
            model_window=self.model_window,
            instructions=self.config.instructions,
            spill=self.spill,
            offload_cap=max(200, int(threshold * OFFLOAD_SHARE)),
            summary_max_tokens=min(1024, max(256, threshold // 4)),
            summary_mode=self.config.summary_mode,
        )

    # --- offload of fresh tool output ---------------------------------------------------------

    def _offload_fresh(
        self, system: str, messages: list[Message], fresh: list[Message], call_model: ModelCaller
    ) -> list[Message]:
        if self._offload is None or not fresh:
            return messages
        ctx = self._step_context(system, call_model)
        fresh_ids = {id(m) for m in fresh}
        out = messages  # copied only when a message is replaced: a copy per turn is O(history)
        # Fresh messages sit at the tail; walk back only over them.
        for index in range(len(out) - 1, -1, -1):
            message = out[index]
            if id(message) not in fresh_ids:
                break
            replaced = self._offload.message(message, ctx)
            if replaced is not message:
                if out is messages:
                    out = list(messages)
                out[index] = replaced
                self.accountant.replace(message, replaced)
                self._emit("offload", index=index, chars_before=_chars(message), chars_after=_chars(replaced))
        return out

    # --- compaction ---------------------------------------------------------------------------

    async def _compact(
        self, system: str, messages: list[Message], call_model: ModelCaller, *, reason: str
    ) -> list[Message]:
        """Run the steps, put notes and files back after a lossy one, reset the counter and
        report the compaction."""
        if self.before_compact is not None:
            await self.before_compact(messages, reason)
        tokens_before = self.accountant.tokens
        window_before = self.accountant.estimate(messages)
        current, applied, lossy = await self._run_steps(messages, self._step_context(system, call_model))
        if lossy:
            current = self._restore(current, messages)
            if self.anchors is not None:
                current = with_anchors(current, self.anchors)
        self._record_dropped(messages, current)
        findings: list[dict[str, object]] | None = None
        if self.anchors is not None:
            findings = audit(current, self.anchors, task_blocks(messages[0]))
            if findings:  # a step broke its contract: report it, then put the parts back
                current = with_anchors(current, self.anchors, task_blocks(messages[0]))
        self.accountant.reset(current)
        self.breaker.tick()
        self._compactions += 1
        self._warned = False
        self._calls_since_compaction = 0
        window_after = self.accountant.window_estimate
        self._emit(
            "compaction",
            n=self._compactions,
            strategy="+".join(applied) or "none",
            reason=reason,
            tokens_before=tokens_before,
            tokens_after=self.accountant.tokens,
            window_before=window_before,
            window_after=window_after,
            messages_before=len(messages),
            messages_after=len(current),
        )
        if findings is not None and self.anchors is not None:
            self._emit(
                "audit",
                n=self._compactions,
                ok=not findings,
                missing=findings,
                pins=len(self.anchors.pins),
                instructions=len(self.anchors.instructions),
                plan_items=len(self.anchors.plan),
                repaired=bool(findings),
            )
        if window_after >= self.trigger.threshold:
            self._emit(
                "context_warning",
                message=(
                    f"after compaction the window still holds ~{window_after} tokens, over the "
                    f"trigger at {self.trigger.threshold}; the run goes on with cheaper steps"
                ),
            )
        return current

    def _record_dropped(self, before: list[Message], after: list[Message]) -> None:
        """Hand the messages this compaction took out of the window (or rewrote: a cleared
        tool result's full text goes too) to the dropped log; the head is the task and what
        compaction put there, so it is left out."""
        if self.dropped is None:
            return
        kept = {id(m) for m in after}
        gone = [m for m in before[1:] if id(m) not in kept]
        if not gone:
            return
        try:
            self.dropped.record(gone, self._compactions + 1, tool_calls_by_id(before))
        except HarnessError as exc:  # searching is a help: losing it must not stop the run
            self._emit("context_warning", message=f"what compaction dropped is not searchable: {exc}")

    async def _run_steps(
        self, messages: list[Message], ctx: StepContext
    ) -> tuple[list[Message], list[str], bool]:
        """Each step in turn, until the history is small enough: a step runs unless a guard
        holds it back, and its result is kept only when it is valid and smaller. Returns the
        history, the steps applied and whether any of them lost content."""
        current, lossy = list(messages), False
        applied: list[str] = []
        for step in self._steps():
            size = self.accountant.estimate(current)
            if applied and size <= step.enough(ctx.target, self.trigger.threshold):
                break
            held = self._held_back(step)
            if held is not None:
                if held:
                    self._fallback(step.name, held)
                continue
            candidate = await self._attempt(step, current, ctx, size)
            if candidate is not None:
                current, lossy = candidate, lossy or step.strategy.lossy
                applied.append(step.name)
        return current, applied, lossy

    def _steps(self) -> list[_Step]:
        """The pipeline, then the last resorts it lacks: sliding-window, then offload with the
        cap in force (a single round can still hold one oversized output)."""
        steps = [_Step(s, last_resort=False) for s in self.pipeline]
        names = {s.name for s in self.pipeline}
        if "sliding-window" not in names:
            steps.append(_Step(SlidingWindow(), last_resort=True))
        if "offload" not in names:
            steps.append(_Step(Offload(), last_resort=True))
        return steps

    def _held_back(self, step: _Step) -> str | None:
        """Why ``step`` sits out this compaction: "" quietly (its circuit breaker is open: it
        was reported when it tripped), a reason to report (the storm guard: a compaction right
        after another may not call the model again), None when it runs. Last resorts always
        run: something must always be able to shrink."""
        if step.last_resort:
            return None
        if not self.breaker.allows(step.name):
            return ""
        storm = self._compactions > 0 and self._calls_since_compaction < STORM_CALLS
        if storm and step.strategy.calls_model:
            return "compacted too recently (compaction storm guard)"
        return None

    async def _attempt(
        self, step: _Step, current: list[Message], ctx: StepContext, size: int
    ) -> list[Message] | None:
        """The step's result, or None when it failed, broke the history (the validator's
        compaction check) or did not shrink it. Failures and no progress count towards the
        step's breaker; a last resort that cannot shrink further is not news."""
        try:
            candidate = await step.strategy.apply(current, ctx)
            check_compaction(current, candidate)
        except (CompactionFailed, InvalidRequest) as exc:
            self._fail(step, str(exc))
            return None
        if size > ctx.target and self.accountant.estimate(candidate) >= size:
            if not step.last_resort:
                self._fail(step, "no reduction")
            return None
        if not step.last_resort:
            self.breaker.success(step.name)
        return candidate

    def _fail(self, step: _Step, reason: str) -> None:
        # The last resorts are never retired: something must always be able to shrink.
        tripped = False if step.last_resort else self.breaker.failure(step.name)
        suffix = f"; skipped for the next {self.breaker.cooldown} compactions" if tripped else ""
        self._fallback(step.name, reason + suffix)

    def _fallback(self, name: str, reason: str) -> None:
        self._emit("compaction_fallback", strategy=name, reason=reason)

    def _restore(self, current: list[Message], original: list[Message]) -> list[Message]:
        """NOTES.md and the most recently used files go back into the head message."""
        threshold = self.trigger.threshold
        count = self.accountant.count_text
        head = current[0]
        stale = tagged_blocks(head, [NOTES, FILES, SKILLS])
        keep = [b for b in head.content[len(task_blocks(head)) :] if b not in stale]
        added = []
        notes = read_notes(self.config.notes_path, self.config.workspace)
        own = read_notes(self.config.run_notes_path, self.config.workspace)
        if own is not None and own != EMPTY_NOTES:  # the run's own notes, kept out of NOTES.md
            notes = own if notes in (None, EMPTY_NOTES) else f"{notes}\n{own}"
        if notes is not None:
            added.append(notes_block(notes, int(threshold * NOTES_SHARE), count, self.config.notes_path))
        skills: list[str] = []
        if self.file_reader is not None and self.in_use is not None:
            # What the compaction kept, without the blocks an earlier one read back.
            kept = [Message(m.role, tuple(b for b in m.content if b not in stale)) for m in current]
            skills = self.in_use(original, kept)
            room = int(threshold * SKILLS_SHARE)
            block, _read = files_block(
                skills, self.file_reader, count, room, room, kind=SKILLS, intro=SKILLS_INTRO
            )
            if block is not None:
                added.append(block)
        if self.file_reader is not None and self.config.restore_files > 0:
            visible = paths_still_visible(current) | set(skills)
            paths = [p for p in recent_file_paths(original, self.config.restore_files) if p not in visible]
            room = min(int(threshold * FILES_SHARE), self.target - self.accountant.estimate(current))
            block, _restored = files_block(paths, self.file_reader, count, room, max(200, room // 2))
            if block is not None:
                added.append(block)
        if not added and not keep and head.content == task_blocks(head):
            return current
        return [Message("user", (*task_blocks(head), *keep, *added)), *current[1:]]

    def _emit(self, type: str, **fields: object) -> None:
        if self.events is not None:
            self.events.emit(type, **fields)


def _reader(path: Path) -> Callable[[], str]:
    """NOTES.md's text as it is now, "" when it cannot be read (the flush then asks anyway)."""

    def read() -> str:
        try:
            return path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""

    return read


def _chars(message: Message) -> int:
    """Characters of text and tool output (what offloading shrinks)."""
    return sum(
        len(b.content) if isinstance(b, ToolResultBlock) else len(b.text) if isinstance(b, TextBlock) else 0
        for b in message.content
    )


def build_context(
    config: ContextConfig | None = None,
    *,
    model: Model | None = None,
    events: EventBus | None = None,
    run_call: RunCall | None = None,
    file_reader: FileReader | None = None,
    flush_journal: FlushJournal | None = None,
    tool_specs: Callable[[], Sequence[ToolSpec]] | None = None,
    anchors: Anchors | None = None,
    dropped: DroppedLog | None = None,
) -> ContextManager:
    """The context policy for ``config`` with ``model``: the model gives its window (used when
    the config leaves the window open, and as the summarizer's limit) and, when it has one, its
    tokenizer for ``counter="exact"``. ``run_call`` runs the note calls of ``flush_notes``, and
    ``flush_journal`` (the session) records each of its asks (see ``FlushJournal``);
    ``tool_specs`` gives the agent's tools before its first request (to finish a flush that a
    kill cut off); ``anchors`` and ``dropped``: see ``ContextManager``.
    Raises ``ConfigError`` for bad values."""
    return ContextManager(
        config,
        events=events,
        model_window=model.context_window if model is not None else None,
        exact_counter=model.count_tokens if isinstance(model, CountsTokens) else None,
        file_reader=file_reader,
        run_call=run_call,
        tools_text=model.tools_text if isinstance(model, SendsToolsAsText) else None,
        flush_journal=flush_journal,
        tool_specs=tool_specs,
        anchors=anchors,
        dropped=dropped,
    )

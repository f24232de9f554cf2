"""``ContextManager``: the ``ContextPolicy`` the loop calls, and ``build_context`` for the CLI.

At each ``prepare`` (after a round's tool results are appended, before the next request: the
point lesson 6 names) the manager absorbs the new messages into the accounting, offloads huge
fresh tool outputs when ``offload`` is in the pipeline, and compacts when the trigger fires or
the next request would not fit the window. A compaction runs the pipeline until the history is
under the target, falls back to cheaper steps when one fails or does not help, reads NOTES.md
and the files in use back after a lossy step, recounts the window and resets the counter. With a
``NotesFlush``, the model must first save notes (``flush.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from ..events import EventBus
from ..history import paths_still_visible, recent_file_paths
from ..messages import Message, TextBlock
from ..models.base import ModelRequest, ModelResponse, ToolSpec
from .accounting import ACCOUNTING_MODES, Accountant, AccountingMode
from .base import ModelCaller
from .flush import NOTE_TOOL, NotesFlush
from .pipeline import CircuitBreaker, parse_pipeline
from .prefix import PrefixTracker
from .restore import (
    FileReader,
    files_block,
    notes_block,
    read_notes,
    workspace_reader,
)
from .rewrite import FILES, NOTES, tagged_blocks, task_blocks
from .strategies import CompactionFailed, Offload, SlidingWindow, StepContext, Strategy
from .tokens import make_counter
from .trigger import Trigger
from .validator import InvalidRequest, check_compaction

DEFAULT_WINDOW = 32_768  # when neither the user nor the model says
TARGET_SHARE = 0.6  # of the trigger threshold a compaction aims for, so it is not re-triggered at once
NOTES_SHARE = 0.15  # of the threshold NOTES.md may take when read back
FILES_SHARE = 0.15  # of the threshold re-read files may take, in all
OFFLOAD_SHARE = 0.25  # of the threshold one tool result may take before it is offloaded
WARN_SHARE = 0.8  # of the trigger threshold at which the model is asked to take notes
STORM_CALLS = 2  # agent calls a compaction must buy before another may call the model


class ContextManager:
    def __init__(
        self,
        *,
        trigger: Trigger,
        accountant: Accountant,
        pipeline: Sequence[Strategy],
        keep_recent: int = 4,
        events: EventBus | None = None,
        notes_path: Path | None = None,
        file_reader: FileReader | None = None,
        state_dir: Path | None = None,
        workspace: Path | None = None,
        compact_instructions: str | None = None,
        model_window: int | None = None,
        restore_files: int = 5,
        breaker_limit: int = 2,
        flush: NotesFlush | None = None,
    ) -> None:
        self.trigger = trigger
        self.accountant = accountant
        self.pipeline = list(pipeline)
        self.keep_recent = keep_recent
        self.events = events
        self.notes_path = notes_path
        self.file_reader = file_reader or (workspace_reader(workspace) if workspace else None)
        self.state_dir = state_dir
        self.workspace = workspace
        self.compact_instructions = compact_instructions
        self.model_window = model_window or trigger.window
        self.restore_files = restore_files
        self.breaker = CircuitBreaker(breaker_limit)
        self.flush = flush
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
        if (
            self.flush is not None
            and self.flush.available(self._tools)
            and self._calls_since_compaction > 0
            and messages[-1].tool_results
            and self.accountant.window_estimate < self.trigger.window
        ):
            await self.flush(system, messages, self._tools, call_model, self._reserve)

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
        return int(self.trigger.threshold * TARGET_SHARE)

    def _step_context(self, system: str, call_model: ModelCaller) -> StepContext:
        threshold = self.trigger.threshold
        return StepContext(
            system=system,
            call_model=call_model,
            count=self.accountant.estimate,
            count_text=self.accountant.count_text,
            keep_recent=self.keep_recent,
            target=self.target,
            model_window=self.model_window,
            instructions=self.compact_instructions,
            state_dir=self.state_dir,
            workspace=self.workspace,
            offload_cap=max(200, int(threshold * OFFLOAD_SHARE)),
            summary_max_tokens=min(1024, max(256, threshold // 4)),
        )

    # --- offload of fresh tool output ---------------------------------------------------------

    def _offload_fresh(
        self, system: str, messages: list[Message], fresh: list[Message], call_model: ModelCaller
    ) -> list[Message]:
        if self._offload is None or not fresh:
            return messages
        ctx = self._step_context(system, call_model)
        fresh_ids = {id(m) for m in fresh}
        out = list(messages)
        # Fresh messages sit at the tail; walk back only over them.
        for index in range(len(out) - 1, -1, -1):
            message = out[index]
            if id(message) not in fresh_ids:
                break
            replaced = self._offload.message(message, ctx)
            if replaced is not message:
                out[index] = replaced
                self.accountant.replace(message, replaced)
                self._emit("offload", index=index, chars_before=_chars(message), chars_after=_chars(replaced))
        return out

    # --- compaction ---------------------------------------------------------------------------

    async def _compact(
        self, system: str, messages: list[Message], call_model: ModelCaller, *, reason: str
    ) -> list[Message]:
        tokens_before = self.accountant.tokens
        window_before = self.accountant.estimate(messages)
        ctx = self._step_context(system, call_model)
        storm = self._compactions > 0 and self._calls_since_compaction < STORM_CALLS
        current = list(messages)
        applied: list[str] = []
        lossy = False
        for step, last_resort in self._steps():
            size = self.accountant.estimate(current)
            if applied and size <= (self.trigger.threshold - 1 if last_resort else ctx.target):
                break
            if not last_resort and not self.breaker.allows(step.name):
                continue
            if storm and step.calls_model:
                self._fallback(step.name, "compacted too recently (compaction storm guard)")
                continue
            try:
                candidate = await step.apply(current, ctx)
                self._check(current, candidate)
            except (CompactionFailed, InvalidRequest) as exc:
                self._fail(step.name, str(exc), last_resort)
                continue
            if size > ctx.target and self.accountant.estimate(candidate) >= size:
                # Ran but did not help: not an error, but it counts towards retiring the step.
                if not last_resort:  # a last resort that cannot shrink further is not news
                    self._fail(step.name, "no reduction")
                continue
            if not last_resort:
                self.breaker.success(step.name)
            current = candidate
            applied.append(step.name)
            lossy = lossy or step.lossy
        if lossy:
            current = self._restore(current, messages)
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
        if window_after >= self.trigger.threshold:
            self._emit(
                "context_warning",
                message=(
                    f"after compaction the window still holds ~{window_after} tokens, over the "
                    f"trigger at {self.trigger.threshold}; the run goes on with cheaper steps"
                ),
            )
        return current

    def _steps(self) -> list[tuple[Strategy, bool]]:
        """The pipeline, then the last resorts it lacks: sliding-window, then offload with the
        cap in force (a single round can still hold one oversized output)."""
        steps: list[tuple[Strategy, bool]] = [(s, False) for s in self.pipeline]
        names = {s.name for s in self.pipeline}
        if "sliding-window" not in names:
            steps.append((SlidingWindow(), True))
        if "offload" not in names:
            steps.append((Offload(), True))
        return steps

    def _check(self, before: list[Message], after: list[Message]) -> None:
        check_compaction(before, after)

    def _fail(self, name: str, reason: str, last_resort: bool = False) -> None:
        # The last resorts are never retired: something must always be able to shrink.
        tripped = False if last_resort else self.breaker.failure(name)
        suffix = f"; skipped for the next {self.breaker.cooldown} compactions" if tripped else ""
        self._fallback(name, reason + suffix)

    def _fallback(self, name: str, reason: str) -> None:
        self._emit("compaction_fallback", strategy=name, reason=reason)

    def _restore(self, current: list[Message], original: list[Message]) -> list[Message]:
        """NOTES.md and the most recently used files go back into the head message."""
        threshold = self.trigger.threshold
        count = self.accountant.count_text
        head = current[0]
        stale = tagged_blocks(head, [NOTES, FILES])
        keep = [b for b in head.content[len(task_blocks(head)) :] if b not in stale]
        added = []
        notes = read_notes(self.notes_path, self.workspace)
        if notes is not None:
            added.append(notes_block(notes, int(threshold * NOTES_SHARE), count, self.notes_path))
        if self.file_reader is not None and self.restore_files > 0:
            visible = paths_still_visible(current)
            paths = [p for p in recent_file_paths(original, self.restore_files) if p not in visible]
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


def _chars(message: Message) -> int:
    return sum(len(getattr(b, "content", "") or getattr(b, "text", "")) for b in message.content)


def build_context(
    strategy: str | None = None,
    *,
    window: int | None = None,
    ratio: float | None = None,
    buffer: int | None = None,
    keep_recent: int | None = None,
    accounting: str = "context",
    counter: str = "auto",
    notes_path: str | Path | None = None,
    state_dir: str | Path | None = None,
    workspace: str | Path | None = None,
    events: EventBus | None = None,
    compact_instructions: str | None = None,
    model_window: int | None = None,
    exact_counter: Callable[[str], int] | None = None,
    file_reader: FileReader | None = None,
    flush: NotesFlush | None = None,
) -> ContextManager:
    """The context policy for the CLI options ``--strategy``, ``--context-window``,
    ``--compact-ratio``/``--compact-buffer``, ``--keep-recent``, ``--accounting``,
    ``--counter`` and ``--compact-instructions``.

    ``window`` defaults to ``model_window`` (what the model reports), then 32768. With neither
    ``ratio`` nor ``buffer`` the trigger is 0.7 of the window. ``counter="auto"`` is the CJK-aware
    estimate corrected by reported usage; ``"chars4"`` is seed 000's estimate, uncorrected;
    ``"exact"`` uses ``exact_counter`` (the model's tokenizer) or an offline BPE encoding.
    ``state_dir`` (offloaded outputs) defaults to ``WORKSPACE/.tinyharness/runs/RUN_ID``.
    ``flush`` (``--flush-notes``) makes the model save notes before each compaction.
    Raises ``ConfigError`` for bad values."""
    from ..errors import ConfigError

    if accounting not in ACCOUNTING_MODES:
        raise ConfigError(f"--accounting must be one of {', '.join(ACCOUNTING_MODES)}, got {accounting!r}")
    mode: AccountingMode = "cumulative" if accounting == "cumulative" else "context"
    try:
        raw = make_counter(counter, exact=exact_counter)
    except (ValueError, LookupError) as exc:
        raise ConfigError(f"--counter {counter}: {exc}") from None
    if keep_recent is not None and keep_recent < 0:
        raise ConfigError(f"--keep-recent must not be negative, got {keep_recent}")
    trigger = Trigger(window or model_window or DEFAULT_WINDOW, ratio=ratio, buffer=buffer)
    root = Path(workspace) if workspace is not None else None
    if state_dir is None and root is not None:
        run = events.run_id if events is not None else "run"
        state_dir = root / ".tinyharness" / "runs" / run
    return ContextManager(
        trigger=trigger,
        accountant=Accountant(raw, mode, calibrate=counter != "chars4"),
        pipeline=parse_pipeline(strategy),
        keep_recent=4 if keep_recent is None else keep_recent,
        events=events,
        notes_path=Path(notes_path) if notes_path is not None else None,
        file_reader=file_reader,
        state_dir=Path(state_dir) if state_dir is not None else None,
        workspace=root,
        compact_instructions=compact_instructions,
        model_window=model_window,
        flush=flush,
    )

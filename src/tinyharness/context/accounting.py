"""Token accounting: the counter the compaction trigger reads, in two modes.

- ``context`` (default): tokens in the current window = the last agent request's reported input
  + output, plus the estimate of what was appended since. When a provider reports no usage
  (a scripted run without it, some local servers), the whole window is estimated instead.
- ``cumulative``: the sum of input + output over the agent calls of this window,
  reset to 0 at compaction.

Compaction and memory calls never count towards the agent counter (a compaction call is not
the agent's work, and the counter restarts after it).

Counting is incremental. A ledger of the messages in the current window keeps each one's raw
estimate (keyed by identity, the message held so its id cannot be reused); a turn costs the
messages appended in that turn, never the whole history; so does the usage calibration, which
reuses the previous request's estimate for the messages it shares with the new one. Raw
estimates are cached unscaled, so a new usage-correction ratio applies to everything at once
without recounting.

With usage correction on, an agent reply counts at the output tokens the API reported for it
(clamped to the correction's bounds around its estimate), not at a scaled estimate. The ratio
is fitted on whole requests, mostly system prompt and tool list, whose estimate can be far off (a
local server in JSON tool mode sends a short tool list, not the schemas): scaled by it, a long
reply can be undercounted several times over. That showed after a compaction, when the counter
falls back from the reported usage to the estimate: a kept 1,024-token reply was estimated at
~440, and the next request was 1,600 tokens where the counter said 961.

The fixed part (system prompt and tool list) gets its own fit: once two requests with the same
fixed part differ enough in their messages, the ratio is fitted on that difference (usage
growth over estimate growth, so the fixed part cancels out), and the fixed part's real size is
what the usage leaves once the messages are counted at that ratio.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Literal

from ..messages import Message, Snapshot, frozen
from ..models.base import ModelRequest, ModelResponse, ToolSpec, Usage
from .prefix import identical_prefix
from .tokens import CachedCounter, CalibratedCounter, TokenCounter, count_tools

AccountingMode = Literal["context", "cumulative"]
ACCOUNTING_MODES: tuple[AccountingMode, ...] = ("context", "cumulative")
MIN_FIT_GROWTH = 200  # raw tokens two requests' messages must differ by to fit the ratio on that


class Accountant:
    def __init__(
        self,
        counter: TokenCounter,
        mode: AccountingMode = "context",
        *,
        calibrate: bool = True,
        tools_text: Callable[[Sequence[ToolSpec]], str | None] | None = None,
        usage_counts: bool = True,
    ) -> None:
        if mode not in ACCOUNTING_MODES:
            raise ValueError(f"accounting must be one of {ACCOUNTING_MODES}, got {mode!r}")
        self.mode: AccountingMode = mode
        # False (``--counter chars4``): the context counter is characters/4 of the window,
        # whatever usage the provider reports; cumulative still sums usage.
        self.usage_counts = usage_counts
        # The text the model's adapter sends for the tools, when not their schemas (JSON tool
        # mode): counted as schemas, the Qwen tool list was 860 tokens where 309 were sent, and
        # after a compaction the counter jumped from 452 to 973 with nothing added.
        self.tools_text = tools_text
        self.raw = CachedCounter(counter)
        self.calibration = CalibratedCounter(counter) if calibrate else None
        # Per message in the window: its raw estimate, or 0 and its known tokens (see _cost).
        self._ledger: dict[int, tuple[Message, int, int]] = {}
        self._window_raw = 0  # raw estimate of every message in the window
        self._window_known = 0  # tokens of the window's replies, as the API reported them
        self._pending_raw = 0  # raw estimate of messages appended since the last agent response
        self._pending_known = 0
        # Agent replies and their reported output tokens, kept across compactions.
        self._known: dict[int, tuple[Message, int]] = {}
        self._fixed_raw = 0  # raw estimate of the system prompt and tool definitions
        self._fixed_key: tuple[str, tuple[ToolSpec, ...]] | None = None
        self._fixed_fit: int | None = None  # the fixed part's fitted real tokens, once known
        self._last_fit: tuple[int, int] | None = None  # (messages raw, input) of the last request
        self._usage: Usage | None = None  # last agent response's usage, None after a reset
        # The last calibrated request's messages and their raw estimate, reused for the leading
        # messages of the next request that are the same objects.
        self._request: tuple[Message, ...] | Snapshot = ()
        self._request_raw = 0
        self.cumulative = 0
        self.agent_calls = 0

    # --- reading ------------------------------------------------------------------------------

    def scale(self, raw: int) -> int:
        return self.calibration.scale(raw) if self.calibration else raw

    @property
    def tokens(self) -> int:
        """The accounting counter the trigger reads."""
        if self.mode == "cumulative":
            return self.cumulative
        if self.usage_counts and self._usage is not None and self._usage.input_tokens > 0:
            return self._usage.total + self.scale(self._pending_raw) + self._pending_known
        return self.window_estimate

    @property
    def window_estimate(self) -> int:
        """Estimated input tokens of the next request (system, tools and window), whatever the
        mode: the hard guard that keeps requests inside the window uses it."""
        return self.fixed_tokens + self.scale(self._window_raw) + self._window_known

    @property
    def fixed_tokens(self) -> int:
        """The system prompt and tool list: fitted apart once possible, else scaled."""
        return self._fixed_fit if self._fixed_fit is not None else self.scale(self._fixed_raw)

    def estimate(self, messages: Sequence[Message]) -> int:
        """Estimated input tokens of a request carrying ``messages`` (cached per message)."""
        raw, known = self._sum(messages)
        return self.fixed_tokens + self.scale(raw) + known

    def count_text(self, text: str) -> int:
        return self.scale(self.raw.count_text(text))

    def knows(self, message: Message) -> bool:
        hit = self._ledger.get(id(message))
        return hit is not None and hit[0] is message

    # --- recording ----------------------------------------------------------------------------

    def set_fixed(self, system: str, tools: Sequence[ToolSpec] = ()) -> None:
        key = (system, tuple(tools))
        if key == self._fixed_key:
            return
        self._fixed_key = key
        as_text = self.tools_text(tools) if self.tools_text is not None else None
        tools_raw = count_tools(self.raw, tools) if as_text is None else self.raw.count_text(as_text)
        self._fixed_raw = self.raw.count_text(system) + tools_raw
        self._fixed_fit = self._last_fit = None  # a new fixed part: fitted again

    def absorb(self, messages: Sequence[Message]) -> list[Message]:
        """Add messages not yet in the window; returns the ones that were new."""
        fresh = []
        for message in messages:
            if self.knows(message):
                continue
            raw, known = self._cost(message)
            self._ledger[id(message)] = (message, raw, known)
            self._window_raw += raw
            self._window_known += known
            self._pending_raw += raw
            self._pending_known += known
            fresh.append(message)
        return fresh

    def absorb_tail(self, messages: Sequence[Message]) -> list[Message]:
        """Absorb the messages after the last one already known: O(appended), not O(history)."""
        start = len(messages)
        while start > 0 and not self.knows(messages[start - 1]):
            start -= 1
        return self.absorb(messages[start:])

    def replace(self, old: Message, new: Message) -> None:
        """A message of the window was rewritten in place (offload of a fresh tool result)."""
        hit = self._ledger.pop(id(old), None)
        if hit is None or hit[0] is not old:
            return
        self._window_raw -= hit[1]
        self._window_known -= hit[2]
        self._pending_raw = max(0, self._pending_raw - hit[1])
        self._pending_known = max(0, self._pending_known - hit[2])
        self.absorb([new])

    def record_response(self, request: ModelRequest, response: ModelResponse) -> None:
        if request.purpose != "agent":
            return  # compaction and memory calls are not the agent's window
        self.set_fixed(request.system, request.tools)
        self.absorb_tail(request.messages)
        if self.calibration and response.usage.input_tokens > 0:
            self._calibrate(self._messages_raw(request.messages), response.usage.input_tokens)
        self.agent_calls += 1
        self.cumulative += response.usage.total
        self._usage = response.usage
        self._pending_raw = self._pending_known = 0
        # The reply is about to be appended; its tokens are the reported output already.
        if self.calibration and response.usage.output_tokens > 0:
            self._know(response.message, response.usage.output_tokens)
        self.absorb([response.message])
        if response.usage.input_tokens > 0:
            self._pending_raw = self._pending_known = 0

    def _calibrate(self, messages_raw: int, reported: int) -> None:
        """Fit the ratio on the growth since the last request when it is large enough to say
        something (then also the fixed part), else on the whole request."""
        assert self.calibration is not None
        last, self._last_fit = self._last_fit, (messages_raw, reported)
        if last is None or abs(messages_raw - last[0]) < max(MIN_FIT_GROWTH, self._fixed_raw // 4):
            if self._fixed_fit is None:
                self.calibration.observe(self._fixed_raw + messages_raw, reported)
            return
        if self._fixed_fit is None:
            self.calibration.restart()  # earlier whole-request fits mixed the fixed part in
        self.calibration.observe(abs(messages_raw - last[0]), abs(reported - last[1]))
        fixed = max(0, reported - self.scale(messages_raw))
        low, high = (
            round(self._fixed_raw * b) for b in (CalibratedCounter.LOWEST, CalibratedCounter.HIGHEST)
        )
        self._fixed_fit = min(high, max(low, fixed))

    def _know(self, message: Message, output_tokens: int) -> None:
        """Count ``message`` at the output tokens reported for it, within the bounds the usage
        correction allows around its estimate (reasoning tokens that are never sent back must
        not make a short reply look huge)."""
        raw = self.raw.count_message(message)
        low, high = round(raw * CalibratedCounter.LOWEST), round(raw * CalibratedCounter.HIGHEST)
        self._known[id(message)] = (message, min(high, max(low, output_tokens)))

    def _cost(self, message: Message) -> tuple[int, int]:
        """(raw estimate, known tokens) of a message: a reply whose output tokens were reported
        counts at those, unscaled; any other message at its raw estimate."""
        hit = self._known.get(id(message))
        if hit is not None and hit[0] is message:
            return 0, hit[1]
        return self.raw.count_message(message), 0

    def _sum(self, messages: Iterable[Message]) -> tuple[int, int]:
        raw = known = 0
        for message in messages:
            r, k = self._cost(message)
            raw += r
            known += k
        return raw, known

    def _messages_raw(self, messages: Sequence[Message]) -> int:
        """``raw.count_messages(messages)``, counting only what changed since the last call:
        the previous total, minus the messages after the common identity prefix, plus the new
        ones (each count is cached per message and never changes)."""
        current = frozen(messages)
        keep = identical_prefix(self._request, current)
        raw = self._request_raw
        if keep < len(self._request):
            raw -= self.raw.count_messages(self._request[keep:])
        raw += self.raw.count_messages(current[keep:])
        self._request, self._request_raw = current, raw
        return raw

    def reset(self, messages: Sequence[Message]) -> None:
        """A compaction replaced the window: recount it, restart the counter (so the next
        check does not fire again at once)."""
        self._ledger.clear()
        self._window_raw = self._window_known = 0
        # Replies known by their reported size keep it; the dropped ones are forgotten.
        kept = {id(m) for m in messages}
        self._known = {key: hit for key, hit in self._known.items() if key in kept}
        self.absorb(messages)
        self._pending_raw = self._pending_known = 0
        self._usage = None
        self.cumulative = 0
        self._request, self._request_raw = (), 0  # the old window need not stay alive

    def floor_ratio(self, true_tokens_at_least: int) -> None:
        """The provider refused the request as too long: the estimate was low by at least this
        much, so the correction ratio is raised to match."""
        if self.calibration is None:
            return
        raw = self._window_raw if self._fixed_fit is not None else self._fixed_raw + self._window_raw
        rest = true_tokens_at_least - self._window_known - (self._fixed_fit or 0)
        if raw > 0 and rest > 0:
            self.calibration.at_least(rest / raw)

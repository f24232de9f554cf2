"""What the terminal shows while a turn runs: the reply streamed and rendered as Markdown, a
short line per tool call and result, compactions, and a live status line (elapsed time, tokens
in the window against the window, the plan's current step) that goes away when the turn ends."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from typing import Any

from rich.console import Console, ConsoleOptions, ConsoleRenderable, Group, RenderableType, RenderHook
from rich.live import Live
from rich.markdown import Markdown
from rich.segment import Segment
from rich.syntax import Syntax
from rich.text import Text

from ..events import compaction_tokens
from ..terminal import shown, visible

_ARG_PREVIEW = 60
_OUTPUT_PREVIEW = 100  # characters of a tool's output shown inline
KEPT_OUTPUTS = 500  # tool outputs /show can still show
_QUOTE_TAGS = ("<tool_output", "</tool_output")


class Defused:
    """``inner`` drawn with the control characters of its text shown, not obeyed: an escape
    sequence in a reply, a file or a tool's output cannot clear the screen, retitle the window
    or write the clipboard. The console's own codes (colours, the live area's cursor moves) are
    kept."""

    def __init__(self, inner: RenderableType) -> None:
        self.inner = inner

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterator[Segment]:
        for segment in console.render(self.inner, options):
            yield segment if segment.control else Segment(visible(segment.text), segment.style)


class _DefuseAll(RenderHook):
    def process_renderables(self, renderables: list[ConsoleRenderable]) -> list[ConsoleRenderable]:
        return [Defused(r) for r in renderables]


def defusing(console: Console) -> Console:
    """``console``, with everything printed through it defused (see ``Defused``)."""
    console.push_render_hook(_DefuseAll())
    return console


class Outputs:
    """The tool outputs of this chat, numbered in the order the calls were shown, for ``/show``."""

    def __init__(self) -> None:
        self._numbers: dict[str, int] = {}
        self._calls: dict[int, tuple[str, str]] = {}  # number -> (call id, the call as shown)
        self._contents: dict[str, str] = {}

    def number(self, call_id: str, shown: str) -> int:
        if call_id not in self._numbers:
            number = len(self._numbers) + 1
            self._numbers[call_id] = number
            self._calls[number] = (call_id, shown)
            self._calls.pop(number - KEPT_OUTPUTS, None)
        return self._numbers[call_id]

    def keep(self, call_id: str, content: str) -> None:
        self._contents[call_id] = content
        if len(self._contents) > KEPT_OUTPUTS:
            self._contents.pop(next(iter(self._contents)))

    def content(self, call_id: str) -> str | None:
        return self._contents.get(call_id)

    def get(self, number: int) -> tuple[str, str | None] | None:
        """The call as shown and its whole output (None when not kept), or None."""
        entry = self._calls.get(number)
        if entry is None:
            return None
        call_id, shown = entry
        return shown, self._contents.get(call_id)

    @property
    def last(self) -> int:
        return len(self._numbers)


def preview(content: str) -> str:
    """The first line that says something (not blank, not the ``<tool_output>`` quote around
    an MCP result), shortened; "" for an empty output."""
    lines = (line.strip() for line in content.splitlines())
    first = next(
        (line for line in lines if line and not line.startswith(("<tool_output", "</tool_output"))), ""
    )
    return first if len(first) <= _OUTPUT_PREVIEW else first[:_OUTPUT_PREVIEW] + "…"


def short_args(args: Any) -> str:
    """``path='a.md', content=<1,204 chars>``: enough to recognise the call, never huge."""
    if not isinstance(args, dict):
        text = str(args)
        return text if len(text) <= _ARG_PREVIEW else text[:_ARG_PREVIEW] + "…"
    parts = []
    for key, value in args.items():
        if isinstance(value, str) and len(value) > _ARG_PREVIEW:
            parts.append(f"{key}=<{len(value):,} chars>")
        else:
            shown = json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else repr(value)
            parts.append(f"{key}={shown}")
    return ", ".join(parts)


class _Status:
    """The live line; rendered afresh at every refresh, so the clock moves on its own."""

    def __init__(self, view: TurnView) -> None:
        self.view = view

    def __rich__(self) -> Text:
        view = self.view
        elapsed = time.monotonic() - view.started
        window = f" / {view.window:,}" if view.window else ""
        step = f" · plan: {view.step}" if view.step else ""
        cost = f" · {view.cost()}" if view.cost is not None else ""
        return Text(
            f"… {view.activity} · {elapsed:.1f}s · {view.tokens:,}{window} tokens in the window"
            f"{cost}{step} · Ctrl-C stops",
            style="dim",
        )


class TurnView:
    """Renders one turn's events. ``pause()`` stops the live area (before a question on the
    terminal); the next event starts it again."""

    def __init__(
        self,
        console: Console,
        *,
        tokens: int = 0,
        window: int | None = None,
        step: str = "",
        outputs: Outputs | None = None,
        cost: Callable[[], str] | None = None,
    ) -> None:
        self.console = console
        self.cost = cost  # the conversation's cost so far, for the status line ("$0.0123")
        self.outputs = outputs or Outputs()
        self.tokens = tokens
        self.window = window
        self.step = step  # the plan's current step ("2/5 Write the tests"), "" without a plan
        self.started = time.monotonic()
        self.activity = "thinking"
        self.text = ""
        self._live: Live | None = None

    def _renderable(self) -> RenderableType:
        parts: list[RenderableType] = []
        if self.text:
            parts.append(Markdown(self.text))
        parts.append(_Status(self))
        return Defused(Group(*parts))  # the live area is drawn past the console's render hooks

    def _ensure_live(self) -> None:
        if self._live is None:
            self._live = Live(
                self._renderable(),
                console=self.console,
                refresh_per_second=8,
                transient=False,
                vertical_overflow="visible",
            )
            self._live.start()

    def _flush_text(self) -> None:
        """End the live area, leaving the text written so far on the screen (no status line)."""
        if self._live is not None:
            self._live.update(Defused(Markdown(self.text) if self.text else Text("")), refresh=True)
            self._live.stop()
            self._live = None
        self.text = ""

    def start(self) -> None:
        self._ensure_live()

    def pause(self) -> None:
        self._flush_text()

    def finish(self) -> None:
        self._flush_text()

    def delta(self, text: str) -> None:
        self.activity = "writing"
        self.text += text
        done, rest = settled(self.text)
        if done:
            # Finished paragraphs are printed for good; the live area keeps only the paragraph
            # being written, so it stays small (a live area taller than the screen would be
            # drawn again and again) and rendering costs no more as the reply grows.
            self.text = done
            self._flush_text()
            self.text = rest
        self._ensure_live()
        assert self._live is not None
        self._live.update(self._renderable())

    def event(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind == "model_call":
            self.tokens = int(event.get("tokens") or self.tokens)
            return
        if kind == "tool_call":
            self._flush_text()
            call = f"{event.get('name')}({short_args(event.get('args'))})"
            number = self.outputs.number(str(event.get("call_id")), call)
            self.console.print(
                Text.assemble(
                    ("⏺ ", "cyan"),
                    (f"[{number}] ", "dim"),
                    (str(event.get("name")), "bold"),
                    f"({short_args(event.get('args'))})",
                )
            )
            self.activity = f"running {event.get('name')}"
            self._ensure_live()
        elif kind == "tool_result":
            self._flush_text()
            ok = bool(event.get("ok"))
            chars = int(event.get("chars") or 0)
            size = f"{chars:,} chars" + (", truncated" if event.get("truncated") else "")
            call_id = str(event.get("call_id"))
            content = self.outputs.content(call_id)
            line = Text(f"  ⎿ {'ok' if ok else 'error'}, {size}", style="green" if ok else "red")
            if content:
                first = preview(content)
                line.append(f": {first}", style="default")
                if first != content.strip():  # more than the preview shows: say how to see it
                    number = self.outputs.number(call_id, str(event.get("name")))
                    line.append(f"  (/show {number} for all of it)", style="dim")
            self.console.print(line)
            self.activity = "thinking"
            self._ensure_live()
        elif kind == "compaction":
            self._flush_text()
            before, after = compaction_tokens(event)
            self.console.print(
                Text(
                    f"[compact] #{event.get('n')} {event.get('strategy')}: tokens {before} -> {after}",
                    style="yellow",
                )
            )
            self.tokens = int(event.get("tokens_after") or self.tokens)
            self._ensure_live()
        elif kind == "plan":
            self.step = plan_step(event)
        elif kind == "error":
            self._flush_text()
            self.console.print(Text(shown(f"[{event.get('stop')}] {event.get('message')}"), style="red"))


def plan_step(event: dict[str, Any]) -> str:
    """The status line's plan part from a ``plan`` event: ``2/5 Write the tests``."""
    total = int(event.get("total") or 0)
    if not total:
        return ""
    current = event.get("current")
    step = str(current) if current else "all done"
    if len(step) > _ARG_PREVIEW:
        step = step[: _ARG_PREVIEW - 1] + "…"
    return f"{event.get('done', 0)}/{total} {step}"


def settled(text: str) -> tuple[str, str]:
    """``text`` split after its last blank line outside a code fence: the paragraphs that are
    complete, and the one still being written ("" and ``text`` when none is complete)."""
    cut = text.rfind("\n\n")
    while cut > 0 and text[:cut].count("```") % 2:
        cut = text.rfind("\n\n", 0, cut)
    if cut <= 0:
        return "", text
    return text[:cut], text[cut + 2 :]


def show_diff(console: Console, diff: str) -> None:
    if diff.startswith(("---", "@@")) or "\n+++ " in diff:
        console.print(Syntax(diff, "diff", theme="ansi_dark", background_color="default"))
    else:
        console.print(Text(diff))

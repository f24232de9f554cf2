"""What must outlive every compaction: the agent's plan, the pinned texts and the project
instructions (AGENTS.md files, see ``instructions``).

All are state of the run, not of the window: the ``todo`` and ``pin`` tools write them here,
the context manager puts them back into the head of the window after every compaction (and
audits that they are there), the loop saves them with each checkpoint so a resumed run keeps
them, and the progress line and the chat show the plan's current step. Nothing here renders a
message or touches a file.

May import nothing of the package: one shared object that the tools, the context manager and
the loop each hold.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, get_args

PlanStatus = Literal["pending", "in_progress", "done"]
PLAN_STATUSES: tuple[str, ...] = get_args(PlanStatus)
MAX_PLAN_ITEMS = 50
MAX_ITEM_CHARS = 300
MAX_PINS = 50
MAX_PIN_CHARS = 2000

_MARKS = {"pending": "[ ]", "in_progress": "[>]", "done": "[x]"}


@dataclass(frozen=True, slots=True)
class Instruction:
    """The text of one instruction file (AGENTS.md) as the model reads it, word for word, and
    where it came from (``AGENTS.md``, ``src/AGENTS.md``, ``$TINYHARNESS_HOME/AGENTS.md``)."""

    source: str
    text: str

    @property
    def shown(self) -> str:
        """As the model reads it: the source, then the text word for word."""
        return f"--- {self.source} ---\n{self.text}"


@dataclass(frozen=True, slots=True)
class PlanItem:
    content: str
    status: PlanStatus = "pending"


class AnchorError(ValueError):
    """A plan or a pin that cannot be kept as given (the tool result says what to change)."""


class Anchors:
    """The current plan (the whole list, replaced at each ``todo`` call) and the pins (only
    added to: a pin is meant to outlive everything). ``listeners`` are called with ``"plan"``
    or ``"pin"`` after each change (the tools report events through them)."""

    def __init__(
        self,
        pins: Iterable[str] = (),
        plan: Iterable[PlanItem] = (),
        instructions: Iterable[Instruction] = (),
    ) -> None:
        self.pins: list[str] = []
        self.plan: list[PlanItem] = []
        self.instructions: list[Instruction] = []
        self.listeners: list[Callable[[str], None]] = []
        for item in instructions:
            self.add_instruction(item, notify=False)
        for text in pins:
            self.add_pin(text, notify=False)
        if plan:
            self.set_plan(plan, notify=False)

    # --- the plan -----------------------------------------------------------------------------

    def set_plan(self, items: Iterable[PlanItem], *, notify: bool = True) -> None:
        checked = [_checked_item(item) for item in items]
        if len(checked) > MAX_PLAN_ITEMS:
            raise AnchorError(f"a plan holds at most {MAX_PLAN_ITEMS} items; merge some steps")
        self.plan = checked
        if notify:
            self._changed("plan")

    @property
    def current(self) -> PlanItem | None:
        """The step in progress, else the first pending one; None when all are done."""
        for status in ("in_progress", "pending"):
            for item in self.plan:
                if item.status == status:
                    return item
        return None

    @property
    def done(self) -> int:
        return sum(item.status == "done" for item in self.plan)

    def plan_text(self) -> str:
        """The plan as checklist lines (``[x]`` done, ``[>]`` in progress, ``[ ]`` pending)."""
        return "\n".join(f"{_MARKS[item.status]} {item.content}" for item in self.plan)

    def plan_summary(self) -> str:
        """One line for a status bar: ``2/5 done · now: Write the tests``."""
        if not self.plan:
            return ""
        step = self.current
        now = f" · now: {step.content}" if step is not None else " · all done"
        return f"{self.done}/{len(self.plan)} done{now}"

    # --- pins ---------------------------------------------------------------------------------

    def add_pin(self, text: str, *, notify: bool = True) -> bool:
        """Pin ``text`` (kept verbatim); False when it is already pinned."""
        if not isinstance(text, str) or not text.strip():
            raise AnchorError("a pin needs some text")
        if len(text) > MAX_PIN_CHARS:
            raise AnchorError(f"a pin holds at most {MAX_PIN_CHARS} characters; pin the part that matters")
        if text in self.pins:
            return False
        if len(self.pins) >= MAX_PINS:
            raise AnchorError(f"at most {MAX_PINS} pins; the pinned texts are already: {len(self.pins)}")
        self.pins.append(text)
        if notify:
            self._changed("pin")
        return True

    def pins_text(self) -> str:
        return "\n".join(f"- {pin}" for pin in self.pins)

    # --- project instructions -----------------------------------------------------------------

    def add_instruction(self, item: Instruction, *, notify: bool = True) -> bool:
        """Keep ``item`` for the rest of the run; False when its source is already kept (a
        file is loaded once, whatever it holds later)."""
        if not item.text.strip() or any(kept.source == item.source for kept in self.instructions):
            return False
        self.instructions.append(item)
        if notify:
            self._changed("instructions")
        return True

    # --- checkpoints --------------------------------------------------------------------------

    def to_state(self) -> dict[str, Any]:
        return {
            "instructions": [{"source": i.source, "text": i.text} for i in self.instructions],
            "pins": list(self.pins),
            "plan": [{"content": item.content, "status": item.status} for item in self.plan],
        }

    def load_state(self, state: dict[str, Any]) -> None:
        """Take the pins and plan a checkpoint saved; pins given for this run stay too. A
        malformed entry is skipped rather than failing the resume. Instructions loaded for
        this run win over the saved copy of the same file."""
        for entry in state.get("instructions", ()):
            if isinstance(entry, dict) and isinstance(entry.get("text"), str):
                self.add_instruction(Instruction(str(entry.get("source", "")), entry["text"]), notify=False)
        for text in state.get("pins", ()):
            if isinstance(text, str) and text.strip():
                try:
                    self.add_pin(text, notify=False)
                except AnchorError:
                    continue
        items = []
        for entry in state.get("plan", ()):
            if isinstance(entry, dict):
                try:
                    item = PlanItem(str(entry.get("content", "")), entry.get("status", ""))
                    items.append(_checked_item(item))
                except AnchorError:
                    continue
        if items:
            self.set_plan(items[:MAX_PLAN_ITEMS], notify=False)

    def _changed(self, what: str) -> None:
        for listener in list(self.listeners):
            listener(what)


def _checked_item(item: PlanItem) -> PlanItem:
    content = item.content.strip() if isinstance(item.content, str) else ""
    if not content:
        raise AnchorError("every plan item needs a description (content)")
    if item.status not in PLAN_STATUSES:
        raise AnchorError(f"a status is one of {', '.join(PLAN_STATUSES)}, got {item.status!r}")
    if len(content) > MAX_ITEM_CHARS:
        raise AnchorError(f"a plan item holds at most {MAX_ITEM_CHARS} characters; split it")
    return PlanItem(content, item.status)


def plan_items(entries: Sequence[Any]) -> list[PlanItem]:
    """Plan items from JSON-shaped entries (``{"content": ..., "status": ...}``)."""
    items = []
    for entry in entries:
        if isinstance(entry, PlanItem):
            items.append(entry)
        elif isinstance(entry, dict):
            items.append(PlanItem(entry.get("content", ""), entry.get("status", "pending")))
        else:
            raise AnchorError("each plan item is an object with content and status")
    return items

"""The guide of a profile that plans (small local models): the plan, the task focus, the set of
files, the checks of notes, and where notes go.

- ``start``: the plan (``guide.plan``): stated by flags (``--each``, ``--kind``), else asked
  in one request under a JSON schema (``classify``), else the exact path matches alone;
- ``next_turn``: the set's step (``coverage``), else the focus's answer prompt or forced tool
  (``focus``), else, for a list or count over a folder, ``list_dir`` on it;
- ``choices``: read_file's, edit_file's, note's and list_dir's arguments narrowed to the plan;
- ``review``: a note on a file of the set is checked (``coverage.review_note``); then a line
  reaches the user's notes file only when the plan's kind is notes; any other note goes to the
  run's own notes under ``.tinyharness/`` (``run_notes``), where the harness reads it back, and
  the user's project keeps no line the task did not ask for.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..events import EventBus
from ..messages import Message, ToolResultBlock, ToolUseBlock
from ..models.base import ChoiceMap
from ..tools.base import ToolError
from ..tools.builtin import notes_since
from ..tools.files import ReadState, head_text, text_files
from ..tools.notes import NotesFile
from ..tools.syntax import breaks
from ..tools.workspace import Workspace
from .base import Ask, Reviewed, Turn, refusal
from .coverage import COPIED, ECHOED, ROOM_CHARS, FileSetPlan, copies_read, repeats_result, review_note
from .focus import (
    CHANGE_TOOLS,
    MAX_EDIT_CHOICE_BYTES,
    MAX_SYMBOL_SEARCH_BYTES,
    READ_TOOL,
    TaskFocus,
    answer_ask,
    edit_choices,
    named_files,
    named_sites,
    named_symbols,
    symbol_files,
    untied_files,
)
from .plan import (
    KIND_MEANINGS,
    MAX_CANDIDATES,
    MAX_TARGETS,
    Evidence,
    PlanOptions,
    Rank,
    TaskPlan,
    evidence,
    kind_request,
    parse_plan,
    paths_of,
    plan_request,
    project_file,
    reconcile,
    simple_rank,
    top_files,
    with_terms,
)
from .sites import (
    CONFIG_SUFFIXES,
    assigned_as_stated,
    attr_modules,
    config_sites,
    defined_names,
    dropped_definitions,
    literal_swapped,
    literal_values,
    release_nearness,
    renamed_definitions,
    repairs,
    stated_assignment,
    stated_release,
    stated_swap,
    task_releases,
    task_short_releases,
    unquoted_string,
    unwritten_names,
    unwritten_values,
    value_count,
    writes_release,
)

MAX_NOTE_CHECK_BYTES = 20_000  # of a file, to check that a note is about it
RUN_NOTED = "Noted in this run's own notes ({where}): the task asked for no notes in {notes}."
NO_REWRITE = "update_notes would replace the notes of the files already noted; add a line with note"
LIST_TOOL = "list_dir"
UNPLANNED_FILE = "{path} is not a file this task changes; the plan changes {files}"
NO_CHANGE = "this task asks for no change to a file, so {path} stays as it is"
UNTIED = (
    "no line of {path} holds a value or a name this task writes, so which line to change is not "
    "known; {path} is unchanged. Say in the final answer that the line to change could not be "
    "determined"
)
RENAMED = (
    "this edit renames {names_old} to {names_new}, a name the task does not write; {path} is "
    "unchanged. A name an edit gives a definition must be one the task writes"
)
DROPPED = (
    "this edit leaves out {names}, a name the line binds; {path} is unchanged. An edit must keep "
    "every name its line binds"
)
UNWRITTEN = (
    "this edit puts {values} into {path}, a value the task does not write; {path} is unchanged. "
    "A value an edit writes must be one the task gives"
)
UNNAMED = (
    "this edit puts the names {names} into {path}, which the task does not write; {path} is "
    "unchanged. Change only the value the task gives"
)
UNQUOTED = (
    "{key}'s value in {path} is a quoted string, and this edit writes it without quotes (another "
    "type); {path} is unchanged. Write the new value in quotes"
)
MAX_READ_FIRST = 2  # the ranking's best files read first for a question that names nothing


def counted_kinds(listing: str, extensions: Sequence[str]) -> str:
    """The counts a listing's last line gives (``tools.files.entry_counts``: "[18 .html files,
    18 .txt files]") of the extensions the task writes (".txt"): "18 .txt files". Measured with
    the 0.5B on "How many .txt files does tests/basic contain?": after the listing it answered
    36, the header's count of all entries; the extension is the task's own string."""
    last = listing.strip().splitlines()[-1] if listing.strip() else ""
    if not (last.startswith("[") and last.endswith("]")) or not extensions:
        return ""
    parts = [p.strip() for p in last[1:-1].split(",")]
    wanted = [p for p in parts if any(p.split(" ")[1:2] == [ext] for ext in extensions)]
    return ", ".join(wanted)


def glob_counted(listing: str, globs: Sequence[str]) -> str:
    """The listing's files that the name part of a glob the task writes matches, counted and
    named ("5 files matching *_test.py: a_test.py, ..."), for globs that say more than an
    extension (``counted_kinds`` counts "*.py"). Measured with the 0.5B on "Combien de fichiers
    *_test.py y a-t-il dans colorama/tests ?" and "How many test_*.py files are in the test
    folder?": after the listing it answered the folder's count of .py files (7 for 5, 8 for 7).
    The glob is the task's own string, in any language."""
    lines = listing.strip().splitlines()
    names = [line.split("  ")[0] for line in lines[1:] if line and not line.startswith("[")]
    files = [n for n in names if not n.endswith("/")]
    said = []
    for pattern in dict.fromkeys(g.rsplit("/", 1)[-1] for g in globs):
        if not pattern or _EXTENSION_GLOB.fullmatch(pattern):
            continue
        matched = [n for n in files if fnmatch.fnmatchcase(n, pattern)]
        if matched:
            more = ", ..." if len(matched) > MAX_COUNTED_NAMES else ""
            shown = ", ".join(matched[:MAX_COUNTED_NAMES]) + more
            noun = "file" if len(matched) == 1 else "files"
            said.append(f"{len(matched)} {noun} matching {pattern}: {shown}")
    return "; ".join(said)


_EXTENSION_GLOB = re.compile(r"\*\.[A-Za-z0-9]+")
MAX_COUNTED_NAMES = 20


def user_note(call: ToolUseBlock, results: Sequence[str] = ()) -> Reviewed:
    """A note bound for the user's notes file, refused when it copies a read or gives back one
    of ``results``, the tool results the run has just seen (a set's notes are held to this in
    ``review_note``; a note per named file is too: the 0.5B, asked for a one-line note on each
    of three named files, noted each read whole, line numbers and all; refused, it noted the
    refusal, then "Noted in NOTES.md (119 characters in total)", and those lines landed in the
    user's NOTES.md)."""
    text = call.input.get("text") if isinstance(call.input, dict) else None
    if not isinstance(text, str):
        return call
    if copies_read(text):
        return refusal(call, COPIED)
    return refusal(call, ECHOED) if repeats_result(text, results) else call


class StepsGuide:
    """The guide over a task focus and a file set already made (``focus``, ``file_set``; either
    may be None) and a plan stated (``plan``; by default exact path matches only): the library's
    way to drive these plans without the CLI. ``PlanGuide`` builds them itself and asks the plan."""

    def __init__(
        self,
        focus: TaskFocus | None = None,
        file_set: FileSetPlan | None = None,
        *,
        plan: TaskPlan | None = None,
        known: Sequence[str] = (),
        events: EventBus | None = None,
        workspace: Path | None = None,
    ) -> None:
        self.space = Workspace(workspace) if workspace is not None else None  # for edit choices
        self.focus: TaskFocus | None = focus
        self.file_set: FileSetPlan | None = file_set
        self.stated = plan
        self.known = tuple(known)  # texts a note must not echo (the tools' descriptions)
        self.results: list[str] = []  # the last turn's tool results (a note must not give them back)
        self.events = events or EventBus()
        self.task = ""
        self.plan = TaskPlan()
        self.found = Evidence()
        self.own_calls = 0  # calls the guide made itself (their ids: "guide_1", ...)
        self.first_turn = False  # the next turn is the task's first (``start`` sets it)

    async def _plan_for(self, task: str, ask: Ask) -> TaskPlan:
        return self.stated if self.stated is not None else TaskPlan(source="paths")

    async def start(self, task: str, ask: Ask) -> None:
        self.task, self.first_turn = task, True
        self.found = self._evidence(task)
        self.plan = await self._plan_for(task, ask)
        if self.focus is not None:
            self.focus.start(task, self.plan)
        if self.file_set is not None:
            self.file_set.start(task, self.plan)
        self.events.emit(
            "plan",
            kind=self.plan.kind,
            targets=list(self.plan.targets),
            source=self.plan.source,
            files=len(self.file_set.set) if self.file_set is not None else 0,
            turns=self.file_set.turns() if self.file_set is not None else 0,
            terms=list(self.plan.terms),
        )

    # --- each turn ---------------------------------------------------------------------------

    def next_turn(self, messages: Sequence[Message]) -> Turn | None:
        turn = self._next_turn(messages)
        return self._own_call(turn, messages) if turn is not None else None

    def _own_call(self, turn: Turn, messages: Sequence[Message]) -> Turn:
        """A read or a listing the plan has chosen whole, made by the guide itself (``Turn.call``)
        instead of asked of the model under a grammar that admits it: the first of the paths
        the model would be offered that this run has not called the tool on yet (one that
        failed, a binary file, is the model's choice again). Measured with the 0.5B on a notes
        task over six files: a read turn took 17-25 s, the note after it about 16 s, and the
        suite's 12 turns ended before the last files; the seed's task on 37 files took ~75
        turns against the CLI's default limit of 50."""
        if turn.tool not in (READ_TOOL, LIST_TOOL) or turn.prompt is not None or turn.view is not None:
            return turn
        offered = self.choices(turn.tool, messages).get("path")
        if not isinstance(offered, Sequence) or isinstance(offered, str):
            return turn
        called = {
            os.path.normpath(str(c.input.get("path", ".")))
            for m in messages
            for c in m.tool_uses
            if c.name == turn.tool and isinstance(c.input, dict)
        }
        path = next((p for p in offered if os.path.normpath(p) not in called), None)
        if path is None:
            return turn
        self.own_calls += 1
        return Turn(call=ToolUseBlock(f"guide_{self.own_calls}", turn.tool, {"path": path}))

    def _next_turn(self, messages: Sequence[Message]) -> Turn | None:
        focus, file_set = self.focus, self.file_set
        after_results = bool(messages and messages[-1].tool_results)
        if after_results:
            self.results = [r.content for r in messages[-1].tool_results if isinstance(r.content, str)]
        first, self.first_turn = self.first_turn, False
        if file_set is not None and (after_results or first):
            # after tool results, and at the task's start (the set's first file is read then)
            step = file_set.next_step(messages)
            if step is not None:
                return step
        if after_results:  # right after tool results
            prompt = focus(messages) if focus is not None else None
            if prompt is not None:
                return Turn(
                    prompt, final_only=True, done=focus.found(messages) if focus is not None else None
                )
        if self._folders_to_list(messages):
            return Turn(tool=LIST_TOOL)
        tool = focus.next_tool(messages) if focus is not None else None
        if tool is not None:
            return Turn(tool=tool)
        return self._listed_answer(messages)

    def _list_folders(self) -> list[str]:
        """The folders a list or count is over (its folder targets, a glob's folder), and for a
        question, the folders it names with no set of files to read: each is listed first."""
        if self.plan.kind not in ("list", "answer") or (self.file_set is not None and self.file_set.set):
            return []
        wide = [t for t in self.plan.targets if t.endswith("/") or ("*" in t and self.plan.kind == "list")]
        folders = [t.split("*", 1)[0] for t in wide]
        if self.plan.kind == "answer":
            folders = [*folders, *self.found.folders]
        return list(dict.fromkeys(f.rstrip("/") or "." for f in folders))

    def _evidence(self, task: str) -> Evidence:
        space = self.space
        if space is None:
            return Evidence()
        notes = getattr(self, "notes", None)
        name = notes.path.name if isinstance(notes, NotesFile) else "NOTES.md"
        return evidence(task, list(text_files(space)), name)

    def _folders_to_list(self, messages: Sequence[Message]) -> list[str]:
        """The folders above not listed yet in this run."""
        folders = self._list_folders()
        if not folders:
            return []
        listed = {
            os.path.normpath(str(c.input.get("path", ".")))
            for m in messages
            for c in m.tool_uses
            if c.name == LIST_TOOL and isinstance(c.input, dict)
        }
        return [f for f in folders if os.path.normpath(f) not in listed]

    def _listed_answer(self, messages: Sequence[Message]) -> Turn | None:
        """Right after the last listing of a list or count (no file to read): the answer now.
        Measured with the 0.5B on "List the .py files in the folder src/shop.": left free after
        the listing, it listed and read until the iteration limit."""
        folders = self._list_folders()
        if not folders or not messages or not messages[-1].tool_results:
            return None
        if self.focus is not None and self.focus.named(messages):
            return None  # the planned reads come, then the focus asks for the answer
        last = {c.name for c in messages[-2].tool_uses} if len(messages) > 1 else set()
        if LIST_TOOL not in last:
            return None
        listing = "\n".join(r.content for r in messages[-1].tool_results if not r.is_error)
        # No "[Listed: ...]" label: the 0.5B answered "Listed: src/shop/" with it. The listing
        # itself is the answer when the model's is only the ask copied back (``done``).
        counted = glob_counted(listing, self.found.globs) or counted_kinds(listing, self.found.extensions)
        ask = f"[{counted}] {answer_ask(self.task)}" if counted else answer_ask(self.task)
        return Turn(ask, final_only=True, done=listing.strip() or None)

    def _edit_choices(self, messages: Sequence[Message]) -> ChoiceMap:
        """edit_file's choices in a run that may write: the named files, their lines as old."""
        focus = self.focus
        if self.space is None or focus is None or focus.answer or not focus.named(messages):
            return {}
        return edit_choices(self.space, messages, focus)

    def choices(self, tool: str, messages: Sequence[Message]) -> ChoiceMap:
        focus, file_set = self.focus, self.file_set
        if tool == "read_file":
            unread = focus.unread(messages) if focus is not None else []
            left = file_set.read_choices(messages) if file_set is not None and not unread else []
            return {"path": unread or left} if unread or left else {}
        if tool == "edit_file":
            return self._edit_choices(messages)
        if tool == "note":
            return (file_set.note_choices(messages) if file_set is not None else {}) or (
                focus.note_choices(messages) if focus is not None else {}
            )
        if tool == LIST_TOOL and (folders := self._folders_to_list(messages)):
            return {"path": folders}
        return {}

    # --- calls -------------------------------------------------------------------------------

    def review(self, call: ToolUseBlock) -> Reviewed:
        file_set = self.file_set
        in_set = file_set is not None and bool(file_set.set)
        if call.name == "update_notes" and self.plan.kind == "notes" and in_set:
            return refusal(call, NO_REWRITE)
        if call.name == READ_TOOL and file_set is not None and in_set:
            return file_set.review_read(call)
        if call.name != "note":
            return call
        if file_set is not None and in_set:
            checked = review_note(file_set, call, self.known, self.results)
            if isinstance(checked, ToolResultBlock):
                return checked
            call = checked
        return self._route(call)

    def _route(self, call: ToolUseBlock) -> Reviewed:
        return user_note(call, self.results)

    def unfinished(self, messages: Sequence[Message]) -> str | None:
        return self.file_set.unfinished(messages) if self.file_set is not None else None

    # --- saved with the run ------------------------------------------------------------------

    def to_state(self) -> dict[str, Any]:
        state: dict[str, Any] = {"task": self.task, "plan": self.plan.to_state(), "own_calls": self.own_calls}
        if self.file_set is not None:
            state["set"] = self.file_set.to_state()
        return state

    def load_state(self, state: dict[str, Any]) -> None:
        calls = state.get("own_calls")
        self.own_calls = calls if isinstance(calls, int) else 0
        if not isinstance(state.get("task"), str):
            return
        self.task = state["task"]
        self.found = self._evidence(self.task)
        self.plan = TaskPlan.from_state(state.get("plan") or {})
        if self.focus is not None:
            self.focus.start(self.task, self.plan)
        if self.file_set is not None and isinstance(state.get("set"), dict):
            self.file_set.load_state(state["set"])


class PlanGuide(StepsGuide):
    """The guide above for one run (or one chat: ``start`` again for each message's task).

    ``workspace`` is the folder; ``read_state`` the file tools' read state; ``notes`` the
    user's notes file (the tools write it); ``run_notes`` the run's own notes under
    ``.tinyharness/``; ``classify`` asks the plan request; ``rank`` gives the plan's candidates
    (default ``simple_rank``; ``retrieval`` plugs in here); ``options`` what flags state;
    ``may_write``: the run may change files (no answer forced after the reads);
    ``room_chars``: what fits in the window together (``coverage.set_for``)."""

    def __init__(
        self,
        workspace: Path,
        *,
        read_state: ReadState,
        notes: NotesFile,
        run_notes: NotesFile | None = None,
        classify: bool = True,
        rank: Rank | None = None,
        options: PlanOptions | None = None,
        events: EventBus | None = None,
        may_write: bool = False,
        room_chars: int | None = ROOM_CHARS,
        known: Sequence[str] = (),
    ) -> None:
        self.root = Path(workspace)
        space = Workspace(self.root)
        self.space = space
        self.spaced = space
        self.read_state = read_state
        self.notes = notes
        self.run_notes = run_notes
        self.classify = classify
        self.rank: Rank = rank or simple_rank(lambda: text_files(space))
        self.options = options or PlanOptions()
        self.events = events or EventBus()
        self.known = tuple(known)  # texts a note must not echo (the tools' descriptions)
        self.results: list[str] = []  # the last turn's tool results (a note must not give them back)
        self.task = ""
        self.found = Evidence()
        self.plan = TaskPlan()
        self.stated = None
        self.own_calls = 0
        self.first_turn = False
        user_notes = notes_since(notes)
        self._notes_text = lambda: "\n".join(t for t in (user_notes(), self._run_notes_text()) if t)
        files = lambda: text_files(space)  # noqa: E731
        self.focus: TaskFocus = TaskFocus(
            files,
            read_state.lines_read,
            read_text=lambda path: head_text(space, path, MAX_SYMBOL_SEARCH_BYTES),
            answer=not may_write,
            notes_text=self._notes_text,
        )
        self.file_set: FileSetPlan = FileSetPlan(
            files,
            self._notes_text,
            read_state.lines_read,
            self._check_text,
            events=self.events,
            room_chars=room_chars,
            size=lambda path: len(head_text(space, path, MAX_SYMBOL_SEARCH_BYTES)),
        )

    @property
    def may_write(self) -> bool:
        return not self.focus.answer

    @may_write.setter
    def may_write(self, value: bool) -> None:
        self.focus.answer = not value

    def _check_text(self, path: str) -> str:
        return head_text(self.spaced, path, MAX_NOTE_CHECK_BYTES)

    def _run_notes_text(self) -> str:
        return self.run_notes.read() if self.run_notes is not None else ""

    async def _plan_for(self, task: str, ask: Ask) -> TaskPlan:
        each, kind = self.options.each, self.options.kind
        if each is not None:
            return TaskPlan(kind or "notes", (each.removeprefix("./"),), "flag")
        if kind is not None:
            return TaskPlan(kind, (), "flag")
        found = self.found
        named = self._named_files(task) if self.classify else []
        if not self.classify or named:
            # The files are named: the kind is notes when the task names the notes file.
            if found.notes or not named:
                return TaskPlan("notes" if found.notes else None, source="paths")
            return await self._named_plan(task, named, ask)
        if found.notes and found.globs:
            # A note for each file of a glob the task writes, and the task names the notes
            # file: the plan is stated by the task's own strings, no request (it
            # took 53-73 s on the acceptance project's 80 candidates at load 8).
            return TaskPlan("notes", found.globs[:1], "paths")
        items = list(self.rank(self.root, task, MAX_CANDIDATES))
        offered = list(dict.fromkeys([*found.globs, *found.folders, *paths_of(items)]))[:MAX_CANDIDATES]
        response = await ask(plan_request(task, offered))
        said = parse_plan(response.message.text, offered)
        plan = replace(reconcile(said, found), terms=said.terms)
        files = [t for t in plan.targets if not t.endswith("/") and "*" not in t]
        if plan.terms and plan.kind in ("edit", "answer"):
            # What a change or a question falls back on is ranked with the task's words as the
            # code writes them too (a Chinese version question ranked test files with Chinese
            # text first).
            items = list(self.rank(self.root, with_terms(task, plan.terms), MAX_CANDIDATES))
        if plan.kind == "edit":
            # A change to a file the task does not name: the ranking's best file, one, not the
            # model's choice (measured with the 0.5B on "Change this project's version": it
            # chose change logs and test files, and edited tests/misc/h1.txt).
            ranked = paths_of(items)
            best = (
                self._release_file(task, ranked)
                or self._value_file(task, ranked)
                or top_files(items, 1)
                or files[:1]
            )
            chosen = [self._attr_target(path, task, plan.terms) for path in best[:1]]
            return TaskPlan("edit", tuple(chosen), plan.source, plan.terms)
        if plan.kind == "answer" and not found.folders:
            plan = self._question_reads(plan, files, top_files(items, MAX_READ_FIRST))
        return plan

    def _release_file(self, task: str, ranked: Sequence[str]) -> list[str]:
        """For a change that writes a release number, the file binding the release nearest it
        (``sites.release_nearness``), the ranking's order first: [] when the task writes none
        or no file shares a leading number with it. Measured with the 0.5B on "Set the release
        number of this package to 0.7.3.": the ranking with its words (set, release, number)
        put isodates.py first, and no file was changed; the version bump in Chinese and in
        English named the version and was found."""
        wanted, short = task_releases(task), False
        if not wanted:
            wanted, short = task_short_releases(task), True
        if not wanted or self.space is None:
            return []
        files = list(text_files(self.spaced))
        order = [*(p for p in ranked if p in set(files)), *files]
        nearest, found = 0, ""
        for path in dict.fromkeys(order):
            if not path.endswith((".py", ".pyi", *CONFIG_SUFFIXES)):
                continue
            near = release_nearness(path, head_text(self.spaced, path, MAX_EDIT_CHOICE_BYTES), wanted, short)
            if near > nearest:
                nearest, found = near, path
        return [found] if found else []

    def _value_file(self, task: str, ranked: Sequence[str]) -> list[str]:
        """For a change that writes values (``256``, ``128``) and names no file, the Python file
        whose binding line holds the most of them (``sites.value_count``), the ranking's order
        breaking ties; [] when none holds one. Measured with the 0.5B on "Make the
        compiled-expression cache keep up to 256 expressions instead of 128.": the ranking's
        best file was visitor.py, where no line holds either, and every edit was refused."""
        if self.space is None:
            return []
        files = list(text_files(self.spaced))
        order = [*(p for p in ranked if p in set(files)), *files]
        most, found = 0, ""
        for path in dict.fromkeys(order):
            if path.endswith((".py", ".pyi")):
                count = value_count(head_text(self.spaced, path, MAX_EDIT_CHOICE_BYTES), task)
                if count > most:
                    most, found = count, path
        return [found] if found else []

    def _attr_target(self, path: str, task: str, terms: Sequence[str]) -> str:
        """The file a change to ``path`` (a config file the task does not name) is made in: the
        module its line tied to the task refers to by setuptools' ``attr:`` (``version = attr:
        pathspec._meta.__version__``), where the value is; else ``path``. Measured with the
        0.5B on "Bump the version to 0.12.2.": the ranking's best file was setup.cfg, and it
        rewrote that line into ``... + 1``."""
        if not path.endswith(CONFIG_SUFFIXES):
            return path
        text = head_text(self.spaced, path, MAX_EDIT_CHOICE_BYTES)
        lines = text.splitlines()
        files = set(text_files(self.spaced))
        for line in [*config_sites(task, lines), *named_sites(path, text, task, terms, lines)]:
            module = next((m for m in attr_modules(line) if m in files), None)
            if module is not None:
                return module
        return path

    def _question_reads(self, plan: TaskPlan, files: list[str], top: list[str]) -> TaskPlan:
        """The files a question that names nothing reads: the model's first choice, else the
        ranking's best, and the project file (where a project states its version, license,
        authors and the language versions it supports). Left free, the 0.5B paged through
        README, LICENSE and CHANGELOG for a version question; given the ranking's two best, a
        question on the Python versions read an exception module and the change log (the words
        of such a question are everywhere). The project file takes the place of the model's
        later choices, not a place beside them: added to three, it made them too large to read
        together, read as a set with a note each, and the answer was lost (md-license, "MIT"
        for BSD); with LICENSE, TODO.txt and README.rst chosen for "What license is this
        project under?", isodate's BSD text (which never says "BSD") was read as MIT, and the
        classifier in pyproject.toml that says it was never read (is-license)."""
        manifest = project_file(text_files(self.spaced))
        if files:
            if manifest is None or manifest in files:
                return plan
            return replace(plan, targets=(files[0], manifest))
        if not top:
            return plan
        first = [*top[:1], manifest, *top[1:]] if manifest else top
        first = list(dict.fromkeys(first))[:MAX_READ_FIRST]
        targets = list(dict.fromkeys([*first, *plan.targets]))[:MAX_TARGETS]
        return replace(plan, targets=tuple(targets))

    def _named_files(self, task: str) -> list[str]:
        """The workspace files the task names (by path or unique name), else those defining a
        symbol it names: exact evidence, in any language, of what the task is about."""
        space = self.spaced
        files = list(text_files(space))
        named = named_files(task, files)
        if named:
            return named
        read = lambda path: head_text(space, path, MAX_SYMBOL_SEARCH_BYTES)  # noqa: E731
        return symbol_files(named_symbols(task), files, read)[1]

    async def _named_plan(self, task: str, named: Sequence[str], ask: Ask) -> TaskPlan:
        """The plan of a task naming its files: the targets are those files, and only the kind
        is asked, in one tiny request whose grammar admits a kind and nothing else (without it
        the plan had no kind: an edit of a named file was left free, and the 0.5B wrote free
        text to max_tokens for minutes; a task asking a note per named file was answered).
        A change is offered only to a run that may write. A list or count over a folder and
        an extension the task writes ("How many .py files does src/shop hold, __init__.py
        included?") lists that folder; one over a named file alone ("How many functions does
        serializers.py define?") reads it, and the answer prompt gives its outline."""
        found = self.found
        kinds = [k for k in KIND_MEANINGS if k != "edit" or self.may_write]
        response = await ask(kind_request(task, named, kinds))
        said = parse_plan(response.message.text, ())
        kind = said.kind
        if kind == "edit" and not self.may_write:
            kind = None
        plan = reconcile(TaskPlan(kind, (), "model"), Evidence(notes=found.notes, question=found.question))
        if plan.kind == "list" and found.extensions and found.folders:
            return TaskPlan("list", found.folders[:MAX_TARGETS], "model", said.terms)
        return TaskPlan(plan.kind, tuple(named[:MAX_TARGETS]), "model", said.terms)

    def review(self, call: ToolUseBlock) -> Reviewed:
        """update_notes on a task that asked for no notes rewrites the run's own notes; a change
        to an existing file the plan did not choose is refused (``_unplanned_change``), as is
        one no line ties to (``_untied``) and a rename the task does not ask for, unless it
        reads as its one changed literal (``_literal_only``)."""
        reason = self._unplanned_change(call) or self._untied(call)
        if reason is not None:
            return refusal(call, reason)
        call = self._stated(call)
        renamed = self._unasked_rename(call)
        if renamed is not None:
            kept = self._literal_only(call)  # the old line, only its one changed literal changed
            if kept is None:
                return refusal(call, renamed)
            call = kept
        call = self._repaired(call)
        unwritten = self._unwritten_value(call)  # after the repair: a copied line number is none
        if unwritten is not None:
            return refusal(call, unwritten)
        retyped = self._unquoted(call)
        if retyped is not None:
            return refusal(call, retyped)
        if call.name == "update_notes" and self.plan.kind != "notes" and self.run_notes is not None:
            content = call.input.get("content") if isinstance(call.input, dict) else None
            if isinstance(content, str):
                self.run_notes.overwrite(content)
                where = RUN_NOTED.format(where=self._where(), notes=self.notes.path.name)
                return ToolResultBlock(call.id, where)
        return super().review(call)

    def _unquoted(self, call: ToolUseBlock) -> str | None:
        """Why an edit_file call of a TOML file may not run: it turns a quoted value into a bare
        one (``sites.unquoted_string``)."""
        args = call.input if isinstance(call.input, dict) else {}
        path, old, new = args.get("path"), args.get("old"), args.get("new")
        if call.name != "edit_file" or not all(isinstance(v, str) for v in (path, old, new)):
            return None
        key = unquoted_string(str(path), str(old), str(new))
        return UNQUOTED.format(key=key, path=path) if key is not None else None

    def _unwritten_value(self, call: ToolUseBlock) -> str | None:
        """Why an edit_file call of a Python or TOML/INI/cfg file may not run: it puts in a
        value the task does not write (``sites.unwritten_values``), a guess. Measured with the
        0.5B on "Rename the constant _int64_struct in encoding.py to _UINT64_STRUCT.": it
        changed ``struct.Struct(">Q")`` to ``struct.Struct(00)``; asked to make tabulate keep
        whitespace, it renamed the project in pyproject.toml to "tabulate2"; both ended
        "Changed". Likewise a Python edit that puts in names the task does not write
        (``sites.unwritten_names``: ``json.load(f)`` made ``json.loads(data)``)."""
        args = call.input if isinstance(call.input, dict) else {}
        path, old, new = args.get("path"), args.get("old"), args.get("new")
        if call.name != "edit_file" or self.plan.kind != "edit":
            return None
        if not (isinstance(path, str) and path.endswith((".py", ".pyi", *CONFIG_SUFFIXES))):
            return None
        if not isinstance(old, str) or not isinstance(new, str):
            return None
        python = path.endswith((".py", ".pyi"))
        values = unwritten_values(old, new, self.task, python=python)
        if values:
            return UNWRITTEN.format(values=", ".join(values), path=path)
        names = unwritten_names(old, new, self.task) if python else []
        return UNNAMED.format(names=", ".join(names), path=path) if names else None

    def _unplanned_change(self, call: ToolUseBlock) -> str | None:
        """Why an edit_file or write_file call may not change an existing file: the plan's
        kind is known and is no change, or it is a change of other files. A new file may still
        be written. Measured with the 0.5B: asked to change the project's version, it changed
        "Header 2" to "Header 3" in a test file: a wrong change in the user's files."""
        kind = self.plan.kind
        args = call.input if isinstance(call.input, dict) else {}
        path = args.get("path")
        if call.name not in CHANGE_TOOLS or kind in (None, "explore") or not isinstance(path, str):
            return None
        planned = self.focus.named(()) if kind == "edit" else []
        where = os.path.normpath(path)
        if where in {os.path.normpath(p) for p in planned} or not (self.root / where).is_file():
            return None
        if planned:
            return UNPLANNED_FILE.format(path=path, files=", ".join(planned))
        return NO_CHANGE.format(path=path)

    def _repaired(self, call: ToolUseBlock) -> ToolUseBlock:
        """An edit_file call whose new line would break its file, rewritten to the first of
        ``sites.repairs`` that does not (the call as it was otherwise, for the tool's own parse
        check to refuse). Measured with the 0.5B on "make want_bytes default to
        errors="replace"": offered the right line, it wrote read_file's line number into the new
        text and dropped the annotation, five times, and the run stopped stuck."""
        args = call.input if isinstance(call.input, dict) else {}
        path, old, new = args.get("path"), args.get("old"), args.get("new")
        if call.name != "edit_file" or not (
            isinstance(path, str) and isinstance(old, str) and isinstance(new, str)
        ):
            return call
        where = self.root / os.path.normpath(path)
        if self.plan.kind != "edit" or self.space is None or not where.is_file() or "\n" in old:
            return call
        text = head_text(self.space, os.path.normpath(path), MAX_SYMBOL_SEARCH_BYTES)
        if text.count(old) != 1 or breaks(path, text, text.replace(old, new, 1)) is None:
            return call
        for line in repairs(old, new):
            if breaks(path, text, text.replace(old, line, 1)) is None:
                return ToolUseBlock(call.id, call.name, {**args, "new": line})
        return call

    def _stated(self, call: ToolUseBlock) -> ToolUseBlock:
        """An edit_file call of a line holding the value the task states a change of (from one
        value to another, ``sites.stated_swap``) whose new line does not make exactly that
        change of values: read as that change, if the file still parses so; else the call as it
        was. Measured with the 0.5B: on 'make D_DEFAULT the weeks format "P%p" instead of
        "P%P"', offered the right line, it copied it as the new one five times and the run
        stopped stuck; on "setz in demos/demo06.py MAXY von 24 auf 30" it turned ``MINY, MAXY =
        1, 24`` into ``MINY, MAXY = 24, 30``, changing MINY too (a wrong change in the user's
        file). A new line with the stated values and other words (a comment) is kept."""
        args = call.input if isinstance(call.input, dict) else {}
        path, old, new = args.get("path"), args.get("old"), args.get("new")
        if call.name != "edit_file" or self.space is None or self.plan.kind != "edit":
            return call
        if not (isinstance(path, str) and isinstance(old, str) and isinstance(new, str)):
            return call
        if "\n" in old.strip() or not path.endswith((".py", ".pyi")):
            return call
        swapped = stated_swap(old, self.task)
        if swapped is not None and literal_values(new) == literal_values(swapped):
            return call
        if swapped is None:
            # a binding the task writes as code ("(check_ltr=True)"): the 0.5B, offered the
            # right header, appended ``check_ltr = True`` after it, which breaks the file
            swapped = stated_assignment(old, self.task)
            if swapped is not None and assigned_as_stated(new, self.task):
                return call
        if swapped is None:
            # the one release the task writes ("Bump the version to 1.0.2."): the 0.5B, offered
            # ``__version__ = '1.0.1'``, wrote the read's header as the new line five times
            swapped = stated_release(old, self.task)
            if swapped is None or writes_release(new, self.task):
                return call
        text = head_text(self.space, os.path.normpath(path), MAX_SYMBOL_SEARCH_BYTES)
        if text.count(old) != 1 or breaks(path, text, text.replace(old, swapped, 1)) is not None:
            return call
        return ToolUseBlock(call.id, call.name, {**args, "new": swapped})

    def _literal_only(self, call: ToolUseBlock) -> ToolUseBlock | None:
        """An edit_file call that renames a definition the task does not name, read as its
        one changed literal when it changes exactly one, the names kept (``sites.
        literal_swapped``), if the file still parses so. Measured with the 0.5B on "change
        _BYTES_ENCODING from 'latin1' to 'utf-8'" and "把 _DIR_MARK 从 'ps_d' 改成 'ps_dir'":
        offered the right line, it wrote ``Bytes_ENCODING = 'utf-8'`` and ``DIR_MARK =
        'ps_dir'``, refused as renames five times, and the runs stopped stuck. None when
        there is no such reading."""
        args = call.input if isinstance(call.input, dict) else {}
        path, old, new = args.get("path"), args.get("old"), args.get("new")
        if (
            not (isinstance(path, str) and isinstance(old, str) and isinstance(new, str))
            or self.space is None
        ):
            return None
        swapped = literal_swapped(old, new)
        if swapped is None:
            return None
        text = head_text(self.space, os.path.normpath(path), MAX_SYMBOL_SEARCH_BYTES)
        if text.count(old) != 1 or breaks(path, text, text.replace(old, swapped, 1)) is not None:
            return None
        return ToolUseBlock(call.id, call.name, {**args, "new": swapped})

    def _untied(self, call: ToolUseBlock) -> str | None:
        """Why an edit of a planned Python file may not run: no line of it ties to the task
        (``focus.untied_files``), so the edit would be a guess; the file stays as it is."""
        args = call.input if isinstance(call.input, dict) else {}
        path = args.get("path")
        if call.name not in CHANGE_TOOLS or self.plan.kind != "edit" or not isinstance(path, str):
            return None
        if self.space is None or self.focus is None:
            return None
        untied = {os.path.normpath(p) for p in untied_files(self.space, (), self.focus)}
        return UNTIED.format(path=path) if os.path.normpath(path) in untied else None

    def _unasked_rename(self, call: ToolUseBlock) -> str | None:
        """Why an edit_file call of a Python file may not run: it changes the name its old
        text defines (``class Signer:``) to one the task does not write (``class
        SigningAlgorithm:``), the 0.5B's change for a task that asked for a default's value
        (``sites.renamed_definitions``; the task's own tokens, in any language)."""
        args = call.input if isinstance(call.input, dict) else {}
        path, old, new = args.get("path"), args.get("old"), args.get("new")
        if call.name != "edit_file" or not isinstance(path, str) or not path.endswith((".py", ".pyi")):
            return None
        if not isinstance(old, str) or not isinstance(new, str):
            return None
        added = renamed_definitions(old, new, self.task)
        if added:
            names_old = ", ".join(sorted(defined_names(old)))
            return RENAMED.format(names_old=names_old, names_new=", ".join(added), path=path)
        dropped = dropped_definitions(old, new, self.task)
        return DROPPED.format(names=", ".join(dropped), path=path) if dropped else None

    def _route(self, call: ToolUseBlock) -> Reviewed:
        """A note for the user's notes file (the task asked for notes), or for the run's own
        notes (answered here). A line grounded in its file is no exception: measured on the
        third half, the 0.5B's notes on questions copied lines of the files it read ("a.txt:
        ## this is a smaller header ##"), true to the file and useless to the user."""
        args = call.input if isinstance(call.input, dict) else {}
        text, path = args.get("text"), args.get("path")
        if self.plan.kind == "notes" or self.run_notes is None or not isinstance(text, str):
            return user_note(call, self.results)
        path = path if isinstance(path, str) and path else None
        line = f"{path}: {text}" if path else text
        try:
            self.run_notes.append(line)
        except ToolError as exc:  # the notes file's own errors (a full disk): said to the model
            return ToolResultBlock(call.id, f"Error: {exc}", is_error=True)
        self.events.emit("notes_write", op="append", chars=len(line), where="run")
        return ToolResultBlock(call.id, RUN_NOTED.format(where=self._where(), notes=self.notes.path.name))

    def _where(self) -> str:
        assert self.run_notes is not None
        try:
            return str(self.run_notes.path.relative_to(self.root))
        except ValueError:
            return self.run_notes.path.name

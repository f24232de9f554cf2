"""Tasks over a set of files ("read every .py file under src/ ..."): the set, enumerated once,
and how much of it the run has covered. State of the run, not of the window.

A small model cannot keep a list of 37 files in its head, and the window cannot either: at
4096 tokens a compaction comes every few files. Measured with Qwen2.5-Coder-0.5B on 38 files,
with the files read forgotten at each compaction, 38 reads covered only 13 files; with
read_file's choices leaving out the files NOTES.md names, it read all 38, but a note often
described the neighbouring file (several files were in the window when the flush asked), and
once every file was noted it copied the flush's prompt as a note. So when the task names a
folder (or a glob) and asks for every file of a kind, the harness keeps the plan:

- ``set_for``: the task's set of files, found once from the workspace: the files of the plan's
  targets (a folder, a glob like "src/**/*.py" the plan chose among the candidates, or
  ``--each``), or a glob the task writes;
- ``FileSetPlan.remaining``: the files not covered yet, read_file's only choices;
- ``FileSetPlan.next_step``: right after a file of the set is read, for a task that asks for
  notes, the next action is the note on that file (the ``note`` tool with its ``path`` fixed to
  it), so the note is written with that file's text the last thing in view; otherwise, while
  files remain, the next action is read_file (the model picks which of the files left) and the
  run may not end; when every file is covered, the final answer is asked for;
- ``note_problem``: a note on a file of the set that was not read in this run, that echoes the
  task or the ask, or that is another file's docstring, is refused (``review_note``: the guide
  refuses the call, the note tool is never wrapped), and the model is asked again.
- a question over the set (or over named files too large to fit in the window together): right
  after each read, the model notes the file's sentence that answers it (``_finding_step``), or
  "nothing"; a finding whose numbers or words are not the file's is not written
  (``not_in_file``); when every file is read, the question is asked with only the task and this
  run's notes in view. Measured on the suite's long-handbook and long-guide (the answer in the
  first of six or seven long files, compacted away by the last): with the flush alone the 0.5B
  answered another file's fact; with the findings, "7311" and "19".

A file is covered when a note line names it (a task that asks for notes), else when it was
read. The set and the covered files are saved with every checkpoint (``to_state``), so a
resumed run goes on with the files left.
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from typing import Any

from ..events import EventBus
from ..history import file_reads
from ..messages import Message, TextBlock, ToolResultBlock, ToolUseBlock
from .base import Turn, refusal
from .focus import (
    ASK_QUESTION,
    NOTE_TOOL,
    READ_TOOL,
    answer_ask,
    defined_names,
    held_numbered,
    held_sentence,
    is_question,
    named_files,
    task_text,
)
from .plan import TaskPlan, expand, task_globs
from .project import is_metadata, project_card

MAX_SET_FILES = 400  # as read_file's path choices (files.MAX_PATH_CHOICES)
# A question over files the task names is a set too (read each, note what it says) when they
# do not fit in the window together: more than this many characters by default (the guide
# passes its profile's share of the window).
ROOM_CHARS = 8000
NOTE_TRIES = 2  # asks for the note on one file before it is left to the flush
NOTE_NOW = "Now call note with one line about what {path} does, from the file you just read."
NOTE_AGAIN = "That note was refused: {why}. Call note again with one line about what {path} does."
# No tool name and no "final answer" to copy; then focus.answer_ask's words for the task.
ALL_DONE = "All {total} files of the task are covered ({what}). {ask}"
# A question over a set of files ("read every .md file under docs/, then tell me which port ..."):
# right after each read, with only that file in view, the sentence that answers it goes into the
# notes (the file's window will be compacted away before the last file is read); at the end the
# question is asked with only the task and the notes this run wrote in view. The finding request
# does not quote the question: on long-guide the 0.5B noted the quoted question (and the
# read's header) for every file; `python -m bench.answer_probe --suite-task long-handbook` got
# the same findings from this wording as from one quoting the question.
FIND_NOW = "Note the sentence of {path} that gives the answer to the task, word for word (or: nothing)."
NOTHING = re.compile(r"^\W*(?:nothing|none|n/?a|no|not in (?:this|the) file)\W*$", re.IGNORECASE)
NOTHING_NOTED = "Nothing noted: {path} does not answer the question."
# A finding must be said with one sentence of its file (see FileSetPlan.not_in_file).
NOT_IN_FILE = "Not noted: {path} does not contain {values}."
_NUMBER = re.compile(r"\d+(?:[.,:]\d+)*")
_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+|\n\s*\n")
MAX_ABSENT_SHOWN = 4
FROM_NOTES = "Your notes from these files:\n{notes}\n\n"
MAX_NOTES_SHOWN = 2400  # characters (about 600 tokens) of those notes, the newest lines cut
DONE_NOTES = "Done: each of the {total} files has its line in the notes (NOTES.md)."
DONE_READ = "Done: all {total} files were read."
FILES_LEFT = "Not done yet: {left} of the {total} files are not covered. Go on with read_file on {next}."
_ECHO_SHARE = 0.5
_READ_HEADER = re.compile(r"\(lines \d+-\d+ of \d+\)")
_NUMBERED_LINE = re.compile(r"^\s*\d+\s", re.MULTILINE)
_COPY_MIN_WORDS = 3


def set_for(
    plan: TaskPlan,
    task: str,
    files: Iterable[str],
    room_chars: int | None = None,
    size: Callable[[str], int] | None = None,
) -> list[str]:
    """The files a task is over each one of, sorted: those of the plan's folder or glob targets
    (``--each`` is one), else of a glob the task writes; for notes, else the files the plan
    names; for a question, also the files it names when they are too large to read together
    (``room_chars``, ``size`` gives a file's length). Empty when there is no such set, or it is
    larger than MAX_SET_FILES."""
    files = [os.path.normpath(path) for path in files]
    if plan.kind in ("list", "edit", "explore"):
        return []
    # A notes task is over its first folder or glob; a question only over a glob (a set of one
    # kind of file, or --each): measured with the 0.5B, the plan request's folders beyond the
    # first were the listing's first folders, whatever the task ("docs/" for a task on src/).
    wide = [t for t in plan.targets if "*" in t or (t.endswith("/") and plan.kind == "notes")]
    found = expand(wide[:1], files) if wide else []
    if not found and plan.kind is None:
        for glob in task_globs(task):
            found = expand([glob], files)
            if found:
                break
    if not found and plan.kind == "notes":
        # A note for each of the files the plan names: the same per-file view and checks as a
        # folder's (the 0.5B, asked a one-line note each on three named files and shown all
        # three reads, noted tzinfo.py with isotzinfo.py's docstring, in five lines).
        found = expand([t for t in plan.targets if not t.endswith("/")], files)
    if not found and room_chars is not None and size is not None and plan.kind == "answer":
        # the files, not a folder's: a folder the plan request chose for a question made the
        # 0.5B read and note requirements/'s 11 files one by one, and never answer
        chosen = [t for t in plan.targets if not t.endswith("/")]
        named = [os.path.normpath(p) for p in named_files(task, files)] or expand(chosen, files)
        if len(named) > 1 and sum(size(p) for p in named) > room_chars:
            found = named
    return sorted(found) if len(found) <= MAX_SET_FILES else []


NextStep = Turn  # the shape of the next request (see ``guide.base.Turn``)


class FileSetPlan:
    """The plan above for one run. ``files`` lists the workspace's text files (asked once, on
    the first request); ``notes_text`` gives the notes written in this run; ``lines_read`` says
    how far a file was read (the run's read state); ``read_text`` gives a file's text (for
    the checks of a note). ``events`` gets a ``coverage`` event each time a file is covered."""

    def __init__(
        self,
        files: Callable[[], Iterable[str]],
        notes_text: Callable[[], str],
        lines_read: Callable[[str], int],
        read_text: Callable[[str], str],
        *,
        events: EventBus | None = None,
        room_chars: int | None = ROOM_CHARS,
        size: Callable[[str], int] | None = None,
    ) -> None:
        self.files = files
        self.room_chars = room_chars
        self.size = size
        self.plan = TaskPlan()
        self.notes_text = notes_text
        self.lines_read = lines_read
        self.read_text = read_text
        self.events = events
        self.task: str | None = None  # the task the set was found for
        self.set: list[str] = []
        self.covered: set[str] = set()
        self.pending: str | None = None  # read, its note asked for
        self.tries = 0
        self.notes = False  # the task asks for notes: covered means noted
        self.question = ""  # else, the question the task asks about the files (maybe none)
        self.found: set[str] = set()  # files whose finding was asked for
        self.finding: str | None = None  # the file whose finding is asked for now
        self.finding_held: list[str] = []  # its lines shown with the ask (``held_line``)
        self.refusal = ""  # why the last note was refused (``review_note``)

    # --- the set --------------------------------------------------------------------------

    def start(self, task: str, plan: TaskPlan) -> None:
        """The task and its plan (``guide.plan``): the set is found now, once."""
        self.task, self.plan = task, plan
        self.covered, self.found, self.pending, self.finding = set(), set(), None, None
        self.notes = plan.kind == "notes"
        self._set_question()
        self.set = set_for(plan, task, list(self.files()), self.room_chars, self.size)

    def _card_due(self) -> bool:
        """Whether the question is answered with the project card, as ``TaskFocus`` answers
        one: the set holds the metadata, or the plan chose it (the task names none of its
        files, nor a folder or a glob)."""
        if any(map(is_metadata, self.set)):
            return True
        wide = any("*" in t or t.endswith("/") for t in self.plan.targets)
        return not wide and not named_files(self.task or "", self.set)

    def _set_question(self) -> None:
        """The question over the set: the task itself, unless the plan says notes (a question
        kind, or an unclassified task with a question mark)."""
        task = self.task or ""
        asks = self.plan.kind == "answer" or (self.plan.kind is None and is_question(task))
        self.question = " ".join(task.split()) if asks and not self.notes else ""

    def active(self, messages: Sequence[Message]) -> bool:
        """Whether this run's task is over a set of files (found when the task started; a run
        started without ``start``, by an old caller, finds it on the first call)."""
        if self.task is None and (task := task_text(messages)):
            self.start(task, self.plan)
        return bool(self.set)

    def remaining(self, messages: Sequence[Message]) -> list[str]:
        """The files of the set not covered yet (the one being noted included)."""
        if not self.active(messages):
            return []
        self._update()
        return [path for path in self.set if path not in self.covered]

    def _update(self) -> None:
        if self.notes:
            now = set(_noted(self.notes_text(), self.set))
        else:
            now = {path for path in self.set if self.lines_read(path) > 0}
        new = sorted(now - self.covered)
        self.covered |= now
        if new and self.events is not None:
            self.events.emit("coverage", covered=len(self.covered), total=len(self.set), files=new)

    # --- the loop's next request -----------------------------------------------------------

    def next_step(self, messages: Sequence[Message]) -> NextStep | None:
        """Asked after each turn's tool results (``messages`` ends with them)."""
        left = self.remaining(messages)
        if not self.set:
            return None
        self.finding = None
        if self.question:
            step = self._finding_step(messages)
            if step is not None:
                return step
        if not left:
            what = "each one is noted" if self.notes else "each one was read"
            task = self.task or ""
            ask = ASK_QUESTION.format(task=self.question) if self.question else answer_ask(task)
            prompt = ALL_DONE.format(total=len(self.set), what=what, ask=ask)
            if self.question and self._card_due():
                prompt = f"{project_card(self.files(), self.read_text)} {prompt}".lstrip()
            # A question's answer is never "Done: ... were read.": with no answer from the model
            # the run says it has none (the 0.5B's empty answer to "What version is this?"
            # ended as "Done: all 3 files were read.", which reads as a success).
            done = (
                None
                if self.question
                else (DONE_NOTES if self.notes else DONE_READ).format(total=len(self.set))
            )
            notes = "" if self.notes else self.notes_text().strip()
            if not notes:
                return NextStep(prompt, final_only=True, done=done)
            prompt = FROM_NOTES.format(notes=_first_chars(notes, MAX_NOTES_SHOWN)) + prompt
            # Asked with the task and the notes alone in view: the window still holds the model's
            # made-up findings (refused, but their calls stay), and the 0.5B answered with one
            # ("8080.") though the notes said 7311.
            view = (Message("user", (TextBlock(f"{task}\n\n{prompt}"),)),) if self.question else None
            return NextStep(prompt, final_only=True, done=done, view=view)
        if self.notes:
            step = self._note_step(messages, left)
            if step is not None:
                return step
        # The next file: read_file, whose choices are the files left (the model picks which).
        return NextStep(tool=READ_TOOL, final_allowed=False)

    def _finding_step(self, messages: Sequence[Message]) -> NextStep | None:
        """Once, right after a file of the set is read: what it says about the question."""
        read = _last_read(messages)
        if read is None or read not in self.set or read in self.found:
            return None
        self.found.add(read)
        self.finding = read
        # The file's lines that bind what the question asks about go with the ask (the 0.5B,
        # asked "What version is this?" of a 160-line __init__.py, noted "The library now
        # supports caching" and never ``__version__ = "8.0.2"``).
        text = self._safe_text(read)
        held = held_numbered(read, text, self.question, [read], terms=self.plan.terms)
        self.finding_held = [line for _, line in held]
        prompt = FIND_NOW.format(path=read) + held_sentence(read, held)
        return NextStep(prompt, tool=NOTE_TOOL, final_allowed=False, view=_note_view(messages, read, prompt))

    def _note_step(self, messages: Sequence[Message], left: list[str]) -> NextStep | None:
        """The note on the file just read, while it is not noted (NOTE_TRIES asks at most)."""
        read = _last_read(messages)
        if read is not None and read in left and read != self.pending:
            self.pending, self.tries = read, 0
        if self.pending is None or self.pending not in left or self.tries >= NOTE_TRIES:
            self.pending = None
            return None
        self.tries += 1
        refused = self.refusal if _refused(messages[-1]) else None
        path = self.pending
        prompt = NOTE_AGAIN.format(why=refused, path=path) if refused else NOTE_NOW.format(path=path)
        # What a Python file defines, said with the ask: a note that names it is about the file
        # and grounded in it. Measured with the 0.5B on the ninth half's notes tasks, asked
        # without it: "colorama tests for the Winterm console", "This file tests the
        # functionality of our custom TextWrapper" (no name of the file's own), 0 of 4 passed.
        # Names only, no counts: a note copying "defines at top level 18 functions" gives a
        # number its file does not hold.
        named = defined_names(path, self.read_text(path))
        prompt = f"{named} {prompt}" if named else prompt
        return NextStep(prompt, tool=NOTE_TOOL, final_allowed=False, view=_note_view(messages, path, prompt))

    def review_read(self, call: ToolUseBlock) -> ToolUseBlock:
        """A read of a file of the set not read yet, from its first line: each file is read whole
        for its note, and a start_line there is the last file's (the 0.5B, done with a 316-line
        duration.py, asked for isoduration.py from line 153: past its 147 lines, then with
        end_line 147 before start_line 153, five times, and the run stopped stuck)."""
        args = call.input if isinstance(call.input, dict) else {}
        path = args.get("path")
        if not isinstance(path, str) or os.path.normpath(path) not in self.set:
            return call
        if self.lines_read(os.path.normpath(path)) > 0 or not ({"start_line", "end_line"} & set(args)):
            return call
        return replace(call, input={k: v for k, v in args.items() if k not in ("start_line", "end_line")})

    def note_choices(self, messages: Sequence[Message]) -> dict[str, list[str]]:
        """The note tool's ``path`` choices: the file whose note is asked for, when one is."""
        path = self.pending or self.finding
        return {"path": [path]} if path is not None else {}

    def read_choices(self, messages: Sequence[Message]) -> list[str]:
        """read_file's choices while files of the set remain (empty: no plan, no narrowing)."""
        return self.remaining(messages)

    def unfinished(self, messages: Sequence[Message]) -> str | None:
        """What to tell a model that answered while files remain (None: it may end)."""
        left = self.remaining(messages)
        if not left:
            return None
        return FILES_LEFT.format(left=len(left), total=len(self.set), next=left[0])

    # --- notes about the right file --------------------------------------------------------

    def note_problem(self, text: str, path: str | None, known: Sequence[str] = ()) -> str | None:
        """Why a note on ``path`` (one of the set) is refused, or None: the file was not read,
        the note copies its numbered lines, echoes the task, the ask or one of the ``known``
        texts (the tools' descriptions), or is made of another file's docstring rather than of
        its own file. Measured with Qwen2.5-Coder-0.5B, asked with only the file in view: a
        note was read_file's description ("Reads a text file from the workspace, with line
        numbers."), another was the read's first lines."""
        if not self.set or path is None or os.path.normpath(path) not in self.set:
            return None
        path = os.path.normpath(path)
        if self.lines_read(path) == 0:
            return f"{path} has not been read in this run; read it first"
        if copies_read(text):
            return COPIED
        own_name = _words(path.replace("/", " ").replace("_", " "))
        words = _words(text) - own_name
        if not words:
            return None if self.question else "it says nothing about the file"  # "nothing" is a finding
        # A finding quotes the file and shares the question's words, as it should: for a question
        # only the tools' descriptions are echoes (the flush wrote read_file's as a chapter's note).
        echoes = known if self.question else (self.task or "", NOTE_NOW.format(path=path), *known)
        for source in echoes:
            if len(words & (_words(source) - own_name)) >= _ECHO_SHARE * len(words):
                return "it repeats the task or the request instead of saying what the file does"
        if self.question:
            return None
        own = len(words & _words(self._safe_text(path)))
        for other, docstring in self._docstrings_read().items():
            shared = len(words & _words(docstring)) if other != path else 0
            if shared >= _COPY_MIN_WORDS and shared > own:
                return f"it describes {other} (its docstring), not {path}"
        return None

    def says_nothing_of(self, text: str, path: str) -> bool:
        """Whether a finding shares no word and no number with its file: "nothing" in whatever
        language the model wrote it ("没有", "rien"), read as the harness's own prompt's
        "nothing" is (``NOTHING``, the word that prompt asks for), not as a claim."""
        source = self._safe_text(os.path.normpath(path)).lower()
        tokens = [t for t in re.findall(r"\w+", text.lower()) if t not in path.lower()]
        return bool(tokens) and not any(t in source for t in tokens)

    def not_in_file(self, text: str, path: str) -> list[str]:
        """What of ``text`` ``path``'s text does not contain: its numbers not in the file and,
        for the finding the plan asked for (the file's sentence that answers the question), the
        question's words in each of its sentences that no one sentence of the file has. The
        0.5B's made-up findings were the question's words with another number ("The backup
        service listens on port 8080.", 8080 in no file) or with a neighbour's ("... port
        8443." from "The login service listens on port 8443."). A word of the model's own that
        the question does not use is no claim about what it asks: "The version of this package
        is 8.0.2." for ``__version__ = "8.0.2"`` and "What version is this?" was refused for
        "package", and the answer was then made up from the other notes."""
        path = os.path.normpath(path)
        source = self._safe_text(path)
        said = text.replace(path, " ").replace(os.path.basename(path), " ")  # "01-backups.md" is no claim
        numbers = dict.fromkeys(_NUMBER.findall(said))
        missing = [n for n in numbers if not re.search(rf"(?<![\d.,:]){re.escape(n)}(?!\d|[.,:]\d)", source)]
        if path != self.finding:
            return missing  # a note of the notes flush says what the file is about in its own words
        sentences = [_words(sentence) for sentence in _SENTENCE_END.split(source)]
        asked = _words(self.question)
        for claim in _SENTENCE_END.split(said):
            words = _words(claim) & asked
            if words:
                best = min((words - sentence for sentence in sentences), key=len, default=words)
                missing += [repr(word) for word in sorted(best)[:MAX_ABSENT_SHOWN]]
        return missing

    def quoted_finding(self, text: str, path: str | None) -> str | None:
        """A finding that copies the read (its header, its numbered lines) but holds lines
        shown with the ask (``finding_held``): those lines, as the note. The 0.5B, asked for the
        finding of tabulate/version.py, noted the whole read with its line numbers, refused as a
        copy, and the version (``__version__ = version = '0.9.0'``) never reached the notes.
        None for any other note."""
        if path is None or os.path.normpath(path) != self.finding or not self.finding_held:
            return None
        if not copies_read(text):
            return None
        quoted = [line for line in self.finding_held if line in text]
        return "; ".join(quoted) if quoted else None

    def covers(self, path: str | None) -> bool:
        """Whether ``path`` is one of the set."""
        return path is not None and os.path.normpath(path) in self.set

    def _docstrings_read(self) -> dict[str, str]:
        """Module docstrings of the set's files read so far (the likely source of a copy)."""
        return {p: _docstring(self._safe_text(p)) for p in self.set if self.lines_read(p) > 0}

    def _safe_text(self, path: str) -> str:
        try:
            return self.read_text(path)
        except OSError:
            return ""

    def turns(self) -> int:
        """The agent turns the set takes at least: a note (notes, or a question's finding) per
        file, then the answer (the guide reads each file itself: no turn); 0 with no set."""
        if not self.set:
            return 0
        per_file = 1 if self.notes or self.question else 0
        return per_file * len(self.set) + 1

    # --- saved with the run ----------------------------------------------------------------

    def to_state(self) -> dict[str, Any]:
        if self.set:
            self._update()  # a note written in the last step counts
        return {
            "task": self.task,
            "set": list(self.set),
            "covered": sorted(self.covered),
            "found": sorted(self.found),
            "plan": self.plan.to_state(),
        }

    def load_state(self, state: dict[str, Any]) -> None:
        """A resumed run keeps the set found at its start and the files it covered."""
        if isinstance(state.get("task"), str) and isinstance(state.get("set"), list):
            self.task = state["task"]
            self.plan = TaskPlan.from_state(state.get("plan") or {})
            self.set = [str(p) for p in state["set"]]
            self.covered = {str(p) for p in state.get("covered", []) if p in self.set}
            self.found = {str(p) for p in state.get("found", []) if p in self.set}
            self.notes = self.plan.kind == "notes"
            self._set_question()


def _noted(notes: str, files: Sequence[str]) -> list[str]:
    """The ``files`` a line of ``notes`` names by path, or by a file name no other file has."""
    by_name: dict[str, list[str]] = {}
    for path in files:
        by_name.setdefault(os.path.basename(path), []).append(path)
    found = []
    for path in files:
        base = os.path.basename(path)
        names = [path] if len(by_name[base]) > 1 else [path, base]
        # ASCII bounds: a line in Chinese names "cart.py是购物车" too.
        if any(
            re.search(rf"(?<![A-Za-z0-9_./-]){re.escape(name)}(?![A-Za-z0-9_-])", notes) for name in names
        ):
            found.append(path)
    return found


def _last_read(messages: Sequence[Message]) -> str | None:
    """The path of a successful read_file in the last turn (the last one, if several)."""
    if len(messages) < 2 or messages[-2].role != "assistant":
        return None
    ok = {b.tool_use_id for b in messages[-1].content if isinstance(b, ToolResultBlock) and not b.is_error}
    paths = [
        os.path.normpath(call.input["path"])
        for call in messages[-2].tool_uses
        if call.name == READ_TOOL and call.id in ok and isinstance(call.input.get("path"), str)
    ]
    return paths[-1] if paths else None


def _note_view(messages: Sequence[Message], path: str, prompt: str) -> tuple[Message, ...] | None:
    """The task and the last read of ``path`` still in the window, then ``prompt``: what the
    note request shows. Measured with Qwen2.5-Coder-0.5B at window 4096: asked in the whole
    window, 3 of 4 notes copied an earlier note (another file's docstring); asked with only the
    file's read in view (as the flush asks), 3 of 3 notes were about the file. None when the
    read is no longer in the window (cleared or offloaded): then the window is asked."""
    task = task_text(messages)
    last = None
    for read, call, result in file_reads(messages):
        if os.path.normpath(read) == path and not result.content.startswith("["):
            last = (call, result)
    if last is None or not task:
        return None
    call, result = last
    return (
        Message("user", (TextBlock(task),)),
        Message("assistant", (call,)),
        Message("user", (result, TextBlock(prompt))),
    )


def _refused(last: Message) -> bool:
    """Whether the guide refused a call of the last turn (the result's ``refused``)."""
    return any(isinstance(b, ToolResultBlock) and b.refused for b in last.content)


def _docstring(source: str) -> str:
    try:
        return ast.get_docstring(ast.parse(source)) or ""
    except (SyntaxError, ValueError):
        return ""


_STOP = frozenset({"this", "that", "with", "from", "file", "module", "class", "function", "which"})


def _words(text: str) -> set[str]:
    spaced = re.sub(r"([a-z])([A-Z])", r"\1 \2", text)
    return {w for w in re.findall(r"[a-z]{4,}", spaced.lower()) if w not in _STOP}


COPIED = "it copies the file's lines; say in your own words what the file does"
ECHOED = "it repeats a tool's result; say in your own words what the file does"


def copies_read(text: str) -> bool:
    """A note that copies a read_file result: its header ("(lines 1-5 of 5)") or two of its
    numbered lines."""
    return bool(_READ_HEADER.search(text)) or len(_NUMBERED_LINE.findall(text)) >= 2


def repeats_result(text: str, results: Iterable[str]) -> bool:
    """A note that gives back one of ``results`` (tool results the run has just seen), whole,
    whitespace aside: the 0.5B, its note refused, noted the refusal, then the note tool's
    receipt ("Noted in NOTES.md (119 characters in total)"). Compared with the results
    themselves, so it holds for any tool's words in any language."""
    said = " ".join(text.split())
    return bool(said) and any(said == " ".join(result.split()) for result in results)


def _request_pieces() -> tuple[str, ...]:
    """The fixed words of the requests for a note (between their placeholders, three words
    or more)."""
    pieces = []
    for template in (NOTE_NOW, NOTE_AGAIN, FIND_NOW):
        pieces += [p.strip(" .:") for p in re.split(r"\{\w+\}", template) if len(p.split()) >= 3]
    return tuple(pieces)


_REQUEST_PIECES = _request_pieces()


def without_request(text: str) -> str:
    """A note cut before the first words it copies of the request that asked for it (""
    when it starts with them). Measured with the 0.5B on the tenth half's notes tasks, asked
    with the file's outline: 13 note lines were the outline, then "Now call note with one line
    about what idna/codec.py does, ..." or "That note was refused: ...", copied into the
    user's NOTES.md. The harness's own words, never the user's: cut, what the note said
    before them is checked as any note is."""
    cut = min((i for piece in _REQUEST_PIECES if (i := text.find(piece)) >= 0), default=-1)
    return text if cut < 0 else text[:cut].rstrip()


def review_note(
    plan: FileSetPlan, call: ToolUseBlock, known: Sequence[str] = (), results: Sequence[str] = ()
) -> ToolUseBlock | ToolResultBlock:
    """``plan``'s checks of a note call before it runs (``note_problem``; ``known``: texts a
    note must not echo; ``results``: the tool results just seen, which it must not give back
    whole): the call, refused with the reason, answered without a write (a finding
    of "nothing", or one its file does not hold), kept to the lines shown with the ask when it
    copies the read (``quoted_finding``), or kept to its first line (one line a file, as the task
    asks; a copied docstring brought six lines)."""
    args = call.input if isinstance(call.input, dict) else {}
    text, path = args.get("text"), args.get("path")
    if not isinstance(text, str) or (path is not None and not isinstance(path, str)):
        return call  # the registry's schema check answers it
    quoted = plan.quoted_finding(text, path)
    if quoted is not None:
        text, args = quoted, {**args, "text": quoted}
        call = replace(call, input=args)
    own = without_request(text)
    if own != text:  # the words that asked for the note, copied after it: cut off
        text, args = own, {**args, "text": own}
        call = replace(call, input=args)
    why = ECHOED if repeats_result(text, results) else plan.note_problem(text, path, known)
    if why is not None:
        plan.refusal = why
        return refusal(call, why)
    if plan.question and path is not None and plan.covers(path):
        if NOTHING.match(text) or plan.says_nothing_of(text, path):
            return ToolResultBlock(call.id, NOTHING_NOTED.format(path=path))
        missing = plan.not_in_file(text, path)
        if missing:
            return ToolResultBlock(call.id, NOT_IN_FILE.format(path=path, values=", ".join(missing)))
    if plan.covers(path):
        first = next((line.strip() for line in text.splitlines() if line.strip()), text)
        if first != text:
            return replace(call, input={**args, "text": first})
    return call


def _first_chars(text: str, limit: int) -> str:
    """``text`` cut to whole lines within ``limit`` characters (one long line is cut inside)."""
    if len(text) <= limit:
        return text
    kept = text[:limit].rsplit("\n", 1)[0] if "\n" in text[:limit] else text[:limit]
    return kept + "\n(more in NOTES.md)"

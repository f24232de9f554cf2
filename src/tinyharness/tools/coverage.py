"""Tasks over a set of files ("read every .py file under src/ ..."): the set, enumerated once,
and how much of it the run has covered. State of the run, not of the window.

A small model cannot keep a list of 37 files in its head, and the window cannot either: at
4096 tokens a compaction comes every few files. Measured with Qwen2.5-Coder-0.5B on 38 files,
with the files read forgotten at each compaction, 38 reads covered only 13 files; with
read_file's choices leaving out the files NOTES.md names, it read all 38, but a note often
described the neighbouring file (several files were in the window when the flush asked), and
once every file was noted it copied the flush's prompt as a note. So when the task names a
folder (or a glob) and asks for every file of a kind, the harness keeps the plan:

- ``folder_set``: the task's set of files, found once from the workspace (a folder and an
  extension, "every .py file under src/"; or a glob, "src/**/*.py");
- ``FileSetPlan.remaining``: the files not covered yet, read_file's only choices;
- ``FileSetPlan.next_step``: right after a file of the set is read, for a task that asks for
  notes, the next action is the note on that file (the ``note`` tool with its ``path`` fixed to
  it), so the note is written with that file's text the last thing in view; otherwise, while
  files remain, the next action is read_file (the model picks which of the files left) and the
  run may not end; when every file is covered, the final answer is asked for;
- ``note_problem``: a note on a file of the set that was not read in this run, that echoes the
  task or the ask, or that is another file's docstring, is refused, and the model is asked
  again.
- a question over the set (or over three or more files the task names, ``_named_set``): right
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
import fnmatch
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..events import EventBus
from ..history import file_reads
from ..messages import Message, TextBlock, ToolResultBlock
from .base import Tool, ToolError
from .focus import ASKS_FOR_NOTES, NOTE_TOOL, READ_TOOL, answer_ask, named_files, question_of, task_text

MAX_SET_FILES = 400  # as read_file's path choices (files.MAX_PATH_CHOICES)
# A question over this many files the task names is a set too (read each, note what it says):
# fewer fit in a small window together, and the task focus alone answers them.
MIN_NAMED_SET = 3
NOTE_TRIES = 2  # asks for the note on one file before it is left to the flush
NOTE_NOW = "Now call note with one line about what {path} does, from the file you just read."
REFUSED = "the note was refused:"
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
ASK_SET_QUESTION = "The question: {question}"
FROM_NOTES = "Your notes from these files:\n{notes}\n\n"
MAX_NOTES_SHOWN = 2400  # characters (about 600 tokens) of those notes, the newest lines cut
DONE_NOTES = "Done: each of the {total} files has its line in the notes (NOTES.md)."
DONE_READ = "Done: all {total} files were read."
FILES_LEFT = "Not done yet: {left} of the {total} files are not covered. Go on with read_file on {next}."
_EVERY = r"(?:every|each|all(?:\s+the)?|all\s+of\s+the)"
_LANGUAGES = {
    "python": ".py",
    "markdown": ".md",
    "javascript": ".js",
    "typescript": ".ts",
    "rust": ".rs",
    "go": ".go",
    "java": ".java",
    "c": ".c",
    "yaml": ".yaml",
    "json": ".json",
    "text": ".txt",
    "toml": ".toml",
    "shell": ".sh",
}
# "every .py file under src/", "all Python files in the docs folder", "each file in notes/"
_KIND_IN_FOLDER = re.compile(
    rf"\b{_EVERY}\s+(?:(?P<ext>\.\w+)|(?P<lang>[A-Za-z]+)\s+)?\s*(?:source\s+)?files?\b"
    r"(?:\s+(?:under|in|inside|within|of|from)\s+(?:the\s+)?(?P<folder>[\w./-]+?)/?(?:\s+(?:folder|directory|dir))?"
    r"(?=[\s,.;:!?)]|$))?",
    re.IGNORECASE,
)
_GLOB = re.compile(r"(?<![\w/.-])(?P<glob>[\w./-]*\*[\w.*/-]*)")
_ECHO_SHARE = 0.5
_READ_HEADER = re.compile(r"\(lines \d+-\d+ of \d+\)")
_NUMBERED_LINE = re.compile(r"^\s*\d+\s", re.MULTILINE)
_COPY_MIN_WORDS = 3


def folder_set(task: str, files: Iterable[str]) -> list[str]:
    """The workspace files (``files``, workspace-relative) a task asks for every one of: those
    under the folder it names with the kind it names ("every .py file under src/"), or those a
    glob it gives matches ("src/**/*.py"); sorted. Empty when the task names no such set, or
    the set is larger than MAX_SET_FILES (no plan can offer that many choices)."""
    files = [os.path.normpath(path) for path in files]
    found: list[str] = []
    for match in _GLOB.finditer(task):
        pattern = match.group("glob").removeprefix("./")
        found = [path for path in files if _glob_match(path, pattern)]
        if found:
            break
    if not found:
        for match in _KIND_IN_FOLDER.finditer(task):
            ext = match.group("ext") or _LANGUAGES.get((match.group("lang") or "").lower(), "")
            if match.group("lang") and not ext:
                continue  # "all other files", "all the files": a word, not a kind
            folder = os.path.normpath(match.group("folder") or ".")
            if folder != "." and not any(path.startswith(f"{folder}/") for path in files):
                continue
            found = [
                path
                for path in files
                if (folder == "." or path.startswith(f"{folder}/")) and (not ext or path.endswith(ext))
            ]
            if found and (ext or folder != "."):
                break
            found = []
    return sorted(found) if len(found) <= MAX_SET_FILES else []


def _glob_match(path: str, pattern: str) -> bool:
    """fnmatch where ``**/`` also matches no folder at all, as in shells with globstar."""
    return fnmatch.fnmatchcase(path, pattern) or (
        "**/" in pattern and fnmatch.fnmatchcase(path, pattern.replace("**/", ""))
    )


@dataclass(frozen=True)
class NextStep:
    """What the next request of the loop must be: ``prompt`` goes after the last tool results;
    ``tool`` is the one tool the reply must call; ``final_only`` asks for the final answer;
    ``final_allowed`` False keeps the final answer off the menu; ``view``, when given, is what the
    request shows instead of the window (its reply still joins the history)."""

    prompt: str | None = None
    tool: str | None = None
    final_only: bool = False
    final_allowed: bool = True
    view: tuple[Message, ...] | None = None  # sent instead of the window (the prompt is in it)
    # The answer when the model's own is only harness text copied back (stripped to nothing):
    # what the plan itself knows was done.
    done: str | None = None


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
    ) -> None:
        self.files = files
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

    # --- the set --------------------------------------------------------------------------

    def active(self, messages: Sequence[Message]) -> bool:
        """Whether this run's task is over a set of files (found on the first call)."""
        task = task_text(messages)
        if self.task is None and task:
            self.task = task
            files = list(self.files())
            self.notes = bool(ASKS_FOR_NOTES.search(task))
            self.question = "" if self.notes else question_of(task)
            self.set = folder_set(task, files) or self._named_set(task, files)
        return bool(self.set)

    def _named_set(self, task: str, files: list[str]) -> list[str]:
        """The files a question names, when there are at least MIN_NAMED_SET (long-guide: six
        chapters named, the answer in the first, compacted away by the sixth)."""
        if not self.question:
            return []
        named = [os.path.normpath(path) for path in named_files(task, files)]
        return named if MIN_NAMED_SET <= len(named) <= MAX_SET_FILES else []

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
            ask = answer_ask(task) if "?" in task or not self.question else ASK_SET_QUESTION
            prompt = ALL_DONE.format(total=len(self.set), what=what, ask=ask.format(question=self.question))
            done = (DONE_NOTES if self.notes else DONE_READ).format(total=len(self.set))
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
        prompt = FIND_NOW.format(path=read)
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
        refused = _refused_note(messages[-1])
        path = self.pending
        prompt = NOTE_AGAIN.format(why=refused, path=path) if refused else NOTE_NOW.format(path=path)
        return NextStep(prompt, tool=NOTE_TOOL, final_allowed=False, view=_note_view(messages, path, prompt))

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
        if _READ_HEADER.search(text) or len(_NUMBERED_LINE.findall(text)) >= 2:
            return "it copies the file's lines; say in your own words what the file does"
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

    def not_in_file(self, text: str, path: str) -> list[str]:
        """What of ``text`` ``path``'s text does not contain: its numbers not in the file and,
        for the finding the plan asked for (the file's sentence that answers the question), the
        words of each of its sentences that no one sentence of the file has. The 0.5B's made-up
        findings were the question's words with another number ("The backup service listens on
        port 8080.", 8080 in no file) or with a neighbour's ("... port 8443." from "The login
        service listens on port 8443.")."""
        path = os.path.normpath(path)
        source = self._safe_text(path)
        said = text.replace(path, " ").replace(os.path.basename(path), " ")  # "01-backups.md" is no claim
        numbers = dict.fromkeys(_NUMBER.findall(said))
        missing = [n for n in numbers if not re.search(rf"(?<![\d.,:]){re.escape(n)}(?!\d|[.,:]\d)", source)]
        if path != self.finding:
            return missing  # a note of the notes flush says what the file is about in its own words
        sentences = [_words(sentence) for sentence in _SENTENCE_END.split(source)]
        for claim in _SENTENCE_END.split(said):
            words = _words(claim)
            if words:
                best = min((words - sentence for sentence in sentences), key=len, default=words)
                missing += [repr(word) for word in sorted(best)[:MAX_ABSENT_SHOWN]]
        return missing

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

    # --- saved with the run ----------------------------------------------------------------

    def to_state(self) -> dict[str, Any]:
        if self.set:
            self._update()  # a note written in the last step counts
        return {
            "task": self.task,
            "set": list(self.set),
            "covered": sorted(self.covered),
            "found": sorted(self.found),
        }

    def load_state(self, state: dict[str, Any]) -> None:
        """A resumed run keeps the set found at its start and the files it covered."""
        if isinstance(state.get("task"), str) and isinstance(state.get("set"), list):
            self.task = state["task"]
            self.set = [str(p) for p in state["set"]]
            self.covered = {str(p) for p in state.get("covered", []) if p in self.set}
            self.found = {str(p) for p in state.get("found", []) if p in self.set}
            self.notes = bool(ASKS_FOR_NOTES.search(self.task or ""))
            self.question = "" if self.notes else question_of(self.task or "")


def _noted(notes: str, files: Sequence[str]) -> list[str]:
    """The ``files`` a line of ``notes`` names by path, or by a file name no other file has."""
    by_name: dict[str, list[str]] = {}
    for path in files:
        by_name.setdefault(os.path.basename(path), []).append(path)
    found = []
    for path in files:
        base = os.path.basename(path)
        names = [path] if len(by_name[base]) > 1 else [path, base]
        if any(re.search(rf"(?<![\w./-]){re.escape(name)}(?![\w-])", notes) for name in names):
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


def _refused_note(last: Message) -> str | None:
    """The reason, when the last turn's note was refused by ``note_problem``."""
    for block in last.content:
        if isinstance(block, ToolResultBlock) and block.is_error and REFUSED in block.content:
            return block.content.split(REFUSED, 1)[-1].strip().rstrip(".")
    return None


def _docstring(source: str) -> str:
    try:
        return ast.get_docstring(ast.parse(source)) or ""
    except (SyntaxError, ValueError):
        return ""


_STOP = frozenset({"this", "that", "with", "from", "file", "module", "class", "function", "which"})


def _words(text: str) -> set[str]:
    spaced = re.sub(r"([a-z])([A-Z])", r"\1 \2", text)
    return {w for w in re.findall(r"[a-z]{4,}", spaced.lower()) if w not in _STOP}


def guard_note(tool: Tool, plan: FileSetPlan, known: Sequence[str] = ()) -> Tool:
    """The ``note`` tool with ``plan``'s checks (``note_problem``, ``known``: texts a note must
    not echo) before it writes, and its ``path`` fixed to the file whose note the plan asks for.
    A note on a file of the set keeps its first line: one line a file, as the task asks (a copied
    docstring brought six lines)."""
    write = tool.function

    def note(text: str, path: str | None = None) -> str:
        why = plan.note_problem(text, path, known)
        if why is not None:
            raise ToolError(f"{REFUSED} {why}")
        if plan.question and path is not None and plan.covers(path):
            if NOTHING.match(text):
                return NOTHING_NOTED.format(path=path)
            missing = plan.not_in_file(text, path)
            if missing:
                return NOT_IN_FILE.format(path=path, values=", ".join(missing))
        if plan.covers(path):
            text = next((line.strip() for line in text.splitlines() if line.strip()), text)
        result: str = write(text=text, path=path)
        return result

    note.__doc__ = write.__doc__
    other = tool.choices  # the task focus's, for a task that names its files

    def choices(messages: Sequence[Message]) -> Mapping[str, Sequence[str]]:
        return plan.note_choices(messages) or (other(messages) if other is not None else {})

    return replace(tool, function=note, choices=choices)


def _first_chars(text: str, limit: int) -> str:
    """``text`` cut to whole lines within ``limit`` characters (one long line is cut inside)."""
    if len(text) <= limit:
        return text
    kept = text[:limit].rsplit("\n", 1)[0] if "\n" in text[:limit] else text[:limit]
    return kept + "\n(more in NOTES.md)"

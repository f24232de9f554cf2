"""The files a task names, as a plan a small model can follow: read them first, then answer.

Small local models cannot tell when they have what a task asks for. Measured with
Qwen2.5-Coder-0.5B at temperature 0, with the answer in the last result (README.md's first page
for "Read README.md and tell me in one sentence what this project is", pricing.py for "What is
the value of TAX_RATE in src/shop/pricing.py?"): p(final_answer) at the action's tool name was
0.03-0.08, below read_file, note and list_dir, whatever the wording after the result; asked
apart whether the results hold the answer, it said yes with p=0.38-0.50 whether they did or not.
It reads one file after another until a limit stops the run, and then answers right.

So when a task names files of the workspace, the harness plans for it:
- ``unread``: read_file offers only the named files until each has been read (from line 1), so
  the first read is the right file (unnamed, it read tests/secrets_corpus.py for the README
  task);
- ``__call__``: once every named file has been read, a question (a run that cannot write
  files, and a task that does not ask for notes) is answered in the next request, which offers
  only the final answer;
- ``symbol_files``: a task that names no file but a symbol ("Which file defines the class
  Inventory?") is planned the same way from the files that define the symbol, found by the
  harness as grep would (measured: left to itself, the 0.5B wandered to the iteration limit
  on 4 of 4 such tasks). A task that names neither is left to the model.

The prompt that asks for the answer names the files read and names no tool (the 0.5B copied
"... Now give your final answer to the task with final_answer, from what you read." into its
answers). Whether it repeats the task depends on the task's form (``answer_ask``), measured
with the 0.5B on the same reads (``python -m bench.answer_probe``): a question (a task with a
"?") is repeated last ("The task: Which port ...?"), which gave the value itself ("8042",
"A1,apple,0.50", "src/shop/inventory.py") where a prompt without it gave the file's lines or a
sentence around a cut path; a request ("Read README.md and tell me in one sentence what this
project is") is not, since its words at the end were copied as the answer's opening ("Read
README.md is a Python library ...", 3 of 3 wordings that held the task) and without them the
answer was the model's own ("This project is a Python library and a command-line agent that
keeps an LLM agent stable ..."). ``history.strip_echo`` removes what is still copied at an
answer's start or end.

Which kind of task it is (a question, a change, notes) is the plan's (``guide.plan``), chosen
under a grammar, never read from the task's words.
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Callable, Iterable, Sequence

from ..history import HARNESS_TEXT_PREFIX
from ..messages import Message, TextBlock
from ..models.base import ChoiceMap
from ..tools.files import head_text
from ..tools.workspace import Workspace
from .plan import QUESTION_MARKS, TaskPlan, named_paths
from .project import is_metadata, project_card
from .prose import prose_lines, prose_sentence
from .sites import (
    CONFIG_SUFFIXES,
    assignment_lines,
    binding_lines,
    config_sites,
    definition_span,
    held_lines,
    value_sites,
)

ANSWER_NOW = "[Read: {files}]{found} {ask}"
# What asks for the answer once the harness's plan is done (here, and in tools.coverage): a
# question is repeated, a request is not (see above and ``answer_ask``).
ASK_QUESTION = "The task: {task}"
ASK_REQUEST = "Answer the task now, from what you read."
FOUND = " {symbol} is defined in {where}."
# Only the files of a workspace this small are searched for a named symbol (at most this many
# bytes of each): a repository of thousands of files is left to the model's own grep.
MAX_SYMBOL_SEARCH_FILES = 400
MAX_SYMBOL_SEARCH_BYTES = 256_000
MAX_SYMBOL_FILES = 3  # more files define it: the symbol does not point to the answer


def task_text(messages: Sequence[Message]) -> str:
    """The user's own text of the first message (what compaction inserted left out)."""
    if not messages:
        return ""
    return "\n".join(
        b.text
        for b in messages[0].content
        if isinstance(b, TextBlock) and not b.text.startswith(HARNESS_TEXT_PREFIX)
    )


named_files = named_paths  # the files a task names, by path or unique file name


def named_symbols(task: str) -> list[str]:
    """Identifiers the task names, in its order: in backquotes, with an underscore
    (``apply_discount``, ``MAX_STOCK``), in camelCase, or capitalized after the first word
    (``Inventory``; kept only where some file defines it, see ``symbol_files``)."""
    found: list[str] = []
    for match in _IDENTIFIER.finditer(task):
        word = match.group(1) or match.group(2)
        quoted = match.group(1) is not None
        strong = quoted or "_" in word.strip("_") or _CAMEL.search(word) is not None
        capital = (
            word[0].isupper() and match.start() > 0 and not _SENTENCE_START.search(task, 0, match.start())
        )
        if (strong or capital) and word not in found:
            found.append(word)
    return found


# ASCII bounds: an identifier is ASCII-bounded in any language's sentence (with Unicode word
# bounds, "哪个文件定义了类Inventory？" hid Inventory behind the Chinese character before it).
_IDENTIFIER = re.compile(
    r"`([A-Za-z_][A-Za-z0-9_]*)`|(?<![A-Za-z0-9_./`-])([A-Za-z_][A-Za-z0-9_]*)(?![A-Za-z0-9_`]|\.[A-Za-z0-9_])"
)
_CAMEL = re.compile(r"[a-z][A-Z]")
# A sentence's end in Latin and in CJK punctuation (full-width). Punctuation, not words.
_SENTENCE_START = re.compile(r"(?:^|[.?!:]\s+|[\u3002\uff1f\uff01\uff1a]\s*)\W*$")


def definition_pattern(symbol: str) -> re.Pattern[str]:
    """A line that defines ``symbol``: ``def``/``class`` and their kin in common languages, or
    an assignment (``NAME = ...``, ``NAME: int = ...``, a TOML or INI key)."""
    name = re.escape(symbol)
    keyword = r"(?:async[ \t]+def|def|class|function|func|fn|struct|interface|type|enum|const|let|var)"
    return re.compile(
        rf"^[ \t]*(?:export[ \t]+)?{keyword}[ \t]+{name}\b|^[ \t]*{name}[ \t]*(?::[^=\n]*)?=(?!=)",
        re.MULTILINE,
    )


def symbol_files(
    symbols: Sequence[str], files: Sequence[str], read_text: Callable[[str], str]
) -> tuple[str, list[str]]:
    """The first of ``symbols`` that one to MAX_SYMBOL_FILES of ``files`` define, and those
    files (``read_text`` gives a file's text, "" when unreadable); ("", []) when none does or
    the workspace is too big to search."""
    if not symbols or len(files) > MAX_SYMBOL_SEARCH_FILES:
        return "", []
    texts = {path: read_text(path) for path in files}
    for symbol in symbols:
        pattern = definition_pattern(symbol)
        defining = [path for path, text in texts.items() if pattern.search(text)]
        if 0 < len(defining) <= MAX_SYMBOL_FILES:
            return symbol, defining
    return "", []


class TaskFocus:
    """The plan above for one run. ``files`` lists the workspace's text files (called when
    needed, the workspace may change); ``read_lines`` says how far a file was read from line 1
    (the run's read state); ``read_text`` gives a file's text for the symbol search (without
    it, only named files are planned for); ``answer`` is False when the run may change files
    (an edit needs more than reads, so no answer is forced); ``notes_text`` gives the note
    lines this run wrote. ``start`` hands it the task and its plan (``guide.plan``)."""

    def __init__(
        self,
        files: Callable[[], Iterable[str]],
        read_lines: Callable[[str], int],
        *,
        read_text: Callable[[str], str] | None = None,
        answer: bool = True,
        notes_text: Callable[[], str] | None = None,
    ) -> None:
        self.files = files
        self.read_lines = read_lines
        self.read_text = read_text
        self.answer = answer
        self.notes_text = notes_text
        self.task = ""
        self.plan = TaskPlan()
        self._plan: tuple[list[str], str] | None = None  # files, the symbol they define
        self._chosen = False  # the plan's files are its targets: the task names none of them

    def start(self, task: str, plan: TaskPlan) -> None:
        self.task, self.plan, self._plan, self._chosen = task, plan, None, False

    def _planned(self, messages: Sequence[Message]) -> tuple[list[str], str]:
        if not self.task and messages:  # a run started without ``start`` (an old caller)
            self.task = task_text(messages)
        if self._plan is None:
            self._plan = self._files_for(self.task)
        return self._plan

    def _files_for(self, task: str) -> tuple[list[str], str]:
        """The files the task names, else the files of the plan's targets, else those that
        define a symbol the task names (and the symbol)."""
        if not task or (self.plan.kind == "list" and any(t.endswith("/") for t in self.plan.targets)):
            return [], ""  # a list or count over folders: listed, no file of it read first
        files = list(self.files())
        named = named_files(task, files)
        if not named and self.read_text is not None:
            symbol, defining = symbol_files(named_symbols(task), files, self.read_text)
            if defining:
                return defining, symbol
        if not named:
            named = [t for t in self.plan.targets if t in files]
            self._chosen = bool(named)
        return named, ""

    @property
    def notes(self) -> bool:
        return self.plan.kind == "notes"

    def named(self, messages: Sequence[Message]) -> list[str]:
        """The files the plan reads: named by the task, or defining a symbol it names."""
        return self._planned(messages)[0]

    def unread(self, messages: Sequence[Message]) -> list[str]:
        """Planned files not read yet: read_file's only choices while there are any."""
        return [path for path in self.named(messages) if self.read_lines(os.path.normpath(path)) == 0]

    def __call__(self, messages: Sequence[Message]) -> str | None:
        """The prompt that asks for the final answer now, or None to let the model go on."""
        named, symbol = self._planned(messages)
        if not named or self.unread(messages):
            return None
        if self.notes:
            return notes_done_prompt(named, self._unnoted(named))
        if not self.answer and self.plan.kind not in ("answer", "list"):
            return edit_done_prompt(named, messages)
        outline = ""
        if self.plan.kind == "list" and self.read_text is not None:
            outline = "".join(f" {outline_line(path, self.read_text(path))}" for path in named)
        elif self.plan.kind == "answer" and self.read_text is not None:
            outline = "".join(
                held_line(path, self.read_text(path), self.task, named, symbol, self.plan.terms)
                for path in named
            )
            card = project_card(self.files(), self.read_text) if self._card_due(named) else ""
            outline = f"{outline} {card}" if card else outline  # last, next to the question
        return answer_prompt(self.task, named, symbol, outline)

    def _card_due(self, named: Sequence[str]) -> bool:
        """Whether the answer is asked with the project card: the reads include the project's
        metadata, or the task names none of them (the plan chose them). Measured with the 0.5B
        on "Which release of idna is this checkout?": "idna" names the package's folder, so the
        question was planned over three modules of it (the plan request's first candidates),
        and it answered "idna/compat.py"; a question that names no file is as likely about the
        project as about a file."""
        return self._chosen or any(map(is_metadata, named))

    def found(self, messages: Sequence[Message]) -> str | None:
        """What the harness itself found for a task naming a symbol ("X is defined in f.py."),
        or for a count over named files (their outlines: "keys.py defines at top level 4
        functions (...)."): the answer when the model's is none (see ``Agent._bare_answer``;
        the 0.5B, given that outline for "test/test_api.py 里有几个测试函数？", answered nothing
        twice and the run ended "(no final answer)")."""
        named, symbol = self._planned(messages)
        if symbol and named:
            return FOUND.format(symbol=symbol, where=", ".join(named)).strip()
        if self.plan.kind == "list" and named and self.read_text is not None and not self.unread(messages):
            return " ".join(outline_line(path, self.read_text(path)) for path in named)
        return None

    def next_tool(self, messages: Sequence[Message]) -> str | None:
        """The tool the next request must call: read_file while planned files are unread (the
        grammar then admits only a read of one of them). Measured with the 0.5B: with the
        named file only offered, not required, it called write_file before reading the file it
        was to edit, and list_dir on a named file before reading it. None after a read that
        failed (a binary file, say), so a file that cannot be read is not asked for forever."""
        if self.note_path(messages) is not None:
            return NOTE_TOOL
        if self.unread(messages):
            return None if _last_read_failed(messages) else READ_TOOL
        if self.edit_due(messages):
            return EDIT_TOOL
        return None

    def edit_due(self, messages: Sequence[Message]) -> bool:
        """In a run that may change files and a task whose plan is a change: the planned files
        are read and not all changed yet, so the next request must edit (measured with the
        0.5B on "In src/shop/pricing.py, change TAX_RATE from 0.2 to 0.25": after the read it
        called write_file on the file, refused, before any edit)."""
        named = self.named(messages)
        if self.answer or not named or self.plan.kind != "edit":
            return False
        changed = changed_files(messages)
        return not all(os.path.normpath(path) in changed for path in named)

    def note_path(self, messages: Sequence[Message]) -> str | None:
        """In a task whose plan is notes: the first planned file read and not noted yet, which
        the next request must note (before the next read, so the note is written with that
        file's text last in view). Measured with the 0.5B on "Read cart.py and pricing.py and
        write a one-line summary of each into the notes": left free after the reads, it read
        other files until the iteration limit and wrote no note."""
        if self.notes_text is None or not self.notes:
            return None
        named = self.named(messages)
        unnoted = self._unnoted(named)
        return next((p for p in named if p in unnoted and self.read_lines(os.path.normpath(p)) > 0), None)

    def note_choices(self, messages: Sequence[Message]) -> dict[str, list[str]]:
        """The note tool's ``path``, fixed to the file the plan notes next (else free)."""
        path = self.note_path(messages)
        return {"path": [path]} if path is not None else {}

    def _unnoted(self, named: Sequence[str]) -> list[str]:
        notes = self.notes_text() if self.notes_text is not None else ""
        noted = {line.partition(":")[0].strip() for line in notes.splitlines()}
        return [path for path in named if path not in noted]


READ_TOOL = "read_file"
EDIT_TOOL = "edit_file"
NOTE_TOOL = "note"
NOTED = "[Noted: {files}]"
CHANGE_TOOLS = ("edit_file", "write_file")
# After a change or the notes, no task words: the 0.5B answered both with "The task: ..." copied.
EDITED = "[Changed: {files}]"


def _last_read_failed(messages: Sequence[Message]) -> bool:
    if len(messages) < 2 or not messages[-1].tool_results:
        return False
    calls = {call.id: call.name for call in messages[-2].tool_uses}
    return any(r.is_error and calls.get(r.tool_use_id) == READ_TOOL for r in messages[-1].tool_results)


def changed_files(messages: Sequence[Message]) -> set[str]:
    """Files an edit_file or write_file call of ``messages`` changed (its result no error)."""
    failed = {r.tool_use_id for m in messages for r in m.tool_results if r.is_error}
    answered = {r.tool_use_id for m in messages for r in m.tool_results}
    return {
        os.path.normpath(call.input["path"])
        for m in messages
        for call in m.tool_uses
        if call.name in CHANGE_TOOLS
        and call.id in answered
        and call.id not in failed
        and isinstance(call.input, dict)
        and isinstance(call.input.get("path"), str)
    }


def notes_done_prompt(named: Sequence[str], unnoted: Sequence[str]) -> str | None:
    """In a task that asks for notes: once every planned file is noted, the answer is asked for
    (the notes are the task's result; a small model goes on reading other files otherwise)."""
    if unnoted:
        return None
    return NOTED.format(files=", ".join(named))


def edit_done_prompt(named: Sequence[str], messages: Sequence[Message]) -> str | None:
    """In a run that may change files: once every named file was changed, the answer is asked
    for: a small model cannot tell when it is done (measured with the 0.5B: after its change it
    went on calling tools until the iteration limit). A task whose change spans files it does
    not name may end before those, a trade made for the small models this plan is for."""
    changed = changed_files(messages)
    if not all(os.path.normpath(path) in changed for path in named):
        return None
    return EDITED.format(files=", ".join(named))


def is_question(task: str) -> bool:
    """Whether ``task`` asks a question: it holds a question mark (punctuation, not words)."""
    return any(mark in task for mark in QUESTION_MARKS)


def answer_ask(task: str) -> str:
    """The words that ask for the answer to ``task``: a task that asks a question (anywhere:
    "What does slugify return for 'Hello World'? Read the code.") is repeated last, so the
    answer answers it; a request is not, so its words are not copied as the answer."""
    task = " ".join(task.split())
    return ASK_QUESTION.format(task=task) if is_question(task) else ASK_REQUEST


def answer_prompt(task: str, files: Sequence[str], symbol: str = "", outline: str = "") -> str:
    """What asks for the answer: the files read, where the symbol is defined (or the files'
    outlines, for a count), then ``answer_ask``'s words (no instruction to copy; the request's
    grammar already allows only the final answer)."""
    where = ", ".join(files)
    found = FOUND.format(symbol=symbol, where=where) if symbol else ""
    return ANSWER_NOW.format(files=where, found=found + outline, ask=answer_ask(task))


def _python_tree(path: str, text: str) -> ast.Module | None:
    """A Python file's syntax tree; None for another file or one ``ast`` cannot parse."""
    if not path.endswith((".py", ".pyi")):
        return None
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError):
        return None


def defined_names(path: str, text: str) -> str:
    """A Python file's top-level functions and classes by name, no counts ("idna/codec.py
    defines search_function, Codec, IncrementalEncoder."; at most ``MAX_OUTLINE_NAMES``); a
    test file's (``is_test_file``) tests, functions and methods, which say what it tests
    ("tests/test_idna.py has the tests test_encode, test_alabel, ..."; its class names alone
    gave the 0.5B's notes "tests the IDNATests class"); "" for a file ``ast`` cannot parse or
    one that defines none."""
    tree = _python_tree(path, text)
    if tree is None:
        return ""
    kinds = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    names = [n.name for n in tree.body if isinstance(n, kinds)]
    if is_test_file(path):
        defs = (ast.FunctionDef, ast.AsyncFunctionDef)
        inner = [
            m.name for n in tree.body if isinstance(n, ast.ClassDef) for m in n.body if isinstance(m, defs)
        ]
        tests = [name for name in [*names, *inner] if name.startswith("test")]
        if tests:
            more = ", ..." if len(tests) > MAX_OUTLINE_NAMES else ""
            return f"{path} has the tests {', '.join(tests[:MAX_OUTLINE_NAMES])}{more}."
    if not names:
        return ""
    more = ", ..." if len(names) > MAX_OUTLINE_NAMES else ""
    return f"{path} defines {', '.join(names[:MAX_OUTLINE_NAMES])}{more}."


def outline_line(path: str, text: str) -> str:
    """A Python file's top-level definitions, counted by kind ("markdown/serializers.py
    defines at top level 8 functions (a, b, ...), 1 class (C)."), then the methods of its
    classes; a test file's (``is_test_file``) tests come first ("tests/test_x.py holds 3 tests
    (TestX.test_a, ...), as methods."); "" for a file ``ast`` cannot parse. A count a small
    model can copy: asked how many functions a file defines, the 0.5B read the file and
    answered "1" (it has 8). It copies the first count it is shown: asked how many test
    methods a unittest file holds, it answered "1", the count of its classes, in English,
    Chinese and German (the methods were not counted). Statements, not words of the task."""
    tree = _python_tree(path, text)
    if tree is None:
        return ""
    kinds: dict[str, list[str]] = {"function": [], "class": [], "assignment": []}
    methods: dict[str, list[str]] = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            kinds["function"].append(node.name)
        elif isinstance(node, ast.ClassDef):
            kinds["class"].append(node.name)
            defs = (ast.FunctionDef, ast.AsyncFunctionDef)
            methods[node.name] = [n.name for n in node.body if isinstance(n, defs)]
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            kinds["assignment"] += [t.id for t in targets if isinstance(t, ast.Name)]
    said = [_counted(len(names), _PLURALS[kind], names) for kind, names in kinds.items() if names]
    line = f"{path} defines at top level {', '.join(said) or 'nothing'}."
    held = {name: ms for name, ms in methods.items() if ms}
    if held:
        each = ", ".join(f"{name} {len(ms)}" for name, ms in held.items())
        line += f" Methods of its classes: {sum(map(len, held.values()))} ({each})."
    functions = [n for n in kinds["function"] if n.startswith("test")]
    in_classes = [f"{c}.{m}" for c, ms in held.items() for m in ms if m.startswith("test")]
    if is_test_file(path) and (functions or in_classes):
        tests = functions + in_classes
        ways = (("top-level functions", functions), ("methods", in_classes))
        how = " and ".join(way for way, some in ways if some)
        line = f"{path} holds {_counted(len(tests), ('test', 'tests'), tests)}, as {how}. {line}"
    return line


_PLURALS = {
    "function": ("function", "functions"),
    "class": ("class", "classes"),
    "assignment": ("assignment", "assignments"),
}


def _counted(n: int, words: tuple[str, str], names: Sequence[str]) -> str:
    more = ", ..." if len(names) > MAX_OUTLINE_NAMES else ""
    return f"{n} {words[0] if n == 1 else words[1]} ({', '.join(names[:MAX_OUTLINE_NAMES])}{more})"


def is_test_file(path: str) -> bool:
    """A test module by pytest's default file names (``test_*.py``, ``*_test.py``): a
    convention of the code, not a word of the task."""
    name = os.path.basename(path)
    return name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py"))


MAX_OUTLINE_NAMES = 12


def held_line(
    path: str, text: str, task: str, skip: Sequence[str], symbol: str = "", terms: Sequence[str] = ()
) -> str:
    """The lines of a Python file that bind what a question asks about (``sites.held_lines``:
    assignments, defaults, headers holding the task's literals or its names' words; ``skip``
    names the files; a ``symbol`` the task names keeps only the lines of its body, with its
    own words left out: the 0.5B, shown ``return_timestamp`` lines for "What does
    get_timestamp return?", answered "get_timestamp is defined in timed.py."), to go with the
    request for the answer:
    " signer.py holds: line 127 `default_key_derivation: str = "django-concat"`." A TOML/INI
    file's ``key = value`` lines likewise; ``terms``: the task's words as the code writes them,
    matched when its own match no line. "" when no line holds any, or the file is neither.
    The read page may end before the line: the
    0.5B then answered a class name it had seen, "NoneAlgorithm", for a default salt."""
    if not path.endswith((".py", ".pyi", *CONFIG_SUFFIXES)):
        return prose_sentence(path, prose_lines(text, task, skip))  # a change log, a README
    return held_sentence(path, held_numbered(path, text, task, skip, symbol, terms))


def held_sentence(path: str, held: Sequence[tuple[int, str]]) -> str:
    """``held_numbered``'s lines of ``path`` as ``held_line`` writes them ("" for none)."""
    if not held:
        return ""
    lines = ", ".join(f"line {number} `{line}`" for number, line in held)
    return f" {os.path.basename(path)} holds: {lines}."


def held_numbered(
    path: str, text: str, task: str, skip: Sequence[str], symbol: str = "", terms: Sequence[str] = ()
) -> list[tuple[int, str]]:
    """``held_line``'s lines, with their numbers ([] for a file neither Python nor TOML/INI)."""
    python = path.endswith((".py", ".pyi"))
    if not python and not path.endswith(CONFIG_SUFFIXES):
        return []
    within = None
    if symbol:
        within = definition_span(text, symbol) if python else None
        if within is None:
            # A name bound by an assignment has no body: its own lines are what holds it (the
            # 0.5B, asked what ``WIDE_CHARS_MODE``'s default depends on and shown nothing, copied
            # "WIDE_CHARS_MODE is defined in tabulate/__init__.py.").
            return assignment_lines(text, symbol) if python else []
    return held_lines(text, task, [*skip, symbol], python=python, within=within, terms=terms)


MAX_EDIT_CHOICES = 300  # lines offered as edit_file's old text
MAX_EDIT_CHOICE_CHARS = 300
MAX_EDIT_CHOICE_BYTES = 200_000  # a larger named file leaves old free
NEW_LINE_SLACK = 240  # what a new line may add to the longest old line offered


def new_line_bound(old: Sequence[str]) -> int:
    """The longest ``new`` text of an edit whose ``old`` is one of the lines ``old``: the line
    rewritten, with room for a longer value or an added clause. Measured with the 0.5B on
    "In src/isodate/isostrf.py, make D_DEFAULT the weeks format "P%p" instead of "P%P"": offered
    the file's lines as old, it wrote ``D_DEFAULT = "P" + DATE_EXT_COMPLETE + "T" + ...``
    repeated to max_tokens (380 s, and the run stopped); the grammar ends the string here, and
    an edit that would not parse is refused, so the model tries again."""
    return max((len(line) for line in old), default=0) + NEW_LINE_SLACK


def untied_files(workspace: Workspace, messages: Sequence[Message], focus: TaskFocus) -> list[str]:
    """The planned Python and TOML/INI/cfg files where no line ties to the task: none of their
    binding lines (a config file's ``key = value`` lines) holds a literal or a name the task
    writes (``sites.value_sites``, ``sites.config_sites``), and no name the task writes occurs
    in them. An edit there would be a guess (the 0.5B, asked "Set the page size in
    the shop's settings to 40." and offered every line, changed ``DEFAULT_CURRENCY``)."""
    untied: list[str] = []
    symbols = named_symbols(focus.task)
    for path in focus.named(messages):
        config = path.endswith(CONFIG_SUFFIXES)
        if not path.endswith((".py", ".pyi")) and not config:
            continue
        text = head_text(workspace, path, MAX_EDIT_CHOICE_BYTES + 1)
        if len(text) > MAX_EDIT_CHOICE_BYTES or not text.strip() or any(s in text for s in symbols):
            continue
        lines = text.splitlines()
        if named_sites(path, text, focus.task, focus.plan.terms, lines):
            continue
        if config:
            if not config_sites(focus.task, lines):
                untied.append(path)
        elif binding_lines(text) and not value_sites(text, focus.task, lines):
            untied.append(path)
    return untied


def named_sites(path: str, text: str, task: str, terms: Sequence[str], own: Sequence[str]) -> list[str]:
    """Of ``own`` (lines an edit may change), the binding lines (a config file's key lines) with
    a name whose every word the task writes, or writes in the plan's words in code
    (``sites.held_lines``, ``whole``): where a value lives that the task names by its words,
    not by the name itself. Measured with the 0.5B on "Change this project's version to
    3.7.1.": offered every line of ``__meta__.py``, it edited ``from __future__ import
    annotations`` five times; ``__version__ = _get_version(__version_info__)`` is such a line
    (and, in Chinese, "version" among the words in code)."""
    python = path.endswith((".py", ".pyi"))
    numbered = text.splitlines()
    owned = set(own)
    held = held_lines(text, task, [path], python=python, terms=terms, whole=True)
    return [numbered[n - 1] for n, _ in held if 0 < n <= len(numbered) and numbered[n - 1] in owned]


def refused_twice(messages: Sequence[Message]) -> set[str]:
    """The ``old`` texts of edit_file calls the guide refused twice or more in ``messages``."""
    refused = {r.tool_use_id for m in messages for r in m.tool_results if r.refused}
    counts: dict[str, int] = {}
    for m in messages:
        for call in m.tool_uses:
            old = call.input.get("old") if isinstance(call.input, dict) else None
            if call.name == EDIT_TOOL and call.id in refused and isinstance(old, str):
                counts[old] = counts.get(old, 0) + 1
    return {old for old, count in counts.items() if count >= 2}


def edit_choices(workspace: Workspace, messages: Sequence[Message], focus: TaskFocus) -> ChoiceMap:
    """edit_file's choices when the task names the files to change (``focus``): ``path`` one of
    them, ``old`` one whole line of them that occurs once in its file. Measured with
    Qwen2.5-Coder-0.5B asked to change one constant: free, it gave as old text a line that
    was not in the file, then the whole read_file result with its line numbers, refused each
    time; a line picked from the file's own lines matches by construction. ``new`` is then
    bounded (``new_line_bound``), not chosen. Edits of several lines are not offered this way (a
    small model's edit is one line); with no named file all three stay free."""
    named = focus.named(messages)
    lines: list[str] = []
    sites: list[str] = []
    for path in named:
        text = head_text(workspace, path, MAX_EDIT_CHOICE_BYTES + 1)
        if len(text) > MAX_EDIT_CHOICE_BYTES:
            return {"path": named}
        counts: dict[str, int] = {}
        for line in text.splitlines():
            counts[line] = counts.get(line, 0) + 1
        own = [
            line
            for line, count in counts.items()
            if count == 1 and line.strip() and len(line) <= MAX_EDIT_CHOICE_CHARS and text.count(line) == 1
        ]
        lines.extend(own)
        if path.endswith((".py", ".pyi")):
            sites.extend(
                value_sites(text, focus.task, own)
                or named_sites(path, text, focus.task, focus.plan.terms, own)
            )
        elif path.endswith(CONFIG_SUFFIXES):
            sites.extend(
                config_sites(focus.task, own) or named_sites(path, text, focus.task, focus.plan.terms, own)
            )
    # A line whose edit was refused twice is offered no more while others are (the 0.5B sent
    # the same refused edit of D_ALT_EXT's line five times, and the run stopped stuck).
    spent = refused_twice(messages)
    sites = [line for line in sites if line not in spent] or sites
    lines = [line for line in lines if line not in spent] or lines
    # A Python file's lines that bind a value and hold what the task writes, a literal first
    # (``sites``): the same in every language, and never a class header for a task naming the
    # class that holds the value (the 0.5B, offered ``class Signer:``, renamed the class).
    if sites and len(sites) <= MAX_EDIT_CHOICES:
        return {"path": named, "old": sites, "new": new_line_bound(sites)}
    # The line to change names what the task names ("change TAX_RATE ...": 2 of 9 lines), and
    # defines it when one does (measured with the 0.5B on "In tables.py, change PIPE_RIGHT from
    # 2 to 4": offered every line naming PIPE_RIGHT, it edited a use, not the definition).
    symbols = named_symbols(focus.task)
    lines = [line for line in lines if any(s in line for s in symbols)] or lines
    patterns = [definition_pattern(s) for s in symbols]
    lines = [line for line in lines if any(p.search(line) for p in patterns)] or lines
    # No name written: every line, the same in every language. (The names whose words the task
    # writes were tried: that read the task's English words, and a Chinese task got every line;
    # the lines that define a name leave out the body line an edit often has to change.)
    if not lines or len(lines) > MAX_EDIT_CHOICES:
        return {"path": named} if named else {}
    return {"path": named, "old": lines, "new": new_line_bound(lines)}

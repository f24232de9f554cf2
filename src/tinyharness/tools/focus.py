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
  only the final answer. A task that names no file is left to the model.

May import ``messages``, ``history`` and the file tools' read state; nothing else.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Sequence

from ..history import HARNESS_TEXT_PREFIX
from ..messages import Message, TextBlock

ANSWER_NOW = (
    "You have read {files}, the file{s} the task names. Now give your final answer to the task "
    "with final_answer, from what you read."
)
# A task that asks for notes needs the note tool after the reads, not an answer.
_ASKS_FOR_NOTES = re.compile(r"\bnotes?\b|NOTES\.md", re.IGNORECASE)


def task_text(messages: Sequence[Message]) -> str:
    """The user's own text of the first message (what compaction inserted left out)."""
    if not messages:
        return ""
    return "\n".join(
        b.text
        for b in messages[0].content
        if isinstance(b, TextBlock) and not b.text.startswith(HARNESS_TEXT_PREFIX)
    )


def named_files(task: str, files: Iterable[str]) -> list[str]:
    """The ``files`` (workspace-relative paths) that ``task`` names: by path, or by a file name
    no other file has; in the order the task names them."""
    files = list(files)
    by_name: dict[str, list[str]] = {}
    for path in files:
        by_name.setdefault(os.path.basename(path), []).append(path)
    found: dict[str, int] = {}
    for path in files:
        base = os.path.basename(path)
        for candidate in {path, base} if len(by_name[base]) == 1 else {path}:
            match = re.search(rf"(?<![\w./-]){re.escape(candidate)}(?![\w-]|\.\w)", task)
            if match is not None:
                found[path] = min(found.get(path, match.start()), match.start())
    return sorted(found, key=found.__getitem__)


class TaskFocus:
    """The plan above for one run. ``files`` lists the workspace's text files (called when
    needed, the workspace may change); ``read_lines`` says how far a file was read from line 1
    (the run's read state); ``answer`` is False when the run may change files (an edit needs
    more than reads, so no answer is forced)."""

    def __init__(
        self,
        files: Callable[[], Iterable[str]],
        read_lines: Callable[[str], int],
        *,
        answer: bool = True,
    ) -> None:
        self.files = files
        self.read_lines = read_lines
        self.answer = answer
        self._named: tuple[str, list[str]] | None = None

    def named(self, messages: Sequence[Message]) -> list[str]:
        task = task_text(messages)
        if self._named is None or self._named[0] != task:
            self._named = (task, named_files(task, self.files()) if task else [])
        return self._named[1]

    def unread(self, messages: Sequence[Message]) -> list[str]:
        """Named files not read yet: read_file's only choices while there are any."""
        return [path for path in self.named(messages) if self.read_lines(os.path.normpath(path)) == 0]

    def __call__(self, messages: Sequence[Message]) -> str | None:
        """The prompt that asks for the final answer now, or None to let the model go on."""
        if not self.answer:
            return None
        named = self.named(messages)
        if not named or self.unread(messages) or _ASKS_FOR_NOTES.search(task_text(messages)):
            return None
        return ANSWER_NOW.format(files=", ".join(named), s="s" if len(named) > 1 else "")

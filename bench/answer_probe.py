"""What a local model answers after the task focus's reads, under several answer prompts.

Runs a task through the CLI as a user would (``tinyharness run TASK --model local ...``), with
the model wrapped: the request that asks for the answer (after the planned reads) is sent once
per answer prompt given here, and each answer is printed with what ``strip_echo`` keeps of it.
The run itself ends with the first prompt's answer. The reads before it are the real model's;
only the last words of the answer request differ between the variants, so the server's prompt
cache makes each extra variant cost a few seconds.

    python -m bench.answer_probe --workspace . \
        --task "Read README.md and tell me in one sentence what this project is"
    python -m bench.answer_probe --shop --task "Which port does config.toml set for the server?"
    python -m bench.answer_probe --suite-task long-handbook --window 4096

A task over a folder's files (the file-set plan) is asked for its answer by the plan's last
prompt ("All N files of the task are covered ..."), with the notes the run wrote before it when
it is a question: those runs are probed with the ``SET_VARIANTS`` below instead.
"""

from __future__ import annotations

import argparse
import re
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

from bench.tasks import TASKS, build_workspace
from tinyharness import cli
from tinyharness.guide.focus import task_text
from tinyharness.history import strip_echo
from tinyharness.messages import Message, TextBlock
from tinyharness.models.base import ModelRequest, ModelResponse

# Each takes {files}, {found} (" X is defined in F." or "") and {task}.
VARIANTS: dict[str, str] = {
    "task-last": "[Read: {files}]{found} The task: {task}",
    "ask": "[Read: {files}]{found} Answer the task now, from what you read.",
    "task-then-ask": (
        "[Read: {files}]{found} The task was: {task} Answer it now in your own words, from what you read."
    ),
    "first-message": (
        "[Read: {files}]{found} Now answer the request of the first message, from the file above."
    ),
    "no-repeat": "[Read: {files}]{found} The task: {task} (answer it; do not repeat it)",
}
# The harness's prompt that asks for the answer: the files read, and where a symbol is defined.
_PROMPT = re.compile(r"^\[Read: (?P<files>[^\]]*)\](?P<found>(?: \S+ is defined in [^.]*\.)?)")
# The file-set plan's: {notes} (the run's notes, possibly empty), {head} ("All N files of the task
# are covered (each one was read)."), {task} and {asked} (the task's "tell me ..." part as a question).
NOTES = "Your notes from these files:\n{notes}\n\n"
SET_VARIANTS: dict[str, str] = {
    "notes-ask": NOTES + "{head} Answer the task now, from what you read.",
    "ask": "{head} Answer the task now, from what you read.",
    "notes-from-notes": NOTES + "{head} Answer the task now, from your notes.",
    "notes-question": NOTES + "{head} The question: {asked}",
    "notes-task": NOTES + "{head} The task: {task}",
    "head-notes-question": "{head}\n" + NOTES + "From your notes: {asked}",
}
_SET_PROMPT = re.compile(
    r"^(?:Your notes from these files:\n(?P<notes>.*?)\n\n)?"
    r"(?P<head>All \d+ files of the task are covered \([^)]*\)\.)",
    re.DOTALL,
)
# The file-set plan's request for a question's finding right after a read: {path}, {question}.
FIND_VARIANTS: dict[str, str] = {
    "if-answers": (
        'If {path} answers the question "{question}", call note with the sentence of {path} that '
        "answers it. If it does not, call note with the word: nothing"
    ),
    "copy-no-question": (
        "Copy into the note the one sentence of {path} that answers the task, word for word. "
        "If no sentence of it does, note: nothing"
    ),
    "which-sentence": (
        "Which sentence of {path} answers this: {question} Note that sentence word for word, or: nothing"
    ),
    "gives-answer": (
        "Note the sentence of {path} that gives the answer to the task, word for word (or: nothing)."
    ),
}
_FIND_PROMPT = re.compile(r"^Note the sentence of (?P<path>\S+) that gives the answer")


def asked(task: str) -> str:
    """The question the harness asks for ``task``: the task itself (the plan's kind says it is a
    question; no words of the task are rewritten)."""
    return " ".join(task.split())


class Probe:
    """A model that asks each variant of the answer prompt and returns the first's answer."""

    def __init__(
        self, inner: Any, variants: dict[str, str], set_variants: dict[str, str] | None = None
    ) -> None:
        self.inner = inner
        self.variants = variants
        self.set_variants = set_variants or SET_VARIANTS

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)  # everything but complete is the model's own

    async def complete(self, request: ModelRequest) -> ModelResponse:
        last = request.messages[-1] if request.messages else None
        prompt = last.content[-1] if last is not None and last.content else None
        text = prompt.text if isinstance(prompt, TextBlock) else ""
        finding = _FIND_PROMPT.match(text)
        if finding is not None and last is not None:
            about = {"path": str(finding["path"]), "question": asked(task_text(request.messages))}
            return await self._variants(request, last, FIND_VARIANTS, about)
        parts, variants = _PROMPT.match(text), self.variants
        if parts is None:
            parts, variants = _SET_PROMPT.match(text), self.set_variants
        task = " ".join(task_text(request.messages).split())
        if not request.final_only or last is None or parts is None:
            response: ModelResponse = await self.inner.complete(request)
            return response
        fields = {k: v or "" for k, v in parts.groupdict().items()}
        return await self._variants(request, last, variants, {**fields, "task": task, "asked": asked(task)})

    async def _variants(
        self, request: ModelRequest, last: Message, variants: dict[str, str], fields: dict[str, str]
    ) -> ModelResponse:
        first: ModelResponse | None = None
        for label, template in variants.items():
            text = template.format(**fields)
            sent = Message(last.role, (*last.content[:-1], TextBlock(text)))
            reply = await self.inner.complete(replace(request, messages=(*request.messages[:-1], sent)))
            answer = reply.message.text or " ".join(str(call.input) for call in reply.message.tool_uses)
            kept = strip_echo(answer, [text])
            shown = "" if kept == answer else f"\n      kept: {kept!r}"
            print(f"  [{label}] {answer!r}{shown}", flush=True)
            first = first or reply
        assert first is not None
        return first


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--task", action="append", default=[], help="a task (repeatable)")
    parser.add_argument("--suite-task", help="a task of the suite (bench/tasks.py), in its own workspace")
    parser.add_argument("--workspace", default=".")
    parser.add_argument("--shop", action="store_true", help="run in a fresh copy of the suite's shop project")
    parser.add_argument("--model", default="local")
    parser.add_argument("--window", type=int, help="the context window (default: the model's)")
    parser.add_argument("--max-iterations", type=int, default=4)
    args = parser.parse_args()
    workspace = Path(args.workspace)
    if args.shop or args.suite_task:
        suite = next((t for t in TASKS if t.name == args.suite_task), None)
        if args.suite_task and suite is None:
            parser.error(f"no suite task {args.suite_task!r}")
        workspace = Path(tempfile.mkdtemp(prefix="answer-probe-"))
        build_workspace(workspace, suite.extra if suite else None)
        args.task += [suite.prompt] if suite else []
    if not args.task:
        parser.error("give --task or --suite-task")
    load = cli._model_from_args
    cli._model_from_args = lambda a: Probe(load(a), VARIANTS)
    for task in args.task:
        print(f"task: {task}", flush=True)
        code = cli.main(
            [
                "run", task, "--model", args.model, "--workspace", str(workspace),
                "--no-log", "--quiet", "--no-memory", "--max-iterations", str(args.max_iterations),
                *(["--context-window", str(args.window)] if args.window else []),
            ]
        )  # fmt: skip
        print(f"  exit {code}", flush=True)


if __name__ == "__main__":
    main()

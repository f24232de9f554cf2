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
"""

from __future__ import annotations

import argparse
import re
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

from bench.tasks import build_workspace
from tinyharness import cli
from tinyharness.history import strip_echo
from tinyharness.messages import Message, TextBlock
from tinyharness.models.base import ModelRequest, ModelResponse
from tinyharness.tools.focus import task_text

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


class Probe:
    """A model that asks each variant of the answer prompt and returns the first's answer."""

    def __init__(self, inner: Any, variants: dict[str, str]) -> None:
        self.inner = inner
        self.variants = variants

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)  # everything but complete is the model's own

    async def complete(self, request: ModelRequest) -> ModelResponse:
        last = request.messages[-1] if request.messages else None
        prompt = last.content[-1] if last is not None and last.content else None
        parts = _PROMPT.match(prompt.text) if isinstance(prompt, TextBlock) else None
        task = task_text(request.messages)
        if not request.final_only or last is None or parts is None:
            response: ModelResponse = await self.inner.complete(request)
            return response
        first: ModelResponse | None = None
        for label, template in self.variants.items():
            text = template.format(**parts.groupdict(), task=" ".join(task.split()))
            asked = Message(last.role, (*last.content[:-1], TextBlock(text)))
            reply = await self.inner.complete(replace(request, messages=(*request.messages[:-1], asked)))
            answer = reply.message.text
            kept = strip_echo(answer, [text])
            shown = "" if kept == answer else f"\n      kept: {kept!r}"
            print(f"  [{label}] {answer!r}{shown}", flush=True)
            first = first or reply
        assert first is not None
        return first


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--task", action="append", required=True, help="a task (repeatable)")
    parser.add_argument("--workspace", default=".")
    parser.add_argument("--shop", action="store_true", help="run in a fresh copy of the suite's shop project")
    parser.add_argument("--model", default="local")
    parser.add_argument("--window", type=int, help="the context window (default: the model's)")
    args = parser.parse_args()
    workspace = Path(args.workspace)
    if args.shop:
        workspace = Path(tempfile.mkdtemp(prefix="answer-probe-"))
        build_workspace(workspace)
    load = cli._model_from_args
    cli._model_from_args = lambda a: Probe(load(a), VARIANTS)
    for task in args.task:
        print(f"task: {task}", flush=True)
        code = cli.main(
            [
                "run", task, "--model", args.model, "--workspace", str(workspace),
                "--no-log", "--quiet", "--no-memory", "--max-iterations", "4",
                *(["--context-window", str(args.window)] if args.window else []),
            ]
        )  # fmt: skip
        print(f"  exit {code}", flush=True)


if __name__ == "__main__":
    main()

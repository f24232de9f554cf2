"""What a local model is about to do: the probabilities of its next action's tool name.

Replays a short history through the real tools (a task, then the given read_file calls on a
workspace), sends the exact JSON-mode request the agent would send next to a local model at
temperature 0, and prints the top candidates for the first token of the tool name (the grammar
fixes everything before it). ``--check`` also sends a separate yes/no request ("do the results
above hold what you need to answer the task now?") and prints its tokens; ``--matrix MODEL``
runs both over states of the shop project where the answer is and is not in view. One model
process, a few requests; the prompt prefix is cached by the server between variants.

    python -m bench.choice_probe --model qwen2.5-coder-0.5b --workspace . \
        --task "Read README.md and tell me in one sentence what this project is" --read README.md
"""

from __future__ import annotations

import argparse
import asyncio
import math
import time
from pathlib import Path
from typing import Any

from tinyharness.events import EventBus
from tinyharness.messages import Message, TextBlock, ToolUseBlock
from tinyharness.models import json_mode
from tinyharness.models.base import ModelRequest
from tinyharness.models.local import LocalServer, resolve_local
from tinyharness.models.openai_chat import json_schema_format, messages_to_wire
from tinyharness.tools.builtin import builtin_tools

CHECK = (
    "[check] The task: {task}\nDo the results above hold what you need to answer the task now? "
    'Reply {{"ready": true}} or {{"ready": false}}.'
)
CHECK_SCHEMA = {
    "type": "object",
    "properties": {"ready": {"type": "boolean"}},
    "required": ["ready"],
    "additionalProperties": False,
}


def top_tokens(
    server: LocalServer, system: str, messages: tuple[Message, ...], schema: Any, k: int = 8
) -> Any:
    """The generated tokens with their top-k alternatives."""
    client = server.openai_client(timeout=3600, max_retries=0)
    wire = [{"role": "system", "content": system}, *messages_to_wire(messages)]

    async def ask() -> Any:
        return await client.chat.completions.create(
            model="local",
            messages=wire,  # type: ignore[arg-type]
            max_tokens=12,
            temperature=0.0,
            logprobs=True,
            top_logprobs=k,
            response_format=json_schema_format("action", schema),  # type: ignore[arg-type]
        )

    reply = asyncio.run(ask())
    return reply.choices[0].logprobs.content or [], reply.choices[0].message.content, reply.usage


def name_position(tokens: Any) -> int:
    """The index of the first token after ``"tool": "``."""
    text = ""
    for index, token in enumerate(tokens):
        if text.rstrip().endswith('"tool": "') or text.rstrip().endswith('"tool":"'):
            return index
        text += token.token
    return 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="qwen2.5-coder-0.5b")
    parser.add_argument("--workspace", default=".")
    parser.add_argument("--task", required=True)
    parser.add_argument("--read", action="append", default=[], help="a read_file path (repeatable)")
    parser.add_argument("--window", type=int, default=8192)
    parser.add_argument("--result-cap", type=int, default=4800)
    parser.add_argument("--check", action="store_true", help="also ask the answer check")
    parser.add_argument("--system", default=None)
    args = parser.parse_args()

    from tinyharness.agent import DEFAULT_SYSTEM_PROMPT

    tools = builtin_tools(Path(args.workspace), result_cap=args.result_cap)
    for name in ("write_file", "edit_file"):
        tools.remove(name)
    messages: list[Message] = [Message.user(args.task)]
    for n, path in enumerate(args.read, 1):
        call = ToolUseBlock(f"call_{n}", "read_file", {"path": path})
        result = asyncio.run(tools.run_call(call, EventBus()))
        messages += [Message("assistant", (call,)), Message("user", (result,))]
    server = LocalServer(resolve_local(args.model).path, n_ctx=args.window).start()
    request = ModelRequest(
        tuple(messages), args.system or DEFAULT_SYSTEM_PROMPT, tools.specs, "agent", max_tokens=12
    )
    plan = json_mode.plan_request(request)
    began = time.monotonic()
    tokens, text, usage = top_tokens(server, plan.system, plan.messages, plan.schema)
    at = name_position(tokens)
    print(f"reply {text!r}  prompt {usage.prompt_tokens} tokens, {time.monotonic() - began:.1f}s")
    if tokens:
        for alt in tokens[at].top_logprobs:
            print(f"  {alt.token!r:24} p={math.exp(alt.logprob):.3f}")
    if args.check:
        question = CHECK.format(task=args.task)
        *earlier, last = plan.messages
        asked = (*earlier, Message("user", (*last.content, TextBlock(question))))
        began = time.monotonic()
        tokens, text, usage = top_tokens(server, plan.system, asked, CHECK_SCHEMA)
        print(f"check {text!r}  prompt {usage.prompt_tokens} tokens, {time.monotonic() - began:.1f}s")
        for token in tokens:
            print(
                f"  {token.token!r}: "
                + ", ".join(f"{a.token!r}={math.exp(a.logprob):.2f}" for a in token.top_logprobs[:3])
            )
    server.close()


CHECKS = {
    "ready": CHECK,
    "now": (
        "[check] The task: {task}\nCould you give the final answer to this task right now, from the "
        'results above alone? Reply {{"ready": true}} or {{"ready": false}}.'
    ),
    "found": (
        "[check] The task: {task}\nIs the information the task asks for in the results above? "
        'Reply {{"ready": true}} or {{"ready": false}}.'
    ),
}


def matrix(model: str) -> None:
    """p(final_answer) and p(true) of each check wording, in states where the answer is and is
    not in the window (the shop project of bench/tasks.py)."""
    import tempfile

    from bench.tasks import build_workspace
    from tinyharness.agent import DEFAULT_SYSTEM_PROMPT

    folder = Path(tempfile.mkdtemp(prefix="probe-"))
    build_workspace(folder)
    states = [
        ("What is the value of TAX_RATE in src/shop/pricing.py?", [], "no"),
        ("What is the value of TAX_RATE in src/shop/pricing.py?", ["config.toml"], "no"),
        ("What is the value of TAX_RATE in src/shop/pricing.py?", ["src/shop/pricing.py"], "yes"),
        ("Which port does config.toml set for the server?", ["config.toml"], "yes"),
        ("Which port does config.toml set for the server?", ["README.md"], "no"),
        ("Read README.md and tell me in one sentence what this project is", ["README.md"], "yes"),
        ("Read README.md and tell me in one sentence what this project is", [], "no"),
        ("Which file defines the class Inventory?", ["src/shop/inventory.py"], "yes"),
        ("Which file defines the class Inventory?", ["src/shop/cart.py"], "no"),
    ]
    tools = builtin_tools(folder)
    for name in ("write_file", "edit_file"):
        tools.remove(name)
    server = LocalServer(resolve_local(model).path, n_ctx=8192).start()
    for task, reads, expected in states:
        messages: list[Message] = [Message.user(task)]
        for n, path in enumerate(reads, 1):
            call = ToolUseBlock(f"call_{n}", "read_file", {"path": path})
            result = asyncio.run(tools.run_call(call, EventBus()))
            messages += [Message("assistant", (call,)), Message("user", (result,))]
        request = ModelRequest(tuple(messages), DEFAULT_SYSTEM_PROMPT, tools.specs, "agent", max_tokens=8)
        plan = json_mode.plan_request(request)
        tokens, _text, _usage = top_tokens(server, plan.system, plan.messages, plan.schema)
        alts = {a.token: math.exp(a.logprob) for a in tokens[name_position(tokens)].top_logprobs}
        row = [
            f"{task[:40]!r} reads={reads} expect={expected} final={alts.get('final', 0):.2f} "
            f"top={max(alts, key=alts.__getitem__)}"
        ]
        for label, wording in CHECKS.items():
            *earlier, last = plan.messages
            asked = (*earlier, Message("user", (*last.content, TextBlock(wording.format(task=task)))))
            tokens, _text, _usage = top_tokens(server, plan.system, asked, CHECK_SCHEMA)
            value = next((t for t in tokens if t.token.strip() in ("true", "false")), None)
            p_true = 0.0
            if value is not None:
                p_true = sum(math.exp(a.logprob) for a in value.top_logprobs if a.token.strip() == "true")
            row.append(f"{label}={p_true:.2f}")
        print("  ".join(row), flush=True)
    server.close()


if __name__ == "__main__":
    import sys

    if sys.argv[1:2] == ["--matrix"]:
        matrix(sys.argv[2] if len(sys.argv) > 2 else "qwen2.5-coder-0.5b")
    else:
        main()

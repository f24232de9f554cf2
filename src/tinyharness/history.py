"""Read-only questions about a message list: which files were read, which calls made, and the
conversation as plain text for another model to read.

They live on the ground floor, beside the message types, because context management (what to
restore, what to flush), the file tools (which paths are worth offering) and long-term memory
(what to extract from) all ask them. Nothing here changes a message or touches a file.

May import: ``messages``, ``quoting``. Nothing else of the package.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Sequence

from .messages import Message, TextBlock, ToolResultBlock, ToolUseBlock
from .quoting import blocks, quote

FILE_TOOLS = ("read_file", "edit_file", "write_file")
# What the harness writes into a history (context.rewrite's tags, context.strategies' cleared
# results), spelled here so transcripts can leave it out; a test keeps the spellings equal.
HARNESS_TEXT_PREFIX = "[context: "
CLEARED_RESULT_PREFIX = "[tool result cleared"
OFFLOADED_RESULT_MARK = "[output truncated:"  # a result cut to a preview (context.strategies)
# Ends a file the restore step had to cut; restored_in_full tells such files from whole ones.
CUT_MARK = "[... cut; read_file for the rest]"
quoted = quote  # the one quoting function (``tinyharness.quoting``), by its older name


def tool_calls_by_id(messages: Iterable[Message]) -> dict[str, ToolUseBlock]:
    return {b.id: b for m in messages if m.role == "assistant" for b in m.tool_uses}


def describe_call(call: ToolUseBlock | None, limit: int = 160) -> str:
    """``read_file(path='src/a.py')``: enough to make the call again."""
    if call is None:
        return "an earlier tool call"
    if isinstance(call.input, dict):
        args = ", ".join(
            f"{k}={json.dumps(v, ensure_ascii=False, default=str)}" for k, v in call.input.items()
        )
    else:
        args = str(call.input)
    if len(args) > limit:
        args = args[: limit - 3] + "..."
    return f"{call.name}({args})"


def recent_file_paths(messages: Sequence[Message], limit: int) -> list[str]:
    """Paths of read_file/edit_file/write_file calls, most recent first, without repeats."""
    seen: list[str] = []
    for message in reversed(messages):
        if message.role != "assistant":
            continue
        for block in reversed(message.content):
            if isinstance(block, ToolUseBlock) and block.name in FILE_TOOLS:
                path = block.input.get("path") if isinstance(block.input, dict) else None
                if isinstance(path, str) and path and path not in seen:
                    seen.append(path)
                    if len(seen) >= limit:
                        return seen
    return seen


def file_reads(messages: Sequence[Message]) -> Iterator[tuple[str, ToolUseBlock, ToolResultBlock]]:
    """Each successful read_file call with a path in ``messages``, in order: the path, the call
    and its result (a call with raw, undecodable arguments has no path and is left out)."""
    results = {
        b.tool_use_id: b
        for m in messages
        if m.role == "user"
        for b in m.content
        if isinstance(b, ToolResultBlock)
    }
    for message in messages:
        for block in message.tool_uses:
            result = results.get(block.id)
            path = block.input.get("path") if isinstance(block.input, dict) else None
            if block.name == "read_file" and isinstance(path, str) and result and not result.is_error:
                yield path, block, result


def paths_still_visible(messages: Sequence[Message]) -> set[str]:
    """Files whose full read_file result is still in the window: no need to re-read them."""
    return {
        path
        for path, call, result in file_reads(messages)
        if not result.content.startswith("[")  # cleared or offloaded placeholders
        and "start_line" not in call.input
    }


def restored_in_full(messages: Sequence[Message]) -> set[str]:
    """Files a restore step put back whole into the head message (quoted ``<file>`` blocks
    that do not end with CUT_MARK)."""
    head = messages[0].content if messages else ()
    return {
        attributes.get("path", "")
        for block in head
        if isinstance(block, TextBlock) and "<file path=" in block.text
        for attributes, body in blocks(block.text, "file")
        if not body.endswith(CUT_MARK)
    }


def transcript_lines(messages: Sequence[Message], result_chars: int) -> list[str]:
    """The conversation for a model to read (the summarizer, memory extraction): text by role,
    each call as it could be made again, each result quoted as data and clipped to
    ``result_chars``; thinking left out (reasoning is not a fact anyone needs later)."""
    calls = tool_calls_by_id(messages)
    lines: list[str] = []
    for message in messages:
        for block in message.content:
            if isinstance(block, TextBlock) and block.text.strip():
                if not block.text.startswith(HARNESS_TEXT_PREFIX):  # not the user's words
                    lines.append(f"{message.role.upper()}: {block.text}")
            elif isinstance(block, ToolUseBlock):
                lines.append(f"ASSISTANT called {describe_call(block, 400)}")
            elif isinstance(block, ToolResultBlock) and block.content.startswith(CLEARED_RESULT_PREFIX):
                # A placeholder, not output: shown, the summarizer wrote "the user should not
                # clear any of the tool results" as a fact (measured with the 0.5B model).
                continue
            elif isinstance(block, ToolResultBlock):
                status = "error" if block.is_error else "result"
                lines.append(
                    f"TOOL {status} of {describe_call(calls.get(block.tool_use_id), 120)} (quoted data):\n"
                    f"{quoted('tool_output', clip_middle(block.content, result_chars))}"
                )
    return lines


def render_transcript(messages: Sequence[Message], result_chars: int) -> str:
    """``transcript_lines`` as one text, the form the summarizer and memory extraction read."""
    return "\n\n".join(transcript_lines(messages, result_chars))


def clip_middle(text: str, limit: int) -> str:
    """``text`` with its middle left out so that about ``limit`` characters remain."""
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n[... {len(text) - limit} characters left out ...]\n{text[-half:]}"


# --- harness text echoed in an answer ---------------------------------------------------------

ECHO_WORDS = 4  # a run of this many words found in a harness text is an echo
MIN_ECHO_WORDS = 6  # shorter runs at the start or end of an answer stay (a restated phrase)
OPENING_WORDS = 2  # a harness text's first words, copied as the answer's first words, go
_WORD_EDGES = "\"'`()[]{}<>.,;:!?*"


def harness_texts(messages: Iterable[Message]) -> list[str]:
    """What the harness wrote into the history beside tool results: the nudges, the answer
    prompt, notes on cut-off replies. A model reads them as the last words before its answer."""
    return [
        block.text
        for message in messages
        if message.role == "user" and message.tool_results
        for block in message.content
        if isinstance(block, TextBlock) and block.text
    ]


def strip_echo(answer: str, texts: Iterable[str]) -> str:
    """``answer`` without a run of words copied from ``texts`` at its start or end (measured:
    Qwen2.5-Coder-0.5B ended 2 of 8 answers with the harness's own prompt, "... Now give your
    final answer to the task with final_answer, from what you read."). Only runs of at least
    MIN_ECHO_WORDS words go, and a text's opening (its first OPENING_WORDS or more words, in
    order) copied at the answer's start when more follows (the 0.5B began its answer with the
    prompt's first words: "Read README.md is a Python library ..." after "[Read: README.md]
    ..."); an answer that is all echo gives "" (the 0.5B answered an edit task with the answer
    prompt's "The task: In src/shop/pricing.py, change TAX_RATE ..."). An answer with nothing
    copied comes back exactly as it came."""
    texts = list(texts)
    grams = {g for text in texts for g in _grams(_words(text))}
    spans = [(m.start(), m.end(), _norm(m.group())) for m in re.finditer(r"\S+", answer)]
    spans = [span for span in spans if span[2]]  # bare punctuation is no word
    words = [w for _s, _e, w in spans]
    echoed = [False] * len(words)
    for i in range(len(words) - ECHO_WORDS + 1):
        if tuple(words[i : i + ECHO_WORDS]) in grams:
            echoed[i : i + ECHO_WORDS] = [True] * ECHO_WORDS
    if len(words) >= MIN_ECHO_WORDS and all(echoed):
        return ""
    head = next((i for i, e in enumerate(echoed) if not e), len(echoed))
    tail = next((i for i in range(len(echoed), 0, -1) if not echoed[i - 1]), 0)
    head = head if head >= MIN_ECHO_WORDS else 0
    head = max(head, max((_opening(words, _words(text)) for text in texts), default=0))
    start = spans[head][0] if 0 < head < len(spans) else 0
    end = spans[tail][0] if tail < len(spans) and len(spans) - tail >= MIN_ECHO_WORDS else len(answer)
    if (start, end) == (0, len(answer)) or start >= end:
        return answer  # nothing copied at either end: the answer as it came, spaces and all
    kept = answer[start:end].strip().rstrip(",;:-").rstrip()
    return kept or answer


def _opening(words: list[str], text: list[str]) -> int:
    """How many of ``words``' first words are ``text``'s first words (0 when fewer than
    OPENING_WORDS, or all of ``words``: a bare copy of a label, "[Changed: FILE]", stays)."""
    same = 0
    for word, other in zip(words, text, strict=False):
        if word != other:
            break
        same += 1
    return same if OPENING_WORDS <= same < len(words) else 0


def _norm(word: str) -> str:
    return word.strip(_WORD_EDGES).lower()


def _words(text: str) -> list[str]:
    return [w for w in (_norm(word) for word in text.split()) if w]


def _grams(words: list[str]) -> set[tuple[str, ...]]:
    return {tuple(words[i : i + ECHO_WORDS]) for i in range(len(words) - ECHO_WORDS + 1)}

"""A prompt-cache simulator that follows the providers' documented rules, for the tests and the
bench: a fake Anthropic Messages server and a fake OpenAI Chat Completions server, over real HTTP
on loopback, which the real SDKs talk to. Why a fake: the tests and the bench must say what a run
costs without a key, a network or a bill; the rules below are the documented ones, so what the
fake reports is what the real API would bill for the same requests.

Anthropic (docs: "Prompt caching"), :class:`AnthropicCache`:
- the prompt is read in order tools -> system -> messages, as a list of blocks;
- a block with ``cache_control`` is a breakpoint; more than 4 is a 400 error; a top-level
  ``cache_control`` (automatic caching) puts one more on the last cacheable block;
- a request reads the longest cached prefix found at a breakpoint or at any of the 20 blocks
  before it (the lookback), if that entry has not expired (5 minutes, or 1 hour with
  ``ttl: "1h"``; a hit refreshes it);
- each breakpoint whose prefix holds at least the model's minimum (1,024 tokens by default)
  writes an entry; tokens from the read prefix to the last such breakpoint are billed as cache
  writes, the ones after it as plain input;
- usage comes back as the API sends it: ``input_tokens`` (after the last breakpoint),
  ``cache_creation_input_tokens``, ``cache_read_input_tokens`` and ``cache_creation`` by TTL.

OpenAI (docs: "Prompt caching"), :class:`OpenAICache`: automatic for prompts of 1,024 tokens and
more; the longest prefix shared with an earlier prompt (tools, then messages, in order) is read,
in steps of 128 tokens from 1,024; entries live 10 minutes unread (24 hours with
``prompt_cache_retention: "24h"``); requests are grouped by ``prompt_cache_key``; usage reports
``prompt_tokens_details.cached_tokens``.

Tokens are counted as characters / 4 of each block's JSON (UTF-8 bytes / 4 on the OpenAI side;
the simulator needs one consistent count, not a model's tokenizer).
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

ANTHROPIC_MAX_BREAKPOINTS = 4
ANTHROPIC_LOOKBACK = 20
ANTHROPIC_MIN_TOKENS = 1024
TTL_SECONDS = {"5m": 300.0, "1h": 3600.0}
OPENAI_MIN_TOKENS = 1024
OPENAI_STEP = 128
OPENAI_TTL = {"in_memory": 600.0, "24h": 86400.0}

Clock = Callable[[], float]


def tokens_of(value: Any) -> int:
    """The simulator's token count of a block: characters of its JSON / 4, at least 1."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)
    return max(1, len(text) // 4)


class CacheRuleError(ValueError):
    """A request the real API rejects (more than 4 breakpoints)."""


# --- Anthropic --------------------------------------------------------------------------------


@dataclass
class AnthropicCache:
    """The Messages API's prompt cache. ``min_tokens``: the model's minimum cacheable prefix."""

    min_tokens: int = ANTHROPIC_MIN_TOKENS
    clock: Clock = time.monotonic
    entries: dict[str, float] = field(default_factory=dict)  # prefix hash -> expiry
    requests: list[dict[str, int]] = field(default_factory=list)  # each request's usage

    def usage(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """What the request reads, writes and pays as plain input; records its entries."""
        blocks = [
            (json.dumps(_without_cache_control(block), ensure_ascii=False, sort_keys=True), ttl)
            for block, ttl in _anthropic_blocks(body)
        ]
        return self.usage_of([(text, tokens_of(text), ttl) for text, ttl in blocks])

    def usage_of(self, blocks: Sequence[tuple[str, int, str | None]]) -> dict[str, Any]:
        """``usage`` of a request given as its blocks in prompt order: each block's canonical
        JSON (without ``cache_control``), its tokens, and its breakpoint's TTL (None: none)."""
        now = self.clock()
        hashes, ends = [], []
        digest = hashlib.sha256()
        total = 0
        for text, tokens, _ in blocks:
            digest.update(text.encode())
            hashes.append(digest.copy().hexdigest())
            total += tokens
            ends.append(total)
        points = [i for i, (_, _, ttl) in enumerate(blocks) if ttl is not None]
        if len(points) > ANTHROPIC_MAX_BREAKPOINTS:
            raise CacheRuleError(
                f"A maximum of {ANTHROPIC_MAX_BREAKPOINTS} blocks with cache_control may be provided. "
                f"Found {len(points)}."
            )
        read_at = -1
        for point in points:
            for index in range(point, max(-1, point - ANTHROPIC_LOOKBACK), -1):
                expiry = self.entries.get(hashes[index])
                if expiry is not None and expiry > now:
                    read_at = max(read_at, index)
                    break
        read = ends[read_at] if read_at >= 0 else 0
        if read_at >= 0:  # a hit refreshes the entry's lifetime
            ttl = next(blocks[i][2] for i in points if i >= read_at)
            self.entries[hashes[read_at]] = now + TTL_SECONDS[ttl or "5m"]
        written_to = read
        write_ttl = "5m"
        for point in points:
            if ends[point] < self.min_tokens:
                continue
            ttl = blocks[point][2] or "5m"
            if point > read_at:
                self.entries[hashes[point]] = now + TTL_SECONDS[ttl]
            if ends[point] > written_to:
                written_to, write_ttl = ends[point], ttl
        written = written_to - read
        usage = {
            "input_tokens": total - read - written,
            "cache_creation_input_tokens": written,
            "cache_read_input_tokens": read,
            "cache_creation": {
                "ephemeral_5m_input_tokens": written if write_ttl == "5m" else 0,
                "ephemeral_1h_input_tokens": written if write_ttl == "1h" else 0,
            },
        }
        self.requests.append({k: v for k, v in usage.items() if isinstance(v, int)})
        return usage


def _without_cache_control(block: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in block.items() if k != "cache_control"}


def _anthropic_blocks(body: Mapping[str, Any]) -> list[tuple[dict[str, Any], str | None]]:
    """The request's blocks in prompt order, each with its breakpoint's TTL (None: none). A
    message's first block carries its role, so moving a block to another turn changes the prefix."""
    blocks: list[tuple[dict[str, Any], str | None]] = []

    def add(block: Mapping[str, Any]) -> None:
        control = block.get("cache_control")
        ttl = str(control.get("ttl", "5m")) if isinstance(control, Mapping) else None
        blocks.append((dict(block), ttl))

    for tool in body.get("tools") or []:
        add(tool)
    system = body.get("system")
    if isinstance(system, str) and system:
        add({"type": "text", "text": system})
    elif isinstance(system, list):
        for block in system:
            add(block)
    for message in body.get("messages") or []:
        content = message.get("content")
        parts = [{"type": "text", "text": content}] if isinstance(content, str) else list(content or [])
        for position, block in enumerate(parts):
            add({**block, "_role": message.get("role")} if position == 0 else block)
    automatic = body.get("cache_control")
    if isinstance(automatic, Mapping):  # automatic caching: a breakpoint on the last cacheable block
        for index in range(len(blocks) - 1, -1, -1):
            if blocks[index][0].get("type") not in ("thinking", "redacted_thinking"):
                blocks[index] = (blocks[index][0], str(automatic.get("ttl", "5m")))
                break
    return blocks


# --- OpenAI -----------------------------------------------------------------------------------


@dataclass
class OpenAICache:
    """OpenAI's automatic prefix cache, per ``prompt_cache_key``."""

    clock: Clock = time.monotonic
    keep: int = 4  # earlier prompts remembered per key
    prompts: dict[str, list[tuple[bytes, float]]] = field(default_factory=dict)
    requests: list[dict[str, int]] = field(default_factory=list)

    def usage(self, body: Mapping[str, Any]) -> dict[str, Any]:
        text = "".join(
            json.dumps(part, ensure_ascii=False, sort_keys=True)
            for part in [*(body.get("tools") or []), *(body.get("messages") or [])]
        ).encode()
        retention = str(body.get("prompt_cache_retention") or "in_memory")
        return self.usage_of(text, str(body.get("prompt_cache_key") or ""), retention)

    def usage_of(self, text: bytes, key: str = "", retention: str = "in_memory") -> dict[str, Any]:
        """``usage`` of a prompt given as its canonical bytes (tools, then messages)."""
        total = max(1, len(text) // 4)
        now = self.clock()
        alive = [(p, expiry) for p, expiry in self.prompts.get(key, []) if expiry > now]
        shared = max((_common_prefix(p, text) for p, _ in alive), default=0) // 4
        cached = 0
        if total >= OPENAI_MIN_TOKENS and shared >= OPENAI_MIN_TOKENS:
            cached = min(shared, total) // OPENAI_STEP * OPENAI_STEP
        ttl = OPENAI_TTL.get(retention, OPENAI_TTL["in_memory"])
        self.prompts[key] = [*alive, (text, now + ttl)][-self.keep :]
        self.requests.append({"prompt_tokens": total, "cached_tokens": cached})
        return {"prompt_tokens": total, "prompt_tokens_details": {"cached_tokens": cached}}


def _common_prefix(a: bytes, b: bytes) -> int:
    """Length of the common prefix of two byte strings (binary search on memoryview slices:
    compared in C, nothing copied)."""
    low, high = 0, min(len(a), len(b))
    left, right = memoryview(a), memoryview(b)
    while low < high:
        middle = (low + high + 1) // 2
        if left[:middle] == right[:middle]:
            low = middle
        else:
            high = middle - 1
    return low


# --- the servers ------------------------------------------------------------------------------

# A responder: the request body -> (Anthropic content blocks, stop_reason).
Responder = Callable[[Mapping[str, Any]], tuple[list[dict[str, Any]], str]]


def echo(body: Mapping[str, Any]) -> tuple[list[dict[str, Any]], str]:
    """The default responder: a short text reply."""
    return [{"type": "text", "text": "ok"}], "end_turn"


class _Server(ThreadingHTTPServer):
    daemon_threads = True


@dataclass
class SimServer:
    """A running fake server; ``base_url`` is what the SDK's client takes."""

    base_url: str
    anthropic: AnthropicCache
    openai: OpenAICache
    bodies: list[dict[str, Any]]


@contextmanager
def serve(
    responder: Responder = echo,
    *,
    anthropic: AnthropicCache | None = None,
    openai: OpenAICache | None = None,
) -> Iterator[SimServer]:
    """Both fake APIs on one loopback port: ``POST /v1/messages`` (and its ``count_tokens``)
    and ``POST /v1/chat/completions``. Stopped when the block ends."""
    cache = anthropic or AnthropicCache()
    chat_cache = openai or OpenAICache()
    bodies: list[dict[str, Any]] = []
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length", "0"))
            body = json.loads(self.rfile.read(length) or b"{}")
            with lock:
                bodies.append(body)
                try:
                    status, reply = self._answer(body)
                except CacheRuleError as exc:
                    status = 400
                    reply = {"type": "error", "error": {"type": "invalid_request_error", "message": str(exc)}}
            data = json.dumps(reply).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _answer(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
            path = self.path.split("?")[0].rstrip("/")
            if path.endswith("/messages/count_tokens"):
                return 200, {"input_tokens": sum(tokens_of(b) for b, _ in _anthropic_blocks(body))}
            if path.endswith("/messages"):
                usage = cache.usage(body)
                content, stop = responder(body)
                usage["output_tokens"] = sum(tokens_of(b) for b in content)
                return 200, {
                    "id": f"msg_sim_{len(bodies)}",
                    "type": "message",
                    "role": "assistant",
                    "model": body.get("model", "sim"),
                    "content": content,
                    "stop_reason": stop,
                    "stop_sequence": None,
                    "usage": usage,
                }
            if path.endswith("/chat/completions"):
                usage = chat_cache.usage(body)
                content, stop = responder(_anthropic_view(body))
                message, finish = _chat_message(content, stop)
                completion = sum(tokens_of(b) for b in content)
                usage.update(completion_tokens=completion, total_tokens=usage["prompt_tokens"] + completion)
                return 200, {
                    "id": f"chatcmpl-sim-{len(bodies)}",
                    "object": "chat.completion",
                    "created": int(time.time()),
                    "model": body.get("model", "sim"),
                    "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                    "usage": usage,
                }
            return 404, {"type": "error", "error": {"type": "not_found_error", "message": path}}

    server = _Server(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, name="cache-sim", daemon=True)
    thread.start()
    try:
        host, port = server.server_address[:2]
        yield SimServer(f"http://{host!s}:{port}", cache, chat_cache, bodies)
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def _anthropic_view(body: Mapping[str, Any]) -> dict[str, Any]:
    """A chat body as a responder reads it: ``tools`` present or not, the messages as they are."""
    return {"tools": body.get("tools") or [], "messages": body.get("messages") or [], "chat": True}


def _chat_message(content: Sequence[Mapping[str, Any]], stop: str) -> tuple[dict[str, Any], str]:
    text = "".join(str(b.get("text", "")) for b in content if b.get("type") == "text")
    calls = [
        {
            "id": b["id"],
            "type": "function",
            "function": {"name": b["name"], "arguments": json.dumps(b.get("input", {}))},
        }
        for b in content
        if b.get("type") == "tool_use"
    ]
    message: dict[str, Any] = {"role": "assistant", "content": text or None}
    if calls:
        message["tool_calls"] = calls
    return message, "tool_calls" if calls else ("length" if stop == "max_tokens" else "stop")


# --- pricing what a harness sends (the bench) -------------------------------------------------

# Where a harness puts Anthropic breakpoints: "tinyharness" (the adapter's own place_breakpoints),
# "auto" (the last tool, the system prompt and a top-level cache_control: LangChain's
# AnthropicPromptCachingMiddleware and Pydantic AI's anthropic_cache* settings), "none".
Policy = str


@dataclass
class Bill:
    """The cache reads and writes of every request a harness sends, on both simulated APIs.
    The simulators give the shares of each prompt read and written; they are applied to the
    tokens the bench's own counter gave that call, so the dollars agree with the billed column."""

    policies: tuple[Policy, ...] = ("none",)
    anthropic: dict[Policy, Any] = field(default_factory=dict)  # policy -> Usage
    openai: Any = None  # Usage
    _caches: dict[Policy, AnthropicCache] = field(default_factory=dict)
    _chat: OpenAICache = field(default_factory=OpenAICache)

    _messages: dict[int, tuple[Any, list[tuple[str, int, bool]], bytes]] = field(default_factory=dict)

    def _message(self, message: Any) -> tuple[list[tuple[str, int, bool]], bytes]:
        """A message's Anthropic blocks (canonical JSON, tokens, may carry a breakpoint) and its
        Chat Completions JSON, computed once per message object (the meter interns them)."""
        from tinyharness.models import anthropic_messages as wire
        from tinyharness.models import openai_chat

        hit = self._messages.get(id(message))
        if hit is None or hit[0] is not message:
            (wired,) = wire.messages_to_wire([message])
            blocks = []
            for position, block in enumerate(wired["content"]):
                shown = {**block, "_role": wired["role"]} if position == 0 else block
                text = json.dumps(shown, ensure_ascii=False, sort_keys=True)
                blocks.append(
                    (text, tokens_of(text), block.get("type") not in ("thinking", "redacted_thinking"))
                )
            chat = "".join(
                json.dumps(m, ensure_ascii=False, sort_keys=True)
                for m in openai_chat.messages_to_wire([message])
            ).encode()
            hit = (message, blocks, chat)
            self._messages[id(message)] = hit
        return hit[1], hit[2]

    def record(self, request: Any, usage: Any) -> None:
        """Add one call (a ModelRequest and the Usage the bench counted for it)."""
        from tinyharness.models import anthropic_messages as wire
        from tinyharness.models import openai_chat
        from tinyharness.models.base import Usage

        messages = [self._message(m) for m in request.messages]
        fixed: list[tuple[str, int]] = []  # the tools' and the system prompt's blocks
        tools = [wire.tool_to_wire(t) for t in request.tools]
        for tool in tools:
            text = json.dumps(tool, sort_keys=True)
            fixed.append((text, tokens_of(text)))
        if request.system:
            text = json.dumps({"type": "text", "text": request.system}, sort_keys=True)
            fixed.append((text, tokens_of(text)))
        repeated = request.purpose in ("agent", "flush")
        for policy in self.policies:
            marks = self._breakpoints(policy, request, messages, repeated)
            flat: list[tuple[str, int, str | None]] = [
                (text, tokens, "5m" if ("fixed", i) in marks else None)
                for i, (text, tokens) in enumerate(fixed)
            ]
            for index, (blocks, _) in enumerate(messages):
                flat += [
                    (text, tokens, "5m" if (index, position) in marks else None)
                    for position, (text, tokens, _) in enumerate(blocks)
                ]
            if policy == "auto" and repeated:  # top-level cache_control: the last cacheable block
                cacheable = [
                    (index, position)
                    for index, (blocks, _) in enumerate(messages)
                    for position, (_, _, ok) in enumerate(blocks)
                    if ok
                ]
                if cacheable:
                    last = (
                        len(fixed) + sum(len(b) for b, _ in messages[: cacheable[-1][0]]) + cacheable[-1][1]
                    )
                    text, tokens, _ = flat[last]
                    flat[last] = (text, tokens, "5m")
            sim = self._caches.setdefault(policy, AnthropicCache()).usage_of(flat)
            total = sim["input_tokens"] + sim["cache_creation_input_tokens"] + sim["cache_read_input_tokens"]
            read = round(usage.input_tokens * sim["cache_read_input_tokens"] / total) if total else 0
            written = round(usage.input_tokens * sim["cache_creation_input_tokens"] / total) if total else 0
            call = Usage(usage.input_tokens, usage.output_tokens, read, written)
            self.anthropic[policy] = self.anthropic.get(policy, Usage()) + call
        head = [{"role": "system", "content": request.system}] if request.system else []
        chat_tools = [openai_chat.tool_to_wire(t) for t in request.tools]
        text = "".join(
            json.dumps(p, ensure_ascii=False, sort_keys=True) for p in [*chat_tools, *head]
        ).encode()
        text += b"".join(chat for _, chat in messages)
        sim_chat = self._chat.usage_of(text)
        share = sim_chat["prompt_tokens_details"]["cached_tokens"] / sim_chat["prompt_tokens"]
        call = Usage(usage.input_tokens, usage.output_tokens, round(usage.input_tokens * share))
        self.openai = (self.openai or Usage()) + call

    @staticmethod
    def _breakpoints(
        policy: Policy,
        request: Any,
        messages: Sequence[tuple[list[tuple[str, int, bool]], bytes]],
        repeated: bool,
    ) -> set[Any]:
        """Where ``policy`` puts breakpoints: ("fixed", i) for the i-th tool or system block,
        (message, block) for a message's block (the top-level ``auto`` one is added by the
        caller). For tinyharness, the adapter's own ``place_breakpoints`` on a skeleton of the
        request: the same roles and blocks, thinking blocks marked as such."""
        from tinyharness.models import anthropic_messages as wire

        tools, system = len(request.tools), 1 if request.system else 0
        marks: set[Any] = set()
        if policy == "none" or (policy == "auto" and not repeated):
            return marks
        if policy == "auto":
            if tools:
                marks.add(("fixed", tools - 1))
            if system:
                marks.add(("fixed", tools))
            return marks
        skeleton_messages = [
            {"role": message.role, "content": [{"type": "text" if ok else "thinking"} for _, _, ok in blocks]}
            for message, (blocks, _) in zip(request.messages, messages, strict=True)
        ]
        skeleton: dict[str, Any] = {"messages": skeleton_messages}
        if tools:
            skeleton["tools"] = [{"name": t.name} for t in request.tools]
        if system:
            skeleton["system"] = request.system
        wire.place_breakpoints(skeleton, wire.CacheConfig(), rolling=repeated)
        if tools and "cache_control" in skeleton["tools"][-1]:
            marks.add(("fixed", tools - 1))
        if system and "cache_control" in skeleton["system"][-1]:
            marks.add(("fixed", tools))
        for index, message in enumerate(skeleton_messages):
            marks |= {(index, p) for p, block in enumerate(message["content"]) if "cache_control" in block}
        return marks

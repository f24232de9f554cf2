"""The maintained half of redaction: detect-secrets' plugins, run on bounded windows of text.

detect-secrets (Yelp) keeps the token formats of many services, a keyword detector and entropy
detectors up to date; ``redact`` asks them about every window that holds one of their trigger
strings and redacts the values they report, after the look-alike checks in ``rules``.

Three limits keep this linear in the size of the input, whatever the input:

- a plugin runs only on a window of at most ``WINDOW`` characters around a trigger it needs (a
  plugin's regex never sees a whole 5 MB line), and a window already scanned is not scanned again;
- plugins whose regexes backtrack without bound on some inputs are left out (NPM's
  ``//.+/:_authToken``, the JWT detector's unbounded parts, the IBM/Cloudant/SoftLayer keyword
  regexes): ``rules`` has bounded rules for those formats;
- the keyword detector, whose regexes cost up to milliseconds on a hostile 200-character line, runs
  on short windows only and within a budget of calls proportional to the input length; our own
  keyword rule (linear) covers everything it is not given time for.

Imports nothing else of its package.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import re2
from detect_secrets.plugins.artifactory import ArtifactoryDetector
from detect_secrets.plugins.aws import AWSKeyDetector
from detect_secrets.plugins.azure_storage_key import AzureStorageKeyDetector
from detect_secrets.plugins.base import BasePlugin
from detect_secrets.plugins.basic_auth import BasicAuthDetector
from detect_secrets.plugins.discord import DiscordBotTokenDetector
from detect_secrets.plugins.github_token import GitHubTokenDetector
from detect_secrets.plugins.gitlab_token import GitLabTokenDetector
from detect_secrets.plugins.high_entropy_strings import Base64HighEntropyString
from detect_secrets.plugins.keyword import QUOTES_REQUIRED_DENYLIST_REGEX_TO_GROUP, KeywordDetector
from detect_secrets.plugins.mailchimp import MailchimpDetector
from detect_secrets.plugins.openai import OpenAIDetector
from detect_secrets.plugins.pypi_token import PypiTokenDetector
from detect_secrets.plugins.sendgrid import SendGridDetector
from detect_secrets.plugins.slack import SlackDetector
from detect_secrets.plugins.square_oauth import SquareOAuthDetector
from detect_secrets.plugins.stripe import StripeDetector
from detect_secrets.plugins.telegram_token import TelegramBotTokenDetector
from detect_secrets.plugins.twilio import TwilioKeyDetector

__all__ = [
    "WINDOW",
    "DetectorHit",
    "Scan",
    "entropy",
    "gate_index",
    "re2_pattern",
    "scan_with_detect_secrets",
]

WINDOW = 1024  # characters a plugin sees around a trigger
_KEYWORD_WINDOW = 240  # the keyword detector's regexes are the slow ones: shorter windows
_KEYWORD_BUDGET_BASE = 16  # keyword-detector calls allowed per input, plus one per ...
_KEYWORD_BUDGET_CHARS = 8192  # ... this many characters of input


class Scan:
    """One text as the prefilters read it: its UTF-8 bytes (encoded once, on first use) and
    the character positions of byte offsets."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._data: bytes | None = None
        self._present: frozenset[int] | None = None
        self._asked = False

    @property
    def data(self) -> bytes:
        if self._data is None:
            self._data = self.text.encode("utf-8", "surrogatepass")
        return self._data

    def present(self) -> frozenset[int] | None:
        """The ``gate_index`` of every prefilter that matches somewhere in the text, found in one
        pass of one ``re2.Set`` (about 90 prefilters are asked of each text, and most match
        nothing in most texts); None when the pass failed and nothing is ruled out."""
        if not self._asked:
            self._asked = True
            self._present = _GATE.present(self.data)
        return self._present

    def could_match(self, prefilter: Any) -> bool:
        """False only when ``prefilter`` matches nowhere in the text."""
        present = self.present()
        index = gate_index(prefilter)
        return present is None or index is None or index in present

    def hits(self, prefilter: Any) -> Iterator[tuple[int, int]]:
        """The character spans of the prefilter's matches, in order."""
        if not self.could_match(prefilter):
            return
        data = self.data
        if len(data) == len(self.text):  # ASCII: byte offsets are character offsets
            for hit in prefilter.finditer(data):
                yield hit.span()
            return
        byte_at = char_at = 0
        for hit in prefilter.finditer(data):  # each byte is decoded once, in order
            start, end = hit.span()
            char_at += len(data[byte_at:start].decode("utf-8", "surrogatepass"))
            length = len(data[start:end].decode("utf-8", "surrogatepass"))
            byte_at = start
            yield char_at, char_at + length

    def windows(self, prefilter: Any, reach: int) -> list[tuple[int, int]]:
        """Character spans around the prefilter's hits, widened by ``reach`` on both sides (so a
        rule match that overlaps a hit, and what its look-arounds read, lies inside), merged."""
        spans: list[tuple[int, int]] = []
        for start, end in self.hits(prefilter):
            low, high = max(0, start - reach), min(len(self.text), end + reach + 1)
            if spans and low <= spans[-1][1]:
                spans[-1] = (spans[-1][0], max(spans[-1][1], high))
            else:
                spans.append((low, high))
        return spans


def re2_pattern(pattern: str) -> Any:
    """An RE2 program over UTF-8 bytes: linear time, and a DFA where Python's engine would try
    a character class at every position. Made at import time only (each is added to ``_GATE``)."""
    compiled = re2.compile(pattern.encode("utf-8"), _RE2_OPTIONS)
    _GATE.add(compiled, pattern.encode("utf-8"))
    return compiled


_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.max_mem = 64 << 20


class _Gate:
    """Every prefilter in one ``re2.Set``: one pass over a text says which of them match
    anywhere in it. Index 0 is the empty pattern, which matches every text: a pass that does
    not report it failed (RE2's DFA ran out of memory, which a set reports as no match at all),
    and then nothing is ruled out (``present`` gives None)."""

    def __init__(self) -> None:
        self.index: dict[int, int] = {}  # id of a compiled prefilter -> its index in the set
        self._patterns: list[bytes] = [b""]
        self._keep: list[Any] = []  # the compiled prefilters, so their ids stay theirs
        self._set: Any = None

    def add(self, compiled: Any, pattern: bytes) -> None:
        self.index[id(compiled)] = len(self._patterns)
        self._patterns.append(pattern)
        self._keep.append(compiled)
        self._set = None

    def present(self, data: bytes) -> frozenset[int] | None:
        if self._set is None:
            built = re2.Set.SearchSet(_RE2_OPTIONS)
            for pattern in self._patterns:
                built.Add(pattern)
            built.Compile()
            self._set = built
        found = frozenset(self._set.Match(data))
        return found if 0 in found else None


_GATE = _Gate()


def gate_index(prefilter: Any) -> int | None:
    """The index of a prefilter made by ``re2_pattern`` in ``Scan.present``'s answers."""
    return _GATE.index.get(id(prefilter))


@dataclass(frozen=True, slots=True)
class DetectorHit:
    kind: str
    start: int
    end: int
    via_keyword: bool  # a keyword (not the value's own shape) made it a secret


@dataclass(frozen=True, slots=True)
class _Plugin:
    kind: str
    plugin: BasePlugin
    trigger: Any  # where the plugin can possibly find something (RE2, see re2_pattern)

    @property
    def gate(self) -> int | None:
        return gate_index(self.trigger)


def _trigger(*literals: str, flags: int = 0) -> Any:
    case = "(?i)" if flags & re.IGNORECASE else ""
    return re2_pattern(case + "|".join(re.escape(literal) for literal in literals))


_PLUGINS: tuple[_Plugin, ...] = (
    _Plugin(
        "aws_access_key", AWSKeyDetector(), _trigger("AKIA", "ASIA", "ABIA", "ACCA", "A3T", "aws", "AWS")
    ),
    _Plugin("azure_storage_key", AzureStorageKeyDetector(), _trigger("AccountKey=")),
    _Plugin("url_password", BasicAuthDetector(), _trigger("://")),
    _Plugin("slack_token", SlackDetector(), _trigger("xox", "hooks.slack.com", flags=re.IGNORECASE)),
    _Plugin("stripe_key", StripeDetector(), _trigger("k_live_")),
    _Plugin("github_token", GitHubTokenDetector(), _trigger("ghp_", "gho_", "ghu_", "ghs_", "ghr_")),
    _Plugin("gitlab_token", GitLabTokenDetector(), _trigger("gl", "GR1348941")),
    # Triggers that are the token's own distinctive middle or its start with the length it needs:
    # a bare "." or "AC" would open a window almost everywhere in source code.
    _Plugin(
        "discord_token", DiscordBotTokenDetector(), re2_pattern(r"\.[a-zA-Z0-9_-]{6}\.[a-zA-Z0-9_-]{27}")
    ),
    _Plugin("twilio_key", TwilioKeyDetector(), re2_pattern(r"(?:AC|SK)[a-z0-9]{32}")),
    _Plugin(
        "artifactory_token",
        ArtifactoryDetector(),
        re2_pattern(r"AKC[a-zA-Z0-9]{10}|AP[0-9A-F][a-zA-Z0-9]{8}"),
    ),
    _Plugin("mailchimp_key", MailchimpDetector(), _trigger("-us")),
    _Plugin("openai_key", OpenAIDetector(), _trigger("T3BlbkFJ")),
    _Plugin("pypi_token", PypiTokenDetector(), _trigger("pypi-")),
    _Plugin("sendgrid_key", SendGridDetector(), _trigger("SG.")),
    _Plugin("square_token", SquareOAuthDetector(), _trigger("sq0csp-")),
    _Plugin("telegram_bot_token", TelegramBotTokenDetector(), re2_pattern(r":[0-9A-Za-z_-]{35}")),
    # Quoted strings of the base64 alphabet above the entropy limit; only those of 20 characters
    # or more are kept (_random_looking), so only their openings are triggers.
    _Plugin("high_entropy_string", Base64HighEntropyString(), re2_pattern(r"[\"'][A-Za-z0-9+/=]{20}")),
)
_BASE64_ENTROPY = Base64HighEntropyString()
_KEYWORD = KeywordDetector()
# The keyword detector's own word list (lower case; "_?" between parts).
_KEYWORD_TRIGGER = re2_pattern(r"(?i)pass|pwd|secret|key|contrase")


_QUOTE = re.compile("[\"'`]")


def _random_looking(value: str) -> bool:
    return (
        len(value) >= 20
        and any(c.isdigit() for c in value)
        and any(c.isupper() for c in value)
        and any(c.islower() for c in value)
    )


def entropy(value: str) -> float:
    """Shannon entropy in bits per character over the base64 alphabet (detect-secrets')."""
    return float(_BASE64_ENTROPY.calculate_shannon_entropy(value))


def _windows(scan: Scan, trigger: Any, width: int) -> Iterator[tuple[int, int]]:
    """Windows of at most ``width`` characters around the triggers, within their line: each
    starts up to width/4 before a trigger, and the next trigger looked for is the first one that
    this window does not reach width/4 past, so no part of the text is scanned more than twice."""
    text = scan.text
    before = width // 4
    position = 0
    for found, _ in scan.hits(trigger):
        if found < position:
            continue
        start = text.rfind("\n", max(0, found - before), found) + 1 or max(0, found - before)
        line_end = text.find("\n", found, start + width)
        end = min(len(text), start + width if line_end == -1 else line_end)
        yield start, end
        position = max(found + 1, end - before)


def _locate(text: str, start: int, end: int, value: str) -> Iterator[tuple[int, int]]:
    """Where ``value`` stands in the window as a whole token (a short password reported by a
    plugin must not take letters out of the words around it)."""
    position = text.find(value, start, end)
    while position != -1:
        after = position + len(value)
        before_ok = position == 0 or not (text[position - 1].isalnum() and value[0].isalnum())
        after_ok = after == len(text) or not (text[after].isalnum() and value[-1].isalnum())
        if before_ok and after_ok:
            yield position, after
        position = text.find(value, after, end)


def scan_with_detect_secrets(text: str, scan: Scan | None = None) -> Iterator[DetectorHit]:
    """Every value a detect-secrets plugin reports in ``text``, with its position; ``scan`` is
    the text's ``Scan`` when the caller has one."""
    scan = scan or Scan(text)
    present = scan.present()
    for entry in _PLUGINS:
        if present is not None and entry.gate not in present:
            continue  # its trigger is nowhere in the text
        for start, end in _windows(scan, entry.trigger, WINDOW):
            window = text[start:end]
            values = set(entry.plugin.analyze_string(window))
            if entry.kind == "high_entropy_string":
                # Only values that could pass the look-alike checks later are worth the entropy.
                values = {
                    v for v in values if _random_looking(v) and entropy(v) > _BASE64_ENTROPY.entropy_limit
                }
            for value in values:
                if len(value) < 4:
                    continue
                for hit_start, hit_end in _locate(text, start, end, value):
                    yield DetectorHit(entry.kind, hit_start, hit_end, via_keyword=False)
    budget = _KEYWORD_BUDGET_BASE + len(text) // _KEYWORD_BUDGET_CHARS
    for start, end in _windows(scan, _KEYWORD_TRIGGER, _KEYWORD_WINDOW):
        if budget <= 0:
            break
        window = text[start:end]
        if not _QUOTE.search(window):
            continue  # every regex of the keyword detector used here needs a quoted value
        budget -= 1
        for value in set(_KEYWORD.analyze_string(window, QUOTES_REQUIRED_DENYLIST_REGEX_TO_GROUP)):
            for hit_start, hit_end in _locate(text, start, end, value):
                yield DetectorHit("password", hit_start, hit_end, via_keyword=True)

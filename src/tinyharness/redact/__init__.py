"""Secret and personal-data redaction: ``redact(text)`` replaces what it finds with typed
placeholders such as ``[REDACTED:github_token]``.

Everything that leaves the agent loop goes through it: notes, memory files and the memory store,
the events file, the run log (and so ``show``, ``export``, ``report``), progress lines, ``memory
list``. Two sources of findings:

- detect-secrets' plugins (``detect``): the token formats it maintains, its keyword
  detector and its base64 entropy detector, each run on bounded windows;
- our own rules (``rules``): formats it misses (cloud keys outside their usual names, CLI
  passwords, URL passwords with ``@`` in them, key bodies without their BEGIN line, base64-wrapped
  keys, dozens of token prefixes) and personal data (emails, phone numbers, ID and card numbers
  with their check digits).

Where two findings overlap, the one from the more specific source wins (a JWT is named a JWT, not
a bearer token). The look-alike checks keep hashes, UUIDs, code such as ``pwd = os.getcwd()``,
templates and SSH remotes such as ``git@github.com:org/repo.git`` as they are.

Cost is linear in the length of the text whatever it holds: every rule has bounded repeats, every
detect-secrets plugin sees windows of bounded size, and overlaps are settled on a byte map.
``redact`` is idempotent: placeholders never match a rule.

Secrets spelled to slip past the rules (``\\u002e`` escapes, zero-width characters inside a
key, full-width letters) are found in a normalised reading of the text (``normalize``) and
redacted in the original.

The two halves live beside this file: ``detect`` and ``rules``, with ``normalize``. May import
nothing else of the package.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from .detect import DetectorHit, Scan, scan_with_detect_secrets
from .normalize import normalize
from .rules import (
    CONTEXT_RULES,
    PII_RULES,
    TOKEN_RULES,
    Candidate,
    RuleSet,
    base64_runs,
    base64_wrapped_secrets,
    emails,
    is_hash_like,
    is_luhn_valid,
    is_valid_cn_id,
    keyword_values,
    looks_like_code_or_placeholder,
    pem_blocks,
    putty_private_lines,
    secret_key_before,
    url_passwords,
)

__all__ = ["PLACEHOLDER", "Finding", "find_secrets", "is_luhn_valid", "is_valid_cn_id", "redact"]

PLACEHOLDER = "[REDACTED:{kind}]"
_TOKEN, _CONTEXT, _PII = RuleSet(TOKEN_RULES), RuleSet(CONTEXT_RULES), RuleSet(PII_RULES)
_PLACEHOLDER = re.compile(r"\[REDACTED:[a-z0-9_]{1,40}\]")
_MAX_PASSES = 3  # a pass can uncover a finding that lost an overlap; the next one catches it


@dataclass(frozen=True, slots=True)
class Finding:
    kind: str
    start: int
    end: int


def find_secrets(text: str) -> list[Finding]:
    """Non-overlapping findings in text order; the more specific source wins an overlap.

    Where the text has another reading (``normalize``: escapes decoded, invisible characters
    left out, full-width letters as ASCII), the rules read that one, as a program using the text
    would, and each finding is mapped back to the original characters it came from."""
    reading = normalize(text)
    if reading is None:
        return _find(text, decode_base64=True)
    return [
        Finding(f.kind, *reading.original(f.start, f.end)) for f in _find(reading.text, decode_base64=True)
    ]


def redact(text: str) -> str:
    """``text`` with every secret or personal datum replaced by ``[REDACTED:kind]``.

    Repeated until nothing changes (at most a few passes): a match that lost an overlap to an
    earlier rule is caught on the next pass, which makes ``redact`` idempotent."""
    for _ in range(_MAX_PASSES):
        clean = _redact_once(text)
        if clean == text:
            break
        text = clean
    return text


def _redact_once(text: str) -> str:
    findings = find_secrets(text)
    if not findings:
        return text
    parts: list[str] = []
    position = 0
    for finding in findings:
        parts.append(text[position : finding.start])
        parts.append(PLACEHOLDER.format(kind=finding.kind))
        position = finding.end
    parts.append(text[position:])
    return "".join(parts)


def _find(text: str, *, decode_base64: bool) -> list[Finding]:
    if not text:
        return []
    taken = bytearray(len(text))  # 1 where a finding (or an earlier placeholder) already stands
    for placeholder in _PLACEHOLDER.finditer(text):  # never redact a redaction: idempotence
        taken[placeholder.start() : placeholder.end()] = b"\x01" * (placeholder.end() - placeholder.start())
    findings: list[Finding] = []
    for candidate in _candidates(text, decode_base64=decode_base64):
        start, end = candidate.start, candidate.end
        if start >= end or taken.find(1, start, end) != -1:
            continue
        taken[start:end] = b"\x01" * (end - start)
        findings.append(Finding(candidate.kind, start, end))
    return sorted(findings, key=lambda f: f.start)


def _candidates(text: str, *, decode_base64: bool) -> Iterator[Candidate]:
    """All candidates, the most specific sources first."""
    lowered = text.lower()  # for the rules' substring pre-checks only (lower() may shift positions)
    scan = Scan(text)  # the UTF-8 bytes the RE2 prefilters read, encoded once
    yield from pem_blocks(text)
    yield from putty_private_lines(text)
    yield from _TOKEN.find(text, lowered, scan)
    hits = list(scan_with_detect_secrets(text, scan))
    yield from _plugin_hits(text, hits, keyword=False)
    yield from url_passwords(text)
    yield from _CONTEXT.find(text, lowered, scan)
    yield from keyword_values(text, scan)
    yield from _plugin_hits(text, hits, keyword=True)
    if decode_base64:
        yield from base64_wrapped_secrets(
            text, lambda decoded: bool(_find(decoded, decode_base64=False)), scan
        )
    yield from base64_runs(text, scan)
    yield from emails(text)
    yield from _PII.find(text, lowered, scan)


def _plugin_hits(text: str, hits: Iterable[DetectorHit], *, keyword: bool) -> Iterator[Candidate]:
    for hit in hits:
        if hit.via_keyword != keyword:
            continue
        value = text[hit.start : hit.end]
        if text.startswith("[REDACTED:", hit.start) or "[REDACTED:" in value:
            continue
        if hit.kind in ("high_entropy_string", "password") and _looks_harmless(
            text, hit.start, value, hit.kind
        ):
            continue
        yield Candidate(hit.kind, hit.start, hit.end)


_KEYWORD_WORDS = frozenset(
    {"password", "passwd", "pwd", "secret", "token", "apikey", "secretkey", "privatekey"}
)


def _squash(name: str) -> str:
    return name.lower().replace("-", "").replace("_", "").replace(".", "")


_DIGEST_PREFIXES = ("sha1-", "sha256-", "sha384-", "sha512-", "sha1:", "sha256:", "sha512:", "h1:", "md5-")


def _looks_harmless(text: str, start: int, value: str, kind: str) -> bool:
    """What detect-secrets' entropy and keyword detectors report but is no secret: digests,
    UUIDs, identifiers, code and placeholders."""
    if looks_like_code_or_placeholder(value) or is_hash_like(value):
        return True
    if kind == "password":
        return secret_key_before(text, start) is True or _squash(value) in _KEYWORD_WORDS
    before = text[max(0, start - 8) : start].lower()
    if value.lower().startswith(_DIGEST_PREFIXES) or before.endswith(_DIGEST_PREFIXES):
        return True
    has_digit = any(c.isdigit() for c in value)
    mixed = any(c.islower() for c in value) and any(c.isupper() for c in value)
    return not (has_digit and mixed) or len(value) < 20

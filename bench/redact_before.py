"""The redactor as it was before the rewrite onto detect-secrets, frozen here as the "before" row
of bench/secrets_bench.py (speed on adversarial input, recall and false positives). Not used by
tinyharness itself.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["PLACEHOLDER", "Finding", "find_secrets", "is_luhn_valid", "is_valid_cn_id", "redact"]

PLACEHOLDER = "[REDACTED:{kind}]"
_NOT_PLACEHOLDER = r"(?!\[REDACTED:)"
_NO_DIGIT_BEFORE = r"(?<![0-9])"
_NO_DIGIT_AFTER = r"(?![0-9])"
_NO_ALNUM_BEFORE = r"(?<![A-Za-z0-9])"
_NO_ALNUM_AFTER = r"(?![A-Za-z0-9])"


@dataclass(frozen=True, slots=True)
class Finding:
    kind: str
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class _Rule:
    kind: str
    pattern: re.Pattern[str]
    group: int = 0  # which group is the secret (0: the whole match)
    check: Callable[[str], bool] | None = None


def is_luhn_valid(digits: str) -> bool:
    """The Luhn checksum used by payment cards."""
    if not digits.isdigit():
        return False
    total = 0
    for index, char in enumerate(reversed(digits)):
        value = int(char)
        if index % 2 == 1:
            value = value * 2 - 9 if value > 4 else value * 2
        total += value
    return total % 10 == 0


_CN_ID_WEIGHTS = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)
_CN_ID_CHECK = "10X98765432"


def is_valid_cn_id(number: str) -> bool:
    """An 18-character mainland resident ID (GB 11643): 17 digits, a check character, a
    plausible birth date."""
    number = number.upper()
    if len(number) != 18 or not number[:17].isdigit():
        return False
    month, day = int(number[10:12]), int(number[12:14])
    if not (1 <= month <= 12 and 1 <= day <= 31 and number[6:8] in ("18", "19", "20")):
        return False
    total = sum(int(d) * w for d, w in zip(number[:17], _CN_ID_WEIGHTS, strict=True))
    return _CN_ID_CHECK[total % 11] == number[17]


def _card_check(text: str) -> bool:
    digits = re.sub(r"[ -]", "", text)
    return 13 <= len(digits) <= 19 and digits[0] in "23456" and is_luhn_valid(digits)


def _rule(
    kind: str, pattern: str, *, group: int = 0, flags: int = 0, check: Callable[[str], bool] | None = None
) -> _Rule:
    return _Rule(kind, re.compile(pattern, flags), group, check)


_SECRET_VALUE = _NOT_PLACEHOLDER + r"""(?:"[^"\s]{3,}"|'[^'\s]{3,}'|[^\s"',;]{3,})"""

_RULES: tuple[_Rule, ...] = (
    _rule(
        "private_key",
        r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----.*?"
        r"(?:-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)",
        flags=re.DOTALL,
    ),
    _rule("jwt", r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
    _rule(
        "url_password", r"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s:/@]+:(" + _NOT_PLACEHOLDER + r"[^\s@/]+)@", group=1
    ),
    _rule("anthropic_key", _NO_ALNUM_BEFORE + r"sk-ant-(?:api|admin)\d{2}-[A-Za-z0-9_-]{20,}"),
    _rule("anthropic_key", _NO_ALNUM_BEFORE + r"sk-ant-[A-Za-z0-9_-]{20,}"),
    _rule("openai_key", _NO_ALNUM_BEFORE + r"sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}"),
    _rule(
        "aws_access_key",
        _NO_ALNUM_BEFORE + r"(?:AKIA|ASIA|ABIA|ACCA|AROA|AIDA)[0-9A-Z]{16}" + _NO_ALNUM_AFTER,
    ),
    _rule(
        "aws_secret_key",
        r"(?i)aws[_ .-]?(?:secret|private)[_ .-]?(?:access[_ .-]?)?key[\"']?\s*[:=]\s*[\"']?"
        r"([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])",
        group=1,
    ),
    _rule("github_token", _NO_ALNUM_BEFORE + r"gh[pousr]_[A-Za-z0-9]{36,255}"),
    _rule("github_token", _NO_ALNUM_BEFORE + r"github_pat_[A-Za-z0-9_]{22,255}"),
    _rule("gitlab_token", _NO_ALNUM_BEFORE + r"gl(?:pat|dt|rt|ptt|cbt|imt|oas)-[A-Za-z0-9_-]{20,}"),
    _rule("slack_token", _NO_ALNUM_BEFORE + r"xox[abposre]-[A-Za-z0-9-]{10,}"),
    _rule("slack_webhook", r"https://hooks\.slack\.com/(?:services|workflows)/[A-Za-z0-9/_-]{20,}"),
    _rule("google_api_key", _NO_ALNUM_BEFORE + r"AIza[0-9A-Za-z_-]{35}"),
    _rule("google_oauth_secret", _NO_ALNUM_BEFORE + r"GOCSPX-[A-Za-z0-9_-]{20,}"),
    _rule("stripe_key", _NO_ALNUM_BEFORE + r"(?:sk|rk|pk)_(?:live|test)_[0-9A-Za-z]{16,}"),
    _rule("huggingface_token", _NO_ALNUM_BEFORE + r"hf_[A-Za-z0-9]{30,}"),
    _rule("npm_token", _NO_ALNUM_BEFORE + r"npm_[A-Za-z0-9]{36}"),
    _rule("pypi_token", _NO_ALNUM_BEFORE + r"pypi-AgE[A-Za-z0-9_-]{50,}"),
    _rule("sendgrid_key", _NO_ALNUM_BEFORE + r"SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}"),
    _rule("telegram_bot_token", _NO_DIGIT_BEFORE + r"\d{8,10}:AA[A-Za-z0-9_-]{33}"),
    _rule("bearer_token", r"(?i)\bbearer\s+(" + _NOT_PLACEHOLDER + r"[A-Za-z0-9._~+/-]{16,}=*)", group=1),
    _rule(
        "password",
        r"(?i)(?:password|passwd|pwd|passphrase|secret|api[_-]?key|access[_-]?token|auth[_-]?token|"
        r"client[_-]?secret|密码|口令|密钥)[\"']?\s*(?:[:=：]|\bis\b|是|为)\s*(" + _SECRET_VALUE + ")",
        group=1,
    ),
    _rule("email", r"(?<![A-Za-z0-9._%+-])[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}\b"),
    _rule("cn_id", _NO_ALNUM_BEFORE + r"\d{17}[0-9Xx]" + _NO_ALNUM_AFTER, check=is_valid_cn_id),
    # Mainland passports: E or G and 8 digits, or E, a letter and 7 digits (e-passports).
    _rule("cn_passport", _NO_ALNUM_BEFORE + r"(?:[EG]\d{8}|E[A-HJ-NP-Z]\d{7})" + _NO_ALNUM_AFTER),
    # Hong Kong identity cards: one or two letters, six digits, the check digit in brackets.
    _rule("hk_id", _NO_ALNUM_BEFORE + r"[A-Z]{1,2}\d{6}\([0-9A]\)"),
    # Card numbers: grouped 4-4-4-4-3, 4-4-4-4, 4-6-5 (Amex) or a plain run; each form is its own
    # rule so a longer reading that fails Luhn does not hide a shorter one that passes.
    _rule(
        "bank_card",
        _NO_DIGIT_BEFORE + r"\d{4}([ -])\d{4}\1\d{4}\1\d{4}\1\d{3}" + _NO_DIGIT_AFTER,
        check=_card_check,
    ),
    _rule(
        "bank_card", _NO_DIGIT_BEFORE + r"\d{4}([ -])\d{4}\1\d{4}\1\d{4}" + _NO_DIGIT_AFTER, check=_card_check
    ),
    _rule("bank_card", _NO_DIGIT_BEFORE + r"\d{4}([ -])\d{6}\1\d{5}" + _NO_DIGIT_AFTER, check=_card_check),
    _rule("bank_card", _NO_DIGIT_BEFORE + r"\d{13,19}" + _NO_DIGIT_AFTER, check=_card_check),
    _rule("us_ssn", _NO_DIGIT_BEFORE + r"(?!000|666|9\d\d)\d{3}-(?!00)\d{2}-(?!0000)\d{4}" + _NO_DIGIT_AFTER),
    _rule("phone", _NO_DIGIT_BEFORE + r"(?:\+?86[ -]?)?1[3-9]\d[ -]?\d{4}[ -]?\d{4}" + _NO_DIGIT_AFTER),
    _rule("phone", _NO_DIGIT_BEFORE + r"0\d{2,3}-\d{7,8}" + _NO_DIGIT_AFTER),
    _rule(
        "phone",
        r"(?<![0-9A-Za-z+])\+[1-9]\d{0,2}[ .-]?(?:\(\d{1,4}\)[ .-]?)?\d{2,4}(?:[ .-]?\d{2,4}){1,4}"
        + _NO_DIGIT_AFTER,
    ),
    _rule("phone", _NO_DIGIT_BEFORE + r"\(\d{3}\)\s?\d{3}[ .-]\d{4}" + _NO_DIGIT_AFTER),
    _rule("phone", _NO_DIGIT_BEFORE + r"\d{3}[.-]\d{3}[.-]\d{4}" + _NO_DIGIT_AFTER),
)


def find_secrets(text: str) -> list[Finding]:
    """Non-overlapping findings in text order; earlier rules win an overlap."""
    taken: list[Finding] = []
    for rule in _RULES:
        for match in rule.pattern.finditer(text):
            start, end = match.span(rule.group)
            if start == end:
                continue
            if rule.check is not None and not rule.check(match.group(rule.group)):
                continue
            if any(start < f.end and f.start < end for f in taken):
                continue
            taken.append(Finding(rule.kind, start, end))
    return sorted(taken, key=lambda f: f.start)


def redact(text: str) -> str:
    """``text`` with every secret or personal datum replaced by ``[REDACTED:kind]``.

    Repeated until nothing changes: a match that lost an overlap to an earlier rule (say a long
    international number that swallowed part of a landline number) is caught on the next pass,
    which makes ``redact`` idempotent."""
    for _ in range(8):
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

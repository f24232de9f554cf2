"""Our own redaction rules: what detect-secrets does not know, and the look-alike checks.

Each rule is a regular expression written to run in linear time on any input: every repeat is
bounded (``{1,256}``, never ``+`` or ``*`` over a class that can run on), and rules that start
with a character class are anchored by a look-behind so that an attempt starts only at the start
of a run, not at each of its characters. Scanners that need more than one regex (keyword
assignments, URL credentials, PEM blocks, base64-wrapped keys) walk the text once, each step
bounded.

The look-alike checks decide what is *not* a secret though it has the shape of one: hashes
(git object ids, lock-file checksums), UUIDs, code (``pwd = os.getcwd()``), templates and
placeholders, paths, versions, and SSH remotes such as ``git@github.com:org/repo.git``.

Imports ``detect`` of its own package (for its entropy measure).
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from detect_secrets.filters.heuristic import is_potential_uuid, is_sequential_string, is_templated_secret
from detect_secrets.plugins.keyword import DENYLIST

from .detect import Scan, entropy, gate_index, re2_pattern

__all__ = [
    "CONTEXT_RULES",
    "PII_RULES",
    "TOKEN_RULES",
    "Candidate",
    "Rule",
    "Scan",
    "base64_runs",
    "base64_wrapped_secrets",
    "emails",
    "is_hash_like",
    "is_luhn_valid",
    "is_valid_cn_id",
    "keyword_values",
    "looks_like_code_or_placeholder",
    "pem_blocks",
    "putty_private_lines",
    "secret_key_before",
    "url_passwords",
]

_NOT_PLACEHOLDER = r"(?!\[REDACTED:)"
_NO_DIGIT_AFTER = r"(?![0-9])"
_NO_ALNUM_AFTER = r"(?![A-Za-z0-9])"
_NO_TOKEN_AFTER = r"(?![A-Za-z0-9_-])"
# Characters that may not stand just before a match. Checked in Python rather than with a
# look-behind at the start of the pattern: a pattern that starts with a literal lets the regex
# engine skip ahead to it (hundreds of MB/s), one that starts with a look-behind is tried at
# every position (about 10 MB/s per rule).
DIGIT = re.compile(r"[0-9]")
ALNUM = re.compile(r"[A-Za-z0-9]")
LETTER = re.compile(r"[A-Za-z]")
TOKEN_CHAR = re.compile(r"[A-Za-z0-9_-]")
NOT_SPACE_OR_QUOTE = re.compile(r"[^\s'\"]")


@dataclass(frozen=True, slots=True)
class Candidate:
    kind: str
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class Rule:
    kind: str
    pattern: re.Pattern[str]
    group: int = 0  # which group is the secret (0: the whole match)
    check: Callable[[str], bool] | None = None
    before: re.Pattern[str] | None = None  # what may not precede the match
    back: int = 0  # characters before the match that belong to the secret (see _anchored)
    # Lower-case strings of which the text must hold one for the rule to match anywhere: a
    # substring test runs at memory speed, so most rules cost nothing on most texts.
    requires: tuple[str, ...] = ()

    # An RE2 pattern (over UTF-8 bytes) that every match of the rule overlaps, and the longest
    # match the rule can make: the rule's own regex (Python's, with look-arounds) then runs only
    # around the prefilter's hits. For rules that start with a character class, which Python's
    # engine tries at every position (about 10 MB/s each), while RE2 runs a DFA (hundreds of MB/s).
    prefilter: Any = None
    reach: int = 0

    def find(self, text: str, lowered: str | None = None, scan: Scan | None = None) -> Iterator[Candidate]:
        """Candidates in ``text``; ``lowered`` is ``text.lower()`` when the caller has it, and
        ``scan`` the text's ``Scan`` (for the prefilter)."""
        if self.requires:
            haystack = text.lower() if lowered is None else lowered
            if not any(literal in haystack for literal in self.requires):
                return
        if self.prefilter is None:
            yield from self._find_in(text, 0, len(text))
            return
        for start, end in (scan or Scan(text)).windows(self.prefilter, self.reach):
            yield from self._find_in(text, start, end)

    def _find_in(self, text: str, position: int, stop: int) -> Iterator[Candidate]:
        while (match := self.pattern.search(text, position, stop)) is not None:
            whole_start, whole_end = match.span()
            # A match refused for what precedes it is looked for again one character later,
            # so that it hides no match that starts inside it.
            position = whole_end if whole_end > whole_start else whole_start + 1
            if self.before is not None and whole_start > 0 and self.before.match(text, whole_start - 1):
                position = whole_start + 1
                continue
            start, end = match.span(self.group)
            start -= self.back
            if start == end or (self.check is not None and not self.check(match.group(self.group))):
                continue
            yield Candidate(self.kind, start, end)


class RuleSet:
    """Rules asked of a text in their order, skipping at once those whose prefilter matches
    nowhere in it (``Scan.present``): the rest are asked as ``Rule.find`` would be alone."""

    def __init__(self, rules: tuple[Rule, ...]) -> None:
        self.rules = rules
        self._always: list[int] = []  # positions of the rules without a prefilter
        self._by_prefilter: dict[int, list[int]] = {}
        for position, rule in enumerate(rules):
            index = gate_index(rule.prefilter) if rule.prefilter is not None else None
            if index is None:
                self._always.append(position)
            else:
                self._by_prefilter.setdefault(index, []).append(position)

    def find(self, text: str, lowered: str, scan: Scan) -> Iterator[Candidate]:
        present = scan.present()
        if present is None:
            chosen: Iterable[Rule] = self.rules
        else:
            positions = [*self._always]
            for index in present:
                positions += self._by_prefilter.get(index, ())
            chosen = [self.rules[position] for position in sorted(positions)]
        for rule in chosen:
            yield from rule.find(text, lowered, scan)


def _rule(
    kind: str,
    pattern: str,
    *,
    group: int = 0,
    flags: int = 0,
    check: Callable[[str], bool] | None = None,
    before: re.Pattern[str] | None = None,
    back: int = 0,
    requires: tuple[str, ...] = (),
    prefilter: str | None = None,
    reach: int = 0,
) -> Rule:
    """``prefilter``: an RE2 pattern every match overlaps (``\\d`` written ``\\p{Nd}``, as
    Python's ``\\d`` takes every script's digits); ``reach``: the longest match."""
    compiled = re2_pattern(prefilter) if prefilter else None
    return Rule(kind, re.compile(pattern, flags), group, check, before, back, requires, compiled, reach)


def _leading_literal(body: str) -> str:
    """The literal text a pattern starts with (``sk-ant-`` of ``sk-ant-[A-Za-z0-9]...``)."""
    literal = []
    index = 0
    while index < len(body):
        char = body[index]
        if char == "\\" and index + 1 < len(body) and body[index + 1] in ".-/+":
            literal.append(body[index + 1])
            index += 2
            continue
        if char in "[](){}.*+?|^$\\":
            break
        literal.append(char)
        index += 1
    if index < len(body) and body[index] in "*?{":  # the last character is optional or repeated
        literal = literal[:-1]
    return "".join(literal).lower()


def _anchored(kind: str, head: str, literal: str, tail: str) -> Rule:
    """A token whose distinctive part is in its middle (``<32 hex>-us12``): the pattern starts
    at the literal, which the engine can skip to, and a fixed-width look-behind checks the
    ``head`` before it, which then counts as part of the secret."""
    width = sum(1 for _ in re.finditer(r"\{(\d+)\}", head))  # validated below
    match = re.fullmatch(r"(\[[^\]]+\]|\\d)\{(\d+)\}", head)
    if match is None or width != 1:
        raise ValueError(f"head must be one class with a fixed count: {head!r}")
    count = int(match.group(2))
    pattern = re.escape(literal) + rf"(?<={head}{re.escape(literal)})" + tail + _NO_TOKEN_AFTER
    return _rule(kind, pattern, back=count, requires=(literal.lower(),))


def _token(kind: str, body: str, *, check: Callable[[str], bool] | None = None, flags: int = 0) -> Rule:
    """A token that stands alone: not preceded or followed by more token characters.

    When the token starts with a literal character the check of what precedes it is a
    look-behind placed right after that character: the engine skips ahead to the literal and
    drops a token glued to a longer word at once, instead of reading the whole run first (which
    made ``eyJeyJeyJ...`` quadratic). Its last repeat is possessive: what follows it may not be a
    token character anyway, so giving characters back could never help."""
    literal = _leading_literal(body)
    if body[0].isascii() and body[0].isalnum() and body[1:2] not in ("{", "?", "*", "+", "|"):
        body = body[0] + r"(?<![A-Za-z0-9_-]." + ")" + body[1:]
        before = None
    else:
        before = TOKEN_CHAR
    if body.endswith("}"):
        body += "+"
    requires = (literal,) if len(literal) >= 2 else ()
    # Where the literal stands, the rule reads a window as long as its longest token (the
    # repeat bounds added up): a text that holds the literal once is not read whole.
    reach = sum(int(bound) for bound in re.findall(r"\{(?:\d+,)?(\d+)\}", body)) + 64
    prefilter = "(?i)" + re.escape(literal) if requires else None
    return _rule(
        kind,
        body + _NO_TOKEN_AFTER,
        check=check,
        flags=flags,
        before=before,
        requires=requires,
        prefilter=prefilter,
        reach=reach,
    )


# --- checks ------------------------------------------------------------------------------------


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
    digits = text.replace(" ", "").replace("-", "")
    return 13 <= len(digits) <= 19 and digits[0] in "23456" and is_luhn_valid(digits)


_HEX = re.compile(r"[0-9a-fA-F]+")


def is_hash_like(value: str) -> bool:
    """Hex digests (git object ids, MD5/SHA sums, lock-file checksums) and UUIDs: random-looking
    but public. A hex key is still caught when a keyword names it."""
    core = value.strip("\"'")
    if _HEX.fullmatch(core) and len(core) in (7, 8, 12, 16, 32, 40, 56, 64, 96, 128):
        return True
    return len(core) == 36 and is_potential_uuid(core)


def _mixed(value: str, *, need_digit: bool = True) -> bool:
    """Upper and lower case letters (and a digit): how random tokens look, unlike identifiers."""
    has_digit = any(c.isdigit() for c in value)
    return (
        any(c.islower() for c in value) and any(c.isupper() for c in value) and (has_digit or not need_digit)
    )


def _random_40(value: str) -> bool:
    """A 40-character AWS secret access key, seen without its name: base64 alphabet, mixed case
    and digits, not hex (a git object id), not an identifier."""
    return not is_hash_like(value) and _mixed(value) and entropy(value) >= 4.0


_CODE_LITERALS = frozenset(
    [
        "none",
        "null",
        "nil",
        "true",
        "false",
        "undefined",
        "nan",
        "str",
        "string",
        "int",
        "bool",
        "bytes",
        "float",
        "any",
        "object",
        "secretstr",
        "optional",
        "required",
        "yes",
        "no",
        "on",
        "off",
        "empty",
        "default",
        "env",
        "environ",
        "getenv",
    ]
)
_PLACEHOLDER_VALUE = re.compile(
    r"""(?ix)
    \$[A-Za-z_][\w.]{0,80}$ | <[^<>]{1,60}>$ | %s$ | \{[A-Za-z_]\w{0,80}\}$ | \$\([^()]{1,80}\)$
    | (?:\*{3,}|x{3,}|\.{3,}|…|-+|_+|\#+|\?+)$ | \[REDACTED: | (?:your|my|the|some|enter|insert|put)[_ -]
    | (?:redacted|hidden|masked|placeholder|example|dummy|sample)$
    """
)
_TEMPLATE_MARK = re.compile(r"\$\{|\{\{|\{%|%\(")
_DIGIT_ANYWHERE = re.compile(r"[0-9]")
_CODE_VALUE = re.compile(
    r"""(?x)
    [A-Za-z_]\w{0,80}(?:\.[A-Za-z_]\w{0,80}){0,8}\s{0,3}[(\[]  # a call or an index: f(...), os.environ[...]
    | (?:self|this|cls|os|sys|env|process|config|settings|request|args|kwargs|options|opts|params|ctx)
      (?:\.|\[|->|::)
    | [a-z_][a-z0-9_]{0,80}(?:\.[A-Za-z_]\w{0,80}){1,8}$   # attribute access: module.thing
    | (?:new|await|lambda|function|fn|def|return|typeof|async)\b
    """
)


def looks_like_code_or_placeholder(value: str) -> bool:
    """The value of ``password = ...`` that is no password: code, a reference, a template, a
    placeholder, a literal such as None."""
    core = value.strip().strip("\\").strip("\"'`").strip()
    if len(core) < 3 or is_templated_secret(core):
        return True
    if core.lower() in _CODE_LITERALS or _PLACEHOLDER_VALUE.match(core):
        return True
    if _TEMPLATE_MARK.search(core):
        return True
    return bool(_CODE_VALUE.match(core))


# --- token rules (the value's own shape says what it is) ---------------------------------------

_B64 = "A-Za-z0-9+/"
_URLSAFE = "A-Za-z0-9_-"

TOKEN_RULES: tuple[Rule, ...] = (
    _token("jwt", r"eyJ[A-Za-z0-9_-]{8,4096}+\.eyJ[A-Za-z0-9_-]{8,8192}+\.[A-Za-z0-9_-]{8,4096}"),
    _token("mapbox_token", r"[sp]k\.eyJ[A-Za-z0-9_-]{20,512}\.[A-Za-z0-9_-]{10,256}"),
    _token("anthropic_key", r"sk-ant-(?:api|admin|oat|ort)\d{2}-[A-Za-z0-9_-]{20,256}"),
    _token("anthropic_key", r"sk-ant-[A-Za-z0-9_-]{20,256}"),
    _token("openai_key", r"sk-(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_-]{20,256}"),
    _token("groq_key", r"gsk_[A-Za-z0-9]{40,64}"),
    _token("xai_key", r"xai-[A-Za-z0-9]{60,100}"),
    _token("perplexity_key", r"pplx-[A-Za-z0-9]{40,64}"),
    _token("replicate_token", r"r8_[A-Za-z0-9]{30,48}"),
    _token(
        "aws_access_key", r"(?:AKIA|ASIA|ABIA|ACCA|AROA|AIDA|AGPA|ANPA|ANVA|APKA|A3T[A-Z0-9])[0-9A-Z]{16}"
    ),
    _token("aws_session_token", r"(?:FwoGZXIvYXdz|IQoJb3JpZ2lu|FQoGZXIvYXdz)[A-Za-z0-9/+=]{40,4096}"),
    _token("github_token", r"gh[pousr]_[A-Za-z0-9]{36,255}"),
    _token("github_token", r"github_pat_[A-Za-z0-9_]{22,255}"),
    _token("gitlab_token", r"gl(?:pat|dt|rt|ptt|cbt|imt|oas|ft|soat|agent)-[A-Za-z0-9_-]{20,1024}"),
    _token("gitlab_token", r"GR1348941[A-Za-z0-9_-]{20,50}"),
    _token("slack_token", r"xox(?:[abposre]|e\.xox[bp])-[A-Za-z0-9-]{10,255}"),
    _token("slack_token", r"xapp-\d-[A-Za-z0-9-]{10,255}"),
    _rule(
        "slack_webhook", r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9/_-]{20,255}"
    ),
    _rule(
        "discord_webhook",
        r"https://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/\d{5,30}/[A-Za-z0-9_-]{20,255}",
    ),
    _token("google_api_key", r"AIza[0-9A-Za-z_-]{35}"),
    _token("google_oauth_secret", r"GOCSPX-[A-Za-z0-9_-]{20,64}"),
    _token("google_oauth_token", r"ya29\.[A-Za-z0-9_-]{20,2048}"),
    _token("google_refresh_token", r"1//0[A-Za-z0-9_-]{30,512}"),
    _token("stripe_key", r"(?:sk|rk|pk)_(?:live|test)_[0-9A-Za-z]{16,255}"),
    _token("stripe_webhook_secret", r"whsec_[A-Za-z0-9+/=]{24,128}"),
    _token("docker_token", r"dckr_(?:pat|oat)_[A-Za-z0-9_-]{20,128}"),
    _token("huggingface_token", r"hf_[A-Za-z0-9]{30,64}"),
    _token("npm_token", r"npm_[A-Za-z0-9]{36}"),
    _token("pypi_token", r"pypi-AgE[A-Za-z0-9_-]{50,512}"),
    _token("sendgrid_key", r"SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}"),
    # A bot's id has 8 to 10 digits (longest first: the first rule to match a span keeps it).
    _anchored("telegram_bot_token", r"\d{10}", ":AA", r"[A-Za-z0-9_-]{33}"),
    _anchored("telegram_bot_token", r"\d{9}", ":AA", r"[A-Za-z0-9_-]{33}"),
    _anchored("telegram_bot_token", r"\d{8}", ":AA", r"[A-Za-z0-9_-]{33}"),
    _token("shopify_token", r"shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}"),
    _token("atlassian_token", r"ATATT3[A-Za-z0-9_=-]{100,512}"),
    _token("linear_key", r"lin_(?:api|oauth)_[A-Za-z0-9]{40}"),
    _token("notion_token", r"secret_[A-Za-z0-9]{43}"),
    _token("notion_token", r"ntn_[A-Za-z0-9]{40,50}"),
    _token("postman_key", r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}"),
    _token("doppler_token", r"dp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,64}"),
    _token("vault_token", r"hv[sbr]\.[A-Za-z0-9_-]{24,256}"),
    _anchored("terraform_token", r"[A-Za-z0-9]{14}", ".atlasv1.", r"[A-Za-z0-9_=-]{60,128}"),
    _token("digitalocean_token", r"do[opr]_v1_[a-f0-9]{64}"),
    _token("heroku_key", r"HRKU-[A-Za-z0-9_-]{20,80}"),
    _token("supabase_token", r"sbp_[a-f0-9]{40}"),
    _token("planetscale_token", r"pscale_(?:pw|tkn|oauth)_[A-Za-z0-9_.-]{32,64}"),
    _token("flyio_token", r"fo1_[A-Za-z0-9_-]{39,64}"),
    _token("grafana_token", r"glc_[A-Za-z0-9+/=]{32,400}"),
    _token("grafana_token", r"glsa_[A-Za-z0-9]{32}_[a-fA-F0-9]{8}"),
    _token("newrelic_key", r"NRAK-[A-Z0-9]{27}"),
    _token("sentry_token", r"sntr[ysu]_[A-Za-z0-9+/=_-]{40,512}"),
    # A DSN: the project's key (and, in old DSNs, its secret) as the URL's user, a project id.
    _rule(
        "sentry_dsn",
        r"(?<![A-Za-z0-9+.-])https?://([0-9a-f]{32}(?::[0-9a-f]{32})?)@[A-Za-z0-9.-]{1,253}(?::\d{1,5})?/"
        r"(?:[A-Za-z0-9_-]{1,64}/){0,4}\d{1,20}(?![A-Za-z0-9_-])",
        group=1,
        requires=("://",),
    ),
    _token("databricks_token", r"dapi[a-f0-9]{32}(?:-\d)?"),
    _token("dropbox_token", r"sl\.[A-Za-z0-9_-]{130,256}"),
    _token("age_secret_key", r"AGE-SECRET-KEY-1[0-9A-Z]{58}"),
    _token("facebook_token", r"EAA[A-Za-z0-9]{90,255}"),
    _token("square_token", r"EAAA[A-Za-z0-9_-]{60}"),
    _token("square_token", r"sq0(?:csp|atp)-[A-Za-z0-9_-]{22,43}"),
    _token("mailgun_key", r"key-[0-9a-f]{32}"),
    _anchored("mailchimp_key", r"[0-9a-f]{32}", "-us", r"\d{1,2}"),
    _token("pulumi_token", r"pul-[a-f0-9]{40}"),
    _token("netlify_token", r"nfp_[A-Za-z0-9]{36,48}"),
    _anchored("azure_client_secret", r"[A-Za-z0-9_~.-]{4}", "Q~", r"[A-Za-z0-9_~.-]{31,34}"),
    _token("twilio_key", r"SK[0-9a-f]{32}"),
    _token("cloudflare_token", r"(?:cfut|cfat)_[A-Za-z0-9]{40,60}"),
)

# --- context rules (the words around a value say it is a secret) ------------------------------

_AZURE = _rule(
    "azure_key",
    r"(?=[AaSsPp])(?i:AccountKey|SharedAccessKey|SharedAccessSignature|sig|PrimaryKey|SecondaryKey)"
    r"=(" + _NOT_PLACEHOLDER + r"[A-Za-z0-9+/=%_.~-]{8,1024})",
    group=1,
    before=ALNUM,
    requires=("key=", "sig=", "signature="),
)
_BASIC_AUTH = _rule(
    "basic_auth",
    r"(?=[Bb])(?i:basic)\s{1,5}(" + _NOT_PLACEHOLDER + r"[A-Za-z0-9+/]{6,1024}={0,2})(?![A-Za-z0-9+/=])",
    group=1,
    check=lambda value: _decodes_to_credentials(value),
    before=LETTER,
    requires=("basic",),
)
_BEARER = _rule(
    "bearer_token",
    r"(?=[Bb])(?i:bearer)\s{1,5}(" + _NOT_PLACEHOLDER + r"[A-Za-z0-9._~+/-]{16,4096}={0,2})",
    group=1,
    check=lambda value: not is_hash_like(value) or len(value) >= 32,
    before=LETTER,
    requires=("bearer",),
)
_CLI_USER = _rule(
    "cli_password",
    r"(?:-u|--user|--proxy-user)(?:\s{1,5}|=)['\"]?[^\s:'\"]{1,128}:("
    + _NOT_PLACEHOLDER
    + r"[^\s'\"]{1,256})",
    group=1,
    check=lambda value: not looks_like_code_or_placeholder(value),
    before=NOT_SPACE_OR_QUOTE,
    requires=("-u", "--user", "--proxy-user"),
)
_CLI_P_FLAG = _rule(
    "cli_password",
    r"(?=[Mm])(?i:mysql|mysqldump|mysqladmin|mariadb|mariadb-dump|mysqlimport|mysqlsh)\b[^\n]{0,200}?"
    r"(?<!\S)-p(" + _NOT_PLACEHOLDER + r"""['"]?[^\s'"-][^\s'"]{0,255}['"]?)""",
    group=1,
    check=lambda value: not looks_like_code_or_placeholder(value),
    before=TOKEN_CHAR,
    requires=("mysql", "mariadb"),
)
_CLI_SEPARATE = _rule(
    "cli_password",
    r"(?=[SsRrDdHh])(?i:sshpass\s{1,5}-p|redis-cli\b[^\n]{0,200}?\s-a|docker\s{1,5}login\b[^\n]{0,200}?\s(?:-p|--password)"
    r"|htpasswd\s{1,5}-b[^\n]{0,200}?\S\s{1,5}\S{1,128})"
    r"\s{1,5}(" + _NOT_PLACEHOLDER + r"['\"]?[^\s'\"-][^\s'\"]{0,255}['\"]?)",
    group=1,
    check=lambda value: not looks_like_code_or_placeholder(value),
    before=TOKEN_CHAR,
    requires=("sshpass", "redis-cli", "docker", "htpasswd"),
)
_NETRC = _rule(
    "password",
    r"(?=[MmLl])(?i:machine|login)\s[^\n]{0,200}?\b(?i:password)\s{1,5}(" + _NOT_PLACEHOLDER + r"\S{1,256})",
    group=1,
    before=TOKEN_CHAR,
    requires=("password",),
)
_QUERY_SECRET = _rule(
    "url_secret",
    r"(?i)[?&;](?:api[_-]?key|apikey|access[_-]?token|auth[_-]?token|token|secret|client[_-]?secret|password"
    r"|passwd|pwd|sig|signature|key|x-amz-signature|x-amz-security-token)=("
    + _NOT_PLACEHOLDER
    + r"[^&\s#\"'<>]{6,2048})",
    group=1,
    check=lambda value: not looks_like_code_or_placeholder(value),
    requires=("=",),
    prefilter=r"(?i)[?&;](?:api[_-]?key|apikey|access[_-]?token|auth[_-]?token|token|secret|client[_-]?secret"
    r"|password|passwd|pwd|sig|signature|key|x-amz-signature|x-amz-security-token)=",
    reach=2100,
)
# .npmrc: "//registry.example.com/:_authToken=..." or "_auth=..." at the start of a line.
_NPMRC = _rule(
    "npm_token",
    r"_(?i:authToken|auth|password)\s{0,3}=\s{0,3}(" + _NOT_PLACEHOLDER + r"[^\s\"']{6,1024})",
    group=1,
    before=re.compile(r"[^:\n]"),
    check=lambda value: not looks_like_code_or_placeholder(value),
    requires=("_auth", "_password"),
)
# Whole runs of the base64 alphabet (a greedy run with nothing after it never backtracks), of
# which only those exactly 40 long are candidates.
_AWS_SECRET_40 = _rule(
    "aws_secret_key",
    r"[A-Za-z0-9/+=]{40,}",
    check=lambda run: len(run) == 40 and "=" not in run and _random_40(run),
    prefilter=r"[A-Za-z0-9/+=]{40,}",  # the same whole runs: the rule reads only those
    reach=1,
)
_PUTTY_MAC = _rule(
    "private_key", r"(?m)^Private-MAC:\s{0,5}([0-9a-fA-F]{20,128})", group=1, requires=("private-mac",)
)
CONTEXT_RULES: tuple[Rule, ...] = (
    _AZURE,
    _BASIC_AUTH,
    _BEARER,
    _CLI_USER,
    _CLI_P_FLAG,
    _CLI_SEPARATE,
    _NETRC,
    _QUERY_SECRET,
    _NPMRC,
    _PUTTY_MAC,
    _AWS_SECRET_40,
)

# --- personal data -----------------------------------------------------------------------------

PLUS_OR_ALNUM = re.compile(r"[0-9A-Za-z+]")
_CARD_GROUPS = r"\p{Nd}{4}[ -]\p{Nd}{4}|\p{Nd}{4}[ -]\p{Nd}{6}"

PII_RULES: tuple[Rule, ...] = (
    _rule(
        "cn_id",
        r"\d{17}[0-9Xx]" + _NO_ALNUM_AFTER,
        check=is_valid_cn_id,
        before=ALNUM,
        prefilter=r"\p{Nd}{17}",
        reach=18,
    ),
    # Mainland passports: E or G and 8 digits, or E, a letter and 7 digits (e-passports).
    _rule(
        "cn_passport",
        r"(?:[EG]\d{8}|E[A-HJ-NP-Z]\d{7})" + _NO_ALNUM_AFTER,
        before=ALNUM,
        prefilter=r"E\p{Nd}{7}|[EG][A-Z]?\p{Nd}{7}",
        reach=9,
    ),
    # Hong Kong identity cards: one or two letters, six digits, the check digit in brackets.
    _rule("hk_id", r"[A-Z]{1,2}\d{6}\([0-9A]\)", before=ALNUM, prefilter=r"\p{Nd}{6}\(", reach=11),
    # Card numbers: grouped 4-4-4-4-3, 4-4-4-4, 4-6-5 (Amex) or a plain run; each form is its own
    # rule so a longer reading that fails Luhn does not hide a shorter one that passes.
    _rule(
        "bank_card",
        r"\d{4}([ -])\d{4}\1\d{4}\1\d{4}\1\d{3}" + _NO_DIGIT_AFTER,
        check=_card_check,
        before=DIGIT,
        prefilter=_CARD_GROUPS,
        reach=24,
    ),
    _rule(
        "bank_card",
        r"\d{4}([ -])\d{4}\1\d{4}\1\d{4}" + _NO_DIGIT_AFTER,
        check=_card_check,
        before=DIGIT,
        prefilter=_CARD_GROUPS,
        reach=20,
    ),
    _rule(
        "bank_card",
        r"\d{4}([ -])\d{6}\1\d{5}" + _NO_DIGIT_AFTER,
        check=_card_check,
        before=DIGIT,
        prefilter=_CARD_GROUPS,
        reach=17,
    ),
    _rule(
        "bank_card",
        r"\d{13,19}" + _NO_DIGIT_AFTER,
        check=_card_check,
        before=DIGIT,
        prefilter=r"\p{Nd}{13}",
        reach=19,
    ),
    _rule(
        "us_ssn",
        r"(?!000|666|9\d\d)\d{3}-(?!00)\d{2}-(?!0000)\d{4}" + _NO_DIGIT_AFTER,
        before=DIGIT,
        prefilter=r"\p{Nd}{3}-\p{Nd}{2}-\p{Nd}{4}",
        reach=11,
    ),
    _rule(
        "phone",
        r"(?:\+?86[ -]?)?1[3-9]\d[ -]?\d{4}[ -]?\d{4}" + _NO_DIGIT_AFTER,
        before=DIGIT,
        prefilter=r"1[3-9]\p{Nd}[ -]?\p{Nd}{4}[ -]?\p{Nd}{4}",
        reach=20,
    ),
    _rule(
        "phone",
        r"0\d{2,3}-\d{7,8}" + _NO_DIGIT_AFTER,
        before=DIGIT,
        prefilter=r"0\p{Nd}{2,3}-\p{Nd}{7}",
        reach=13,
    ),
    _rule(
        "phone",
        r"\+[1-9]\d{0,2}[ .-]?(?:\(\d{1,4}\)[ .-]?)?\d{2,4}(?:[ .-]?\d{2,4}){1,4}" + _NO_DIGIT_AFTER,
        before=PLUS_OR_ALNUM,
    ),
    _rule("phone", r"\(\d{3}\)\s?\d{3}[ .-]\d{4}" + _NO_DIGIT_AFTER, before=DIGIT),
    _rule(
        "phone",
        r"\d{3}[.-]\d{3}[.-]\d{4}" + _NO_DIGIT_AFTER,
        before=DIGIT,
        prefilter=r"\p{Nd}{3}[.-]\p{Nd}{3}[.-]\p{Nd}{4}",
        reach=12,
    ),
)

_EMAIL_DOMAIN = re.compile(
    r"@[A-Za-z0-9-]{1,63}(?:\.[A-Za-z0-9-]{1,63}){0,8}\.[A-Za-z]{2,24}(?![A-Za-z0-9-]|\.[A-Za-z0-9]|:[\w~/.-])"
)
_EMAIL_LOCAL = re.compile(r"[A-Za-z0-9._%+-]{1,64}\Z")
_EMAIL_LOCAL_CHAR = re.compile(r"[A-Za-z0-9._%+-]")


def emails(text: str) -> Iterator[Candidate]:
    """Addresses, found from their ``@``. ``git@github.com:org/repo.git`` is an SSH remote: a
    ``:`` and a path right after the domain make it one; ``ssh://git@github.com/org/repo.git``
    a URL, whose user comes right after ``://``."""
    for match in _EMAIL_DOMAIN.finditer(text):
        at = match.start()
        local = _EMAIL_LOCAL.search(text, max(0, at - 64), at)
        if local is None:
            continue
        start = local.start()
        if start > 0 and _EMAIL_LOCAL_CHAR.match(text, start - 1):
            continue  # a local part longer than an address allows: not an address
        if text.endswith("://", 0, start):
            continue  # the user of a URL (ssh://git@host/..., https://deploy@host/...)
        yield Candidate("email", start, match.end())


# --- scanners ----------------------------------------------------------------------------------

# Which key names hold secrets: every name with one of these stems, except a bare "key" (which
# needs a qualifier: "api_key", "AccountKey", not "monkey" or "primary_key") and "connection"
# (only "connection_string"). The qualifiers are detect-secrets' keyword list (DENYLIST) and the
# names cloud tools and frameworks give secrets.
# The words for "password", "secret", "token" and "key" in other languages and scripts count
# too (a key is a key in any script): Spanish/Portuguese/French/Italian/German/Dutch/Nordic/
# Polish/Czech/Turkish/Hungarian/Finnish, Russian/Ukrainian, Greek, Hebrew, Arabic, Hindi,
# Chinese, Japanese, Korean, Thai and Vietnamese. "auth" names a credential only as a whole word
# at the end of the name (``"auth"``, ``basic_auth``: not ``author``), and only for values that
# look random or decode to ``user:password`` (Docker's config.json).
_STEM_WORDS = (
    "pass|pwd|secret|token|key|credential|contrase|connection|auth|senha|passwort|kennwort|wachtwoord"
    "|losenord|lösenord|adgangskode|passord|salasana|hasło|haslo|heslo|şifre|sifre|jelszó|jelszo"
    "|mot_?de_?passe|motdepasse|пароль|парол|секрет|токен|ключ|κωδικός|συνθηματικό|סיסמה|סיסמא"
    "|كلمة_?المرور|كلمة_?السر|पासवर्ड|密码|密碼|口令|密钥|密鑰|令牌|パスワード|暗証番号|비밀번호|암호"
    "|รหัสผ่าน|mật_?khẩu|mat_?khau"
)
_STEM = re.compile(f"(?i:{_STEM_WORDS})")
_STEM_PREFILTER = re2_pattern(f"(?i:{_STEM_WORDS})")
_KEY_QUALIFIERS = sorted(
    {word[: -len("key")].rstrip("_?") for word in DENYLIST if word.endswith("key")}
    | {
        "access",
        "signing",
        "encryption",
        "master",
        "preshared",
        "shared_access",
        "app",
        "license",
        "ssh",
        "session",
        "secret",
        "storage",
        "subscription",
        "admin",
        "deploy",
        "webhook",
        "x_api",
        "x-api",
    }
)
_QUALIFIERS_SQUASHED = tuple(sorted({q.replace("_", "").replace("-", "") for q in _KEY_QUALIFIERS}))
# Key names are words of any script (``contraseña``, ``пароль``), with ``_``, ``.`` and ``-``;
# but not Chinese or Japanese characters around the stem: those scripts write no spaces, so in
# ``我的密码是…`` the key is ``密码`` and ``是`` ("is") the separator.
_KEY_CLASS = r"[^\W\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]|[.-]"
_KEY_BEFORE = re.compile(f"(?:{_KEY_CLASS}){{1,48}}\\Z")
_KEY_CHAR = re.compile(_KEY_CLASS)
_KEY_BEFORE_VALUE = re.compile(
    f"((?:{_KEY_CLASS}){{1,64}})"
    r"""(?:\\{0,3}["'`\]]){0,2}[ \t]{0,8}(?:=>|:=|==|=|:)[ \t]{0,8}@?(?:\\{0,3}["'`])?\Z"""
)
_IDENTIFIER = re.compile(r"[A-Za-z_]\w{0,80}")
_KEY_AFTER = re.compile(f"(?:{_KEY_CLASS}){{0,48}}")


def _secret_key_name(text: str, stem_start: int, stem_end: int) -> bool:
    stem = text[stem_start:stem_end].lower()
    if stem == "auth":  # a whole word that ends the name: "auth", "basic_auth", not "author"
        return not text[stem_end : stem_end + 1].isalnum()
    if stem == "key":  # the name part before "key", separators dropped, ends with a qualifier
        return _squash(text[max(0, stem_start - 20) : stem_start]).endswith(_QUALIFIERS_SQUASHED)
    if stem == "connection":
        return text[stem_end : stem_end + 7].lower().lstrip("_.-").startswith("string")
    return True


# Key names that end so hold something about a secret, not the secret (``password_length``,
# ``token_type``, ``SharedAccessKeyName``). A suffix test (``str.endswith``) costs nothing.
_NOT_A_SECRET_KEY_ENDINGS = tuple(
    [
        "file",
        "path",
        "dir",
        "name",
        "type",
        "length",
        "len",
        "size",
        "count",
        "url",
        "uri",
        "endpoint",
        "field",
        "label",
        "prompt",
        "hash",
        "id",
        "ids",
        "ref",
        "policy",
        "min",
        "max",
        "limit",
        "expire",
        "expires",
        "expiry",
        "ttl",
        "timeout",
        "format",
        "mode",
        "version",
        "header",
        "provider",
        "store",
        "manager",
        "rotation",
        "required",
        "enabled",
        "regex",
        "pattern",
        "hint",
        "help",
        "error",
        "message",
        "msg",
        "column",
        "input",
        "widget",
        "form",
        "reset",
        "usage",
        "used",
        "budget",
        "tokenizer",
        "encoding",
        "index",
        "location",
        "arn",
        "kind",
        "algorithm",
        "alg",
        "method",
        "strength",
        "storage",
        "class",
        "schema",
        "scope",
        "scopes",
        "source",
        "style",
        "color",
        "visible",
        "prefix",
        "suffix",
        "template",
        "envvar",
        "env_var",
        "env-var",
        "env.var",
    ]
)


def _not_a_secret_key(key: str) -> bool:
    return key.rstrip("_.-").lower().endswith(_NOT_A_SECRET_KEY_ENDINGS)


_NUMERIC_OK = re.compile(r"(?i)pass|pwd|pin|密码|口令")
# After the key: a closing quote (maybe escaped, as in JSON inside JSON), then the separator.
_SEPARATOR = re.compile(r"""(?:\\{0,3}["'`\]]){0,2}[ \t]{0,8}(?:=>|:=|==|=|:|：|\bis\b|是|为)[ \t]{0,8}@?""")
_QUOTED_START = re.compile(r"""(\\{0,3})(["'`])""")
_UNQUOTED = re.compile(r"""[^\s"'`,;<>(){}\[\]]{1,512}""")


def keyword_values(text: str, scan: Scan | None = None) -> Iterator[Candidate]:
    """``password = "..."``, ``"SecretAccessKey": "..."``, ``DB_PASSWORD=...``, ``密码：...``:
    the value after a secret-sounding key, unless it is code or a placeholder."""
    position = 0
    for stem_at, _ in (scan or Scan(text)).hits(_STEM_PREFILTER):
        if stem_at < position or (match := _STEM.match(text, stem_at)) is None:
            continue
        key_start = match.start()
        if key_start > 0 and _KEY_CHAR.match(text, key_start - 1):  # else the stem starts the name
            before = _KEY_BEFORE.search(text, max(0, key_start - 48), key_start)
            key_start = before.start() if before else key_start
        after = _KEY_AFTER.match(text, match.end())
        key_end = after.end() if after else match.end()
        position = key_end
        separator = _SEPARATOR.match(text, key_end)
        if separator is None:
            markup = _markup_value(text, key_start, key_end)
            if markup is not None and _secret_key_name(text, match.start(), match.end()):
                key = text[key_start:key_end]
                if not _not_a_secret_key(key) and _secret_value(text, markup, key, match.group(0)):
                    position = markup.end
                    yield markup
            continue
        key = text[key_start:key_end]
        if not _secret_key_name(text, match.start(), match.end()) or _not_a_secret_key(key):
            continue
        found = _value_after(text, separator.end(), key, code_style=" =" in separator.group(0))
        if (
            found is not None
            and match.group(0).lower() == "auth"
            and not _random_or_credentials(text[found.start : found.end])
        ):
            continue
        if found is not None:
            position = found.end
            yield found


def _random_or_credentials(value: str) -> bool:
    return (_mixed(value, need_digit=False) and len(value) >= 12) or _decodes_to_credentials(value)


# Markup: <password>VALUE</password> (any namespace prefix and attributes), and a key named in
# one attribute with its value in the next: <add key="DbPassword" value="VALUE"/>,
# <property name="db.password" value="VALUE"/>.
_ELEMENT_OPEN = re.compile(r"""<(?:[\w.-]{1,32}:)?\Z""")
_ELEMENT_REST = re.compile(r"""(?:[ \t][^<>\n]{0,256})?>[ \t]{0,8}([^<>\n]{1,1024}?)[ \t]{0,8}</""")
_NAMING_ATTRIBUTE = re.compile(r"""(?i:name|key|id|property)[ \t]{0,4}=[ \t]{0,4}(["'])\Z""")
_VALUE_ATTRIBUTE = re.compile(
    r"""(["'])[ \t]{1,8}(?i:value|content)[ \t]{0,4}=[ \t]{0,4}(["'])([^"'<>\n]{1,1024})\2"""
)


def _markup_value(text: str, key_start: int, key_end: int) -> Candidate | None:
    """The value a markup key names: an element's text, or the value attribute after a naming
    one. None when the key is not such a name."""
    if _ELEMENT_OPEN.search(text, max(0, key_start - 34), key_start):
        element = _ELEMENT_REST.match(text, key_end)
        if element is not None:
            return Candidate("password", element.start(1), element.end(1))
        return None
    if _NAMING_ATTRIBUTE.search(text, max(0, key_start - 20), key_start):
        attribute = _VALUE_ATTRIBUTE.match(text, key_end)
        if attribute is not None and attribute.group(1) == text[key_start - 1]:
            return Candidate("password", attribute.start(3), attribute.end(3))
    return None


def _secret_value(text: str, found: Candidate, key: str, stem: str) -> bool:
    value = text[found.start : found.end]
    if value.startswith("[REDACTED:") or looks_like_code_or_placeholder(value):
        return False
    if stem.lower() == "auth":
        return _random_or_credentials(value)
    return _squash(value) not in _squash(key)


def _squash(name: str) -> str:
    return name.lower().replace("-", "").replace("_", "").replace(".", "")


def secret_key_before(text: str, start: int) -> bool | None:
    """For a value at ``start``: True when the key name just before it is one whose values are
    not secrets (``PASSWORD_FIELD = "password"``, ``token_type: "bearer"``), None when no key
    name stands there."""
    match = _KEY_BEFORE_VALUE.search(text, max(0, start - 80), start)
    if match is None:
        return None
    return _not_a_secret_key(match.group(1))


def _value_after(text: str, at: int, key: str, *, code_style: bool) -> Candidate | None:
    quote = _QUOTED_START.match(text, at)
    if quote is not None:
        closing = quote.group(1) + quote.group(2)
        end = text.find(closing, quote.end(), quote.end() + 1024)
        newline = text.find("\n", quote.end(), end if end != -1 else quote.end() + 1024)
        if end == -1 or newline != -1:
            return None
        value = text[quote.end() : end]
        if value.startswith("[REDACTED:") or looks_like_code_or_placeholder(value):
            return None
        if value.lower().replace("-", "_") in key.lower().replace("-", "_"):  # PASSWORD_FIELD = "password"
            return None
        return Candidate("password", quote.end(), end)
    unquoted = _UNQUOTED.match(text, at)
    if unquoted is None:
        return None
    value = unquoted.group(0).rstrip(".")
    if value.startswith("[REDACTED") or looks_like_code_or_placeholder(value):
        return None
    if value.isdigit() and (len(value) < 4 or not _NUMERIC_OK.search(key)):
        return None
    name_in_code = code_style or (value.islower() and "_" in value)
    if name_in_code and _IDENTIFIER.fullmatch(value) and not _DIGIT_ANYWHERE.search(value):
        return None  # `password = password_input`, `{"X-Api-Key": api_key}`: a name in code
    if _squash(value) in _squash(key):
        return None
    return Candidate("password", unquoted.start(), unquoted.start() + len(value))


_URL_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]{0,30}\Z")
# Up to the next blank, quote or "://" (each character is read for one URL only).
_URL_REST = re.compile(r"""(?:[^\s"'<>`:]|:(?!//)){1,2048}""")
_HOST = re.compile(r"(?:\[[0-9A-Fa-f:.]{2,64}\]|[A-Za-z0-9.-]{1,253})(?::\d{1,5})?(?:[/?#]|$)")


def url_passwords(text: str) -> Iterator[Candidate]:
    """The password of ``scheme://user:password@host``, all of it even when it holds ``@``,
    ``/`` or ``:``: the host starts after the *last* ``@`` that a host name follows."""
    position = 0
    while (slashes := text.find("://", position)) != -1:
        position = slashes + 3
        if _URL_SCHEME.search(text, max(0, slashes - 31), slashes) is None:
            continue
        rest = _URL_REST.match(text, slashes + 3)
        if rest is None:
            continue
        authority = rest.group(0)
        colon = authority.find(":")
        at = authority.rfind("@")
        while at > colon >= 0 and not _HOST.match(authority, at + 1):
            at = authority.rfind("@", 0, at)
        if colon < 0 or at <= colon:
            continue
        if "/" in authority[:colon] or "@" in authority[:colon]:
            continue  # the colon is not the user:password separator
        start, end = rest.start() + colon + 1, rest.start() + at
        if start < end and not text.startswith("[REDACTED:", start) and not _env_reference(text[start:end]):
            yield Candidate("url_password", start, end)
        position = rest.start() + at


def _env_reference(value: str) -> bool:
    return bool(re.fullmatch(r"\$\{?[A-Za-z_]\w*\}?|\{\{[^{}]*\}\}|<[^<>]*>|\*+|x+", value))


_PEM_BEGIN = re.compile(
    r"-----BEGIN[A-Z0-9 ]{0,40}"
    r"(?:PRIVATE KEY(?: BLOCK)?|OpenVPN Static key V1|SSH2 ENCRYPTED PRIVATE KEY)-----"
)
_PEM_END = re.compile(
    r"-----END[A-Z0-9 ]{0,40}(?:PRIVATE KEY(?: BLOCK)?|OpenVPN Static key V1|PRIVATE KEY)-----"
)
_PEM_MAX = 65536  # longest key block looked for


def pem_blocks(text: str) -> Iterator[Candidate]:
    """Private key blocks from BEGIN to END (also with escaped ``\\n`` line breaks, as in JSON
    credentials). Without an END within reach, the rest of the line and the base64 lines after
    the BEGIN line go (the base64-line rule)."""
    position = 0
    next_end: re.Match[str] | None = None
    no_end_before = 0  # no END marker starts in [searched from, no_end_before): never read twice
    while (begin := _PEM_BEGIN.search(text, position)) is not None:
        reach = begin.end() + _PEM_MAX
        if next_end is None or next_end.start() < begin.end():
            next_end = None
            if reach > no_end_before:
                next_end = _PEM_END.search(text, max(begin.end(), no_end_before), reach)
                no_end_before = reach if next_end is None else no_end_before
        if next_end is not None and next_end.start() <= reach:
            yield Candidate("private_key", begin.start(), next_end.end())
            position = next_end.end()
        else:
            line_end = text.find("\n", begin.end())
            line_end = len(text) if line_end == -1 else line_end
            yield Candidate("private_key", begin.start(), line_end)
            position = max(begin.end(), line_end)


_PUTTY = re.compile(r"(?m)^Private-Lines:[ \t]{0,5}(\d{1,3})[ \t]{0,5}\r?\n")


def putty_private_lines(text: str) -> Iterator[Candidate]:
    """The private part of a PuTTY key file: the number of lines its header announces."""
    for match in _PUTTY.finditer(text):
        end = match.end()
        for _ in range(min(int(match.group(1)), 256)):
            newline = text.find("\n", end, end + 4096)
            end = len(text) if newline == -1 else newline + 1
        end = end - 1 if text[end - 1 : end] == "\n" else end  # the line break stays
        if end > match.end():
            yield Candidate("private_key", match.end(), end)


# Whole runs (greedy, nothing after: no backtracking); long ones are decoded in part.
_B64_TOKEN = re2_pattern(r"[A-Za-z0-9+/_-]{32,}={0,2}")
_DATA_URI_MEDIA = re.compile(r"(?i)data:(?:image|audio|video|font)/[\w.+-]{1,40};base64,$")


_BASE64_RUN = re2_pattern(r"[A-Za-z0-9+/]{40,}={0,2}")
_NOT_KEY_MATERIAL_BEFORE = re.compile(
    r"(?i)(?:sha\d{1,3}[-:]|h1:|md5[-:]|;base64,|ssh-(?:rsa|ed25519|dss) |ecdsa-sha2-nistp\d{3} "
    r"|sk-ssh-ed25519@openssh\.com )\Z"
)


def base64_runs(text: str, scan: Scan | None = None) -> Iterator[Candidate]:
    """Runs of 40 or more base64 characters that look random (both cases, digits, above
    detect-secrets' entropy limit for base64): the body of a key pasted without its BEGIN line,
    key lines prefixed with line numbers, a secret in a data blob. Digests (``sha512-...``,
    ``h1:...``), SSH *public* keys and media in data URIs are left alone."""
    for run_start, run_end in (scan or Scan(text)).hits(_BASE64_RUN):
        run = text[run_start:run_end]
        if not _mixed(run) or is_hash_like(run) or is_sequential_string(run[:64]):
            continue
        if entropy(run[:4096]) < _RUN_ENTROPY:
            continue
        if _NOT_KEY_MATERIAL_BEFORE.search(text, max(0, run_start - 40), run_start):
            continue
        if _decode(run[:6144]) is not None:
            continue  # encoded text (a secret in it was caught by base64_wrapped_secrets)
        yield Candidate("key_material", run_start, run_end)


_RUN_ENTROPY = 4.5  # detect-secrets' default limit for base64 strings


def base64_wrapped_secrets(
    text: str, inner: Callable[[str], bool], scan: Scan | None = None
) -> Iterator[Candidate]:
    """Base64 tokens whose decoded text holds a secret (``inner`` says so): a key or a
    credentials file encoded once, as in Kubernetes secrets and CI variables. Media in data URIs
    (``data:image/png;base64,...``) is left alone."""
    for start, end in (scan or Scan(text)).hits(_B64_TOKEN):
        token = text[start:end]
        if is_hash_like(token) or _DATA_URI_MEDIA.search(text, max(0, start - 64), start):
            continue
        decoded = _decode(token[:6144])
        if decoded and inner(decoded):
            yield Candidate("base64_secret", start, end)


def _decode(token: str) -> str | None:
    token = token[: len(token) - len(token) % 4] if "=" not in token else token
    try:
        raw = base64.b64decode(
            token + "=" * (-len(token) % 4), altchars=b"-_" if "-" in token or "_" in token else None
        )
    except (binascii.Error, ValueError):
        return None
    try:
        decoded = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    printable = sum(1 for c in decoded if c.isprintable() or c in "\n\r\t")
    return decoded if decoded and printable >= 0.95 * len(decoded) else None


def _decodes_to_credentials(value: str) -> bool:
    decoded = _decode(value)
    return decoded is not None and ":" in decoded and "\n" not in decoded

"""Redaction: a corpus of secret and personal-data formats, checksums, and invariants."""

from __future__ import annotations

import base64
import itertools
import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from secrets_corpus import SECRETS, half
from tinyharness.redact import find_secrets, is_luhn_valid, is_valid_cn_id, redact
from tinyharness.redact.rules import TOKEN_RULES

# (kind, secret) pairs; each secret is planted in a sentence and must vanish as [REDACTED:kind].
CORPUS = [
    ("openai_key", "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z_AbCdEf"),
    ("openai_key", "sk-9f8e7d6c5b4a39281706f5e4d3c2b1a0"),  # DeepSeek-style
    ("anthropic_key", "sk-ant-api03-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0Fe-AbCdEfGh_12345"),
    ("aws_access_key", "AKIAIOSFODNN7EXAMPLE"),
    ("aws_access_key", "ASIAY34FZKBOKMUTVV7A"),
    ("github_token", "ghp_16C7e42F292c6912E7710c838347Ae178B4a"),
    ("github_token", "gho_16C7e42F292c6912E7710c838347Ae178B4a"),
    ("github_token", "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEF"),
    ("gitlab_token", "glpat-xY1zA2bC3dE4fG5hI6jK"),
    ("slack_token", "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"),
    ("slack_token", "xoxp-123456789012-123456789012-123456789012-abcdef0123456789abcdef0123456789"),
    ("slack_webhook", "https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX"),
    ("google_api_key", "AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY"),
    ("stripe_key", "sk_live_4eC39HqLyjWDarjtT1zdp7dc"),
    ("huggingface_token", "hf_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789"),
    ("npm_token", "npm_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789"),
    ("pypi_token", "pypi-AgEIcHlwaS5vcmcCJDU1ZGQ4MTI0LTg0ZTQtNDM5Yi1iOGQ3LTZlMGQ2ZDM0YzQzZQACKlsz"),
    ("sendgrid_key", "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"),
    ("telegram_bot_token", "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw1"),
    (
        "jwt",
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    ),
    (
        "private_key",
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA7\nabc123==\n-----END RSA PRIVATE KEY-----",
    ),
    (
        "private_key",
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----",
    ),
    ("email", "zhang.san+work@example.com.cn"),
    ("email", "ops@corp.example.org"),
    ("phone", "13812345678"),
    ("phone", "+86 138 1234 5678"),
    ("phone", "010-62345678"),
    ("phone", "+1 415 555 2671"),
    ("phone", "(415) 555-2671"),
    ("cn_id", "11010519491231002X"),
    ("cn_id", "440308199901011234"),
    ("bank_card", "6222 0212 3456 7894"),
    ("bank_card", "4111111111111111"),
    ("bank_card", "5500-0000-0000-0004"),
    ("us_ssn", "123-45-6789"),
]

# (kind, text, secret part) where the rule keeps the surrounding words.
CONTEXT_CASES = [
    ("url_password", "postgresql://admin:S3cr3t-pa55@db.internal:5432/app", "S3cr3t-pa55"),
    ("bearer_token", "Authorization: Bearer abcdef0123456789ABCDEF.xyz", "abcdef0123456789ABCDEF.xyz"),
    ("password", "password=hunter2hunter2", "hunter2hunter2"),
    ("password", "我的密码是 Abc!12345", "Abc!12345"),
    ("password", 'api_key: "q8w7e6r5t4y3u2i1"', '"q8w7e6r5t4y3u2i1"'),
    ("aws_secret_key", "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI"),
]


def test_corpus_has_at_least_thirty_kinds_of_format() -> None:
    assert len(CORPUS) + len(CONTEXT_CASES) >= 30
    assert len({k for k, _ in CORPUS} | {k for k, _, _ in CONTEXT_CASES}) >= 20


@pytest.mark.parametrize(("kind", "secret"), CORPUS)
def test_planted_secret_is_replaced_by_its_typed_placeholder(kind: str, secret: str) -> None:
    text = f"记住这个 {secret} 然后继续。"
    out = redact(text)
    assert secret not in out
    assert f"[REDACTED:{kind}]" in out
    assert out.startswith("记住这个 ") and out.endswith(" 然后继续。")


@pytest.mark.parametrize(("kind", "text", "secret"), CONTEXT_CASES)
def test_secret_in_context_is_replaced_and_context_kept(kind: str, text: str, secret: str) -> None:
    out = redact(text)
    assert secret not in out
    assert f"[REDACTED:{kind}]" in out


def test_url_keeps_user_and_host() -> None:
    assert redact("mysql://root:pw1234@10.0.0.1/db") == "mysql://root:[REDACTED:url_password]@10.0.0.1/db"


@pytest.mark.parametrize(
    "text",
    [
        "The answer is (12+8)*3 = 60.",
        "Order 1234567890123 shipped",  # 13 digits, first digit 1: not a card
        "身份证号码格式是十八位",
        "110105194912310021 is not valid",  # wrong check digit
        "4111111111111112",  # fails Luhn
        "version 3.11.7 on 2025-01-01 12:00:00",
        "sk-short",
        "email me at the usual place",
    ],
)
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert redact(text) == text


def test_checksums() -> None:
    assert is_valid_cn_id("11010519491231002X")
    assert not is_valid_cn_id("110105194912310021")
    assert not is_valid_cn_id("110105194913310028")  # month 13
    assert is_luhn_valid("4111111111111111")
    assert not is_luhn_valid("4111111111111121")


def test_findings_do_not_overlap_and_are_ordered() -> None:
    text = "key sk-ant-api03-" + "a" * 30 + " mail a@b.io phone 13900001111"
    findings = find_secrets(text)
    assert [f.kind for f in findings] == ["anthropic_key", "email", "phone"]
    assert all(a.end <= b.start for a, b in itertools.pairwise(findings))


@settings(max_examples=400, deadline=None)
@given(
    st.lists(
        st.sampled_from([s for _, s in CORPUS] + ["hello", "世界", " ", "\n", "=", ":", "密码是"]), max_size=8
    )
)
def test_redaction_is_idempotent_and_removes_planted_secrets(parts: list[str]) -> None:
    # Parts are joined with "; ": numbers that only a space separates are ambiguous (is
    # "2671 6222 0212 3456" the end of a phone number and a card, or a card?).
    text = "; ".join(parts)
    once = redact(text)
    assert redact(once) == once
    for _, secret in CORPUS:
        if secret in parts:
            assert secret not in once


@given(st.text(alphabet=st.characters(categories=["Ll", "Lu", "Lo", "Zs"]), max_size=200))
def test_text_without_digits_or_symbols_is_unchanged(text: str) -> None:
    assert redact(text) == text


# --- the formats an outside check found going through in clear (issue: secrets, item 10) -------

ISSUE_KINDS = [
    "aws_pair_plain",
    "aws_console_csv",
    "aws_sts_json",
    "aws_session_token",
    "azure_storage_conn",
    "azure_sas_url",
    "azure_servicebus",
    "django_secret_key",
    "quoted_password_with_spaces",
    "escaped_json_in_json",
    "basic_auth_header",
    "slack_app_token",
    "stripe_webhook_secret",
    "docker_pat",
    "pem_body_without_begin",
    "putty_key",
    "curl_user",
    "mysql_p",
    "base64_wrapped_pem",
    "url_password_with_at_slash",
]
_BY_KIND = {kind: (text, secret) for kind, text, secret in SECRETS}


def _leaks(secret: str, text: str) -> bool:
    return secret in text or json.dumps(secret)[1:-1] in text


@pytest.mark.parametrize("kind", ISSUE_KINDS)
def test_each_format_that_went_through_in_clear_is_redacted(kind: str) -> None:
    text, secret = _BY_KIND[kind]
    out = redact(text)
    assert not _leaks(secret, out), out
    assert "[REDACTED:" in out


def test_a_url_password_holding_at_and_slash_goes_whole_and_the_host_stays() -> None:
    out = redact("mongodb+srv://admin:pa@ss/w0rd:x@cluster0.example.net/test")
    assert out == "mongodb+srv://admin:[REDACTED:url_password]@cluster0.example.net/test"


@pytest.mark.parametrize(
    "text",
    [
        "pwd = os.getcwd()",
        "git@github.com:org/repo.git",
        "git clone git@gitlab.com:group/sub/project.git",
        "password = getpass.getpass('Password: ')",
        'password = os.environ["DB_PASSWORD"]',
        "self.password = password",
        "max_tokens = 4096",
        'PASSWORD_FIELD = "password"',
        "password=${DB_PASSWORD}",
        "commit e83c5163316f89bfbde7d9ab23ca2e25604af290",
        'checksum = "3f786850e387550fdab836ed7e6dc881de23001b3f786850e387550fdab836ed"',
        "request id 123e4567-e89b-42d3-a456-426614174000",
        "AbstractSingletonProxyFactoryBeanDefinitionRegistryPostProcessor",
        "Basic usage: call the tool with a path.",
    ],
)
def test_look_alikes_keep_their_meaning(text: str) -> None:
    assert redact(text) == text


def test_a_data_uri_image_is_kept_but_a_base64_wrapped_key_is_not() -> None:
    # Decided: media in data URIs is content, not a credential; decoding it would only cost time.
    image = "data:image/png;base64," + base64.b64encode(b"\x89PNG\r\n" + bytes(range(256)) * 2).decode()
    assert redact(f'<img src="{image}">') == f'<img src="{image}">'
    text, secret = _BY_KIND["base64_wrapped_pem"]
    assert not _leaks(secret, redact(text))


def test_detect_secrets_plugins_take_part() -> None:
    # A Discord bot token has no rule of ours: only detect-secrets' plugin knows its shape.
    text, secret = _BY_KIND["discord_bot_token"]
    assert not any(rule.pattern.search(secret) for rule in TOKEN_RULES)
    assert not _leaks(secret, redact(text))


# The tuning half: the rows the rules were adjusted on (the other half is measured in bench/).
_TUNED = [row for index, row in enumerate(SECRETS) if half(index) == "tuning"]
_SAMPLES = [text for _, text, _ in _TUNED]
_FILLER = [
    "hello",
    "世界",
    " ",
    "\n",
    "=",
    ":",
    "密码是",
    "password",
    '"',
    "://",
    "@",
    "a.a.a.",
    "eyJ",
    "\\n",
]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(_SAMPLES), st.sampled_from(_FILLER)), max_size=8))
def test_redaction_is_idempotent_and_no_planted_secret_survives(parts: list[str]) -> None:
    text = "; ".join(parts)
    once = redact(text)
    assert redact(once) == once
    for kind, sample, secret in _TUNED:
        if sample in parts:
            assert not _leaks(secret, once), kind


# --- linear time: a hang guard, not a clock -----------------------------------------------------

_ADVERSARIAL_UNITS = [
    "a.",  # the issue's case: 60 KB of it took 19 s
    "a",
    "://a",
    "password ==  ",
    "eyJ",
    "xoxb-1-",
    "1",
    "?key=abcdefgh&",
    "-----BEGIN RSA PRIVATE KEY-----\n",
    "secret: ",
    "QUJD",
]


def test_five_million_characters_of_adversarial_input_finish(tmp_path: Path) -> None:
    """Each input is 5 M characters (the largest tool argument the loop passes on) of one
    repeated unit built to make a backtracking rule quadratic. A child process redacts them all;
    the timeout only kills a hang (quadratic behaviour would need hours), it asserts no speed."""
    script = tmp_path / "adversarial.py"
    script.write_text(
        "import sys\n"
        "from tinyharness.redact import redact\n"
        f"units = {_ADVERSARIAL_UNITS!r}\n"
        "for unit in units:\n"
        "    text = (unit * (5_000_000 // len(unit) + 1))[:5_000_000]\n"
        "    out = redact(text)\n"
        "    print(unit.strip() or repr(unit), len(out), flush=True)\n",
        encoding="utf-8",
    )
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=1500, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert len(done.stdout.splitlines()) == len(_ADVERSARIAL_UNITS)


# --- classes added after the second outside check ---------------------------------------------
# Each list mixes forms beyond the corpus rows, so a rule written for one spelling fails here.
KEYS_IN_ANY_FORM = [
    '{"auths": {"ghcr.io": {"auth": "' + base64.b64encode(b"bot:Zq8xTb3LmW5n").decode() + '"}}}',
    "auth: " + base64.b64encode(b"admin:Hx7pQ2rV9sKd").decode(),
    "<password>Zq8xTb3LmW5n</password>",
    "<jdbc:password>Zq8xTb3LmW5n</jdbc:password>",
    '<Secret encrypted="false">Zq8xTb3LmW5n</Secret>',
    '<add key="Smtp.Password" value="Zq8xTb3LmW5n"/>',
    '<property name="api_token" value="Zq8xTb3LmW5n"/>',
    "contraseña=Zq8xTb3LmW5n",
    "пароль: Zq8xTb3LmW5n",
    "ПАРОЛЬ=Zq8xTb3LmW5n",
    "Kennwort: Zq8xTb3LmW5n",
    "mot_de_passe = 'Zq8xTb3LmW5n'",
    "hasło: Zq8xTb3LmW5n",
    "şifre=Zq8xTb3LmW5n",
    "密碼：Zq8xTb3LmW5n",
    "我的密码是 Zq8xTb3LmW5n",  # no spaces in Chinese: the key is the stem, "是" the separator
    "암호 = Zq8xTb3LmW5n",
]


@pytest.mark.parametrize("text", KEYS_IN_ANY_FORM)
def test_a_key_that_names_a_secret_hides_its_value_in_any_format_and_script(text: str) -> None:
    out = redact(text)
    assert "Zq8xTb3LmW5n" not in out and "Hx7pQ2rV9sKd" not in out, out
    assert "b3LmW5n" not in out and base64.b64encode(b"bot:Zq8xTb3LmW5n").decode() not in out


NOT_SECRETS = [
    "ssh://git@github.com/org/repo.git",
    "git+ssh://git@bitbucket.org/team/repo.git",
    "ssh://deploy@10.0.0.5:2222/srv/app.git",
    "https://deploy@git.example.com/repo.git",
    'author = "Jane Doe"',
    "<author>Ada Lovelace</author>",
    '"auth": "basic"',
    "authority: example.com",
    "<passwordPolicy>strict</passwordPolicy>",
    "<secretName>web-tls</secretName>",
    '<property name="password.length" value="12"/>',
    "Введите пароль:",
]


@pytest.mark.parametrize("text", NOT_SECRETS)
def test_look_alikes_of_the_new_classes_are_left_alone(text: str) -> None:
    assert redact(text) == text


def test_an_email_address_after_mailto_is_still_an_address() -> None:
    assert redact("write to mailto:jane.doe@example.com") == "write to mailto:[REDACTED:email]"


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                "4111 1111 1111 1111",
                "078-05-1120",
                "13912345678",
                "110105194912310021",
                " ",
                "\n",
                "é",
                "密码",
                "１２３",
                "x",
                "0",
                "-",
                "(415) 555-0132",
                "415.555.0132",
                "0755-12345678",
                "4" * 13,
                "E12345678",
                "AB123456(7)",
                "?key=abcdefgh&",
                "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            ]
        ),
        max_size=40,
    )
)
def test_the_prefilters_find_what_the_rules_find_over_the_whole_text(parts: list[str]) -> None:
    """A rule with an RE2 prefilter reads only windows around its hits: it must find exactly
    what its own regex finds over the whole text, non-ASCII characters before it included."""
    from tinyharness.redact.rules import CONTEXT_RULES, PII_RULES, Scan

    text = "".join(parts)
    for rule in (*TOKEN_RULES, *CONTEXT_RULES, *PII_RULES):
        if rule.prefilter is not None:
            assert list(rule.find(text, text.lower(), Scan(text))) == list(rule._find_in(text, 0, len(text)))


_GATE_PARTS = st.sampled_from(
    [
        "ghp_" + "A1b2" * 9,
        "AKIA" + "QWERTYUIOPASDFGH",
        "sk-ant-api03-" + "x7" * 20,
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        "password='hunter2hunter2'",
        "https://user:p%40ss@db.example.com/x",
        "jane.doe@example.com",
        "4111 1111 1111 1111",
        "110105194912310021",
        "Bearer abcdefghijklmnopqrstuvwxyz012345",
        " ",
        "\n",
        "é",
        "密码",
        "x",
        "0",
        '"',
        "=",
    ]
)


@settings(max_examples=150, deadline=None)
@given(st.lists(_GATE_PARTS, max_size=30))
def test_the_one_pass_gate_skips_only_rules_that_cannot_match(parts: list[str]) -> None:
    """``RuleSet`` skips a rule whose prefilter the one ``re2.Set`` pass found nowhere: it must
    give exactly what asking every rule in order gives, and the pass must report every
    prefilter that matches somewhere."""
    from tinyharness.redact.detect import gate_index
    from tinyharness.redact.rules import CONTEXT_RULES, PII_RULES, RuleSet, Scan

    text = "".join(parts)
    lowered = text.lower()
    for rules in (TOKEN_RULES, CONTEXT_RULES, PII_RULES):
        every = [candidate for rule in rules for candidate in rule.find(text, lowered, Scan(text))]
        assert list(RuleSet(rules).find(text, lowered, Scan(text))) == every
        present = Scan(text).present()
        assert present is not None
        for rule in rules:
            if rule.prefilter is not None and rule.prefilter.search(text.encode("utf-8", "surrogatepass")):
                assert gate_index(rule.prefilter) in present


def test_a_failed_gate_pass_rules_nothing_out(monkeypatch: pytest.MonkeyPatch) -> None:
    """An ``re2.Set`` whose DFA runs out of memory reports no match at all; the empty pattern
    it always holds tells that apart from a text with nothing in it, and every rule is asked."""
    from tinyharness.redact import detect

    secret = "token ghp_" + "A1b2" * 9
    assert redact(secret) == "token [REDACTED:github_token]"
    detect._GATE.present(b"warm")  # the set is built
    monkeypatch.setattr(detect._GATE, "_set", type("Failed", (), {"Match": lambda self, data: []})())
    assert detect.Scan(secret).present() is None
    assert redact(secret) == "token [REDACTED:github_token]"

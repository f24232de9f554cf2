"""Redaction: a corpus of secret and personal-data formats, checksums, and invariants."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tinyharness.redact import find_secrets, is_luhn_valid, is_valid_cn_id, redact

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

"""A corpus of secrets and personal data, one sample per kind, for the redaction suites.

Samples are fake but shaped like the real thing (right prefixes, lengths and check digits). They
are assembled from parts at import time so that secret scanners do not flag this file.
"""

from __future__ import annotations

_W = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)


def cn_id(first17: str) -> str:
    """A mainland resident ID with a valid GB 11643 check character."""
    return first17 + "10X98765432"[sum(int(d) * w for d, w in zip(first17, _W, strict=True)) % 11]


def luhn(partial: str) -> str:
    """``partial`` completed with its Luhn check digit."""
    total = 0
    for index, char in enumerate(reversed(partial + "0")):
        value = int(char)
        if index % 2 == 1:
            value = value * 2 - 9 if value > 4 else value * 2
        total += value
    return partial + str((10 - total % 10) % 10)


def _j(*parts: str) -> str:
    return "".join(parts)


_B64 = "Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MGFiY2RlZmdoaWprbG1ub3BxcnN0dXZ3eHl6QUJDREVGR0g"
_PEM_BODY = "\n".join([_B64[:64], _B64[8:72], "aGVsbG8gd29ybGQgdGhpcyBpcyBub3QgYSByZWFsIGtleQ=="])

# kind -> (sample as it appears in text, the exact secret part that must never survive)
CORPUS: dict[str, tuple[str, str]] = {
    "aws_access_key": (_j("AKIA", "IOSFODNN7", "EXAMPLQ"), _j("AKIA", "IOSFODNN7", "EXAMPLQ")),
    "aws_session_key_id": (_j("ASIA", "Y34FZKBOKMUTVV7A"), _j("ASIA", "Y34FZKBOKMUTVV7A")),
    "aws_secret_key": (
        _j("aws_secret_access_key = ", "wJalrXUtnFEMI/K7MDENG/", "bPxRfiCYEXAMPLEKEY"),
        _j("wJalrXUtnFEMI/K7MDENG/", "bPxRfiCYEXAMPLEKEY"),
    ),
    "openai_project_key": (
        _j("sk-", "proj-", "Ab12Cd34Ef56Gh78Ij90Kl12Mn34"),
        "Ab12Cd34Ef56Gh78Ij90Kl12Mn34",
    ),
    "openai_key": (_j("sk-", "T3BlbkFJ", "q1w2e3r4t5y6u7i8o9p0"), _j("T3BlbkFJ", "q1w2e3r4t5y6u7i8o9p0")),
    "anthropic_key": (
        _j("sk-", "ant-api03-", "Zz9Yy8Xx7Ww6Vv5Uu4Tt3Ss2Rr1Qq0Pp"),
        "Zz9Yy8Xx7Ww6Vv5Uu4Tt3Ss2Rr1Qq0Pp",
    ),
    "github_pat_classic": (
        _j("gh", "p_", "Qw3Er5Ty7Ui9Op1As3Df5Gh7Jk9Lz1Xc3Vb5N"),
        "Qw3Er5Ty7Ui9Op1As3Df5Gh7Jk9Lz1Xc3Vb5N",
    ),
    "github_oauth": (
        _j("gh", "o_", "Mn8Bv6Cx4Za2Lk0Jh8Gf6Ds4Aq2Wz0Ex8Rc6T"),
        "Mn8Bv6Cx4Za2Lk0Jh8Gf6Ds4Aq2Wz0Ex8Rc6T",
    ),
    "github_fine_grained": (
        _j("github", "_pat_", "11ABCDEFG0123456789_abcdefghijklmnop"),
        "11ABCDEFG0123456789_abcdefghijklmnop",
    ),
    "gitlab_token": (_j("gl", "pat-", "xY7wV5uT3sR1qP9oN7mL"), "xY7wV5uT3sR1qP9oN7mL"),
    "slack_bot_token": (
        _j("xo", "xb-", "1234567890-0987654321-AbCdEfGhIjKlMn"),
        "1234567890-0987654321-AbCdEfGhIjKlMn",
    ),
    "slack_webhook": (
        _j("https://hooks.", "slack.com/services/", "T0000AAAA/B0000BBBB/XXXXyyyyZZZZwwww1111"),
        "T0000AAAA/B0000BBBB/XXXXyyyyZZZZwwww1111",
    ),
    "google_api_key": (
        _j("AI", "za", "SyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q"),
        "SyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q",
    ),
    "stripe_live_key": (_j("sk_", "live_", "4eC39HqLyjWDarjtT1zdp7dc"), "4eC39HqLyjWDarjtT1zdp7dc"),
    "huggingface_token": (
        _j("hf", "_", "AbCdEfGhIjKlMnOpQrStUvWxYz01234567"),
        "AbCdEfGhIjKlMnOpQrStUvWxYz01234567",
    ),
    "npm_token": (
        _j("npm", "_", "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"),
        "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",
    ),
    "pypi_token": (
        _j("pypi-", "AgEIcHlwaS5vcmc", "CJGE3ZWQ5ZjQ0LTBhZDgtNDk3ZC1iNWJhLTk0NzE1NjhhZTdjZQ"),
        "CJGE3ZWQ5ZjQ0LTBhZDgtNDk3ZC1iNWJhLTk0NzE1NjhhZTdjZQ",
    ),
    "sendgrid_key": (
        _j("SG", ".", "ngeVfQFYQlKU0ufo8x5d1A", ".", "TwL2iGABf9DHoTf-09kqeF8tAmbihYzrnopKc-1s5cr"),
        "TwL2iGABf9DHoTf-09kqeF8tAmbihYzrnopKc-1s5cr",
    ),
    "telegram_bot_token": (
        _j("123456789", ":AA", "HdqTcvCH1vGWJxfSeofSAs0K5PALDsaw3"),
        "HdqTcvCH1vGWJxfSeofSAs0K5PALDsaw3",
    ),
    "jwt": (
        _j(
            "eyJhbGciOiJIUzI1NiJ9",
            ".",
            "eyJzdWIiOiIxMjM0NTY3ODkwIn0",
            ".",
            "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        ),
        "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    ),
    "rsa_private_key": (
        _j("-----BEGIN RSA ", "PRIVATE KEY-----\n", _PEM_BODY, "\n-----END RSA ", "PRIVATE KEY-----"),
        _B64[:64],
    ),
    "openssh_private_key": (
        _j(
            "-----BEGIN OPENSSH ",
            "PRIVATE KEY-----\n",
            _PEM_BODY[::-1],
            "\n-----END OPENSSH ",
            "PRIVATE KEY-----",
        ),
        _PEM_BODY[::-1][:64],
    ),
    "url_password": ("postgres://admin:Tr0ub4dor%26x@db.internal:5432/app", "Tr0ub4dor%26x"),
    "https_basic_auth": ("https://deploy:s3cr3tPassw0rd@git.example.com/repo.git", "s3cr3tPassw0rd"),
    "bearer_token": (
        "Authorization: Bearer 9f8e7d6c5b4a39281706f5e4d3c2b1a0",
        "9f8e7d6c5b4a39281706f5e4d3c2b1a0",
    ),
    "password_assignment": ("DB_PASSWORD=CorrectHorseBatteryStaple42", "CorrectHorseBatteryStaple42"),
    "client_secret": ('client_secret: "q8W!e7R#t6Y$u5I"', "q8W!e7R#t6Y$u5I"),
    "password_chinese": ("数据库密码：Xk92#pLm77", "Xk92#pLm77"),
    "email": ("alice.liu+dev@example-corp.com", "alice.liu+dev@example-corp.com"),
    "cn_mobile": ("13812345678", "13812345678"),
    "cn_mobile_intl": ("+86 139 1234 5678", "139 1234 5678"),
    "cn_landline": ("010-62345678", "62345678"),
    "us_phone": ("(415) 555-0132", "555-0132"),
    "intl_phone": ("+44 20 7946 0958", "7946 0958"),
    "cn_resident_id": (cn_id("11010519491231002"), cn_id("11010519491231002")),
    "cn_resident_id_2": (cn_id("44030419900307871"), cn_id("44030419900307871")),
    "us_ssn": ("078-05-1120", "078-05-1120"),
    "visa_card": ("4111 1111 1111 1111", "4111 1111 1111 1111"),
    "unionpay_card": (luhn("621700000000000000"), luhn("621700000000000000")),
    "cn_passport": ("护照号码 E12345678", "E12345678"),
    "hk_id": ("香港身份证 A123456(3)", "A123456(3)"),
    "google_oauth_client_secret": (
        _j("GOCSPX-", "1a2B3c4D5e6F7g8H9i0J1k2L3m4N"),
        "1a2B3c4D5e6F7g8H9i0J1k2L3m4N",
    ),
}

"""A corpus of secrets and personal data, one sample per kind, for the redaction suites.

Samples are fake but shaped like the real thing (right prefixes, lengths and check digits). They
are assembled from parts at import time so that secret scanners do not flag this file.
"""

from __future__ import annotations

import base64 as _base64
import json as _json
import random as _random
import string as _string

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


# --- the measured corpus: 100+ secret kinds and 100+ look-alikes -------------------------------
#
# Every value is generated from a seeded random source in the right shape (prefix, alphabet,
# length); none is a real credential. ``SECRETS`` rows are (kind, text as it would appear, the
# part that must not survive); ``LOOK_ALIKES`` rows are (name, text that must come out unchanged).
# Rows alternate between two halves: "tuning" (even rows, the ones the rules were adjusted on)
# and "held_out" (odd rows, only measured). bench/secrets_bench.py reports both.


_rng = _random.Random(20261201)
_ALNUM = _string.ascii_letters + _string.digits
_LOWER_HEX = "0123456789abcdef"
_B64_CHARS = _ALNUM + "+/"
_URLSAFE = _ALNUM + "-_"


def _r(alphabet: str, n: int) -> str:
    return "".join(_rng.choice(alphabet) for _ in range(n))


def _mixed(n: int, alphabet: str = _ALNUM) -> str:
    """Random, with at least one upper, lower and digit (as real random tokens nearly always are)."""
    while True:
        value = _r(alphabet, n)
        if (
            any(c.isupper() for c in value)
            and any(c.islower() for c in value)
            and any(c.isdigit() for c in value)
        ):
            return value


def _uuid() -> str:
    h = _r(_LOWER_HEX, 32)
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-a{h[17:20]}-{h[20:]}"


def _pem_body(lines: int = 4) -> list[str]:
    return [_mixed(64, _B64_CHARS) for _ in range(lines)] + [_mixed(40, _B64_CHARS) + "=="]


def _pem(label: str) -> tuple[str, str]:
    body = _pem_body()
    return _j(
        f"-----BEGIN {label} ",
        "PRIVATE KEY-----\n",
        "\n".join(body),
        f"\n-----END {label} ",
        "PRIVATE KEY-----",
    ), body[1]


def _jwt() -> str:
    header = _base64.urlsafe_b64encode(b'{"alg":"HS256","typ":"JWT"}').decode().rstrip("=")
    payload = (
        _base64.urlsafe_b64encode(_json.dumps({"sub": _r(_string.digits, 10)}).encode()).decode().rstrip("=")
    )
    return f"{header}.{payload}.{_mixed(43, _URLSAFE)}"


def _aws_secret() -> str:
    return _mixed(40, _B64_CHARS)


def _aws_id(prefix: str = "AKIA") -> str:
    return prefix + _r(_string.ascii_uppercase + "234567", 16)


def _b64(text: str) -> str:
    return _base64.b64encode(text.encode()).decode()


def _build_secrets() -> list[tuple[str, str, str]]:
    rows: list[tuple[str, str, str]] = []

    def add(kind: str, text: str, secret: str) -> None:
        assert secret in text, kind
        rows.append((kind, text, secret))

    def tok(kind: str, value: str, template: str = "token: {v} (rotate monthly)") -> None:
        add(kind, template.format(v=value), value)

    # Cloud providers
    sk = _aws_secret()
    add("aws_pair_plain", f"{_aws_id()} {sk}", sk)
    sk = _aws_secret()
    add(
        "aws_console_csv",
        f"User name,Password,Access key ID,Secret access key,Console login link\ndeploy,,{_aws_id()},{sk},https://console.aws.amazon.com",
        sk,
    )
    sk = _aws_secret()
    add(
        "aws_sts_json",
        _json.dumps({"Credentials": {"AccessKeyId": _aws_id("ASIA"), "SecretAccessKey": sk}}),
        sk,
    )
    st = "IQoJb3JpZ2luX2VjE" + _mixed(300, _B64_CHARS)
    add("aws_session_token", _json.dumps({"SessionToken": st, "Expiration": "2026-12-01T10:00:00Z"}), st)
    st = "FwoGZXIvYXdzE" + _mixed(200, _B64_CHARS)
    add("aws_session_token_env", f"export AWS_SESSION_TOKEN={st}", st)
    sk = _aws_secret()
    add("aws_secret_env", f"AWS_SECRET_ACCESS_KEY={sk}", sk)
    sk = _aws_secret()
    add(
        "aws_credentials_file",
        f"[default]\naws_access_key_id = {_aws_id()}\naws_secret_access_key = {sk}\n",
        sk,
    )
    tok("aws_access_key_id", _aws_id())
    tok("aws_temp_key_id", _aws_id("ASIA"))
    ak = _mixed(86, _B64_CHARS) + "=="
    add(
        "azure_storage_conn",
        f"DefaultEndpointsProtocol=https;AccountName=acme;AccountKey={ak};EndpointSuffix=core.windows.net",
        ak,
    )
    sig = _mixed(43, _B64_CHARS).replace("+", "%2B").replace("/", "%2F") + "%3D"
    add(
        "azure_sas_url",
        f"https://acme.blob.core.windows.net/c/f.txt?sv=2022-11-02&ss=b&srt=o&sp=r&se=2026-12-31&sig={sig}",
        sig,
    )
    sak = _mixed(43, _B64_CHARS) + "="
    add(
        "azure_servicebus",
        f"Endpoint=sb://acme.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey={sak}",
        sak,
    )
    cs = _r(_ALNUM, 3) + "8Q~" + _mixed(34, _ALNUM + "_~.-")
    tok("azure_client_secret", cs, "AZURE_CLIENT_SECRET={v}")
    tok("gcp_api_key", "AIza" + _mixed(35, _URLSAFE))
    body = _pem_body()
    pk = "-----BEGIN PRIVATE KEY-----\\n" + "\\n".join(body) + "\\n-----END PRIVATE KEY-----\\n"
    add(
        "gcp_service_account_json",
        '{"type": "service_account", "private_key_id": "'
        + _r(_LOWER_HEX, 40)
        + '", "private_key": "'
        + pk
        + '"}',
        body[2],
    )
    tok("google_oauth_client_secret", "GOCSPX-" + _mixed(28, _URLSAFE))
    tok("google_oauth_access_token", "ya29." + _mixed(120, _URLSAFE))
    tok("google_refresh_token", "1//0" + _mixed(100, _URLSAFE))
    tok("digitalocean_token", "dop_v1_" + _r(_LOWER_HEX, 64))
    tok("heroku_key", "HRKU-" + _mixed(60, _URLSAFE))
    tok("flyio_token", "fo1_" + _mixed(43, _URLSAFE))
    tok("cloudflare_api_token", _mixed(40, _URLSAFE), "CLOUDFLARE_API_TOKEN={v}")
    tok("databricks_token", "dapi" + _r(_LOWER_HEX, 32))
    tok("terraform_cloud_token", _mixed(14) + ".atlasv1." + _mixed(67, _URLSAFE))
    tok("vault_token", "hvs." + _mixed(90, _URLSAFE))
    tok("doppler_token", "dp.pt." + _mixed(43))
    tok("pulumi_token", "pul-" + _r(_LOWER_HEX, 40))
    tok("supabase_token", "sbp_" + _r(_LOWER_HEX, 40))
    tok("planetscale_password", "pscale_pw_" + _mixed(43, _URLSAFE))
    tok("netlify_token", "nfp_" + _mixed(40))
    # Code hosting and packages
    tok("github_classic_pat", "ghp_" + _mixed(36))
    tok("github_oauth", "gho_" + _mixed(36))
    tok("github_app_user", "ghu_" + _mixed(36))
    tok("github_app_server", "ghs_" + _mixed(36))
    tok("github_refresh", "ghr_" + _mixed(76))
    tok("github_fine_grained_pat", "github_pat_" + _mixed(22) + "_" + _mixed(59))
    tok("gitlab_pat", "glpat-" + _mixed(20, _URLSAFE))
    tok("gitlab_deploy_token", "gldt-" + _mixed(20, _URLSAFE))
    tok("gitlab_runner_token", "glrt-" + _mixed(20, _URLSAFE))
    tok("npm_token", "npm_" + _mixed(36))
    add("npmrc_auth_token", f"//registry.npmjs.org/:_authToken={(v := _mixed(36))}", v)
    tok("pypi_token", "pypi-AgEIcHlwaS5vcmc" + _mixed(70, _URLSAFE))
    tok("docker_pat", "dckr_pat_" + _mixed(27, _URLSAFE))
    pw = _mixed(16)
    add(
        "docker_config_auth",
        _json.dumps({"auths": {"https://index.docker.io/v1/": {"auth": _b64("deploy:" + pw)}}}),
        _b64("deploy:" + pw),
    )
    tok("huggingface_token", "hf_" + _mixed(34))
    tok("postman_key", "PMAK-" + _r(_LOWER_HEX, 24) + "-" + _r(_LOWER_HEX, 34))
    tok("atlassian_token", "ATATT3xFfGF0" + _mixed(180, _URLSAFE))
    tok("linear_key", "lin_api_" + _mixed(40))
    tok("notion_token", "ntn_" + _mixed(46))
    tok("sentry_token", "sntrys_" + _mixed(120, _URLSAFE))
    tok("grafana_cloud_token", "glc_" + _mixed(80, _B64_CHARS))
    tok("grafana_service_account", "glsa_" + _mixed(32) + "_" + _r(_LOWER_HEX, 8))
    tok("newrelic_key", "NRAK-" + _r(_string.ascii_uppercase + _string.digits, 27))
    # AI providers
    tok("openai_project_key", "sk-proj-" + _mixed(48, _URLSAFE))
    tok("openai_service_key", "sk-svcacct-" + _mixed(48, _URLSAFE))
    tok("openai_legacy_key", "sk-" + _mixed(20) + "T3BlbkFJ" + _mixed(20))
    tok("anthropic_key", "sk-ant-api03-" + _mixed(93, _URLSAFE) + "AA")
    tok("anthropic_admin_key", "sk-ant-admin01-" + _mixed(93, _URLSAFE) + "AA")
    tok("deepseek_key", "sk-" + _r(_LOWER_HEX, 32))
    tok("groq_key", "gsk_" + _mixed(52))
    tok("xai_key", "xai-" + _mixed(80))
    tok("perplexity_key", "pplx-" + _mixed(48))
    tok("replicate_token", "r8_" + _mixed(37))
    # Messaging, payments, SaaS
    tok("slack_bot_token", "xoxb-" + _r(_string.digits, 12) + "-" + _r(_string.digits, 13) + "-" + _mixed(24))
    tok(
        "slack_user_token",
        "xoxp-"
        + _r(_string.digits, 12)
        + "-"
        + _r(_string.digits, 12)
        + "-"
        + _r(_string.digits, 13)
        + "-"
        + _r(_LOWER_HEX, 32),
    )
    tok(
        "slack_app_token",
        "xapp-1-A0"
        + _r(_string.ascii_uppercase + _string.digits, 9)
        + "-"
        + _r(_string.digits, 13)
        + "-"
        + _r(_LOWER_HEX, 64),
    )
    tok("slack_refresh_token", "xoxe.xoxp-1-" + _mixed(140))
    wh = (
        "T"
        + _r(_string.ascii_uppercase + _string.digits, 8)
        + "/B"
        + _r(_string.ascii_uppercase + _string.digits, 10)
        + "/"
        + _mixed(24)
    )
    add("slack_webhook", _j("https://hooks.", "slack.com/services/", wh), wh)
    dw = _mixed(68, _URLSAFE)
    add("discord_webhook", f"https://discord.com/api/webhooks/{_r(_string.digits, 18)}/{dw}", dw)
    tok(
        "discord_bot_token",
        "M" + _mixed(25, _URLSAFE) + "." + _mixed(6, _URLSAFE) + "." + _mixed(38, _URLSAFE),
    )
    tb = _mixed(33, _URLSAFE)
    add("telegram_bot_token", f"bot{_r(_string.digits, 10)}:AA{tb}", tb)
    tok("stripe_live_secret", "sk_live_" + _mixed(99))
    tok("stripe_test_secret", "sk_test_" + _mixed(99))
    tok("stripe_restricted", "rk_live_" + _mixed(99))
    tok("stripe_webhook_secret", "whsec_" + _mixed(32))
    tok("square_token", "EAAA" + _mixed(60, _URLSAFE))
    tok("shopify_token", "shpat_" + _r(_LOWER_HEX, 32))
    tok("sendgrid_key", "SG." + _mixed(22, _URLSAFE) + "." + _mixed(43, _URLSAFE))
    tok("mailgun_key", "key-" + _r(_LOWER_HEX, 32))
    tok("mailchimp_key", _r(_LOWER_HEX, 32) + "-us" + str(_rng.randint(1, 21)))
    tok("twilio_api_key", "SK" + _r(_LOWER_HEX, 32))
    tok("dropbox_token", "sl." + _mixed(140, _URLSAFE))
    tok("mapbox_token", "sk.eyJ1Ijoi" + _mixed(40, _URLSAFE) + "." + _mixed(22, _URLSAFE))
    tok("age_secret_key", "AGE-SECRET-KEY-1" + _r(_string.ascii_uppercase + _string.digits, 58))
    tok("facebook_token", "EAACEdEose0cBA" + _mixed(120))
    tok("jwt", _jwt())
    # Keys and key files
    for label in ("RSA", "EC", "OPENSSH", "DSA", "ENCRYPTED"):
        text, part = _pem(label)
        add(f"pem_{label.lower()}", text, part)
    pem_text, pem_part = _pem("RSA")
    add("pem_body_without_begin", pem_text.split("\n", 1)[1], pem_part)
    body = _pem_body()
    add("pem_body_lines_alone", "the key continues:\n" + "\n".join(body[:3]), body[1])
    pgp = [_mixed(64, _B64_CHARS) for _ in range(3)]
    add(
        "pgp_private_block",
        _j(
            "-----BEGIN PGP ",
            "PRIVATE KEY BLOCK-----\n\n",
            "\n".join(pgp),
            "\n-----END PGP ",
            "PRIVATE KEY BLOCK-----",
        ),
        pgp[1],
    )
    priv = _mixed(44, _B64_CHARS)
    mac = _r(_LOWER_HEX, 64)
    add(
        "putty_key",
        "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: ed25519-key\n"
        f"Public-Lines: 2\n{_mixed(64, _B64_CHARS)}\n{_mixed(4, _B64_CHARS)}\n"
        f"Private-Lines: 1\n{priv}\nPrivate-MAC: {mac}\n",
        priv,
    )
    b64pem = _b64(_pem("RSA")[0])
    add("base64_wrapped_pem", f"tls.key: {b64pem}", b64pem[:60])
    add("base64_wrapped_env", f"data: {(v := _b64('DB_PASSWORD=' + _mixed(18)))}", v)
    kd = _b64(_pem("EC")[0])
    add("kubeconfig_client_key", f"    client-key-data: {kd}", kd[:60])
    wg = _mixed(43, _B64_CHARS) + "="
    add("wireguard_private_key", f"[Interface]\nPrivateKey = {wg}\nAddress = 10.0.0.2/32", wg)
    ov = [_r(_LOWER_HEX, 32) for _ in range(4)]
    add(
        "openvpn_static_key",
        "-----BEGIN OpenVPN Static key V1-----\n" + "\n".join(ov) + "\n-----END OpenVPN Static key V1-----",
        ov[2],
    )
    # Passwords in context
    pw = _mixed(14)
    add("url_password", f"postgres://app:{pw}@db.internal:5432/app", pw)
    pw = _mixed(6) + "@" + _mixed(5) + "/" + _mixed(4)
    add(
        "url_password_with_at_slash",
        f"mongodb+srv://admin:{pw}@cluster0.example.net/test?retryWrites=true",
        pw,
    )
    pw = _mixed(12)
    add("redis_url_password_only", f"redis://:{pw}@cache.internal:6379/0", pw)
    pw = _mixed(10)
    add("jdbc_query_password", f"jdbc:mysql://db.internal:3306/app?user=app&password={pw}", pw)
    pw = _mixed(12)
    add(
        "sqlserver_conn_string",
        f"Server=tcp:db.example.net,1433;Database=app;User Id=app;Password={pw};Encrypt=True",
        pw,
    )
    pw = _mixed(12)
    add("curl_user", f"curl -u deploy:{pw} https://api.example.com/v1/items", pw)
    pw = _mixed(12)
    add("curl_user_long", f"curl --user 'deploy:{pw}' https://api.example.com", pw)
    pw = _mixed(10)
    add("mysql_p", f"mysql -h db.internal -u root -p{pw} app < dump.sql", pw)
    pw = _mixed(10)
    add("sshpass", f"sshpass -p {pw} ssh deploy@10.0.0.5", pw)
    pw = _mixed(16)
    add("docker_login_p", f"docker login -u deploy -p {pw} registry.example.com", pw)
    pw = _mixed(16)
    add("redis_cli_a", f"redis-cli -h cache.internal -a {pw} ping", pw)
    pw = _mixed(14)
    add("netrc", f"machine api.example.com login deploy password {pw}", pw)
    pw = _mixed(12)
    add("pgpassword_env", f"PGPASSWORD={pw} psql -h db.internal -U app", pw)
    cred = _b64("admin:" + _mixed(14))
    add("basic_auth_header", f"Authorization: Basic {cred}", cred)
    bt = _mixed(40, _URLSAFE)
    add("bearer_header", f"-H 'Authorization: Bearer {bt}'", bt)
    ak = _mixed(32)
    add("x_api_key_header", f"X-API-Key: {ak}", ak)
    ak = _mixed(32)
    add("query_api_key", f"GET https://api.example.com/v1/search?q=shoes&api_key={ak}&page=2", ak)
    pw = "correct horse " + _mixed(6) + " staple"
    add("quoted_password_with_spaces", f'password = "{pw}"', pw)
    pw = _mixed(8) + " " + _mixed(6)
    add(
        "escaped_json_in_json",
        _json.dumps({"body": _json.dumps({"user": "app", "password": pw})}),
        pw.split(" ")[0],
    )
    dk = "django-insecure-" + _r(_string.ascii_lowercase + _string.digits + "!@#$%^&*(-_=+)", 50)
    add("django_secret_key", f"SECRET_KEY = '{dk}'", dk[16:])
    rk = _r(_LOWER_HEX, 128)
    add("rails_secret_key_base", f"secret_key_base: {rk}", rk)
    fk = _mixed(32)
    add("flask_secret_key", f"app.config['SECRET_KEY'] = '{fk}'", fk)
    js = _mixed(40)
    add("jwt_secret_env", f"JWT_SECRET={js}", js)
    pw = _mixed(16)
    add("yaml_password", f"database:\n  user: app\n  password: {pw}\n", pw)
    pw = _mixed(16)
    add("ini_password", f"[db]\nhost = localhost\npassword = {pw}\n", pw)
    pw = _mixed(16)
    add("xml_password", f"<datasource><username>app</username><password>{pw}</password></datasource>", pw)
    pw = _mixed(16)
    add("env_db_password", f"DB_PASSWORD={pw}", pw)
    cs = _mixed(24)
    add("client_secret_json", _json.dumps({"client_id": "web-app", "client_secret": cs}), cs)
    pw = _mixed(12)
    add("chinese_password", f"数据库密码：{pw}", pw)
    pw = _mixed(12)
    add("spanish_password", f"contraseña: {pw}", pw)
    pw = _mixed(18)
    add("k8s_secret_stringdata", f"stringData:\n  api-token: {pw}\n", pw)
    ek = "0x" + _r(_LOWER_HEX, 64)
    add("eth_private_key", f"PRIVATE_KEY={ek}", ek)
    pw = _mixed(20)
    add("passphrase", f"ssh key passphrase is {pw}", pw)
    pw = _mixed(12)
    add("password_colon_prose", f"the admin password: {pw} (change it)", pw)
    # Personal data
    add("email", "write to jane.doe+ops@example-corp.com today", "jane.doe+ops@example-corp.com")
    add("cn_mobile", "call 13912345678 after 6", "13912345678")
    add("us_phone", "call (415) 555-0132 after 6", "555-0132")
    add("intl_phone", "call +44 20 7946 0958", "7946 0958")
    add("us_ssn", "SSN 078-05-1120 on file", "078-05-1120")
    add("visa_card", "card 4111 1111 1111 1111 exp 12/29", "4111 1111 1111 1111")
    add("unionpay_card", f"card {luhn('621700123456789012')}", luhn("621700123456789012"))
    add("cn_resident_id", f"身份证 {cn_id('11010519491231002')}", cn_id("11010519491231002"))
    # Added with the markup, registry-auth and other-language classes: each pair is a tuning row
    # (the form the rules were written from) and a held-out row (a form not tried while writing).
    auth = _b64(f"deploy:{_mixed(14)}")
    add("docker_config_auth", _json.dumps({"auths": {"registry.example.com": {"auth": auth}}}), auth)
    auth = _b64(f"ci-bot:{_mixed(18)}")
    add("dockercfg_legacy_auth", f'{{"quay.io": {{"auth": "{auth}", "email": ""}}}}', auth)
    pw = _mixed(14)
    add("xml_element_namespaced", f"<db:password>{pw}</db:password>", pw)
    pw = _mixed(20)
    add("xml_element_api_key", f"<settings>\n  <ApiKey>{pw}</ApiKey>\n</settings>", pw)
    pw = _mixed(16)
    add("xml_add_key_value", f'<add key="DbPassword" value="{pw}" />', pw)
    pw = _mixed(16)
    add("xml_param_name_value", f"<param name='smtp.secret' value='{pw}'/>", pw)
    pw = _mixed(12)
    add("russian_password", f"пароль: {pw}", pw)
    pw = _mixed(12)
    add("german_password", f"Passwort = {pw}", pw)
    pw = _mixed(12)
    add("spanish_password_assign", f"contraseña={pw}", pw)
    pw = _mixed(12)
    add("portuguese_password", f'"senha": "{pw}"', pw)
    pw = _mixed(12)
    add("japanese_password", f"パスワード：{pw}", pw)
    pw = _mixed(12)
    add("korean_password", f"비밀번호 = {pw}", pw)
    return rows


def _build_look_alikes() -> list[tuple[str, str]]:
    rows: list[tuple[str, str]] = []

    def add(name: str, text: str) -> None:
        rows.append((name, text))

    sha1, sha256 = _r(_LOWER_HEX, 40), _r(_LOWER_HEX, 64)
    add("git_sha", f"commit {sha1}")
    add("git_short_sha", f"fixed in {sha1[:7]} and {sha1[7:19]}")
    add("git_log_line", f"{sha1[:10]} Merge pull request #42 from org/feature-x")
    add("git_remote_ssh", "git@github.com:org/repo.git")
    add("git_remote_ssh_gitlab", "git clone git@gitlab.com:group/sub/project.git")
    add("git_remote_ssh_url", "ssh://git@github.com/org/repo.git")
    add("git_remote_https", "https://github.com/org/repo.git")
    add("cargo_lock_checksum", f'checksum = "{sha256}"')
    add(
        "poetry_lock_hash",
        f'{{file = "requests-2.31.0-py3-none-any.whl", hash = "sha256:{_r(_LOWER_HEX, 64)}"}}',
    )
    add("npm_integrity", f'"integrity": "sha512-{_mixed(86, _B64_CHARS)}=="')
    add("npm_integrity_sha1", f'"integrity": "sha1-{_mixed(27, _B64_CHARS)}="')
    add("go_sum", f"golang.org/x/text v0.14.0 h1:{_mixed(43, _B64_CHARS)}=")
    add("pip_hash", f"requests==2.31.0 --hash=sha256:{_r(_LOWER_HEX, 64)}")
    add("docker_digest", f"FROM python:3.11-slim@sha256:{_r(_LOWER_HEX, 64)}")
    add("sha256sum_output", f"{_r(_LOWER_HEX, 64)}  dist/tinyharness-0.1.0.tar.gz")
    add("md5_etag", f'ETag: "{_r(_LOWER_HEX, 32)}"')
    add("hex_in_json", f'{{"sha": "{_r(_LOWER_HEX, 40)}", "ref": "refs/heads/main"}}')
    add("uuid", f"request id {_uuid()}")
    add("uuid_upper", f"CorrelationId: {_uuid().upper()}")
    add("uuid_json", f'{{"id": "{_uuid()}", "name": "build"}}')
    add("uuid_url", f"https://app.example.com/projects/{_uuid()}/settings")
    add("pwd_getcwd", "pwd = os.getcwd()")
    add("password_getpass", "password = getpass.getpass('Password: ')")
    add("password_environ", 'password = os.environ["DB_PASSWORD"]')
    add("password_getenv", 'db_password = os.getenv("DB_PASSWORD", "")')
    add("secret_from_settings", "secret_key = settings.SECRET_KEY")
    add("api_key_none", "api_key = None")
    add("password_type_hint", "def login(user: str, password: str) -> bool:")
    add("password_param_default", "def connect(host, password=None, timeout=30):")
    add("password_compare_vars", "if password != confirm_password:")
    add("password_self_assign", "self.password = password")
    add("password_min_length", "PASSWORD_MIN_LENGTH = 12")
    add("token_usage", "max_tokens = 4096")
    add("token_type", 'token_type: "bearer"')
    add("tokens_used", "tokens used: 1523 of 200000")
    add("secret_name_k8s", "secretName: web-tls")
    add("password_field_const", 'PASSWORD_FIELD = "password"')
    add("password_template_env", "password=${DB_PASSWORD}")
    add("password_jinja", "password: {{ vault_db_password }}")
    add("password_placeholder", 'password: "<your-password>"')
    add("password_masked", "password=********")
    add("password_empty", '"password": ""')
    add("password_prompt", "Enter password:")
    add("password_stdin", "echo $TOKEN | docker login --password-stdin -u deploy")
    add("mysql_prompt", "mysql -u root -p app")
    add("curl_env_user", 'curl -u "$API_USER:$API_PASS" https://api.example.com')
    add("secret_key_file", "SECRET_KEY_FILE=/run/secrets/django_key")
    add("password_hash_call", "password_hash = bcrypt.hashpw(password.encode(), bcrypt.gensalt())")
    add("api_key_header_name", 'headers = {"X-API-Key": api_key}')
    add("token_from_request", "token = request.headers['Authorization']")
    add("secret_boolean", "secret: true")
    add("fstring_password", 'print(f"Password: {password}")')
    add("ts_type", "  secretKey: string;")
    add("java_getter", "String password = user.getPassword();")
    add("go_assign", 'apiKey := os.Getenv("API_KEY")')
    add("rust_assign", 'let token = env::var("TOKEN")?;')
    add("js_destructure", "const { password, ...rest } = body;")
    add("unix_path", "/usr/local/lib/python3.11/site-packages/detect_secrets/plugins/keyword.py")
    add("windows_path", r"C:\Users\build\AppData\Local\Temp\pytest-of-build\pytest-42")
    add("relative_path", "src/tinyharness/context/strategies/summarize_middle.py:118")
    add("url_no_password", "postgres://app@db.internal:5432/app")
    add("url_user_only", "https://deploy@git.example.com/repo.git")
    add("url_localhost_port", "http://localhost:8080/api/v1/health")
    add("url_query_plain", "https://example.com/search?q=python+regex&page=2&sort=desc")
    add("url_placeholder_password", "postgres://app:${DB_PASSWORD}@db:5432/app")
    add("s3_url", "s3://acme-build-artifacts/releases/2026/12/tinyharness-0.1.0.tar.gz")
    add("arn", "arn:aws:iam::123456789012:role/deploy-role")
    add("version", "tinyharness 0.1.0 (Python 3.11.7, detect-secrets 1.5.0)")
    add("semver_build", "v2.0.0-rc.1+build.20261201")
    add("iso_timestamp", "2026-12-01T15:33:52.123456+00:00")
    add("date_time", "version 3.11.7 on 2025-01-01 12:00:00")
    add("private_ip", "connect to 10.0.0.5:5432 and 192.168.1.20")
    add("ipv6", "listen [::1]:8080")
    add("mac_address", "ether 02:42:ac:11:00:02")
    add("hex_color", "color: #ff00aa; background: #1e1e2e;")
    add("css_rule", ".btn-primary:hover { transform: translateY(-1px); }")
    add("math", "The answer is (12+8)*3 = 60.")
    add("large_number", "processed 1234567890 rows in 42.5 s")
    add("order_number", "Order 1234567890123 shipped")
    add("invalid_cn_id", "110105194912310021 is not valid")
    add("luhn_fail", "4111111111111112")
    add("epoch_ms", "ts=1701388800000")
    add("price", "total: $1,299.99 (tax 8.25%)")
    add("long_identifier", "AbstractSingletonProxyFactoryBeanDefinitionRegistryPostProcessor")
    add("snake_constant", "MAX_CONCURRENT_TOOL_CALLS_PER_TURN_DEFAULT_VALUE = 8")
    add("camel_with_digits", "convertUtf8ToUtf16LittleEndianWithBom2Bytes")
    add("kebab_name", "tinyharness-context-summarize-middle-strategy-v2")
    add("python_import", "from detect_secrets.plugins.high_entropy_strings import Base64HighEntropyString")
    add(
        "markdown_table",
        "| strategy | calls | compactions |\n| --- | ---: | ---: |\n| summarize | 301 | 12 |",
    )
    add("chinese_prose", "身份证号码格式是十八位，最后一位是校验码。")
    add("english_prose", "Basic usage: call the tool with a path and read its output.")
    add("bearer_word", "The bearer of this letter is a friend.")
    add("sk_short", "sk-short")
    add("email_no_tld", "ssh deploy@buildhost and alice@localhost")
    add("at_mention", "thanks @alice-w and @bob for the review")
    add("decorator", "@pytest.mark.parametrize('kind', KINDS)")
    add("ssh_public_key", f"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{_mixed(43, _B64_CHARS)} alice@laptop")
    add("data_uri_image", f'<img src="data:image/png;base64,{_b64("PNG" + _r(_ALNUM, 120))}">')
    add("base64_plain_text", f"payload: {_b64('hello world, this is an ordinary message for the queue')}")
    add("docker_image_tag", "ghcr.io/org/tinyharness:0.1.0-py311-slim")
    add("k8s_resource", "resources: {limits: {cpu: 500m, memory: 512Mi}}")
    add("log_line", "2026-12-01 15:33:52,123 INFO agent.loop turn=12 tokens=18432 compactions=1")
    add("regex_text", r"pattern = r'^[A-Za-z0-9+/]{40}$'")
    add("shell_env_ref", 'export DATABASE_URL="postgres://app:$DB_PASS@db/app"')
    add("json_config_plain", '{"model": "gpt-4o-mini", "temperature": 0.2, "max_tokens": 1024}')
    add("toml_config", '[tool.ruff]\nline-length = 110\ntarget-version = "py311"')
    add("yaml_config", 'services:\n  web:\n    image: nginx:1.25\n    ports: ["8080:80"]')
    add("password_reset_url", "https://example.com/account/password/reset?step=2")
    add("key_value_plain", 'key = "name"  # sort key')
    add("primary_key", "id INTEGER PRIMARY KEY AUTOINCREMENT")
    add("monkey", "monkey = banana_count")
    add("keyboard", "keyboard: us-intl")
    add("unicode_text", "Déjà vu: naïve café — ÆØÅ ß İstanbul")
    add("html_form", '<input type="password" name="password" autocomplete="current-password">')
    add("sql_query", "SELECT id, email_verified FROM users WHERE created_at > now() - interval '7 days';")
    add("phone_like_version", "build 2026.12.01 on node 18.17.1")
    # Pairs added with the classes above (tuning, then held-out).
    add("ssh_url_with_port", "git clone ssh://git@gitlab.example.com:2222/group/project.git")
    add("svn_ssh_url", "svn checkout svn+ssh://svn@svn.example.org/repos/trunk")
    add("author_field", 'author = "Jane Doe"')
    add("author_element", "<author>Ada Lovelace</author>")
    add("auth_method_json", '{"auth": "oauth2", "scopes": ["read"]}')
    add("auth_none_yaml", "proxy:\n  auth: none\n  host: proxy.internal")
    add("password_policy_element", "<passwordPolicy>strict</passwordPolicy>")
    add("secret_name_element", "<secretName>web-tls</secretName>")
    add("russian_password_prompt", "Введите пароль:")
    add("german_password_placeholder", "Passwort: ********")
    return rows


SECRETS: list[tuple[str, str, str]] = _build_secrets()
LOOK_ALIKES: list[tuple[str, str]] = _build_look_alikes()


def half(index: int) -> str:
    """Which half a row belongs to: "tuning" (even rows) or "held_out" (odd rows)."""
    return "tuning" if index % 2 == 0 else "held_out"

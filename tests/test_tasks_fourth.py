"""The task suite's fourth half (ItsDangerous 2.2.0, held out): a right and a wrong reference
answer, edit and notes of every task (``tests/test_task_halves.py`` runs them, with what every
half on a public project shares: the pin, the targets, the project's size, the wiring), and what
is this half's own: the edit checkers on a small project (a rename, a TOML value), wanting the
asked change and nothing else."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from bench import tasks_fourth

PKG = "src/itsdangerous"


# --- the edit checkers, on a small project -----------------------------------------------------

ENCODING = '''"""Encodings."""

_int64_struct = struct.Struct(">Q")
_int_to_bytes = _int64_struct.pack


def want_bytes(s, encoding: str = "utf-8", errors: str = "strict"):
    """Bytes of ``s``."""
    return s
'''
PYPROJECT = '[project]\nname = "p"\nversion = "2.2.0"\n\n[tool.x]\nv = "2.2.0"\n'
SMALL = {f"{PKG}/encoding.py": ENCODING.encode(), "pyproject.toml": PYPROJECT.encode(), "README.md": b"r\n"}


@pytest.fixture
def small(tmp_path: Path) -> Path:
    for name, data in SMALL.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(data)
    return tmp_path


def _rename(ws: Path) -> bool:
    check = tasks_fourth.python_edit(
        f"{PKG}/encoding.py", (("_int64_struct", "_UINT64_STRUCT"),), originals=lambda: SMALL
    )
    return check("", ws)


@pytest.mark.parametrize(
    ("edited", "passes"),
    [
        (ENCODING.replace("_int64_struct", "_UINT64_STRUCT"), True),
        # layout, quotes, comments and docstrings may differ
        (ENCODING.replace("_int64_struct", "_UINT64_STRUCT").replace('">Q"', "'>Q'") + "# renamed\n", True),
        (
            ENCODING.replace("_int64_struct", "_UINT64_STRUCT").replace("Encodings.", "Encodings, renamed."),
            True,
        ),
        (ENCODING, False),  # nothing done
        (ENCODING.replace("_int64_struct =", "_UINT64_STRUCT ="), False),  # a use left behind
        (ENCODING.replace("_int64_struct", "_UINT64_STRUCT").replace('"strict"', '"ignore"'), False),
        (ENCODING.replace("_int64_struct", "_UINT64_STRUCT") + "def broken(:\n", False),  # no longer parses
    ],
)
def test_the_python_edit_checker_wants_the_change_and_nothing_else(
    small: Path, edited: str, passes: bool
) -> None:
    (small / PKG / "encoding.py").write_text(edited, encoding="utf-8")
    assert _rename(small) is passes


def test_the_python_edit_checker_wants_every_other_file_untouched(small: Path) -> None:
    (small / PKG / "encoding.py").write_text(ENCODING.replace("_int64_struct", "_UINT64_STRUCT"))
    assert _rename(small)
    (small / "NOTES.md").write_text("- a new file is not a change to the project\n")
    assert _rename(small)
    (small / "README.md").write_text("changed\n")
    assert not _rename(small)
    (small / "README.md").unlink()
    assert not _rename(small)


@pytest.mark.parametrize(
    ("edited", "passes"),
    [
        (PYPROJECT.replace('version = "2.2.0"', 'version = "2.2.1"'), True),
        (PYPROJECT.replace('version = "2.2.0"', "version = '2.2.1'  # bumped"), True),
        (PYPROJECT, False),
        (PYPROJECT.replace("2.2.0", "2.2.1"), False),  # another value changed too
        (PYPROJECT.replace('version = "2.2.0"', 'version = "2.2.1'), False),  # no longer parses
    ],
)
def test_the_toml_edit_checker(small: Path, edited: str, passes: bool) -> None:
    (small / "pyproject.toml").write_text(edited, encoding="utf-8")
    check = tasks_fourth.toml_edit(
        "pyproject.toml",
        (('version = "2.2.0"', 'version = "2.2.1"'),),
        ("README.md",),
        originals=lambda: SMALL,
    )
    assert check("", small) is passes
    (small / "README.md").write_text("2.2.1\n")  # a file the task allows to change
    assert check("", small) is passes


# --- every task: a right reference passes, a wrong one fails (run in tests/test_task_halves.py) --

# question, find and count tasks: (a right answer, a wrong answer)
ANSWERS: dict[str, tuple[str, str]] = {
    "id-signer-salt": ('The default salt is b"itsdangerous.Signer".', 'The default salt is b"itsdangerous".'),
    "id-key-derivation": ("It uses django-concat by default.", "It uses hmac by default."),
    "id-tox-command": ("tox runs `pytest -v --tb=short`.", "tox runs `python -m unittest`."),
    "id-def-timestamp-signer": ("src/itsdangerous/timed.py", "tests/test_itsdangerous/test_timed.py"),
    "id-def-want-bytes": ("It is defined in src/itsdangerous/encoding.py.", "It is in test_encoding.py."),
    "id-get-timestamp": (
        "The current time as an int: int(time.time()).",
        "A timezone-aware datetime in UTC.",
    ),
    "id-default-digest": ("hashlib.sha1 (SHA-1).", "SHA-256 (hashlib.sha256)."),
    "id-version": ("This is itsdangerous 2.2.0.", "This is itsdangerous 2.1.2."),
    "id-license": ("The BSD 3-Clause license.", "The MIT license."),
    "id-python": ("Python 3.8 and newer (requires-python >=3.8).", "Python 3.7 and newer."),
    "id-what": (
        "It signs data so that it can be passed to untrusted environments and checked when it comes back.",
        "It is a web framework designed for data pipelines.",
    ),
    "id-entry": ("src/itsdangerous/__init__.py imports and re-exports them.", "src/itsdangerous/signer.py"),
    "id-count-package": ("There are 8 .py files.", "There are 7 .py files."),
    "id-list-tests": (
        "__init__.py, test_encoding.py, test_serializer.py, test_signer.py, test_timed.py, test_url_safe.py",
        "test_encoding.py, test_serializer.py, test_signer.py",
    ),
    "id-tests-folder": ("tests/test_itsdangerous (test_timed.py)", "The tests folder itself."),
    "id-count-requirements": ("It holds 10 files (5 .in and 5 .txt).", "It holds 5 files."),
    "id-count-functions": (
        "Five: want_bytes, base64_encode, base64_decode, int_to_bytes, bytes_to_int.",
        "3",
    ),
    "id-count-exceptions": ("exc.py defines 6 classes.", "exc.py defines 5 classes."),
    "id-zh-version": ("版本是 2.2.0。", "版本是 2.1.0。"),
    "id-zh-def": ("在 src/itsdangerous/exc.py 里定义。", "在 timed.py 里定义。"),
    "id-zh-count": ("一共有 8 个 .py 文件。", "一共有 6 个 .py 文件。"),
    "id-zh-classes": ("signer.py 定义了四个类。", "signer.py 定义了两个类。"),
    "id-zh-license": ("BSD 许可证（3-Clause）。", "Apache 2.0 许可证。"),
    "id-zh-what": ("它给数据签名，保证数据在不可信的环境里传递时没有被篡改。", "它是一个网页框架。"),
    "id-fr-python": ("Python 3.8 au minimum.", "Python 3.9 au minimum."),
    "id-fr-def": ("Dans src/itsdangerous/url_safe.py.", "Dans tests/test_itsdangerous/test_url_safe.py."),
    "id-fr-count": ("Il y en a six, __init__.py compris.", "Il y en a cinq."),
    "id-para-release": ("itsdangerous 2.2.0", "itsdangerous 2.0.1"),
    "id-para-find": ("int_to_bytes is in src/itsdangerous/encoding.py.", "src/itsdangerous/serializer.py"),
    "id-para-count": ("5 test modules.", "6 test modules."),
}

# edit tasks: the right edit and a wrong one, each from the original text
Edit = Callable[[str], str]
EDITS: dict[str, tuple[str, Edit, Edit]] = {
    "id-edit-version": (
        "pyproject.toml",
        lambda t: t.replace('version = "2.2.0"', 'version = "2.2.1"'),
        lambda t: t.replace('version = "2.2.0"', 'version = "2.2.1"').replace(">=3.8", ">=3.9"),
    ),
    "id-edit-errors": (
        f"{PKG}/encoding.py",
        lambda t: t.replace('errors: str = "strict"', "errors: str = 'replace'"),
        lambda t: t.replace('errors: str = "strict"', 'errors: str = "replace"').replace(
            '"utf-8"', '"ascii"', 1
        ),
    ),
    "id-edit-rename": (
        f"{PKG}/encoding.py",
        lambda t: t.replace("_int64_struct", "_UINT64_STRUCT"),
        lambda t: t.replace("_int64_struct =", "_UINT64_STRUCT ="),
    ),
    "id-zh-edit": (
        f"{PKG}/signer.py",
        lambda t: t.replace(
            'default_key_derivation: str = "django-concat"', 'default_key_derivation: str = "hmac"'
        ),
        lambda t: t.replace('"django-concat"', '"hmac"'),  # the branch in derive_key changed too
    ),
}

# notes tasks: right notes and wrong ones
NOTES: dict[str, tuple[str, str]] = {
    "id-notes-three": (
        "- src/itsdangerous/exc.py: the exceptions raised for bad data, such as BadSignature\n"
        "- src/itsdangerous/_json.py: a compact json wrapper that strips whitespace\n"
        "- src/itsdangerous/url_safe.py: serializers that zlib compress and base64 encode for URLs\n",
        "- src/itsdangerous/exc.py: the exceptions raised for bad data\n- _json.py: json\n",
    ),
    "id-notes-package": (
        "- __init__.py: imports the signer and serializer classes\n"
        "- _json.py: compact json dumps without whitespace\n"
        "- encoding.py: base64 encode and decode of bytes\n"
        "- exc.py: exceptions raised for bad data\n"
        "- serializer.py: dumps and loads a signed payload\n"
        "- signer.py: signs values with an hmac of the key and salt\n"
        "- timed.py: a timestamp signer that can expire with max_age\n"
        "- url_safe.py: zlib compress and base64 for url-safe tokens\n",
        "- signer.py: signs values with an hmac\n- timed.py: timestamp signer\n",
    ),
    "id-zh-notes": (
        "- test_encoding.py: 测试 base64 编码和 want_bytes\n"
        "- test_serializer.py: 测试序列化器的 dumps 和 loads\n"
        "- test_signer.py: 测试签名、密钥派生和分隔符\n"
        "- test_timed.py: 测试时间戳和 max_age 过期\n"
        "- test_url_safe.py: 测试 URL 安全的序列化器\n",
        "- test_encoding.py: 测试\n- test_serializer.py: 测试\n- test_signer.py: 测试\n"
        "- test_timed.py: 测试\n- test_url_safe.py: 测试\n",
    ),
    "id-fr-notes": (
        "- src/itsdangerous/signer.py : Signer et HMACAlgorithm, signature HMAC avec secret_key et salt\n"
        "- src/itsdangerous/timed.py : TimestampSigner ajoute un timestamp, SignatureExpired passé max_age\n",
        "- src/itsdangerous/signer.py : signe les valeurs avec une clé\n",
    ),
}

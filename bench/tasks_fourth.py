"""The suite's fourth half, ``fourth``: held-out tasks never tuned on, written as a user of an
agent harness types them, on another public project nobody here wrote: ItsDangerous 2.2.0
(Pallets' library that signs data for untrusted places; its registry sdist: 46 files, 15 of
them .py).

The sdist is a ``bench/sdist.py`` pin, as the third half's is (``pip download --no-deps
--no-binary :all:``, sha256 checked, never committed) and unpacked into each task's
fresh workspace. Tasks of every kind: questions that name a file, a symbol, or neither (version,
license, Python versions, what the project does, its entry point), folder questions, counts in a
file, edits (the checker parses the edited file, compares it with the pinned original with only
the asked change made, and wants every other file of the project untouched), a note per file of
a set (named files, a glob, a folder in words); in English, Chinese and French, and English
paraphrases. Each task lists its ``targets``: the files or folders that answer it.
"""

from __future__ import annotations

from pathlib import Path

from bench import task_checks
from bench.sdist import Pinned
from bench.task_checks import Changes, Originals, file_named, number
from bench.tasks import Checker, Task, says

HALF = "fourth"
PROJECT = "itsdangerous"
PIN = Pinned("itsdangerous", "2.2.0", "e0050c0b7da1eea53ffaf149c0cfbb5c6e2e2b69c4bef22c81fa6eb73e5f6173")


def build_workspace(workspace: Path, archive: Path | None = None) -> list[str]:
    """ItsDangerous 2.2.0 in ``workspace`` (fetched and verified unless ``archive`` is given)."""
    return PIN.build(workspace, archive)


# --- checkers (bench/task_checks.py), comparing an edit with this half's pinned original -------


def python_edit(path: str, changes: Changes, originals: Originals = PIN.originals) -> Checker:
    """``task_checks.python_edit`` against this half's project."""
    return task_checks.python_edit(path, changes, originals)


def toml_edit(
    path: str, changes: Changes, may_change: tuple[str, ...] = (), originals: Originals = PIN.originals
) -> Checker:
    """``task_checks.toml_edit`` against this half's project."""
    return task_checks.toml_edit(path, changes, originals, may_change)


# --- the tasks -------------------------------------------------------------------------------

_PKG = "src/itsdangerous"
_TESTS = "tests/test_itsdangerous"
_V22 = r"(?<![\d.])2\.2(?:\.0)?(?![\d]|\.\d)"
_PY38 = r"(?<![\d.])3\.8(?![\d])"
_META = ("pyproject.toml", "PKG-INFO")
_LICENSE = ("LICENSE.txt", "pyproject.toml", "PKG-INFO")
_WHAT = says(r"\bsign|签名", r"data|token|untrusted|tamper|数据|令牌|篡改|不可信|donnée|jeton")

# Facts a note may give of each file: words of the file itself (lower-case), and the same
# facts in the words a Chinese or French note would use.
_FACTS: dict[str, tuple[str, ...]] = {
    f"{_PKG}/__init__.py": ("import", "version", "deprecat", "signer", "serializer"),
    f"{_PKG}/_json.py": ("json", "whitespace", "compact", "separators", "dumps", "loads"),
    f"{_PKG}/encoding.py": ("base64", "bytes", "want_bytes", "encode", "decode"),
    f"{_PKG}/exc.py": ("exception", "raised", "baddata", "badsignature", "expired", "invalid"),
    f"{_PKG}/serializer.py": ("serializ", "dumps", "loads", "payload", "salt", "json"),
    f"{_PKG}/signer.py": ("sign", "hmac", "key", "salt", "digest"),
    f"{_PKG}/timed.py": ("time", "timestamp", "expire", "max_age", "age"),
    f"{_PKG}/url_safe.py": ("url", "zlib", "compress", "base64"),
    f"{_TESTS}/test_encoding.py": ("base64", "bytes", "want_bytes", "int_to_bytes", "bytes_to_int"),
    f"{_TESTS}/test_serializer.py": ("serializ", "salt", "payload", "dumps", "loads", "signer"),
    f"{_TESTS}/test_signer.py": ("sign", "key", "derivation", "separator", "digest"),
    f"{_TESTS}/test_timed.py": ("time", "timestamp", "max_age", "expire", "freeze"),
    f"{_TESTS}/test_url_safe.py": ("url", "safe", "serializ", "zlib"),
}
_TRANSLATED: dict[str, tuple[str, ...]] = {
    f"{_PKG}/__init__.py": ("导入", "导出", "版本", "弃用"),
    f"{_PKG}/_json.py": ("空白", "紧凑"),
    f"{_PKG}/encoding.py": ("编码", "解码", "字节"),
    f"{_PKG}/exc.py": ("异常", "错误", "exception", "erreur"),
    f"{_PKG}/serializer.py": ("序列化",),
    f"{_PKG}/signer.py": ("签名", "密钥", "signe", "signature", "clé", "sel"),
    f"{_PKG}/timed.py": ("时间", "过期", "horodat", "temps", "expir", "date"),
    f"{_PKG}/url_safe.py": ("压缩", "网址", "序列化"),
    f"{_TESTS}/test_encoding.py": ("编码", "解码", "字节"),
    f"{_TESTS}/test_serializer.py": ("序列化", "签名"),
    f"{_TESTS}/test_signer.py": ("签名", "密钥", "分隔符"),
    f"{_TESTS}/test_timed.py": ("时间", "过期", "时间戳"),
    f"{_TESTS}/test_url_safe.py": ("序列化", "压缩", "网址"),
}


def _facts(*paths: str) -> dict[str, tuple[str, ...]]:
    return {p: _FACTS[p] + _TRANSLATED[p] for p in paths}


_MODULES = tuple(p for p in _FACTS if p.startswith(_PKG))
_TEST_MODULES = tuple(p for p in _FACTS if p.startswith(_TESTS))


_make = task_checks.TaskMaker(HALF, PROJECT, _facts)
_t, _edit, _notes = _make.t, _make.edit, _make.notes


TASKS: tuple[Task, ...] = (
    # questions that name a file
    _t("id-signer-salt", "question", "What is the default salt in src/itsdangerous/signer.py?",
       says(r"itsdangerous\.Signer"), (f"{_PKG}/signer.py",)),
    _t("id-key-derivation", "question", "Which key derivation does signer.py use by default?",
       says(r"django-concat"), (f"{_PKG}/signer.py",)),
    _t("id-tox-command", "question", "What command does tox.ini run the tests with?",
       says(r"pytest"), ("tox.ini",)),
    # questions that name a symbol
    _t("id-def-timestamp-signer", "find", "Which file defines the class TimestampSigner?",
       file_named("timed.py"), (f"{_PKG}/timed.py",)),
    _t("id-def-want-bytes", "find", "Where is want_bytes defined?",
       file_named("encoding.py"), (f"{_PKG}/encoding.py",)),
    _t("id-get-timestamp", "question", "What does get_timestamp return?",
       says(r"\bint\b|integer|整数|entier", r"time\.time|current|now|seconds|当前|actuel"),
       (f"{_PKG}/timed.py",)),
    _t("id-default-digest", "question",
       "If I don't pass a digest_method to HMACAlgorithm, which hash function does it use?",
       says(r"sha-?1\b"), (f"{_PKG}/signer.py",)),
    # questions that name neither
    _t("id-version", "question", "What version is this?", says(_V22), _META),
    _t("id-license", "question", "What's the license of this project?", says(r"\bBSD\b"), _LICENSE),
    _t("id-python", "question", "Which Python versions does it support?", says(_PY38),
       ("pyproject.toml", "PKG-INFO")),
    _t("id-what", "question", "What does this project do? One sentence please.", _WHAT, ("README.md",)),
    _t("id-entry", "find", "Where's the entry point of this library, the module its public classes are "
       "imported from?", file_named("__init__.py"), (f"{_PKG}/__init__.py",)),
    # folder questions
    _t("id-count-package", "count", "How many .py files are there in src/itsdangerous?",
       number(8, "eight"), (_PKG,)),
    _t("id-list-tests", "count", "List the test files in tests/test_itsdangerous.",
       says(r"test_encoding", r"test_serializer", r"test_signer", r"test_timed", r"test_url_safe"),
       (_TESTS,)),
    _t("id-tests-folder", "find", "Which subfolder of tests has the tests for the timestamp signer?",
       says(r"test_itsdangerous"), (_TESTS,)),
    _t("id-count-requirements", "count", "How many files does the requirements folder hold?",
       number(10, "ten"), ("requirements",)),
    # counts in a file
    _t("id-count-functions", "count", "How many top-level functions are in src/itsdangerous/encoding.py?",
       number(5, "five"), (f"{_PKG}/encoding.py",)),
    _t("id-count-exceptions", "count", "How many classes does exc.py define?", number(6, "six"),
       (f"{_PKG}/exc.py",)),
    # edits
    _edit("id-edit-version", "Bump the version to 2.2.1.",
          toml_edit("pyproject.toml", (('version = "2.2.0"', 'version = "2.2.1"'),),
                    may_change=("PKG-INFO", "CHANGES.rst")),
          ("pyproject.toml",)),
    _edit("id-edit-errors", 'In src/itsdangerous/encoding.py, make want_bytes default to errors="replace" '
          'instead of "strict".',
          python_edit(f"{_PKG}/encoding.py", (('errors: str = "strict"', 'errors: str = "replace"'),)),
          (f"{_PKG}/encoding.py",)),
    _edit("id-edit-rename", "Rename the constant _int64_struct in encoding.py to _UINT64_STRUCT.",
          python_edit(f"{_PKG}/encoding.py", (("_int64_struct", "_UINT64_STRUCT"),)),
          (f"{_PKG}/encoding.py",)),
    # a note per file of a set
    _notes("id-notes-three", "Add a one-line note for each of src/itsdangerous/exc.py, "
           "src/itsdangerous/_json.py and src/itsdangerous/url_safe.py saying what it's for.",
           (f"{_PKG}/exc.py", f"{_PKG}/_json.py", f"{_PKG}/url_safe.py"),
           (f"{_PKG}/exc.py", f"{_PKG}/_json.py", f"{_PKG}/url_safe.py")),
    _notes("id-notes-package", "Go through the modules of the itsdangerous package and write down in "
           "the notes what each one does, a line per module.", _MODULES, (_PKG,)),
    # in Chinese
    _t("id-zh-version", "question", "这个库现在是哪个版本？", says(_V22), _META),
    _t("id-zh-def", "find", "SignatureExpired 这个异常是在哪个文件里定义的？", file_named("exc.py"),
       (f"{_PKG}/exc.py",)),
    _t("id-zh-count", "count", "src/itsdangerous 目录下一共有几个 Python 文件？", number(8, "八"), (_PKG,)),
    _t("id-zh-classes", "count", "signer.py 里定义了几个类？", number(4, "四"), (f"{_PKG}/signer.py",)),
    _t("id-zh-license", "question", "这个项目用的是哪种开源协议？", says(r"\bBSD\b"), _LICENSE),
    _t("id-zh-what", "question", "简单说说这个项目是做什么的。", _WHAT, ("README.md",)),
    _edit("id-zh-edit", "把 signer.py 里 Signer 默认的密钥派生方式从 django-concat 改成 hmac。",
          python_edit(f"{_PKG}/signer.py",
                      (('default_key_derivation: str = "django-concat"',
                        'default_key_derivation: str = "hmac"'),)),
          (f"{_PKG}/signer.py",)),
    _notes("id-zh-notes", "看一下 tests/test_itsdangerous/test_*.py 这几个测试文件，每个文件测的是什么，"
           "各用一行记到笔记里。", _TEST_MODULES, (_TESTS,)),
    # in French
    _t("id-fr-python", "question", "Quelle est la version minimale de Python requise par ce projet ?",
       says(_PY38), ("pyproject.toml", "PKG-INFO")),
    _t("id-fr-def", "find", "Dans quel fichier la classe URLSafeTimedSerializer est-elle définie ?",
       file_named("url_safe.py"), (f"{_PKG}/url_safe.py",)),
    _t("id-fr-count", "count", "Combien de fichiers .py y a-t-il dans tests/test_itsdangerous, "
       "__init__.py compris ?", number(6, "six"), (_TESTS,)),
    _notes("id-fr-notes", "Prends une note d'une ligne sur le rôle de src/itsdangerous/signer.py et de "
           "src/itsdangerous/timed.py.", (f"{_PKG}/signer.py", f"{_PKG}/timed.py"),
           (f"{_PKG}/signer.py", f"{_PKG}/timed.py")),
    # English paraphrases of the kinds above
    _t("id-para-release", "question", "Which release of itsdangerous is checked out here?", says(_V22),
       _META),
    _t("id-para-find", "find", "I'm looking for the code that turns an integer into bytes. Which file is "
       "it in?", file_named("encoding.py"), (f"{_PKG}/encoding.py",)),
    _t("id-para-count", "count", "How many test modules (test_*.py) are under tests/test_itsdangerous?",
       number(5, "five"), (_TESTS,)),
)  # fmt: skip

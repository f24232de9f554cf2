"""The suite's tenth half, ``tenth``: held-out tasks nobody tuned on, written as a user of an
agent harness types them, on a tenth public project nobody here wrote: idna 3.10 (Internationalized
Domain Names in Applications: it converts domain names between Unicode and their ASCII
``xn--`` Punycode form by the IDNA 2008 rules, with the UTS 46 compatibility mapping; its registry
sdist: 23 files, 15 of them .py, an ``idna`` package of eight modules (``core.py``, ``codec.py``,
``compat.py``, ``intranges.py``, ``package_data.py``, which holds the version, the two tables
``idnadata.py`` and ``uts46data.py`` that ``tools/idna-data`` generates, and ``__init__.py``) and
its ``py.typed``, a ``tests/`` folder of six ``test_*.py`` files, an ``__init__.py`` and
``IdnaTestV2.txt``, the ``tools/idna-data`` script (Python without a ``.py`` suffix),
pyproject.toml (built by flit_core, no setup.py nor setup.cfg), PKG-INFO, README.rst,
LICENSE.md and HISTORY.rst).

The sdist is a ``bench/sdist.py`` pin (``pip download --no-deps --no-binary :all:``, sha256
checked, never committed), unpacked into each task's fresh workspace. Tasks of every kind:
questions that name a file, a symbol, or neither (version, license, Python versions, what the
project does, where its version comes from, its dependencies, whether it has a command-line
tool), folder questions, counts in a file, edits (``bench/task_checks.py``: the edited file
parsed and compared with the pinned original with only the asked change made, every other file
untouched: a version, two constants, two default arguments, two TOML values, two that name no
file), a note per file of a set (named files, a glob, a folder in words); in English, Chinese,
French, Spanish and German, and English paraphrases of this half's own tasks. Each task lists
its ``targets``.

The project has names a checker must tell apart: ``codec.py`` beside ``compat.py`` and
``core.py``, ``intranges.py`` beside ``tests/test_intranges.py``, ``idnadata.py`` beside
``uts46data.py`` (both generated) and ``uts46_remap`` (in ``core.py``, not in ``uts46data.py``),
``tests/test_idna.py`` beside the four other ``test_idna_*.py`` files and ``test_intranges.py``,
which the ``test_idna*.py`` glob leaves out; three versions that look alike: the package's 3.10
(``package_data.py``, beside the 3.9 and 3.7 of HISTORY.rst and the Python 3.10 of the
classifiers), the Unicode data's 15.1.0 (``__version__`` in both tables) and the 16.0.0
``PREFERRED_VERSION`` of ``tools/idna-data``; ``encode`` and ``decode``, whose ``uts46=False``
defaults are written alike; a label's limit of 63 beside a domain's 253 (254 with a trailing
dot); the codec ``idna2008``, not Python's own ``idna``; ``IDNAError``, a ``UnicodeError``;
a license that is BSD, not MIT; Python 3.6 and later; an optional ``all`` extra of development
tools, not a dependency; and ``tools/idna-data``, a command-line script that is not installed.
"""

from __future__ import annotations

import re
from pathlib import Path

from bench import task_checks
from bench.sdist import Pinned
from bench.task_checks import file_named, none_of, number
from bench.tasks import Checker, Task, says

HALF = "tenth"
PROJECT = "idna"
PIN = Pinned("idna", "3.10", "12f65c9b470abda6dc35cf8e63cc574b1c52b11df2c86030af0ac09b01b13ea9")


def build_workspace(workspace: Path, archive: Path | None = None) -> list[str]:
    """idna 3.10 in ``workspace`` (fetched and verified unless ``archive`` is given)."""
    return PIN.build(workspace, archive)


_EDITS = task_checks.Edits(PIN.originals)
python_edit, toml_edit = _EDITS.python_edit, _EDITS.toml_edit


# --- the tasks -------------------------------------------------------------------------------

_PKG = "idna"
_INIT = f"{_PKG}/__init__.py"
_CODEC = f"{_PKG}/codec.py"
_COMPAT = f"{_PKG}/compat.py"
_CORE = f"{_PKG}/core.py"
_IDNADATA = f"{_PKG}/idnadata.py"
_INTRANGES = f"{_PKG}/intranges.py"
_PACKAGE_DATA = f"{_PKG}/package_data.py"
_UTS46DATA = f"{_PKG}/uts46data.py"
_TOOL = "tools/idna-data"
_TESTS_DIR = "tests"
_HAND_WRITTEN = (_INIT, _CODEC, _COMPAT, _CORE, _INTRANGES, _PACKAGE_DATA)
_TESTS = tuple(f"{_TESTS_DIR}/test_idna{n}.py" for n in ("", "_codec", "_compat", "_other", "_uts46"))
_TEST_INTRANGES = f"{_TESTS_DIR}/test_intranges.py"


def _release(version: str) -> str:
    """``version`` whole: not a part of 3.100, of 13.10 nor of 3.10.1."""
    return rf"(?<![\d.]){re.escape(version)}(?![\d]|\.\d)"


_V = _release("3.10")
_UNICODE_DATA = _release("15.1.0")
_UNICODE_TOOL = _release("16.0.0")
_PY36 = r"(?<![\d.])3\.6(?![\d])"
_PY27 = r"(?<![\d.])2\.7(?![\d])"
_META = (_PACKAGE_DATA, "PKG-INFO")
_LICENSE = ("LICENSE.md", "pyproject.toml", "PKG-INFO")
_PYTHON = ("pyproject.toml", "PKG-INFO")
# BSD (the 3-clause text of LICENSE.md, "BSD License" in the classifiers), not another license.
_BSD = none_of(says(r"\bBSD\b"), r"\bMIT\b", r"\bApache\b", r"\bL?GPL\b")
# What the project does: internationalized domain names to and from their ASCII form, in any words.
_WHAT = says(
    r"\bdomain|domaine|dominio|Domänen|域名|\bIDNA\b|\bIDN\b",
    r"internationali[sz]|international|Unicode|punycode|ASCII|encod|decod|convert|codific|"
    r"conviert|kodier|umwandel|国际化|编码|解码|转换",
)
_INTRANGES_FILE = file_named("intranges.py")
_CODEC_FILE = file_named("codec.py")
_CORE_FILE = file_named("core.py")
# The version's own file: idna/package_data.py, or its module name (idna.package_data).
_VERSION_FILE = says(r"\bpackage_data\b")
# An answer that names something the project needs ("it needs ruff"), not "needs nothing".
_NEEDS = r"\b(?:requires?|needs?|depends on)\s+(?!no\b|nothing|none\b|any|python\b|only python\b)\w"
_NO = r"\bno\b|\bnone\b|\bnot\b|n't|\bnothing\b|\bzero\b|没有|不需要|无|\bpas\b|aucune|ninguna|keine"
# The two generated tables (idnadata.py, uts46data.py), none of the hand-written modules.
_GENERATED = none_of(
    says(r"idnadata", r"uts46data"),
    r"(?<![\w.])(?:core|codec|compat|package_data|__init__)\.py\b",
    r"(?<![\w.])intranges\.py\b",
)

# Facts a note may give of each file: words of the file itself (lower-case), then the same facts
# in other words (the words a Chinese, French, Spanish or German note uses).
_FACTS: dict[str, tuple[str, ...]] = {
    _INIT: ("__all__", "__version__", "package_data", "intranges_contain", "alabel", "ulabel",
            "uts46_remap", "idnaerror", "check_bidi"),
    _CODEC: ("codec", "idna2008", "incrementalencoder", "incrementaldecoder", "streamwriter",
             "streamreader", "search_function", "codecs.register"),
    _COMPAT: ("toascii", "tounicode", "nameprep", "notimplementederror", "idna 2008"),
    _CORE: ("idnaerror", "idnabidierror", "invalidcodepoint", "alabel", "ulabel", "uts46_remap",
            "check_bidi", "check_label", "punycode", "xn--", "contextj", "contexto"),
    _INTRANGES: ("intranges_from_list", "intranges_contain", "bisect", "ranges", "consecutive"),
    _PACKAGE_DATA: ("__version__", "3.10"),
    _IDNADATA: ("scripts", "joining_types", "codepoint_classes", "pvalid", "contextj", "contexto",
                "15.1.0", "generated", "idna-data"),
    _UTS46DATA: ("uts46", "mapping table", "_seg_", "15.1.0", "generated", "idna-data"),
    f"{_TESTS_DIR}/test_idna.py": ("alabel", "ulabel", "check_bidi", "contextj", "contexto", "hyphen",
                                   "combiner", "tld", "valid_label_length"),
    f"{_TESTS_DIR}/test_idna_codec.py": ("codec", "idna2008", "incrementaldecoder", "incrementalencoder",
                                         "streamreader", "streamwriter"),
    f"{_TESTS_DIR}/test_idna_compat.py": ("toascii", "tounicode", "nameprep", "compat"),
    f"{_TESTS_DIR}/test_idna_other.py": ("std3", "uts46_remap", "invalidcodepoint"),
    f"{_TESTS_DIR}/test_idna_uts46.py": ("idnatestv2", "uts46", "transitional"),
}  # fmt: skip
_TRANSLATED: dict[str, tuple[str, ...]] = {
    _INIT: ("导出", "入口", "版本", "exporte", "exporta", "exportiert"),
    _CODEC: ("编解码", "编码器", "解码器", "codecs"),
    _COMPAT: ("兼容", "compatib", "kompatib"),
    _CORE: ("核心", "域名", "标签", "编码", "解码", "domaine", "dominio", "domain"),
    _INTRANGES: ("区间", "范围", "整数", "intervalle", "rango", "bereich"),
    _PACKAGE_DATA: ("版本", "version", "versión"),
    _IDNADATA: ("自动生成", "脚本", "générée", "généré", "table", "unicode"),
    _UTS46DATA: ("自动生成", "映射", "générée", "généré", "correspondance", "unicode"),
    f"{_TESTS_DIR}/test_idna.py": ("标签", "编码", "解码"),
    f"{_TESTS_DIR}/test_idna_codec.py": ("编解码",),
    f"{_TESTS_DIR}/test_idna_compat.py": ("兼容",),
    f"{_TESTS_DIR}/test_idna_other.py": ("映射",),
    f"{_TESTS_DIR}/test_idna_uts46.py": ("测试向量",),
}  # fmt: skip


def _facts(*paths: str) -> dict[str, tuple[str, ...]]:
    return {p: _FACTS[p] + _TRANSLATED[p] for p in paths}


_make = task_checks.TaskMaker(HALF, PROJECT, _facts)
_t, _edit, _notes = _make.t, _make.edit, _make.notes

_REQUIRES_PYTHON = 'requires-python = ">=3.6"'


def _requires_python(version: str) -> Checker:
    return _EDITS.requires_python(_REQUIRES_PYTHON, version, ("PKG-INFO",))


# encode()'s signature: its uts46 default is written as decode()'s is, so the change is made
# with the parameters after it, which decode() lacks.
_ENCODE_TAIL = (
    "    uts46: bool = False,\n    std3_rules: bool = False,\n    transitional: bool = False,\n) -> bytes:"
)
_ENCODE_UTS46 = python_edit(
    _CORE, ((_ENCODE_TAIL, _ENCODE_TAIL.replace("uts46: bool = False", "uts46: bool = True")),)
)
# The version bump: __version__ in idna/package_data.py; the metadata and the changelog may follow.
_VERSION_BUMP = python_edit(_PACKAGE_DATA, (('"3.10"', '"3.11"'),), ("PKG-INFO", "HISTORY.rst"))


TASKS: tuple[Task, ...] = (
    # questions that name a file
    _t("in-tool-unicode", "question", "Which Unicode version does tools/idna-data use when I don't pass "
       "--version?", says(_UNICODE_TOOL), (_TOOL,)),
    _t("in-build-backend", "question", "What does pyproject.toml use to build the package?",
       says(r"\bflit"), ("pyproject.toml",)),
    _t("in-history-cve", "question", "According to HISTORY.rst, which release fixed CVE-2024-3651?",
       says(_release("3.7")), ("HISTORY.rst",)),
    # questions that name a symbol
    _t("in-def-intranges", "find", "Which file defines intranges_contain?", _INTRANGES_FILE, (_INTRANGES,)),
    _t("in-def-decoder", "find", "Where is the IncrementalDecoder class defined?", _CODEC_FILE, (_CODEC,)),
    _t("in-label-length", "question", "What is the longest label valid_label_length accepts?",
       number(63, "sixty-three"), (_CORE,)),
    _t("in-codec-name", "question", "Under what codec name does idna.codec register itself with Python's "
       "codecs module?", says(r"\bidna2008\b"), (_CODEC,)),
    _t("in-error-base", "question", "What built-in exception is IDNAError a subclass of?",
       says(r"\bUnicodeError\b"), (_CORE,)),
    # questions that name neither
    _t("in-version", "question", "What version is this?", says(_V), _META),
    _t("in-license", "question", "What license is this project under?", _BSD, _LICENSE),
    _t("in-what", "question", "What does this project do? One sentence please.", _WHAT, ("README.rst",)),
    _t("in-version-source", "find", "pyproject.toml says the version is dynamic. Which file does it actually "
       "come from?", _VERSION_FILE, ("pyproject.toml", _INIT, _PACKAGE_DATA)),
    _t("in-deps", "question", "Does idna need any other packages installed to run?",
       none_of(says(_NO), r"\byes\b", _NEEDS), ("pyproject.toml", "PKG-INFO")),
    _t("in-cli", "question", "Does installing this give me a command-line program?",
       none_of(says(_NO), r"\byes\b"), ("pyproject.toml", _TOOL)),
    _t("in-python", "question", "Which Python versions does it support?", none_of(says(_PY36), _PY27),
       _PYTHON),
    # folder questions
    _t("in-count-tests", "count", "How many .py files are in the tests folder?", number(7, "seven"),
       (_TESTS_DIR,)),
    _t("in-which-generated", "find", "Which modules of the idna package are generated by a tool rather than "
       "written by hand?", _GENERATED, (_PKG,)),
    # counts in a file
    _t("in-count-errors", "count", "How many exception classes does idna/core.py define?",
       number(4, "four"), (_CORE,)),
    _t("in-count-intranges", "count", "How many test methods are in tests/test_intranges.py?",
       number(8, "eight"), (_TEST_INTRANGES,)),
    # edits
    _edit("in-edit-version", "Bump the version to 3.11.", _VERSION_BUMP, (_PACKAGE_DATA,)),
    _edit("in-edit-check-ltr", "In idna/core.py, make check_bidi check left-to-right labels by default "
          "(check_ltr=True).",
          python_edit(_CORE, (("check_ltr: bool = False", "check_ltr: bool = True"),)), (_CORE,)),
    _edit("in-edit-uts46", "Make idna.encode() apply the UTS 46 mapping by default (uts46=True). Leave "
          "decode() as it is.", _ENCODE_UTS46, (_CORE,)),
    _edit("in-edit-ruff", "In pyproject.toml, set ruff's line length to 120.",
          toml_edit("pyproject.toml", (("line-length = 127", "line-length = 120"),)), ("pyproject.toml",)),
    # a note per file of a set
    _notes("in-notes-three", "Write a one-line note for each of idna/codec.py, idna/compat.py and "
           "idna/core.py saying what it is for.", (_CODEC, _COMPAT, _CORE), (_CODEC, _COMPAT, _CORE)),
    _notes("in-notes-tests", "For each tests/test_idna*.py file, add a one-line note on what it tests.",
           _TESTS, _TESTS),
    # English paraphrases of this half's tasks
    _t("in-para-release", "question", "Which release of idna is this checkout?", says(_V), _META),
    _t("in-para-find", "find", "I want to read the code that packs a list of integers into ranges and then "
       "checks whether a number falls in one of them. Which file is it in?", _INTRANGES_FILE,
       (_INTRANGES,)),
    _t("in-para-count", "count", "How many Python files does the tests folder hold?", number(7, "seven"),
       (_TESTS_DIR,)),
    _t("in-para-length", "question", "How many characters can a single label have at most before "
       "valid_label_length rejects it?", number(63, "sixty-three"), (_CORE,)),
    # in Chinese
    _t("in-zh-version", "question", "这个库现在是什么版本？", says(_V), _META),
    _t("in-zh-unicode", "question", "idna 包里自带的 Unicode 数据表是哪个 Unicode 版本的？",
       says(_UNICODE_DATA), (_IDNADATA, _UTS46DATA)),
    _t("in-zh-def", "find", "uts46_remap 这个函数是在哪个文件里定义的？", _CORE_FILE, (_CORE,)),
    _t("in-zh-count-codec", "count", "idna/codec.py 里一共定义了几个类？", number(5, "五"), (_CODEC,)),
    _t("in-zh-count-compat", "count", "idna/compat.py 里定义了几个函数？", number(3, "三"), (_COMPAT,)),
    _t("in-zh-license", "question", "这个项目用的是什么许可证？", _BSD, _LICENSE),
    _t("in-zh-deps", "question", "装这个包还要另外装别的依赖吗？", none_of(says(_NO), r"\byes\b", _NEEDS),
       ("pyproject.toml", "PKG-INFO")),
    _edit("in-zh-edit", "不再支持 Python 3.6 和 3.7 了：把 pyproject.toml 里的 requires-python 改成 >=3.8，"
          "别的不要动。",
          _requires_python("3.8"), ("pyproject.toml",)),
    _notes("in-zh-notes", "帮我把 idna 包里除了那两个自动生成的 Unicode 数据表以外的每个 Python 模块"
           "都看一遍，各写一行笔记说明它是干什么的。",
           _HAND_WRITTEN, (_PKG,)),
    # in French
    _t("in-fr-count", "count", "Combien de fichiers test_*.py y a-t-il dans le dossier tests ?",
       number(6, "six"), (_TESTS_DIR,)),
    _t("in-fr-domain-length", "question", "Quelle longueur maximale valid_string_length accepte-t-elle pour "
       "un nom de domaine sans point final ?", number(253, "deux cent cinquante-trois"), (_CORE,)),
    _notes("in-fr-notes", "Note en une ligne le rôle de idna/idnadata.py et celui de idna/uts46data.py.",
           (_IDNADATA, _UTS46DATA), (_IDNADATA, _UTS46DATA)),
    # in Spanish
    _t("in-es-what", "question", "¿Para qué sirve esta librería? Explícalo en una frase.", _WHAT,
       ("README.rst",)),
    _t("in-es-empty", "question", "¿Qué excepción lanza idna.encode() si le paso una cadena vacía?",
       says(r"\bIDNAError\b"), (_CORE,)),
    _edit("in-es-edit", "En tools/idna-data, cambia PREFERRED_VERSION a 15.1.0.",
          python_edit(_TOOL, (("PREFERRED_VERSION = '16.0.0'", "PREFERRED_VERSION = '15.1.0'"),)), (_TOOL,)),
    # in German
    _t("in-de-count", "count", "Wie viele Testmethoden hat tests/test_idna_codec.py?", number(9, "neun"),
       (f"{_TESTS_DIR}/test_idna_codec.py",)),
    _t("in-de-changes", "question", "Laut HISTORY.rst: Mit welcher Version kam das Update auf Unicode "
       "16.0.0?", says(_release("3.9")), ("HISTORY.rst",)),
    _edit("in-de-edit", "Setz in tools/idna-data UTS46_SEGMENT_SIZE von 100 auf 200.",
          python_edit(_TOOL, (("UTS46_SEGMENT_SIZE = 100", "UTS46_SEGMENT_SIZE = 200"),)), (_TOOL,)),
)  # fmt: skip

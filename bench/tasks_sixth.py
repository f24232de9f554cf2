"""The suite's sixth half, ``sixth``: held-out tasks nobody tuned on, written as a user of an
agent harness types them, on a sixth public project nobody here wrote: cachetools 8.0.2 (the
memoizing collections and decorators library; its registry sdist: 38 files, 21 of them .py and 3
.pyi type stubs, in a ``src/cachetools`` package beside its ``cachetools.egg-info`` metadata,
``tests/``, ``docs/``, pyproject.toml and setup.cfg, README.rst, LICENSE and CHANGELOG.rst).

The sdist is a ``bench/sdist.py`` pin (``pip download --no-deps --no-binary :all:``, sha256
checked, never committed), unpacked into each task's fresh workspace. Tasks of every kind:
questions that name a file, a symbol, or neither (version, license, Python versions, what the
project does, where its version comes from, its dependencies, its last release, its classes),
folder questions, counts in a file, edits (``bench/task_checks.py``: the edited file parsed and
compared with the pinned original with only the asked change made, every other file untouched:
a version, a constant, a default argument, a TOML value, a rename, two that name no file), a
note per file of a set (named files, a glob, a folder in words); in English, Chinese, French,
Spanish and German, and English paraphrases of this half's own tasks. Each task lists its
``targets``: the files or folders that answer it.

The project has names a checker must tell apart: ``__init__.py`` in the package and in
``tests/``, each module beside its ``.pyi`` stub (``keys.py``, ``keys.pyi``), ``test_keys.py``
beside ``keys.py``, and PKG-INFO at the top and in the egg-info folder.
"""

from __future__ import annotations

from pathlib import Path

from bench import task_checks
from bench.sdist import Pinned
from bench.task_checks import any_of, file_named, none_of, number
from bench.tasks import Task, says

HALF = "sixth"
PROJECT = "cachetools"
PIN = Pinned("cachetools", "8.0.2", "30ac523adfc118b51d2b2e7bad8a0ddb31370dfe2700c7f10ca224f36ccf81e0")


def build_workspace(workspace: Path, archive: Path | None = None) -> list[str]:
    """cachetools 8.0.2 in ``workspace`` (fetched and verified unless ``archive`` is given)."""
    return PIN.build(workspace, archive)


_EDITS = task_checks.Edits(PIN.originals)
python_edit, toml_edit = _EDITS.python_edit, _EDITS.toml_edit


# --- the tasks -------------------------------------------------------------------------------

_PKG = "src/cachetools"
_INIT = f"{_PKG}/__init__.py"
_FUNC = f"{_PKG}/func.py"
_KEYS = f"{_PKG}/keys.py"
_EGG_INFO = "src/cachetools.egg-info/PKG-INFO"
_V = r"(?<![\d.])8\.0\.2(?![\d]|\.\d)"
_PY311 = r"(?<![\d.])3\.11(?![\d])"
_META = (_INIT, "PKG-INFO")
_LICENSE = ("LICENSE", "pyproject.toml", "PKG-INFO")
_PYTHON = ("pyproject.toml", "PKG-INFO")
_MIT = says(r"\bMIT\b")
# What the project does: caches (memoizing) for function results, in any words.
_WHAT = says(
    r"cach|memoi|缓存|记忆|Zwischenspeicher",
    r"decorat|function|collection|mapping|dict|result|call|\bLRU\b|\bTTL\b|evict|algorithm|"
    r"装饰|函数|结果|集合|映射|字典|淘汰|fonction|résultat|función|funcion|decorador|resultado|"
    r"colecci|Funktion|Dekorator|Ergebnis|Sammlung",
)
# 600 seconds, the default ttl of ttl_cache, as a number or in words.
_TTL = says(
    r"(?<![\d.])600(?![\d]|\.\d)|\b(?:ten|10) minut|\bdiez minutos|\bzehn Minuten|"
    r"(?<![\d.])10 ?分钟|(?<![一二三四五六七八九十百])十分钟"
)
_INIT_FILE = file_named("__init__.py", "tests/__init__.py")
_KEYS_FILE = file_named("keys.py")
# An answer that names something the project needs ("it needs setuptools"), not "needs nothing".
_NEEDS = r"\b(?:requires?|needs?|depends on)\s+(?!no\b|nothing|none\b|any|python\b|only python\b)\w"
_NO = r"\bno\b|\bnone\b|\bnot\b|n't|\bnothing\b|\bzero\b|没有|不需要|无|\bpas\b|aucune|ninguna|keine"


def _class(name: str) -> str:
    """The class ``name`` as a whole word (``TTLCache`` is not in ``_UnboundTTLCache``)."""
    return rf"(?<![\w]){name}(?![\w])"


_CLASSES = tuple(_class(c) for c in ("FIFOCache", "LFUCache", "LRUCache", "RRCache", "TTLCache", "TLRUCache"))

# Facts a note may give of each file: words of the file itself (lower-case), then the same facts
# in other words (a stub's own kind, or the words a Chinese, French, Spanish or German note uses).
_FACTS: dict[str, tuple[str, ...]] = {
    _INIT: ("memoizing", "collections", "decorator", "least recently", "time-to-live", "evict", "fifo"),
    f"{_PKG}/_cached.py": ("function decorator", "wrapper", "lock", "condition"),
    f"{_PKG}/_cachedmethod.py": ("method decorator", "method", "wrapper", "descriptor", "lock"),
    f"{_PKG}/_decorator.py": ("mixin", "lock", "condition", "hits", "misses", "wrapper"),
    f"{_PKG}/_descriptor.py": ("descriptor", "__set_name__", "unbound", "instance"),
    _FUNC: ("lru_cache", "functools", "decorator", "memoizing", "maxsize", "thread-safe"),
    _KEYS: ("cache key", "key function", "hashkey", "typedkey", "methodkey", "hashable"),
    f"{_PKG}/__init__.pyi": ("overload", "typevar", "paramspec", "protocol", "generic", "typing"),
    f"{_PKG}/func.pyi": ("overload", "lru_cache", "cache_info", "paramspec", "typing", "callable"),
    f"{_PKG}/keys.pyi": ("hashkey", "typedkey", "methodkey", "hashable", "typing"),
    "tests/test_ttl.py": ("ttl", "timer", "expire"),
    "tests/test_tlru.py": ("tlru", "ttu", "timer", "expire"),
    "tests/test_keys.py": ("hashkey", "typedkey", "methodkey", "pickle"),
    "tests/test_fifo.py": ("fifo", "popitem", "evict"),
    "tests/test_lfu.py": ("lfu", "least frequently", "popitem"),
    "tests/test_lru.py": ("lru", "least recently", "popitem"),
    "tests/test_rr.py": ("rrcache", "random", "choice"),
}
_STUB = ("stub", "type hint", "annotation", "signature", "存根", "类型", "注解")
_TRANSLATED: dict[str, tuple[str, ...]] = {
    _INIT: ("cache class", "缓存类", "淘汰", "装饰器", "记忆"),
    f"{_PKG}/_cached.py": ("函数", "装饰器", "包装", "fonction", "décorateur", "enveloppe", "verrou"),
    f"{_PKG}/_cachedmethod.py": ("方法", "装饰器", "méthode", "décorateur", "descripteur", "verrou"),
    f"{_PKG}/_decorator.py": ("混入", "锁", "命中"),
    f"{_PKG}/_descriptor.py": ("描述符",),
    _FUNC: ("装饰器", "函数", "memoiz"),
    _KEYS: ("键", "哈希", "key"),
    f"{_PKG}/__init__.pyi": _STUB,
    f"{_PKG}/func.pyi": _STUB,
    f"{_PKG}/keys.pyi": _STUB,
    "tests/test_ttl.py": ("过期", "存活", "生存时间", "time to live"),
    "tests/test_tlru.py": ("过期", "时间", "time to use"),
    "tests/test_keys.py": ("键", "哈希", "key"),
    "tests/test_fifo.py": ("first in", "先进先出", "zuerst", "verdräng", "ältest"),
    "tests/test_lfu.py": ("least frequently", "最不经常", "频率", "häufig", "verdräng"),
    "tests/test_lru.py": ("least recently", "最近最少", "zuletzt", "verdräng", "längsten"),
    "tests/test_rr.py": ("随机", "zufall", "zufäll", "verdräng"),
}


def _facts(*paths: str) -> dict[str, tuple[str, ...]]:
    return {p: _FACTS[p] + _TRANSLATED[p] for p in paths}


_MODULES = tuple(p for p in _FACTS if p.startswith(f"{_PKG}/") and p.endswith(".py"))
_STUBS = tuple(p for p in _FACTS if p.endswith(".pyi"))
_EVICTION_TESTS = tuple(f"tests/test_{n}.py" for n in ("fifo", "lfu", "lru", "rr"))


_make = task_checks.TaskMaker(HALF, PROJECT, _facts)
_t, _edit, _notes = _make.t, _make.edit, _make.notes


TASKS: tuple[Task, ...] = (
    # questions that name a file
    _t("ct-ttl-default", "question", "What is the default ttl of ttl_cache in src/cachetools/func.py?",
       _TTL, (_FUNC,)),
    _t("ct-tox-runner", "question", "Which test runner does tox.ini run the tests with?",
       says(r"py\.?test"), ("tox.ini",)),
    _t("ct-sphinx-ext", "question", "Which Sphinx extensions does docs/conf.py turn on?",
       says(r"autodoc", r"coverage", r"doctest", r"intersphinx", r"todo"), ("docs/conf.py",)),
    _t("ct-negative-maxsize", "question", "In src/cachetools/__init__.py, what happens if I create a "
       "Cache with a negative maxsize?", says(r"ValueError"), (_INIT,)),
    # questions that name a symbol
    _t("ct-def-tlru", "find", "Which file defines the class TLRUCache?", _INIT_FILE, (_INIT,)),
    _t("ct-def-typedmethodkey", "find", "Where is typedmethodkey defined?", _KEYS_FILE, (_KEYS,)),
    _t("ct-cached-none", "question", "What does the cached decorator do if I pass cache=None?",
       says(r"TypeError"), (_INIT,)),
    _t("ct-ttl-timer", "question", "What timer does TTLCache use by default?", says(r"monotonic"), (_INIT,)),
    _t("ct-cacheinfo-fields", "question", "What fields does a CacheInfo have?",
       says(r"\bhits\b", r"\bmisses\b", r"\bmaxsize\b", r"\bcurrsize\b"), (_INIT,)),
    # questions that name neither
    _t("ct-version", "question", "What version is this?", says(_V), _META),
    _t("ct-license", "question", "What license is this project under?", _MIT, _LICENSE),
    _t("ct-python", "question", "Which Python versions does it support?", says(_PY311), _PYTHON),
    _t("ct-what", "question", "What does this project do? One sentence please.", _WHAT, ("README.rst",)),
    _t("ct-version-source", "find", "pyproject.toml has no version number in it. Where does the "
       "package's version actually come from?", any_of(says(r"__version__"), _INIT_FILE),
       ("pyproject.toml", _INIT)),
    _t("ct-deps", "question", "Does cachetools need any other packages installed at run time?",
       none_of(says(_NO), r"\byes\b", _NEEDS), ("pyproject.toml",)),
    _t("ct-release-date", "question", "When was the latest release published, according to the changelog?",
       says(r"2026-11-18|\b18(?:th)? (?:of )?Nov\w*,? 2026|Nov\w* 18(?:th)?,? 2026|2026 ?年 ?11 ?月 ?18"),
       ("CHANGELOG.rst",)),
    _t("ct-classes", "question", "Which cache classes does the library offer?", says(*_CLASSES), (_INIT,)),
    # folder questions
    _t("ct-count-tests", "count", "How many test_*.py files are there in tests/?", number(12, "twelve"),
       ("tests",)),
    _t("ct-count-py", "count", "How many .py files are in src/cachetools? Don't count the .pyi stubs.",
       number(7, "seven"), (_PKG,)),
    _t("ct-list-docs", "count", "List the files in the docs folder.",
       none_of(says(r"conf\.py", r"index\.rst"), r"\bMakefile\b|make\.bat|api\.rst|requirements"),
       ("docs",)),
    _t("ct-source-folder", "find", "Which folder has the package's source code?",
       says(r"src[/\\]cachetools(?!\.egg|[\w-])"), (_PKG,)),
    # counts in a file
    _t("ct-count-classes", "count", "How many top-level classes does src/cachetools/__init__.py define?",
       number(9, "nine"), (_INIT,)),
    _t("ct-count-mixins", "count", "How many classes does src/cachetools/_decorator.py define?",
       number(6, "six"), (f"{_PKG}/_decorator.py",)),
    # edits
    _edit("ct-edit-version", "Bump the version to 8.0.3.",
          python_edit(_INIT, (('__version__ = "8.0.2"', '__version__ = "8.0.3"'),),
                      may_change=("PKG-INFO", _EGG_INFO, "CHANGELOG.rst")),
          (_INIT,)),
    _edit("ct-edit-ttl", "ttl_cache keeps results for 600 seconds by default. Make the default 300.",
          python_edit(_FUNC, (("ttl=600", "ttl=300"),), may_change=(f"{_PKG}/func.pyi", "docs/index.rst")),
          (_FUNC,)),
    _edit("ct-edit-heap", "In src/cachetools/__init__.py, change TLRUCache's __HEAP_CLEANUP_FACTOR from 2 "
          "to 4.",
          python_edit(_INIT, (("__HEAP_CLEANUP_FACTOR = 2", "__HEAP_CLEANUP_FACTOR = 4"),)), (_INIT,)),
    _edit("ct-edit-pyright", "In pyproject.toml, switch pyright's typeCheckingMode to strict.",
          toml_edit("pyproject.toml", (('typeCheckingMode = "standard"', 'typeCheckingMode = "strict"'),)),
          ("pyproject.toml",)),
    # a note per file of a set
    _notes("ct-notes-three", "Write a one-line note for each of src/cachetools/keys.py, "
           "src/cachetools/func.py and src/cachetools/_descriptor.py saying what it is for.",
           (_KEYS, _FUNC, f"{_PKG}/_descriptor.py"), (_KEYS, _FUNC, f"{_PKG}/_descriptor.py")),
    _notes("ct-notes-stubs", "For each src/cachetools/*.pyi file, add a one-line note on what it declares.",
           _STUBS, _STUBS),
    _notes("ct-notes-package", "Go through the Python modules in the cachetools package folder (the .py "
           "files, not the stubs) and note what each one does, one line per file.", _MODULES, (_PKG,)),
    # English paraphrases of this half's tasks
    _t("ct-para-release", "question", "Which release of cachetools do I have here?", says(_V), _META),
    _t("ct-para-find", "find", "I want to see the code that builds a cache key out of a function's "
       "arguments. Which file is it in?", _KEYS_FILE, (_KEYS,)),
    _t("ct-para-count", "count", "How many test modules (test_*.py) does the tests folder have?",
       number(12, "twelve"), ("tests",)),
    _t("ct-para-ttl", "question", "If I use ttl_cache without giving a ttl, how long do cached results live?",
       _TTL, (_FUNC,)),
    # in Chinese
    _t("ct-zh-version", "question", "这个库现在是什么版本？", says(_V), _META),
    _t("ct-zh-def", "find", "LFUCache 是在哪个文件里定义的？", _INIT_FILE, (_INIT,)),
    _t("ct-zh-stubs", "count", "src/cachetools 里有几个 .pyi 类型存根文件？", number(3, "三"), (_PKG,)),
    _t("ct-zh-keys", "count", "keys.py 里一共定义了几个函数？", number(4, "四"), (_KEYS,)),
    _t("ct-zh-license", "question", "这个项目用的是什么许可证？", _MIT, _LICENSE),
    _t("ct-zh-what", "question", "这个库是干什么用的？一句话说一下。", _WHAT, ("README.rst",)),
    _t("ct-zh-python", "question", "最低需要 Python 几？", says(_PY311), _PYTHON),
    _t("ct-zh-maxsize", "question", "cachetools.func 里那几个装饰器默认的 maxsize 是多少？",
       number(128), (_FUNC,)),
    _edit("ct-zh-edit", "把 pyproject.toml 里的 requires-python 改成 >= 3.12，别的不要动。",
          any_of(*(toml_edit("pyproject.toml", (('requires-python = ">= 3.11"', f'requires-python = "{v}"'),),
                             may_change=("PKG-INFO", _EGG_INFO))
                   for v in (">= 3.12", ">=3.12"))),
          ("pyproject.toml",)),
    _notes("ct-zh-notes", "帮我看一下 tests/test_ttl.py、tests/test_tlru.py 和 tests/test_keys.py，"
           "每个文件测的是什么，各写一行笔记。",
           ("tests/test_ttl.py", "tests/test_tlru.py", "tests/test_keys.py"),
           ("tests/test_ttl.py", "tests/test_tlru.py", "tests/test_keys.py")),
    # in French
    _t("ct-fr-def", "find", "Dans quel fichier est définie la fonction lru_cache de cachetools.func ?",
       file_named("func.py"), (_FUNC,)),
    _t("ct-fr-count", "count", "Combien de fichiers y a-t-il dans le dossier docs ?", number(2, "deux"),
       ("docs",)),
    _t("ct-fr-what", "question", "À quoi sert cette bibliothèque, en une phrase ?", _WHAT, ("README.rst",)),
    _notes("ct-fr-notes", "Note en une ligne le rôle de src/cachetools/_cached.py et celui de "
           "src/cachetools/_cachedmethod.py.", (f"{_PKG}/_cached.py", f"{_PKG}/_cachedmethod.py"),
           (f"{_PKG}/_cached.py", f"{_PKG}/_cachedmethod.py")),
    # in Spanish
    _t("ct-es-rr", "question", "¿Qué función usa RRCache por defecto para elegir qué elemento descartar?",
       says(r"random\.choice|\bchoice\b[^.\n]{0,40}\brandom\b"), (_INIT,)),
    _t("ct-es-count", "count", "¿Cuántos métodos de prueba tiene tests/test_keys.py?", number(6, "seis"),
       ("tests/test_keys.py",)),
    _t("ct-es-python", "question", "¿Qué versión mínima de Python necesito para usar esta librería?",
       says(_PY311), _PYTHON),
    _edit("ct-es-edit", "Renombra _kwmark a _KWARGS_MARK en src/cachetools/keys.py, en todos los sitios "
          "donde se usa.", python_edit(_KEYS, (("_kwmark", "_KWARGS_MARK"),)), (_KEYS,)),
    # in German
    _t("ct-de-ttlcache", "question", "Welche Klasse in cachetools ist der LRU-Cache mit einer Lebensdauer "
       "pro Eintrag?", says(_class("TTLCache")), (_INIT,)),
    _t("ct-de-count", "count", "Wie viele Klassen definiert src/cachetools/_cached.py?", number(7, "sieben"),
       (f"{_PKG}/_cached.py",)),
    _edit("ct-de-edit", 'Stell in docs/conf.py das html_theme von "classic" auf "alabaster" um.',
          python_edit("docs/conf.py", (('html_theme = "classic"', 'html_theme = "alabaster"'),)),
          ("docs/conf.py",)),
    _notes("ct-de-notes", "Schreib für jede Testdatei zu den Verdrängungsstrategien – tests/test_fifo.py, "
           "tests/test_lfu.py, tests/test_lru.py und tests/test_rr.py – eine Zeile in die Notizen, was sie "
           "testet.", _EVICTION_TESTS, _EVICTION_TESTS),
)  # fmt: skip

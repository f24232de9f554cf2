"""The task suite's sixth half (cachetools 8.0.2, held out): the right and wrong reference answers,
edits and notes of every task (``tests/test_task_halves.py`` runs them, with what every half on a
public project shares: the pin, the targets, the project's size), and what is this half's own:
the counts it asks are the project's, the checkers tell apart the files of the same name
(``__init__.py`` in the package and in ``tests/``, a module and its ``.pyi`` stub), and the edits
that may touch a stub, the docs or the metadata. No network: the tests that need the real
project skip when its pinned sdist has not been fetched (``python -m bench.task_suite --half
sixth`` fetches it)."""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path

import pytest
from bench import notes_check, tasks_sixth

PKG = "src/cachetools"
INIT = f"{PKG}/__init__.py"


def _task(name: str) -> tasks_sixth.Task:
    return next(t for t in tasks_sixth.TASKS if t.name == name)


# --- every task: right references pass, wrong ones fail (run in tests/test_task_halves.py) -------

# question, find and count tasks: (right answers, wrong answers)
ANSWERS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "ct-ttl-default": (
        ("600 seconds.", "ttl=600, i.e. ten minutes", "10 minutes"),
        ("300 seconds", "60", "6000 seconds", "It has no default; you must pass one."),
    ),
    "ct-tox-runner": (("pytest, with coverage.", "It runs py.test."), ("unittest", "nose")),
    "ct-sphinx-ext": (
        (
            "sphinx.ext.autodoc, sphinx.ext.coverage, sphinx.ext.doctest, sphinx.ext.intersphinx and "
            "sphinx.ext.todo",
        ),
        ("autodoc and napoleon", "autodoc, doctest, intersphinx"),
    ),
    "ct-negative-maxsize": (
        ("It raises ValueError: maxsize must be non-negative.",),
        ("It raises a TypeError.", "It is treated as an unbounded cache."),
    ),
    "ct-def-tlru": (
        ("src/cachetools/__init__.py", "In cachetools/__init__.py.", "在src/cachetools/__init__.py里"),
        ("tests/__init__.py", "src/cachetools/__init__.pyi", "tests/test_tlru.py"),
    ),
    "ct-def-typedmethodkey": (
        ("src/cachetools/keys.py", "It's in keys.py."),
        ("tests/test_keys.py", "src/cachetools/keys.pyi", "src/cachetools/func.py"),
    ),
    "ct-cached-none": (
        ("It raises TypeError (cache must not be None).",),
        ("It turns caching off and calls the function every time.", "ValueError"),
    ),
    "ct-ttl-timer": (("time.monotonic",), ("time.time", "time.perf_counter")),
    "ct-cacheinfo-fields": (
        ("hits, misses, maxsize and currsize",),
        ("hits and misses", "hits, misses, size"),
    ),
    "ct-version": (("cachetools 8.0.2",), ("8.0.1", "8.0.20", "7.3.2")),
    "ct-license": (("The MIT License.",), ("BSD 3-Clause", "Apache 2.0")),
    "ct-python": (
        ("Python 3.11 and newer (>= 3.11).", "3.11 through 3.15"),
        ("3.10+", "Python 3.9 or newer"),
    ),
    "ct-what": (
        (
            "It provides memoizing collections and decorators, such as an LRU cache for function results.",
            "Cache classes for Python (LRU, TTL and more) plus decorators that memoize function calls.",
        ),
        ("It is a web framework.", "It parses TOML files."),
    ),
    "ct-version-source": (
        (
            "From __version__ in src/cachetools/__init__.py (setuptools reads cachetools.__version__).",
            "cachetools/__init__.py",
        ),
        ("From the git tags, through setuptools-scm.", "It is in setup.cfg."),
    ),
    "ct-deps": (
        (
            "No, it has no runtime dependencies.",
            "None: the project lists no dependencies.",
            "It doesn't need anything else.",
            "It does not require anything beyond Python 3.11.",
            "No, it needs only Python itself.",
        ),
        (
            "Yes, it needs setuptools-scm.",
            "It requires setuptools and setuptools-scm.",
            "It needs setuptools; nothing else.",
        ),
    ),
    "ct-release-date": (
        ("v8.0.2 came out on 2026-11-18.", "November 18, 2026", "On the 18th of November 2026."),
        ("2026-11-17", "November 6, 2026"),
    ),
    "ct-classes": (
        ("Cache, FIFOCache, LFUCache, LRUCache, RRCache, TTLCache and TLRUCache",),
        (
            "LRUCache, TTLCache and LFUCache",
            "FIFOCache, LFUCache, LRUCache, RRCache, _UnboundTTLCache, TLRUCache",
        ),
    ),
    "ct-count-tests": (("12 test files.", "twelve"), ("13", "11 files", "112")),
    "ct-count-py": (("7 .py files.", "seven"), ("10", "8 files", "7.5")),
    "ct-list-docs": (("conf.py and index.rst",), ("conf.py, index.rst and Makefile", "index.rst")),
    "ct-source-folder": (
        ("src/cachetools", "It lives in src/cachetools/."),
        ("src/cachetools.egg-info", "the cachetools folder at the top level"),
    ),
    "ct-count-classes": (("9 classes.", "nine"), ("8", "12 classes")),
    "ct-count-mixins": (("6 mixin classes.", "six"), ("5", "7")),
    "ct-para-release": (("8.0.2",), ("8.0", "8.0.1")),
    "ct-para-find": (
        ("src/cachetools/keys.py (hashkey)",),
        ("tests/test_keys.py", "src/cachetools/keys.pyi"),
    ),
    "ct-para-count": (("12 test modules.",), ("14",)),
    "ct-para-ttl": (("600 seconds, ten minutes.",), ("Forever, until evicted.", "60 seconds")),
    "ct-zh-version": (("版本是 8.0.2。", "当前版本8.0.2"), ("版本是 8.0.1。",)),
    "ct-zh-def": (
        ("在 src/cachetools/__init__.py 里。", "定义在src/cachetools/__init__.py中"),
        ("在 tests/test_lfu.py 里。", "在 tests/__init__.py 里。"),
    ),
    "ct-zh-stubs": (("有 3 个。", "三个"), ("有 4 个。", "两个")),
    "ct-zh-keys": (("定义了 4 个函数。", "四个"), ("5 个", "三个")),
    "ct-zh-license": (("MIT 许可证",), ("BSD 许可证",)),
    "ct-zh-what": (
        ("它提供带记忆功能的缓存集合和装饰器，比如 LRU 缓存。", "给函数结果做缓存的库。"),
        ("这是一个网页框架。", "用来解析 TOML 的库。"),
    ),
    "ct-zh-python": (("最低 Python 3.11。", ">= 3.11"), ("Python 3.10", "3.8")),
    "ct-zh-maxsize": (("默认 maxsize 是 128。",), ("默认是 256。", "1280")),
    "ct-fr-def": (
        ("Dans src/cachetools/func.py.",),
        ("Dans tests/test_func.py.", "Dans src/cachetools/func.pyi."),
    ),
    "ct-fr-count": (("Il y a deux fichiers : conf.py et index.rst.", "2"), ("trois", "3 fichiers")),
    "ct-fr-what": (
        (
            "Elle fournit des collections et des décorateurs de mémoïsation, comme un cache LRU pour les "
            "résultats de fonctions.",
        ),
        ("C'est un framework web.",),
    ),
    "ct-es-rr": (
        ("random.choice", "Usa la función choice del módulo random."),
        ("random.randint", "Elimina siempre el elemento más antiguo."),
    ),
    "ct-es-count": (("Tiene 6 métodos de prueba.", "seis"), ("5", "siete")),
    "ct-es-python": (("Python 3.11 o superior.",), ("Python 3.8 o superior.",)),
    "ct-de-ttlcache": (("TTLCache", "Das ist TTLCache."), ("TLRUCache", "LRUCache", "_UnboundTTLCache")),
    "ct-de-count": (("7 Klassen.", "sieben"), ("6", "acht")),
}

# edit tasks: (the file, the right edit, wrong ones), each made from the original text
Edit = Callable[[str], str]
EDITS: dict[str, tuple[str, Edit, tuple[Edit, ...]]] = {
    "ct-edit-version": (
        INIT,
        lambda t: t.replace('__version__ = "8.0.2"', "__version__ = '8.0.3'"),
        (
            lambda t: t.replace('"8.0.2"', '"8.1.0"'),
            lambda t: t.replace('"8.0.2"', '"8.0.3"').replace("FACTOR = 2", "FACTOR = 3"),
        ),
    ),
    "ct-edit-ttl": (
        f"{PKG}/func.py",
        lambda t: t.replace("ttl=600", "ttl=300"),
        (
            lambda t: t.replace("ttl=600", "ttl=360"),
            lambda t: t.replace("ttl=600", "ttl=300").replace(
                "def ttl_cache(maxsize=128", "def ttl_cache(maxsize=256"
            ),
        ),
    ),
    "ct-edit-heap": (
        INIT,
        lambda t: t.replace("__HEAP_CLEANUP_FACTOR = 2", "__HEAP_CLEANUP_FACTOR = 4  # was 2"),
        (
            lambda t: t.replace("__HEAP_CLEANUP_FACTOR = 2", "__HEAP_CLEANUP_FACTOR = 3"),
            lambda t: t.replace("__HEAP_CLEANUP_FACTOR = 2", "__HEAP_CLEANUP_FACTOR = 4").replace(
                "if len(order) > len(items) *", "if len(order) >= len(items) *"
            ),
        ),
    ),
    "ct-edit-pyright": (
        "pyproject.toml",
        lambda t: t.replace('typeCheckingMode = "standard"', "typeCheckingMode = 'strict'  # stricter"),
        (
            lambda t: t.replace('"standard"', '"basic"'),
            lambda t: t.replace('"standard"', '"strict"').replace(
                'reportUnnecessaryTypeIgnoreComment = "error"\n', ""
            ),
        ),
    ),
    "ct-zh-edit": (
        "pyproject.toml",
        lambda t: t.replace('requires-python = ">= 3.11"', 'requires-python = ">=3.12"'),
        (
            lambda t: t.replace('">= 3.11"', '">= 3.13"'),
            lambda t: t.replace('">= 3.11"', '">= 3.12"').replace(
                '    "Programming Language :: Python :: 3.11",\n', ""
            ),
        ),
    ),
    "ct-es-edit": (
        f"{PKG}/keys.py",
        lambda t: t.replace("_kwmark", "_KWARGS_MARK"),
        (lambda t: t.replace("_kwmark =", "_KWARGS_MARK ="), lambda t: t.replace("_kwmark", "KWARGS_MARK")),
    ),
    "ct-de-edit": (
        "docs/conf.py",
        lambda t: t.replace('html_theme = "classic"', "html_theme = 'alabaster'"),
        (
            lambda t: t.replace('"classic"', '"sphinx_rtd_theme"'),
            lambda t: t.replace('"classic"', '"alabaster"').replace('    "sphinx.ext.todo",\n', ""),
        ),
    ),
}

# notes tasks: (right notes, wrong notes)
NOTES: dict[str, tuple[str, str]] = {
    "ct-notes-three": (
        "- src/cachetools/keys.py: key functions (hashkey, typedkey, methodkey) that build a cache key from "
        "hashable arguments\n"
        "- src/cachetools/func.py: functools.lru_cache compatible memoizing decorators such as ttl_cache\n"
        "- src/cachetools/_descriptor.py: the descriptor behind @cachedmethod, bound on instance access via "
        "__set_name__\n",
        "- src/cachetools/keys.py: key functions hashkey and typedkey\n- func.py: functions\n"
        "- _descriptor.py: the module\n",
    ),
    "ct-notes-stubs": (
        "- src/cachetools/__init__.pyi: typing stubs of the cache classes: overload, TypeVar, ParamSpec\n"
        "- src/cachetools/func.pyi: typing stubs of lru_cache, ttl_cache and the other decorators: overload, "
        "ParamSpec, cache_info\n"
        "- src/cachetools/keys.pyi: the signatures of hashkey, methodkey, typedkey and typedmethodkey over "
        "Hashable arguments\n",
        # the modules, not their stubs
        "- src/cachetools/__init__.py: the cache classes, memoizing collections\n"
        "- src/cachetools/func.py: lru_cache and the other decorators\n"
        "- src/cachetools/keys.py: hashkey, methodkey and typedkey\n",
    ),
    "ct-notes-package": (
        "- __init__.py: the cache classes (Cache, FIFOCache, LRUCache, TTLCache) and the cached and "
        "cachedmethod decorators\n"
        "- _cached.py: function decorator wrappers for @cached, with lock and condition variants\n"
        "- _cachedmethod.py: method decorator wrappers for @cachedmethod, bound through a descriptor\n"
        "- _decorator.py: mixin classes with the call logic: lock, condition, hits, misses, cache_info\n"
        "- _descriptor.py: the method descriptor that binds @cachedmethod on instance access (__set_name__)\n"
        "- func.py: functools.lru_cache compatible decorators: fifo_cache, lfu_cache, lru_cache, ttl_cache\n"
        "- keys.py: key functions hashkey, methodkey, typedkey for hashable arguments\n",
        "- __init__.py: the cache classes and decorators\n- func.py: lru_cache\n- keys.py: hashkey\n",
    ),
    "ct-zh-notes": (
        "- tests/test_ttl.py: 测试 TTLCache 的过期和 timer\n"
        "- tests/test_tlru.py: 测试 TLRUCache 的 ttu 和过期\n"
        "- tests/test_keys.py: 测试 hashkey、typedkey 等键函数\n",
        "- tests/test_ttl.py: 测试\n- tests/test_tlru.py: 测试\n- tests/test_keys.py: 测试\n",
    ),
    "ct-fr-notes": (
        "- src/cachetools/_cached.py : wrappers du décorateur @cached (_LockedWrapper, _ConditionWrapper, "
        "cache_info)\n"
        "- src/cachetools/_cachedmethod.py : wrappers de @cachedmethod (_LockedWrapper, _MethodDescriptor, "
        "cache_info)\n",
        "- src/cachetools/_cached.py : le décorateur de fonction @cached\n",
    ),
    "ct-de-notes": (
        "- tests/test_fifo.py: testet FIFOCache: popitem, maxsize, copy\n"
        "- tests/test_lfu.py: testet LFUCache: popitem, maxsize, getsizeof\n"
        "- tests/test_lru.py: testet LRUCache: popitem, maxsize, getsizeof\n"
        "- tests/test_rr.py: testet RRCache mit random.choice\n",
        "- tests/test_fifo.py: testet\n- tests/test_lfu.py: testet\n- tests/test_lru.py: testet\n"
        "- tests/test_rr.py: testet\n",
    ),
}


# --- what is this half's own -----------------------------------------------------------------


@pytest.fixture(scope="module")
def archive() -> Path:
    path = tasks_sixth.PIN.folder / tasks_sixth.PIN.filename
    if not path.is_file():
        pytest.skip(
            "the pinned sdist has not been fetched (python -m bench.task_suite --half sixth fetches it)"
        )
    return tasks_sixth.PIN.verified(path)


@pytest.fixture
def project(archive: Path, tmp_path: Path) -> Path:
    tasks_sixth.build_workspace(tmp_path, archive)
    return tmp_path


def _top_level(path: Path, kind: type[ast.stmt]) -> int:
    return sum(isinstance(n, kind) for n in ast.parse(path.read_text(encoding="utf-8")).body)


def test_the_counts_asked_for_are_the_projects(project: Path) -> None:
    pkg = project / PKG
    assert len(list((project / "tests").glob("test_*.py"))) == 12
    assert len(list(pkg.glob("*.py"))) == 7 and len(list(pkg.glob("*.pyi"))) == 3
    assert len([p for p in (project / "docs").iterdir() if p.is_file()]) == 2
    assert _top_level(pkg / "__init__.py", ast.ClassDef) == 9
    assert _top_level(pkg / "_decorator.py", ast.ClassDef) == 6
    assert _top_level(pkg / "_cached.py", ast.ClassDef) == 7
    assert _top_level(pkg / "keys.py", ast.FunctionDef) == 4
    tests = ast.parse((project / "tests" / "test_keys.py").read_text(encoding="utf-8"))
    assert sum(isinstance(n, ast.FunctionDef) and n.name.startswith("test") for n in ast.walk(tests)) == 6


def test_the_facts_asked_for_are_the_projects(project: Path) -> None:
    func = (project / PKG / "func.py").read_text(encoding="utf-8")
    init = (project / INIT).read_text(encoding="utf-8")
    assert "def ttl_cache(maxsize=128, ttl=600, timer=time.monotonic" in func
    assert 'raise ValueError("maxsize must be non-negative")' in init
    assert 'raise TypeError("cache must not be None")' in init
    assert "def __init__(self, maxsize, choice=random.choice" in init
    assert 'version = {attr = "cachetools.__version__"}' in (project / "pyproject.toml").read_text(
        encoding="utf-8"
    )
    assert "dependencies" not in (project / "pyproject.toml").read_text(encoding="utf-8")
    assert (project / "CHANGELOG.rst").read_text(encoding="utf-8").startswith("v8.0.2 (2026-11-18)")


def test_the_files_of_the_same_name_are_told_apart(project: Path) -> None:
    assert (project / "tests" / "__init__.py").is_file() and (project / PKG / "keys.pyi").is_file()
    assert not _task("ct-def-tlru").check("tests/__init__.py", project)
    assert not _task("ct-def-typedmethodkey").check("keys.pyi", project)
    assert not _task("ct-para-find").check("test_keys.py", project)
    stubs = _task("ct-notes-stubs")
    (project / "NOTES.md").write_text(NOTES["ct-notes-stubs"][0].replace(".pyi", ".py"), encoding="utf-8")
    assert not stubs.check("", project)  # notes of the modules are not notes of their stubs
    package = _task("ct-notes-package")
    notes = NOTES["ct-notes-package"][0].replace("- __init__.py:", "- tests/__init__.py:")
    (project / "NOTES.md").write_text(notes, encoding="utf-8")
    assert not package.check("", project)  # the tests' __init__.py is not the package's


def test_a_note_may_name_a_file_by_its_path_or_its_name_beside_chinese(project: Path) -> None:
    task = _task("ct-zh-notes")
    right = NOTES["ct-zh-notes"][0]
    for written in (right.replace("tests/", ""), right.replace("- tests/", "- ./tests/").replace(": ", "：")):
        (project / "NOTES.md").write_text(written, encoding="utf-8")
        assert task.check("", project), written
    assert notes_check.names_file("测试test_ttl.py的过期", "tests/test_ttl.py")


def test_the_edits_may_touch_the_stub_the_docs_and_the_metadata(project: Path) -> None:
    def bump(name: str, old: str, new: str) -> None:
        path = project / name
        path.write_text(path.read_text(encoding="utf-8").replace(old, new), encoding="utf-8")

    ttl, version = _task("ct-edit-ttl"), _task("ct-edit-version")
    bump(f"{PKG}/func.py", "ttl=600", "ttl=300")
    bump(f"{PKG}/func.pyi", "ttl: Any = 600", "ttl: Any = 300")
    bump("docs/index.rst", "set to 600 seconds", "set to 300 seconds")
    assert ttl.check("Done.", project) and not version.check("Done.", project)
    bump(INIT, '"8.0.2"', '"8.0.3"')
    assert not ttl.check("Done.", project)  # the version bump is not the ttl edit's to make
    for name in (f"{PKG}/func.py", f"{PKG}/func.pyi", "docs/index.rst"):
        (project / name).write_bytes(tasks_sixth.PIN.originals()[name])
    for name in ("PKG-INFO", "src/cachetools.egg-info/PKG-INFO", "CHANGELOG.rst"):
        bump(name, "8.0.2", "8.0.3")
    assert version.check("Done.", project)
    bump("setup.cfg", "tag_date = 0", "tag_date = 1")
    assert not version.check("Done.", project)


def test_the_python_floor_edit_takes_either_spelling_and_nothing_else(project: Path) -> None:
    task = _task("ct-zh-edit")
    pyproject = project / "pyproject.toml"
    original = pyproject.read_text(encoding="utf-8")
    for right in ('">= 3.12"', '">=3.12"', "'>= 3.12'"):
        pyproject.write_text(original.replace('">= 3.11"', right), encoding="utf-8")
        assert task.check("好了。", project), right
    pyproject.write_text(original.replace('">= 3.11"', '">= 3.12, < 4"'), encoding="utf-8")
    assert not task.check("好了。", project)

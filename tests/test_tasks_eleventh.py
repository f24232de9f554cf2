"""The task suite's eleventh half (jmespath 1.0.1, held out): the right and wrong reference
answers, edits and notes of every task (``tests/test_task_halves.py`` runs them, with what every
half on a public project shares: the pin, the targets, the project's size), and what is this
half's own: the counts and facts it asks are the project's (read from its files and, for what
the code does, from running it), the checkers tell apart ``exceptions.py`` from ``lexer.py``,
``parser.py`` from ``tests/test_parser.py``, ``jmespath/ast.py`` from Python's ``ast`` and from
``visitor.py``, ``ArityError`` from ``VariadictArityError``, the version 1.0.1 from the
metadata's 1.2 and Python's 3.7, the cache's 128 from the 64 it frees, ParseError's message from
the messages written alike, ``bin/jp.py``'s indent from the tests', setup.cfg's sections are
compared as parsed, and the version bump may touch setup.py (to the same version only) and the
metadata. No network: the tests that need the real project skip when its pinned sdist has not
been fetched (``python -m bench.task_suite --half eleventh`` fetches it)."""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from bench import notes_check, tasks_eleventh
from bench.task_suite import NO_ANSWER, answered

PKG = "jmespath"
INIT = f"{PKG}/__init__.py"
AST = f"{PKG}/ast.py"
COMPAT = f"{PKG}/compat.py"
EXCEPTIONS = f"{PKG}/exceptions.py"
FUNCTIONS = f"{PKG}/functions.py"
LEXER = f"{PKG}/lexer.py"
PARSER = f"{PKG}/parser.py"
VISITOR = f"{PKG}/visitor.py"
JP = "bin/jp.py"
TESTS = "tests"
EGG_PKG_INFO = "jmespath.egg-info/PKG-INFO"


def _task(name: str) -> tasks_eleventh.Task:
    return next(t for t in tasks_eleventh.TASKS if t.name == name)


# --- every task: right references pass, wrong ones fail (run in tests/test_task_halves.py) -------

# question, find and count tasks: (right answers, wrong answers)
ANSWERS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "jm-cache-size": (
        ("128 (_MAX_SIZE); past that it drops a random half of them.", "one hundred and twenty-eight"),
        ("64", "256", "1280", "10", "2"),
    ),
    "jm-jp-ast": (
        (
            "It only compiles the expression and pretty-prints its AST instead of searching any data.",
            "It prints the parsed tree (expression.parsed, via pformat) and exits 0.",
        ),
        (
            "It searches the data and prints the result as JSON.",
            "It enables ASCII output.",
            "It reads the input from a file.",
        ),
    ),
    "jm-universal": (
        ("No: [bdist_wheel] has universal = 0.", "Not universal; universal is 0."),
        ("Yes (universal = 1).", "It builds a universal wheel.", "Yes."),
    ),
    "jm-def-lexer-error": (
        (
            "jmespath/exceptions.py (lexer.py only imports it).",
            "In exceptions.py, as a subclass of ParseError.",
            "在exceptions.py里",
        ),
        ("jmespath/lexer.py", "lexer.py", "tests/test_parser.py", "exceptions.pyi"),
    ),
    "jm-def-interpreter": (
        ("jmespath/visitor.py", "In visitor.py, as a subclass of Visitor."),
        ("jmespath/parser.py", "jmespath/functions.py", "jmespath/ast.py", "visitors.py"),
    ),
    "jm-type-error": (
        (
            "No. It subclasses JMESPathError, which is a ValueError.",
            "No, it isn't: its bases are JMESPathError and then ValueError.",
        ),
        ("Yes.", "Yes, through JMESPathError.", "It subclasses TypeError."),
    ),
    "jm-version": (
        ("jmespath 1.0.1", "1.0.1 (__version__ in jmespath/__init__.py)"),
        ("1.2", "1.0", "3.7", "1.0.10", "11.0.1", "1.0.1.1", "1.0.2"),
    ),
    "jm-license": (
        ("The MIT license.", "MIT (copyright Amazon.com, Inc.)"),
        ("Apache 2.0", "BSD", "GPL", "MIT or Apache 2.0"),
    ),
    "jm-what": (
        (
            "It lets you query JSON documents with JMESPath expressions, e.g. search('foo.bar', data).",
            "JMESPath: a query language to extract elements from JSON data.",
        ),
        (
            "It is a web framework.",
            "It is a JSON parser.",
            "It validates JSON against a schema.",
        ),
    ),
    "jm-version-source": (
        (
            "Both setup.py (version='1.0.1') and jmespath/__init__.py (__version__); setup.py does not "
            "read it from the package.",
            "setup.py and __version__ in the package's __init__.py",
        ),
        (
            "setup.py",
            "jmespath/__init__.py",
            "From the git tags, via setuptools_scm.",
            "PKG-INFO",
            "PKG-INFO and setup.py",
        ),
    ),
    "jm-setup-version": (
        (
            "No: setup.py has version='1.0.1' written in it, separately from __version__.",
            "No, it's hard-coded in both places.",
        ),
        ("Yes, it imports jmespath.__version__.", "Yes.", "It reads it from jmespath/__init__.py."),
    ),
    "jm-deps": (
        (
            "No, it has no dependencies: setup.py has no install_requires.",
            "Nothing else; only the standard library.",
        ),
        ("Yes, it needs six.", "It requires simplejson.", "Yes."),
    ),
    "jm-cli": (
        (
            "Yes: setup.py installs bin/jp.py as a script (scripts=['bin/jp.py']), so you get jp.py.",
            "You get jp.py, which reads JSON from stdin or -f and prints what the expression selects.",
        ),
        (
            "No, it is only a library.",
            "No: bin/jp.py is in the source tree, but it is not installed.",
            "It has jp.py but it isn't installed.",
            "Yes, `jmespath`.",
        ),
    ),
    "jm-python": (
        (
            "Python 3.7 and newer (the classifiers list 3.7 to 3.11).",
            "3.7+ (python_requires='>=3.7').",
        ),
        ("Python 3.6+", "Python 3.8 and newer", "2.7 and 3.7+", "3.11"),
    ),
    "jm-count-pkg": (("8, with __init__.py.", "eight .py files"), ("7", "9", "13")),
    "jm-which-compat": (
        (
            "exceptions.py, functions.py, parser.py and visitor.py.",
            "jmespath/exceptions.py, jmespath/functions.py, jmespath/parser.py, jmespath/visitor.py",
            "`exceptions`, `functions`, `parser` and `visitor`",
        ),
        (
            "exceptions.py, functions.py and parser.py",
            "exceptions.py, functions.py, parser.py, visitor.py and lexer.py",
            "All of them but ast.py",
            "exceptions, functions, parser and visitor",  # module names as words, not named
            "__init__.py, exceptions.py, functions.py, parser.py and visitor.py",
        ),
    ),
    "jm-compliance": (
        (
            "No. The sdist has tests/test_compliance.py but not the tests/compliance folder it reads.",
            "No, it is not there.",
        ),
        ("Yes, tests/compliance holds the JSON test cases.", "Yes.", "It's in tests/compliance/."),
    ),
    "jm-count-ast": (("22 functions, one per node type.", "twenty-two"), ("21", "23", "20", "2")),
    "jm-count-compliance": (
        ("2: test_expression and test_error_expression.", "two"),
        ("5", "3", "1", "0"),
    ),
    "jm-para-release": (("You have jmespath 1.0.1.",), ("1.2", "1.0")),
    "jm-para-find": (
        ("jmespath/visitor.py", "In visitor.py (TreeInterpreter)."),
        ("jmespath/parser.py", "jmespath/ast.py", "tests/test_parser.py", "jmespath/functions.py"),
    ),
    "jm-para-count": (("22", "Twenty-two."), ("21", "26")),
    "jm-para-cache": (("128 entries.", "At most 128."), ("64", "256", "2")),
    "jm-zh-version": (("版本是 1.0.1。", "1.0.1"), ("1.2", "1.0", "3.7")),
    "jm-zh-python": (
        ("最低 Python 3.7（classifiers 到 3.11）。", "3.7"),
        ("3.6", "Python 3.8", "2.7", "3.11"),
    ),
    "jm-zh-def": (
        ("在 jmespath/ast.py 里。", "在ast.py里定义（visitor.py 里的是 visit_key_val_pair）"),
        ("jmespath/visitor.py", "tests/__init__.py", "jmespath/parser.py", "Python 自带的 ast 模块"),
    ),
    "jm-zh-count-exc": (("一共 9 个异常类。", "九个"), ("8", "10", "7")),
    "jm-zh-builtins": (("26 个（_func_ 开头的方法）。", "二十六个"), ("34", "25", "27", "22")),
    "jm-zh-license": (("MIT 协议。",), ("Apache 2.0", "BSD", "GPL")),
    "jm-zh-deps": (
        ("不会，它没有任何依赖。", "不需要，只用标准库。"),
        ("需要安装 six。", "Yes, it needs simplejson."),
    ),
    "jm-fr-count": (("Il y a 8 classes de test.", "huit"), ("7", "9", "42")),
    "jm-fr-exit": (
        ("Le code 1 : il écrit « syntax-error: … » sur stderr.", "1"),
        ("0", "2", "Il renvoie 0 et écrit syntax-error sur stderr."),
    ),
    "jm-es-what": (
        ("Sirve para consultar y extraer datos de documentos JSON con expresiones JMESPath.",),
        ("Es un servidor web.", "Sirve para leer archivos TOML."),
    ),
    "jm-es-arity": (
        (
            "ArityError: Expected 1 argument for function length(), received 2",
            "jmespath.exceptions.ArityError",
        ),
        ("VariadictArityError", "JMESPathTypeError", "ParseError", "TypeError"),
    ),
    "jm-de-count": (
        ("6 Testmethoden (setUp und assert_error_message nicht mitgezählt).", "sechs"),
        ("8", "7", "5"),
    ),
    "jm-de-purge": (
        (
            "Es leert den Cache der kompilierten Ausdrücke (_CACHE.clear()).",
            "It clears the expression cache.",
        ),
        (
            "Es parst den Ausdruck und legt ihn im Cache ab.",
            "Es entfernt zufällig die Hälfte der Cache-Einträge.",
            "Es löscht den Parser.",
        ),
    ),
}

# edit tasks: (the file, the right edit, wrong ones), each made from the original text
Edit = Callable[[str], str]
_INCOMPLETE = "'Invalid jmespath expression: Incomplete expression:\\n'"
EDITS: dict[str, tuple[str, Edit, tuple[Edit, ...]]] = {
    "jm-edit-version": (
        INIT,
        lambda t: t.replace("'1.0.1'", '"1.0.2"'),
        (
            lambda t: t.replace("'1.0.1'", "'1.0.1.1'"),
            lambda t: t.replace("'1.0.1'", "'1.1.0'"),
            lambda t: t.replace("'1.0.1'", "'1.0.2'") + "__version_info__ = (1, 0, 2)\n",
        ),
    ),
    "jm-edit-cache": (
        PARSER,
        lambda t: t.replace("_MAX_SIZE = 128", "_MAX_SIZE = 256  # bigger"),
        (
            lambda t: t.replace("_MAX_SIZE = 128", "_MAX_SIZE = 512"),
            lambda t: t.replace("_MAX_SIZE = 128", "_MAX_SIZE = 256").replace(
                "int(self._MAX_SIZE / 2)", "128"
            ),
            lambda t: t.replace("len(self._CACHE) > self._MAX_SIZE", "len(self._CACHE) > 256"),
        ),
    ),
    "jm-edit-lookahead": (
        PARSER,
        lambda t: t.replace("def __init__(self, lookahead=2):", "def __init__(self, lookahead = 3):"),
        (
            lambda t: t.replace("def __init__(self, lookahead=2):", "def __init__(self, lookahead=4):"),
            lambda t: t.replace("parser.Parser().parse", "parser.Parser(lookahead=3).parse"),
            lambda t: t.replace("self._buffer_size = lookahead", "self._buffer_size = 3"),
        ),
    ),
    "jm-edit-message": (
        EXCEPTIONS,
        lambda t: t.replace(tasks_eleventh._ERROR_MESSAGE, '_ERROR_MESSAGE = "Invalid JMESPath expression"'),
        (
            lambda t: t.replace("Invalid jmespath expression", "Invalid JMESPath expression"),  # all three
            lambda t: t.replace(_INCOMPLETE, _INCOMPLETE.replace("jmespath", "JMESPath")),
            lambda t: t.replace(
                tasks_eleventh._ERROR_MESSAGE, "_ERROR_MESSAGE = 'Invalid JMESPath expression.'"
            ),
        ),
    ),
    "jm-zh-edit": (
        "setup.py",
        lambda t: t.replace(tasks_eleventh._PYTHON_REQUIRES, 'python_requires=">= 3.8"'),
        (
            lambda t: t.replace(tasks_eleventh._PYTHON_REQUIRES, "python_requires='>=3.9'"),
            lambda t: t.replace(tasks_eleventh._PYTHON_REQUIRES, "python_requires='>=3.8'").replace(
                "        'Programming Language :: Python :: 3.7',\n", ""
            ),
            lambda t: t.replace(tasks_eleventh._PYTHON_REQUIRES, "python_requires='>=3.7,<3.8'"),
        ),
    ),
    "jm-es-edit": (
        "setup.cfg",
        lambda t: t.replace("universal = 0", "universal=1"),
        (
            lambda t: t.replace("universal = 0", "universal = 1 # yes"),
            lambda t: t.replace("universal = 0", "universal = true"),
            lambda t: t.replace("universal = 0", "universal = 1").replace("tag_date = 0", "tag_date = 1"),
        ),
    ),
    "jm-de-edit": (
        JP,
        lambda t: t.replace("indent=4, ensure_ascii=False", "indent=2,\n            ensure_ascii=False"),
        (
            lambda t: t.replace("indent=4, ensure_ascii=False", "indent=3, ensure_ascii=False"),
            lambda t: t.replace("indent=4, ensure_ascii=False", "indent='  ', ensure_ascii=False"),
            lambda t: t.replace("indent=4, ensure_ascii=False", "indent=2"),
        ),
    ),
}

# notes tasks: (right notes, wrong notes)
NOTES: dict[str, tuple[str, str]] = {
    "jm-notes-three": (
        "- jmespath/ast.py: one function per AST node type (field, comparator, flatten, key_val_pair, "
        "subexpression...), each returning a dict with type, children and value\n"
        "- jmespath/lexer.py: the Lexer, which tokenizes an expression into tokens (identifiers, "
        "numbers, literals) and raises LexerError or EmptyExpressionError\n"
        "- jmespath/parser.py: the Pratt (top down operator precedence) Parser using binding_power, "
        "with a cache of parsed expressions (_MAX_SIZE, purge) and ParsedResult\n",
        "- jmespath/ast.py: a module\n- jmespath/lexer.py: a module\n- jmespath/parser.py: a module\n",
    ),
    "jm-notes-tests": (
        "- tests/test_compliance.py: runs the JSON compliance cases with pytest parametrize "
        "(test_expression and test_error_expression)\n"
        "- tests/test_parser.py: TestParser and friends: parser ASTs, error messages, wildcard "
        "expressions, the parser cache and the graphviz output\n",
        "- tests/test_compliance.py: tests\n- tests/test_parser.py: tests\n",
    ),
    "jm-zh-notes": (
        "- tests/__init__.py：测试用的辅助函数 as_s_expression，把 AST 转成 s-expression 字符串\n"
        "- tests/test_compliance.py：用 pytest 跑 compliance 目录里的 JSON 用例（test_expression、"
        "test_error_expression）\n"
        "- tests/test_parser.py：解析器的单元测试（TestParser、错误信息、通配符、缓存）\n",
        "- tests/__init__.py：文件\n- tests/test_compliance.py：文件\n- tests/test_parser.py：文件\n",
    ),
    "jm-fr-notes": (
        "- jmespath/functions.py : la classe Functions (call_function, _func_sort_by, _func_max_by…), "
        "la FunctionRegistry qui remplit FUNCTION_TABLE, le décorateur signature\n"
        "- jmespath/visitor.py : le TreeInterpreter, un visiteur qui évalue l'AST sur les données, "
        "les Options (dict_cls, custom_functions) et le GraphvizVisitor\n",
        "- jmespath/functions.py : un module\n- jmespath/visitor.py : un autre module\n",
    ),
}


# --- what is this half's own -----------------------------------------------------------------


@pytest.fixture(scope="module")
def archive() -> Path:
    path = tasks_eleventh.PIN.folder / tasks_eleventh.PIN.filename
    if not path.is_file():
        pytest.skip(
            "the pinned sdist has not been fetched (python -m bench.task_suite --half eleventh fetches it)"
        )
    return tasks_eleventh.PIN.verified(path)


@pytest.fixture
def project(archive: Path, tmp_path: Path) -> Path:
    tasks_eleventh.build_workspace(tmp_path, archive)
    return tmp_path


def _top_level(path: Path, kind: type[ast.stmt]) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [n.name for n in tree.body if isinstance(n, kind)]  # type: ignore[attr-defined]


def _methods(path: Path, cls: str) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls)
    return [m.name for m in found.body if isinstance(m, ast.FunctionDef)]


def test_the_counts_asked_for_are_the_projects(project: Path) -> None:
    assert len(list((project / PKG).glob("*.py"))) == 8
    tests = project / TESTS
    assert sorted(p.name for p in tests.glob("*.py")) == [
        "__init__.py",
        "test_compliance.py",
        "test_parser.py",
    ]
    assert sorted(p.name for p in tests.glob("test_*.py")) == [Path(t).name for t in tasks_eleventh._TESTS]
    assert not (tests / "compliance").exists()
    assert len(_top_level(project / AST, ast.FunctionDef)) == 22
    compliance = _top_level(tests / "test_compliance.py", ast.FunctionDef)
    assert len(compliance) == 5 and [f for f in compliance if f.startswith("test")] == [
        "test_expression",
        "test_error_expression",
    ]
    test_classes = _top_level(tests / "test_parser.py", ast.ClassDef)
    assert len(test_classes) == 8 and all(c.startswith("Test") for c in test_classes)
    messages = _methods(tests / "test_parser.py", "TestErrorMessages")
    assert len(messages) == 8 and len([m for m in messages if m.startswith("test")]) == 6
    assert len(_top_level(project / EXCEPTIONS, ast.ClassDef)) == 9
    assert not _top_level(project / EXCEPTIONS, ast.FunctionDef)
    methods = _methods(project / FUNCTIONS, "Functions")
    assert len(methods) == 34 and len([m for m in methods if m.startswith("_func_")]) == 26
    assert "LexerError" in _top_level(project / EXCEPTIONS, ast.ClassDef)
    assert not _top_level(project / LEXER, ast.FunctionDef) and _top_level(project / LEXER, ast.ClassDef) == [
        "Lexer"
    ]
    assert "TreeInterpreter" in _top_level(project / VISITOR, ast.ClassDef)
    assert "key_val_pair" in _top_level(project / AST, ast.FunctionDef)


def test_the_facts_asked_for_are_the_projects(project: Path) -> None:
    def text(name: str) -> str:
        return (project / name).read_text(encoding="utf-8")

    setup = text("setup.py")
    assert "version='1.0.1'," in setup and tasks_eleventh._PYTHON_REQUIRES in setup
    assert "scripts=['bin/jp.py']," in setup and "license='MIT'," in setup
    assert "install_requires" not in setup and "__version__" not in setup and "import jmespath" not in setup
    assert not (project / "pyproject.toml").exists()
    assert text("setup.cfg").startswith("[bdist_wheel]\nuniversal = 0\n")
    for info in ("PKG-INFO", EGG_PKG_INFO):
        assert "Metadata-Version: 1.2\n" in text(info) and "Version: 1.0.1\n" in text(info)
        assert "Requires-Python: >=3.7\n" in text(info) and "Requires-Dist" not in text(info)
    assert "__version__ = '1.0.1'\n" in text(INIT)
    assert text("LICENSE.txt").startswith("Copyright (c) 2013 Amazon.com")
    assert "Permission is hereby granted, free of charge" in text("LICENSE.txt")
    assert "``tests/compliance`` directory" in text("README.rst")
    parser = text(PARSER)
    assert "    _MAX_SIZE = 128\n" in parser and "int(self._MAX_SIZE / 2)" in parser
    assert "    def __init__(self, lookahead=2):\n" in parser and "_PROJECTION_STOP = 10\n" in parser
    assert parser.count("lookahead=2") == 1
    exceptions = text(EXCEPTIONS)
    assert f"    {tasks_eleventh._ERROR_MESSAGE}\n" in exceptions
    assert (
        exceptions.count("Invalid jmespath expression") == 2 and "Invalid JMESPath expression" in exceptions
    )
    assert "class JMESPathTypeError(JMESPathError):" in exceptions
    assert "class JMESPathError(ValueError):" in exceptions
    jp = text(JP)
    assert jp.count("indent=4, ensure_ascii=False") == 1 and "indent=4" in text(f"{TESTS}/test_compliance.py")
    assert "parser.add_argument('--ast'" in jp and "pformat(expression.parsed)" in jp
    for module in ("exceptions", "functions", "parser", "visitor"):
        assert "from jmespath.compat import" in text(f"{PKG}/{module}.py"), module
    for module in ("__init__", "ast", "compat", "lexer"):
        assert "jmespath.compat" not in text(f"{PKG}/{module}.py"), module
    assert "def visit_key_val_pair(" in text(VISITOR) and "def key_val_pair(" in text(AST)


def test_what_the_code_does_is_what_the_answers_say(project: Path) -> None:
    script = (
        "import jmespath\n"
        "from jmespath import exceptions, functions, parser\n"
        "print(jmespath.__version__, len(functions.Functions.FUNCTION_TABLE), parser.Parser._MAX_SIZE)\n"
        "print(issubclass(exceptions.JMESPathTypeError, TypeError),"
        " issubclass(exceptions.JMESPathTypeError, ValueError))\n"
        "for expression in ('length(a, b)', 'not_null()'):\n"
        "    try:\n"
        "        jmespath.search(expression, {})\n"
        "    except exceptions.JMESPathError as e:\n"
        "        print(type(e).__name__)\n"
        "parser.Parser.purge()\n"
        "p = parser.Parser()\n"
        "for i in range(129):\n"
        "    p.parse('a%d' % i)\n"
        "print(len(parser.Parser._CACHE))\n"
        "parser.Parser.purge()\n"
        "print(len(parser.Parser._CACHE))\n"
        "print(jmespath.search('foo.bar[0]', {'foo': {'bar': ['baz']}}))\n"
    )
    env = {"PYTHONPATH": str(project)}

    def run(*argv: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, *argv],
            cwd=project,
            env=env,
            input=stdin,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    done = run("-c", script)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "1.0.1 26 128",
        "False True",
        "ArityError",
        "VariadictArityError",
        "65",
        "0",
        "baz",
    ]
    bad = run(JP, "a.", stdin='{"a": 1}')
    assert bad.returncode == 1 and bad.stderr.startswith("syntax-error: ")
    tree = run(JP, "--ast", "foo.bar")
    assert tree.returncode == 0 and "'type': 'subexpression'" in tree.stdout
    good = run(JP, "a", stdin='{"a": [1]}')
    assert good.returncode == 0 and good.stdout == "[\n    1\n]\n"


def test_the_modules_are_told_apart() -> None:
    here = Path(".")
    lexer_error = _task("jm-def-lexer-error")
    assert lexer_error.check("exceptions.py", here) and not lexer_error.check("lexer.py", here)
    for name in ("jm-def-interpreter", "jm-para-find"):
        assert _task(name).check("visitor.py", here) and not _task(name).check("parser.py", here)
        assert not _task(name).check("tests/test_parser.py", here)
    key_val = _task("jm-zh-def")
    assert key_val.check("ast.py", here) and not key_val.check("visitor.py", here)
    assert not key_val.check("Python 的 ast 模块", here)
    arity = _task("jm-es-arity")
    assert arity.check("ArityError", here) and not arity.check("VariadictArityError", here)


def test_the_numbers_are_told_apart() -> None:
    here = Path(".")
    for name in ("jm-version", "jm-para-release", "jm-zh-version"):
        assert _task(name).check("1.0.1", here), name
        assert not any(_task(name).check(v, here) for v in ("1.2", "3.7", "1.0", "1.0.2")), name
    for name in ("jm-cache-size", "jm-para-cache"):
        assert _task(name).check("128", here) and not _task(name).check("64", here), name
        assert not _task(name).check("2", here) and not _task(name).check("10", here), name
    count = _task("jm-count-compliance")
    assert count.check("2", here) and not count.check("5", here)
    builtins = _task("jm-zh-builtins")
    assert builtins.check("26", here) and not builtins.check("34", here)


def test_a_note_names_a_file_and_not_its_namesake_in_another_folder(project: Path) -> None:
    task = _task("jm-notes-three")
    right = NOTES["jm-notes-three"][0]
    (project / "NOTES.md").write_text(right.replace("jmespath/", ""), encoding="utf-8")
    assert task.check("", project)
    (project / "NOTES.md").write_text(
        right.replace("jmespath/parser.py", "tests/test_parser.py"), encoding="utf-8"
    )
    assert not task.check("", project)  # a note on the parser's tests is none on the parser
    assert notes_check.names_file("解析器在parser.py里", PARSER)
    assert not notes_check.names_file("- tests/__init__.py: helpers", INIT)
    zh = _task("jm-zh-notes")
    zh_right = NOTES["jm-zh-notes"][0]
    (project / "NOTES.md").write_text(
        zh_right.replace("tests/__init__.py", "jmespath/__init__.py"), encoding="utf-8"
    )
    assert not zh.check("", project)  # the package's __init__.py is not the tests'


def test_the_glob_leaves_out_the_tests_init(project: Path) -> None:
    task = _task("jm-notes-tests")
    right = NOTES["jm-notes-tests"][0]
    (project / "NOTES.md").write_text(
        right + "- tests/__init__.py: the as_s_expression helper\n", encoding="utf-8"
    )
    assert task.check("", project)
    without_compliance = "\n".join(line for line in right.splitlines() if "test_compliance" not in line)
    (project / "NOTES.md").write_text(without_compliance, encoding="utf-8")
    assert not task.check("", project)


def _replace(project: Path, name: str, old: str, new: str) -> None:
    path = project / name
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def test_the_version_bump_may_take_setup_py_along_but_only_to_the_same_version(project: Path) -> None:
    task = _task("jm-edit-version")
    _replace(project, INIT, "'1.0.1'", "'1.0.2'")
    assert task.check("Done.", project)
    _replace(project, "setup.py", "version='1.0.1'", "version='1.0.2'")
    for info in ("PKG-INFO", EGG_PKG_INFO):
        _replace(project, info, "Version: 1.0.1", "Version: 1.0.2")
    assert task.check("Done.", project)
    _replace(project, "setup.py", "version='1.0.2'", "version='1.1.0'")
    assert not task.check("Done.", project)
    _replace(project, "setup.py", "version='1.1.0'", "version='1.0.2'")
    _replace(project, "setup.py", "python_requires='>=3.7'", "python_requires='>=3.8'")
    assert not task.check("Done.", project)  # setup.py may take the version, nothing else


def test_only_setup_py_bumped_is_not_the_version_bumped(project: Path) -> None:
    _replace(project, "setup.py", "version='1.0.1'", "version='1.0.2'")
    assert not _task("jm-edit-version").check("Done.", project)


def test_the_message_edit_leaves_the_messages_written_alike(project: Path) -> None:
    task = _task("jm-edit-message")
    _replace(
        project, EXCEPTIONS, tasks_eleventh._ERROR_MESSAGE, "_ERROR_MESSAGE = 'Invalid JMESPath expression'"
    )
    assert task.check("Done.", project)
    _replace(
        project, f"{TESTS}/test_parser.py", "'Invalid jmespath expression: ", "'Invalid JMESPath expression: "
    )
    assert not task.check("Done.", project)  # the tests' copy of another message is not to change


def test_the_python_floor_edit_takes_either_spelling_and_the_metadata(project: Path) -> None:
    task = _task("jm-zh-edit")
    for right in ("'>=3.8'", '">= 3.8"'):
        path = project / "setup.py"
        original = tasks_eleventh.PIN.originals()["setup.py"].decode("utf-8")
        path.write_text(
            original.replace(tasks_eleventh._PYTHON_REQUIRES, f"python_requires={right}"), encoding="utf-8"
        )
        assert task.check("好了。", project), right
    _replace(project, "PKG-INFO", "Requires-Python: >=3.7", "Requires-Python: >=3.8")
    assert task.check("好了。", project)


def test_setup_cfg_is_compared_as_sections(project: Path) -> None:
    task = _task("jm-es-edit")
    cfg = project / "setup.cfg"
    original = cfg.read_text(encoding="utf-8")
    cfg.write_text(
        original.replace("universal = 0", "universal: 1").replace("\n\n", "\n\n\n"), encoding="utf-8"
    )
    assert task.check("Hecho.", project)
    cfg.write_text(original.replace("universal = 0", "universal = 1") + "[extra]\nx = 1\n", encoding="utf-8")
    assert not task.check("Hecho.", project)
    cfg.write_text("[bdist_wheel\nuniversal = 1\n", encoding="utf-8")
    assert not task.check("Hecho.", project)  # no longer parses


def test_the_jp_indent_is_not_the_tests_indent(project: Path) -> None:
    task = _task("jm-de-edit")
    _replace(project, f"{TESTS}/test_compliance.py", "indent=4", "indent=2")
    assert not task.check("Fertig.", project)


def test_no_final_answer_passes_no_question_however_its_checker_reads_no() -> None:
    """jm-compliance passed on the harness's "(no final answer)": the yes/no checker read its
    "no". A question, a find or a count needs an answer; a change or a notes task is checked on
    the files."""
    by_kind = {task.kind: task for task in tasks_eleventh.TASKS}
    assert not answered(by_kind["question"], NO_ANSWER) and not answered(by_kind["count"], f" {NO_ANSWER}\n")
    assert answered(by_kind["question"], "No, the folder is not there.")
    assert answered(by_kind["edit"], NO_ANSWER) and answered(by_kind["notes"], NO_ANSWER)

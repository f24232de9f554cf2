"""The suite's eleventh half, ``eleventh``: held-out tasks nobody tuned on, written as a user of
an agent harness types them, on an eleventh public project nobody here wrote: jmespath 1.0.1
(JMESPath, a query language for JSON: ``jmespath.search("foo.bar[0]", data)`` picks elements out
of a JSON document; its registry sdist: 22 files, 13 of them .py, a ``jmespath`` package of eight
modules (``__init__.py``, which holds the version and ``search``/``compile``, ``ast.py``,
``compat.py``, ``exceptions.py``, ``functions.py``, ``lexer.py``, ``parser.py`` and
``visitor.py``), a ``tests/`` folder of ``__init__.py``, ``test_compliance.py`` and
``test_parser.py``, the ``bin/jp.py`` command-line script that ``setup.py`` installs, setup.py
and setup.cfg (no pyproject.toml), PKG-INFO and the ``jmespath.egg-info`` folder, README.rst,
LICENSE.txt and MANIFEST.in).

The sdist is a ``bench/sdist.py`` pin (``pip download --no-deps --no-binary :all:``, sha256
checked, never committed), unpacked into each task's fresh workspace. Tasks of every kind:
questions that name a file, a symbol, or neither (version, license, Python versions, what the
project does, where its version comes from, its dependencies, whether it has a command-line
tool), folder questions, counts in a file, yes/no questions, edits (``bench/task_checks.py``:
the edited file parsed and compared with the pinned original with only the asked change made,
every other file untouched: a version, two constants, a default argument, a keyword argument,
a setup.py value and a setup.cfg value, two that name no file; setup.cfg is compared as parsed
sections here, as ``task_checks`` compares TOML), a note per file of a set (named files, a glob,
a folder in words); in English, Chinese, French, Spanish and German, and English paraphrases of
this half's own tasks. Each task lists its ``targets``.

The project has names a checker must tell apart: ``LexerError``, defined in ``exceptions.py``
and not in ``lexer.py``; ``parser.py`` beside ``tests/test_parser.py``; ``jmespath/ast.py`` (the
node builders) beside Python's own ``ast`` module and ``key_val_pair`` beside the
``visit_key_val_pair`` of ``visitor.py``; ``jmespath/__init__.py`` beside ``tests/__init__.py``;
``ArityError`` beside ``VariadictArityError``, and ``JMESPathTypeError``, a ``ValueError``
(through ``JMESPathError``), not a ``TypeError``; ParseError's ``_ERROR_MESSAGE`` beside the
messages written alike of ``IncompleteExpressionError`` and ``EmptyExpressionError``; the
version 1.0.1 (written twice, in ``jmespath/__init__.py`` and ``setup.py``; the bump wants
``__version__`` and lets setup.py's copy follow, not differ) beside PKG-INFO's
``Metadata-Version: 1.2`` and Python 3.7; the cache's 128 (``_MAX_SIZE``) beside the 64 it
frees at once, the ``lookahead=2`` and ``_PROJECTION_STOP = 10``; ``bin/jp.py``'s
``indent=4`` beside the ``indent=4`` of ``tests/test_compliance.py``; counts that sit beside
bigger ones: 22 functions in ``ast.py``, 2 test functions among the 5 functions of
``test_compliance.py``, 6 tests among the 8 methods of ``TestErrorMessages``, 8 test classes,
9 exception classes, 26 built-in functions among the 34 methods of ``Functions``; a license that
is MIT (the copyright is Amazon's), not Apache; no dependencies; a command-line tool
(``jp.py``) that is installed; and the ``tests/compliance`` folder the README names, which the
sdist does not have.
"""

from __future__ import annotations

import configparser
import re
from pathlib import Path

from bench import task_checks
from bench.sdist import Pinned
from bench.task_checks import Changes, any_of, file_named, none_of, number
from bench.tasks import Checker, Task, says

HALF = "eleventh"
PROJECT = "jmespath"
PIN = Pinned("jmespath", "1.0.1", "90261b206d6defd58fdd5e85f478bf633a2901798906be2ad389150c5c60edbe")


def build_workspace(workspace: Path, archive: Path | None = None) -> list[str]:
    """jmespath 1.0.1 in ``workspace`` (fetched and verified unless ``archive`` is given)."""
    return PIN.build(workspace, archive)


_EDITS = task_checks.Edits(PIN.originals)
python_edit = _EDITS.python_edit


def cfg_edit(path: str, changes: Changes) -> Checker:
    """``path`` parses as an INI file (setup.cfg) and holds the same sections, keys and values as
    the original with each text change made; no other file of the project changed."""

    def check(_answer: str, ws: Path) -> bool:
        files = PIN.originals()
        expected = _sections(task_checks.changed(files[path].decode("utf-8"), changes))
        edited = task_checks.read_text(ws / path)
        return (
            edited is not None
            and expected is not None
            and _sections(edited) == expected
            and task_checks.others_unchanged(ws, files, {path})
        )

    return check


def _sections(text: str) -> dict[str, dict[str, str]] | None:
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(text)
    except configparser.Error:
        return None
    return {name: dict(parser[name]) for name in parser.sections()}


def python_as(path: str, *versions: Changes) -> Checker:
    """``path`` parses as Python and is the original with one of ``versions`` of the changes made
    (no change at all is one version: ``()``); the other files are not looked at."""

    def check(_answer: str, ws: Path) -> bool:
        original = PIN.originals()[path].decode("utf-8")
        edited = task_checks.read_text(ws / path)
        if edited is None or task_checks.tree(edited) is None:
            return False
        return task_checks.tree(edited) in {
            task_checks.tree(task_checks.changed(original, c)) for c in versions
        }

    return check


def all_of(*checks: Checker) -> Checker:
    """Every one of ``checks`` passes."""
    return lambda answer, ws: all(check(answer, ws) for check in checks)


# --- the tasks -------------------------------------------------------------------------------

_PKG = "jmespath"
_INIT = f"{_PKG}/__init__.py"
_AST = f"{_PKG}/ast.py"
_EXCEPTIONS = f"{_PKG}/exceptions.py"
_FUNCTIONS = f"{_PKG}/functions.py"
_LEXER = f"{_PKG}/lexer.py"
_PARSER = f"{_PKG}/parser.py"
_VISITOR = f"{_PKG}/visitor.py"
_JP = "bin/jp.py"
_TESTS_DIR = "tests"
_TESTS_INIT = f"{_TESTS_DIR}/__init__.py"
_TEST_COMPLIANCE = f"{_TESTS_DIR}/test_compliance.py"
_TEST_PARSER = f"{_TESTS_DIR}/test_parser.py"
_TESTS = (_TEST_COMPLIANCE, _TEST_PARSER)
_EGG_PKG_INFO = "jmespath.egg-info/PKG-INFO"


def _release(version: str) -> str:
    """``version`` whole: not a part of 11.0.1, of 1.0.10 nor of 1.0.1.1."""
    return rf"(?<![\d.]){re.escape(version)}(?![\d]|\.\d)"


_V = _release("1.0.1")
_PY37 = r"(?<![\d.])3\.7(?![\d])"
_PY36 = r"(?<![\d.])3\.6(?![\d])"
_PY27 = r"(?<![\d.])2\.7(?![\d])"
_META = (_INIT, "setup.py", "PKG-INFO")
_LICENSE = ("LICENSE.txt", "setup.py", "PKG-INFO")
_PYTHON = ("setup.py", "PKG-INFO")
# MIT (LICENSE.txt, license='MIT' and the classifier), not another license.
_MIT = none_of(says(r"\bMIT\b"), r"\bBSD\b", r"\bApache\b", r"\bL?GPL\b")
# What the project does: querying or picking data out of JSON documents, in any words.
_WHAT = says(
    r"\bJSON\b",
    r"quer|search|extract|select|filter|match|express|consult|extra[ei]|busca|abfrag|durchsuch|"
    r"auswähl|requête|cherch|查询|提取|检索|表达式|筛选",
)
_NO = r"\bno\b|\bnone\b|\bnot\b|n't|\bnothing\b|\bzero\b|没有|不需要|不会|无|\bpas\b|aucune|ninguna|keine"
# A yes/no answer that says no and not yes.
_SAYS_NO = none_of(says(_NO), r"\byes\b")
# An answer that names something the project needs ("it needs six"), not "needs nothing".
_NEEDS = r"\b(?:requires?|needs?|depends on)\s+(?!no\b|nothing|none\b|any|python\b|only python\b)\w"
# The files that hold the version: setup.py and the package's __init__.py (or __version__).
_VERSION_FILES = says(r"(?<![\w.-])setup\.py\b", r"(?<![\w-])__init__\.py\b|__version__")
# The command-line tool: bin/jp.py, which setup.py installs (scripts=['bin/jp.py']).
_CLI = none_of(
    says(r"(?<![\w.-])jp\.py\b"),
    r"^\W*no\b",
    r"\bnot (?:be )?installed\b",
    r"(?:isn't|is not|won't be|aren't) installed",
    r"没有",
    r"不会",
)
# What --ast does: prints the parsed tree instead of searching.
_PRINTS_AST = says(
    r"\bAST\b|syntax tree|parse tree|parsed",
    r"print|show|display|output|dump|pformat|writ",
)
# What Parser.purge does: empties the cache (all of it, not the random half that
# _free_cache_entries drops).
_PURGE = none_of(
    says(r"cache|缓存|zwischenspeicher", r"clear|empt|leer|lösch|purg|entfern|reset|清"),
    r"hälfte|\bhalf\b|zufällig|random|(?<![\d.])64(?![\d])",
)


def _module(name: str) -> str:
    """A module of the package named as a file (``parser.py``, ``jmespath/parser.py``) or
    as a module (``jmespath.parser``, `` `parser` ``), not as a word ("the parser")."""
    return rf"(?<![\w.-]){name}\.py\b|\bjmespath\.{name}\b|`{name}`"


# The four modules that import from jmespath.compat, and none of those that do not.
_IMPORT_COMPAT = none_of(
    says(*(_module(n) for n in ("exceptions", "functions", "parser", "visitor"))),
    r"(?<![\w.-])lexer\.py\b",
    r"(?<![\w.-])ast\.py\b",
    r"(?<![\w-])__init__\.py\b",
    r"(?<![\w.-])jp\.py\b",
)
_EXCEPTIONS_FILE = file_named("exceptions.py")
_VISITOR_FILE = file_named("visitor.py")
_AST_FILE = file_named("ast.py")
_ARITY = says(r"\bArityError\b")

# Facts a note may give of each file: words of the file itself (lower-case), then the same facts
# in other words (the words a Chinese, French, Spanish or German note uses).
_FACTS: dict[str, tuple[str, ...]] = {
    _AST: ("ast nodes", "node", "children", "comparator", "current_node", "expref", "field",
           "filter_projection", "flatten", "key_val_pair", "multi_select", "subexpression",
           "value_projection", "dict"),
    _LEXER: ("lexer", "token", "lexererror", "emptyexpressionerror", "simple_tokens",
             "identifier", "whitespace", "literal"),
    _PARSER: ("parser", "pratt", "top down operator precedence", "binding power", "binding_power",
              "parsedresult", "cache", "_max_size", "purge", "lookahead"),
    _FUNCTIONS: ("signature", "functionregistry", "function_table", "_func_", "call_function",
                 "types_map", "arity", "type check", "jmespath types"),
    _VISITOR: ("treeinterpreter", "visitor", "graphvizvisitor", "options", "dict_cls",
               "custom_functions", "visit_", "interpreter", "graphviz"),
    _TESTS_INIT: ("as_s_expression", "s-expression", "helper", "unittest", "ordereddict"),
    _TEST_COMPLIANCE: ("compliance", "json", "test_expression", "test_error_expression",
                       "load_cases", "parametrize", "pytest"),
    _TEST_PARSER: ("testparser", "parser", "errormessages", "wildcard", "cache",
                   "graphviz", "parsedresult"),
}  # fmt: skip
_TRANSLATED: dict[str, tuple[str, ...]] = {
    _AST: ("语法树", "节点", "nœud", "noeud", "arbre", "nodo", "knoten"),
    _LEXER: ("词法", "分词", "jeton", "lexical", "léxico"),
    _PARSER: ("解析", "语法分析", "syntaxique", "analizador", "缓存"),
    _FUNCTIONS: ("内置函数", "函数", "fonctions", "funciones", "funktionen", "intégrée"),
    _VISITOR: ("解释器", "访问者", "求值", "interpréteur", "interprète", "évalu", "visiteur",
               "intérprete", "auswert"),
    _TESTS_INIT: ("辅助", "工具函数", "帮助函数", "s 表达式", "s表达式"),
    _TEST_COMPLIANCE: ("合规", "一致性", "规范", "conformité", "conformidad", "konformität"),
    _TEST_PARSER: ("解析器", "语法分析", "错误信息", "通配符", "analyseur", "analizador"),
}  # fmt: skip


def _facts(*paths: str) -> dict[str, tuple[str, ...]]:
    return {p: _FACTS[p] + _TRANSLATED[p] for p in paths}


_make = task_checks.TaskMaker(HALF, PROJECT, _facts)
_t, _edit, _notes = _make.t, _make.edit, _make.notes

# The version bump: __version__ in jmespath/__init__.py; setup.py's own copy may follow (to the
# same version, nothing else), and so may the metadata.
_VERSION_BUMP = all_of(
    python_edit(_INIT, (("'1.0.1'", "'1.0.2'"),), ("setup.py", "PKG-INFO", _EGG_PKG_INFO)),
    python_as("setup.py", (), (("version='1.0.1'", "version='1.0.2'"),)),
)
_PYTHON_REQUIRES = "python_requires='>=3.7'"
# ParseError's own message; IncompleteExpressionError's and EmptyExpressionError's are written alike.
_ERROR_MESSAGE = "_ERROR_MESSAGE = 'Invalid jmespath expression'"


def _python_requires(version: str) -> Checker:
    """setup.py's ``python_requires`` raised to ``version`` (``>=3.8`` or ``>= 3.8``); the
    metadata may follow."""
    return any_of(
        *(
            python_edit(
                "setup.py", ((_PYTHON_REQUIRES, f"python_requires='{v}'"),), ("PKG-INFO", _EGG_PKG_INFO)
            )
            for v in (f">={version}", f">= {version}")
        )
    )


TASKS: tuple[Task, ...] = (
    # questions that name a file
    _t("jm-cache-size", "question", "How many parsed expressions can jmespath/parser.py hold in its cache "
       "before it starts dropping some?", number(128, "one hundred and twenty-eight"), (_PARSER,)),
    _t("jm-jp-ast", "question", "What happens if I run bin/jp.py with --ast?", _PRINTS_AST, (_JP,)),
    _t("jm-universal", "question", "Is setup.cfg set up to build a universal wheel?", _SAYS_NO,
       ("setup.cfg",)),
    # questions that name a symbol
    _t("jm-def-lexer-error", "find", "In which file is LexerError defined?", _EXCEPTIONS_FILE,
       (_EXCEPTIONS,)),
    _t("jm-def-interpreter", "find", "Where can I find the TreeInterpreter class?", _VISITOR_FILE,
       (_VISITOR,)),
    _t("jm-type-error", "question", "Is JMESPathTypeError a subclass of Python's built-in TypeError?",
       _SAYS_NO, (_EXCEPTIONS,)),
    # questions that name neither
    _t("jm-version", "question", "Which version of jmespath do I have here?", says(_V), _META),
    _t("jm-license", "question", "Under what license can I use this code?", _MIT, _LICENSE),
    _t("jm-what", "question", "Give me one sentence on what this library is for.", _WHAT, ("README.rst",)),
    _t("jm-version-source", "find", "If I want to change the version number, which files do I have to "
       "edit?", _VERSION_FILES, ("setup.py", _INIT)),
    _t("jm-setup-version", "question", "Does setup.py get its version number from the package code?",
       _SAYS_NO, ("setup.py", _INIT)),
    _t("jm-deps", "question", "Will installing it pull in any other packages?",
       none_of(says(_NO), r"\byes\b", _NEEDS), ("setup.py", "PKG-INFO")),
    _t("jm-cli", "question", "Do I get a command I can run in the terminal when I install this?", _CLI,
       ("setup.py", _JP)),
    _t("jm-python", "question", "What Python versions is it meant to work with?",
       none_of(says(_PY37), _PY36, _PY27), _PYTHON),
    # folder questions
    _t("jm-count-pkg", "count", "How many .py files are there in the jmespath folder?", number(8, "eight"),
       (_PKG,)),
    _t("jm-which-compat", "find", "Which modules in the jmespath folder import from jmespath.compat?",
       _IMPORT_COMPAT, (_PKG,)),
    _t("jm-compliance", "question", "The README mentions a tests/compliance folder with JSON test cases. Is "
       "that folder in this checkout?", _SAYS_NO, ("README.rst", _TESTS_DIR)),
    # counts in a file
    _t("jm-count-ast", "count", "How many functions are defined in jmespath/ast.py?",
       number(22, "twenty-two"), (_AST,)),
    _t("jm-count-compliance", "count", "How many test functions are in tests/test_compliance.py?",
       number(2, "two"), (_TEST_COMPLIANCE,)),
    # edits
    _edit("jm-edit-version", "Bump the version to 1.0.2.", _VERSION_BUMP, (_INIT, "setup.py")),
    _edit("jm-edit-cache", "Make the compiled-expression cache keep up to 256 expressions instead of 128.",
          python_edit(_PARSER, (("_MAX_SIZE = 128", "_MAX_SIZE = 256"),)), (_PARSER,)),
    _edit("jm-edit-lookahead", "In jmespath/parser.py, change Parser's default to lookahead=3.",
          python_edit(_PARSER, (("def __init__(self, lookahead=2):", "def __init__(self, lookahead=3):"),)),
          (_PARSER,)),
    _edit("jm-edit-message", "In jmespath/exceptions.py, make ParseError's default error message say "
          "'Invalid JMESPath expression' instead of 'Invalid jmespath expression'.",
          python_edit(_EXCEPTIONS, ((_ERROR_MESSAGE, "_ERROR_MESSAGE = 'Invalid JMESPath expression'"),)),
          (_EXCEPTIONS,)),
    # a note per file of a set
    _notes("jm-notes-three", "Read jmespath/ast.py, jmespath/lexer.py and jmespath/parser.py and jot down "
           "a one-line note on what each of them does.", (_AST, _LEXER, _PARSER), (_AST, _LEXER, _PARSER)),
    _notes("jm-notes-tests", "Add a short note for every file matching tests/test_*.py saying what it "
           "checks.", _TESTS, _TESTS),
    # English paraphrases of this half's tasks
    _t("jm-para-release", "question", "What release number does this copy of the library carry?", says(_V),
       _META),
    _t("jm-para-find", "find", "I'd like to read the code that walks the parsed tree and works out the "
       "result against my data. Which file is that?", _VISITOR_FILE, (_VISITOR,)),
    _t("jm-para-count", "count", "jmespath/ast.py has one small helper per kind of tree node. How many of "
       "those functions are there?", number(22, "twenty-two"), (_AST,)),
    _t("jm-para-cache", "question", "How big can the parser's cache of compiled expressions get?",
       number(128, "one hundred and twenty-eight"), (_PARSER,)),
    # in Chinese
    _t("jm-zh-version", "question", "这份代码是 jmespath 的哪个版本？", says(_V), _META),
    _t("jm-zh-python", "question", "这个库最低要求哪个 Python 版本？", none_of(says(_PY37), _PY36, _PY27),
       _PYTHON),
    _t("jm-zh-def", "find", "key_val_pair 这个函数定义在哪个文件里？", _AST_FILE, (_AST,)),
    _t("jm-zh-count-exc", "count", "jmespath/exceptions.py 里一共定义了多少个异常类？", number(9, "九"),
       (_EXCEPTIONS,)),
    _t("jm-zh-builtins", "count", "表达式里能直接调用的内置函数，jmespath/functions.py 一共实现了多少个？",
       number(26, "二十六"), (_FUNCTIONS,)),
    _t("jm-zh-license", "question", "这个项目用的是什么开源协议？", _MIT, _LICENSE),
    _t("jm-zh-deps", "question", "装 jmespath 的时候会顺带装别的依赖包吗？",
       none_of(says(_NO), r"\byes\b", _NEEDS), ("setup.py", "PKG-INFO")),
    _edit("jm-zh-edit", "我们不再支持 Python 3.7 了：把 setup.py 里的 python_requires 改成 >=3.8，"
          "其他地方先别动。",
          _python_requires("3.8"), ("setup.py",)),
    _notes("jm-zh-notes", "把 tests 文件夹里的每个 .py 文件都读一遍，每个写一行笔记，说明它是做什么的。",
           (_TESTS_INIT, *_TESTS), (_TESTS_DIR,)),
    # in French
    _t("jm-fr-count", "count", "Combien de classes de test y a-t-il dans tests/test_parser.py ?",
       number(8, "huit"), (_TEST_PARSER,)),
    _t("jm-fr-exit", "question", "Quel code de retour bin/jp.py donne-t-il quand l'expression contient une "
       "erreur de syntaxe ?", number(1), (_JP,)),
    _notes("jm-fr-notes", "Écris une note d'une ligne sur le rôle de jmespath/functions.py, et une autre sur "
           "jmespath/visitor.py.", (_FUNCTIONS, _VISITOR), (_FUNCTIONS, _VISITOR)),
    # in Spanish
    _t("jm-es-what", "question", "¿Qué hace esta biblioteca? Dímelo en una frase.", _WHAT, ("README.rst",)),
    _t("jm-es-arity", "question", "¿Qué excepción lanza jmespath.search('length(a, b)', {})?", _ARITY,
       (_FUNCTIONS, _EXCEPTIONS)),
    _edit("jm-es-edit", "En setup.cfg, cambia universal de 0 a 1 en la sección [bdist_wheel].",
          cfg_edit("setup.cfg", (("universal = 0", "universal = 1"),)), ("setup.cfg",)),
    # in German
    _t("jm-de-count", "count", "Wie viele Testmethoden hat die Klasse TestErrorMessages in "
       "tests/test_parser.py?", number(6, "sechs"), (_TEST_PARSER,)),
    _t("jm-de-purge", "question", "Was macht Parser.purge()?", _PURGE, (_PARSER,)),
    _edit("jm-de-edit", "Lass bin/jp.py das JSON mit zwei Leerzeichen statt vier einrücken.",
          python_edit(_JP, (("indent=4, ensure_ascii=False", "indent=2, ensure_ascii=False"),)), (_JP,)),
)  # fmt: skip

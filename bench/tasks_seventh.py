"""The suite's seventh half, ``seventh``: held-out tasks nobody tuned on, written as a user of an
agent harness types them, on a seventh public project nobody here wrote: tabulate 0.9.0 (the
pretty-printer of tabular data, a library and a command-line tool; its registry sdist: 32 files,
11 of them .py, a ``tabulate`` package of two modules (one long ``__init__.py`` and the
setuptools_scm ``version.py``) beside its ``tabulate.egg-info`` metadata, a ``test/`` folder,
``benchmark.py``, pyproject.toml and setup.cfg, tox.ini, README and README.md, LICENSE and
CHANGELOG).

The sdist is a ``bench/sdist.py`` pin (``pip download --no-deps --no-binary :all:``, sha256
checked, never committed), unpacked into each task's fresh workspace. Tasks of every kind:
questions that name a file, a symbol, or neither (version, license, Python versions, what the
project does, where its version comes from, its dependencies, its command-line tool), folder
questions, counts in a file, edits (``bench/task_checks.py``: the edited file parsed and compared
with the pinned original with only the asked change made, every other file untouched: a
version, a constant, a default argument, a TOML value, two that name no file), a note per file
of a set (named files, a glob, a folder in words); in English, Chinese, French, Spanish and
German, and English paraphrases of this half's own tasks. Each task lists its ``targets``.

The project has names a checker must tell apart: the folder is ``test/``, not ``tests/``; the
package ``tabulate/`` and its function ``tabulate``; ``README`` (one line naming README.md)
beside ``README.md``; ``version.py`` beside ``__init__.py``; PKG-INFO at the top and in the
egg-info folder.
"""

from __future__ import annotations

from pathlib import Path

from bench import task_checks
from bench.sdist import Pinned
from bench.task_checks import any_of, file_named, none_of, number
from bench.tasks import Checker, Task, says

HALF = "seventh"
PROJECT = "tabulate"
PIN = Pinned("tabulate", "0.9.0", "0095b12bf5966de529c0feb1fa08671671b3368eec77d7ef7ab114be2c068b3c")


def build_workspace(workspace: Path, archive: Path | None = None) -> list[str]:
    """tabulate 0.9.0 in ``workspace`` (fetched and verified unless ``archive`` is given)."""
    return PIN.build(workspace, archive)


_EDITS = task_checks.Edits(PIN.originals)
python_edit, toml_edit = _EDITS.python_edit, _EDITS.toml_edit


# --- the tasks -------------------------------------------------------------------------------

_PKG = "tabulate"
_INIT = f"{_PKG}/__init__.py"
_VERSION = f"{_PKG}/version.py"
_EGG_INFO = "tabulate.egg-info/PKG-INFO"
_V = r"(?<![\d.])0\.9\.0(?![\d]|\.\d)"
_PY37 = r"(?<![\d.])3\.7(?![\d])"
_META = (_VERSION, "PKG-INFO")
_LICENSE = ("LICENSE", "pyproject.toml", "PKG-INFO")
_PYTHON = ("pyproject.toml", "PKG-INFO")
_MIT = says(r"\bMIT\b")
# What the project does: prints data as a text table, in any words.
_WHAT = says(
    r"tabl|tabul|表|Tabelle",  # "tabular data" too: the checker had refused it (a right answer)
    r"print|format|display|render|show|text|output|pretty|打印|输出|格式|显示|文本|affich|imprim|"
    r"mostr|formate|texto|salida|ausgeb|anzeig|formatier|\bText",
)
# "simple", the default table format, and not "simple_grid" or "simple_outline".
_SIMPLE = says(r"(?<![\w-])simple(?![\w-])")
# "g", the default float format, as a format spec ("g", 'g', `g`, format g), not a letter of a word.
_G = says(r"(?<![\w.%\\])g(?![\w])")
_INIT_FILE = file_named("__init__.py")
_NO = r"\bno\b|\bnone\b|\bnot\b|n't|\bnothing\b|没有|不需要|无|\bpas\b|aucune|ninguna|keine"
_OPTIONAL = r"option|extra|widechars|可选|facultati|opcional|optional"
# A folder "tests" named as a folder (the tests are in test/, not tests/), not the word "tests".
_TESTS_FOLDER = r"(?<![\w./-])tests[/\\]|[`'\"]tests[`'\"]|\btests (?:folder|directory)|\btests 文件夹"
_TESTS = tuple(
    f"test/test_{n}.py" for n in ("api", "cli", "input", "internal", "output", "regression", "textwrapper")
)

# Facts a note may give of each file: words of the file itself (lower-case), then the same facts
# in other words (the words a Chinese, French, Spanish or German note uses).
_FACTS: dict[str, tuple[str, ...]] = {
    _INIT: ("pretty-print", "tabular", "table format", "latex", "html", "column", "align", "wcwidth"),
    _VERSION: ("setuptools_scm", "__version__", "version_tuple", "generated", "version"),
    "test/common.py": ("assert_equal", "assert_in", "pipe", "expected", "pytest", "skip", "raises"),
    "benchmark.py": ("timeit", "prettytable", "texttable", "asciitable", "benchmark", "csv"),
    "test/test_api.py": ("api", "signature", "tabulate_formats", "simple_separated_format"),
    "test/test_cli.py": ("command-line", "subprocess", "stdin", "--format"),
    "test/test_input.py": ("tabular data", "numpy", "pandas", "dict", "namedtuple", "dataclass", "headers"),
    "test/test_internal.py": ("internal", "_align_column", "wrap", "multiline"),
    "test/test_output.py": ("output", "tablefmt", "grid", "latex", "html", "pipe"),
    "test/test_regression.py": ("regression", "issue", "ansi", "unicode"),
    "test/test_textwrapper.py": ("textwrapper", "wrap", "wide", "_customtextwrap", "wcwidth"),
}
_TRANSLATED: dict[str, tuple[str, ...]] = {
    _INIT: ("表格", "打印", "格式", "tableau", "tabla", "tabelle"),
    _VERSION: ("版本", "自动生成", "生成", "générée", "generado", "erzeugt"),
    "test/common.py": ("辅助", "断言", "helper", "assert", "assertion", "aide", "utilitaire"),
    "benchmark.py": ("性能", "基准", "速度", "performance", "vitesse", "compar", "rendimiento", "velocidad"),
    "test/test_api.py": ("接口", "签名"),
    "test/test_cli.py": ("命令行", "command line", "cli"),
    "test/test_input.py": ("输入", "input", "数据"),
    "test/test_internal.py": ("内部",),
    "test/test_output.py": ("输出", "格式"),
    "test/test_regression.py": ("回归", "bug"),
    "test/test_textwrapper.py": ("换行", "折行", "宽字符"),
}


def _facts(*paths: str) -> dict[str, tuple[str, ...]]:
    return {p: _FACTS[p] + _TRANSLATED[p] for p in paths}


_PACKAGE = (_INIT, _VERSION)

_make = task_checks.TaskMaker(HALF, PROJECT, _facts)
_t, _edit, _notes = _make.t, _make.edit, _make.notes


def _requires_python(version: str) -> Checker:
    return _EDITS.requires_python('requires-python = ">=3.7"', version, ("PKG-INFO", _EGG_INFO))


_BUMP = ("PKG-INFO", _EGG_INFO, "CHANGELOG")
# The version bump: the version string alone, or with the version tuple beside it.
_VERSION_BUMP = _EDITS.version_bump(_VERSION, (("'0.9.0'", "'0.9.1'"), ("(0, 9, 0)", "(0, 9, 1)")), _BUMP)


TASKS: tuple[Task, ...] = (
    # questions that name a file
    _t("tb-tox-ignore", "question", "Which file does the pytest command in tox.ini skip?",
       file_named("benchmark.py"), ("tox.ini",)),
    # questions that name a symbol
    _t("tb-def-ssf", "find", "Which file defines simple_separated_format?", _INIT_FILE, (_INIT,)),
    _t("tb-default-fmt", "question", "What is the default tablefmt of the tabulate() function?", _SIMPLE,
       (_INIT,)),
    _t("tb-bad-format-exit", "question", "When the tabulate command-line tool is given a table format it "
       "does not support, what exit code does it exit with?", number(3, "three"), (_INIT,)),
    # questions that name neither
    _t("tb-version", "question", "What version is this?", says(_V), _META),
    _t("tb-license", "question", "What license is this project under?", _MIT, _LICENSE),
    _t("tb-what", "question", "What does this project do? One sentence please.", _WHAT, ("README.md",)),
    _t("tb-version-source", "find", "There's no version number in pyproject.toml. Where does the package "
       "get its version from?", any_of(says(r"setuptools[_-]scm|\bgit tags?\b"), file_named("version.py")),
       ("pyproject.toml", _VERSION)),
    _t("tb-deps", "question", "Does tabulate need any other packages installed to run?",
       none_of(any_of(says(_NO), says(r"wcwidth", _OPTIONAL)), r"\byes\b"), ("pyproject.toml",)),
    _t("tb-cli", "question", "Does it install a command-line program? Which Python function does it run?",
       says(r"_main\b"), ("pyproject.toml", _INIT)),
    # folder questions
    _t("tb-count-tests", "count", "How many test_*.py files are in the test folder?", number(7, "seven"),
       ("test",)),
    _t("tb-test-folder", "find", "Which folder are the tests in?",
       none_of(says(r"(?<![\w./-])test(?:[/\\]|(?![\w.-]))"), _TESTS_FOLDER), ("test",)),
    # counts in a file
    _t("tb-count-classes", "count", "How many class statements are there in tabulate/__init__.py?",
       number(2, "two"), (_INIT,)),
    # edits
    _edit("tb-edit-version", "Bump the version to 0.9.1.", _VERSION_BUMP, (_VERSION,)),
    _edit("tb-edit-padding", "In tabulate/__init__.py, change MIN_PADDING from 2 to 1.",
          python_edit(_INIT, (("MIN_PADDING = 2", "MIN_PADDING = 1"),)), (_INIT,)),
    _edit("tb-edit-whitespace", "By default tabulate strips leading and trailing whitespace from cells. "
          "Make it keep the whitespace by default instead.",
          python_edit(_INIT, (("PRESERVE_WHITESPACE = False", "PRESERVE_WHITESPACE = True"),)), (_INIT,)),
    # a note per file of a set
    _notes("tb-notes-three", "Write a one-line note for each of tabulate/version.py, test/common.py and "
           "benchmark.py saying what it is for.",
           (_VERSION, "test/common.py", "benchmark.py"), (_VERSION, "test/common.py", "benchmark.py")),
    _notes("tb-notes-tests", "For each test/test_*.py file, add a one-line note on what it tests.",
           _TESTS, _TESTS),
    # English paraphrases of this half's tasks
    _t("tb-para-release", "question", "Which release of tabulate do I have here?", says(_V), _META),
    _t("tb-para-find", "find", "I want to read the code that turns a list of rows into a text table. "
       "Which file is it in?", _INIT_FILE, (_INIT,)),
    _t("tb-para-count", "count", "How many test modules (test_*.py) does the test folder have?",
       number(7, "seven"), ("test",)),
    _t("tb-para-fmt", "question", "If I call tabulate() without choosing a table format, which format do "
       "I get?", _SIMPLE, (_INIT,)),
    # in Chinese
    _t("tb-zh-version", "question", "这个库现在是什么版本？", says(_V), _META),
    _t("tb-zh-python", "question", "最低需要 Python 几？", says(_PY37), _PYTHON),
    _t("tb-zh-def", "find", "_CustomTextWrap 这个类是在哪个文件里定义的？", _INIT_FILE, (_INIT,)),
    _t("tb-zh-formats", "count", "tabulate 一共支持多少种表格格式（tablefmt）？", number(36, "三十六"),
       (_INIT,)),
    _t("tb-zh-count-api", "count", "test/test_api.py 里有几个测试函数？", number(3, "三"),
       ("test/test_api.py",)),
    _t("tb-zh-license", "question", "这个项目用的是什么许可证？", _MIT, _LICENSE),
    _edit("tb-zh-edit", "把 pyproject.toml 里的 requires-python 改成 >=3.8，别的不要动。",
          _requires_python("3.8"), ("pyproject.toml",)),
    _notes("tb-zh-notes", "帮我看一下 tabulate 这个包文件夹里的每个 Python 文件，"
           "各写一行笔记说明它是做什么的。", _PACKAGE, (_PKG,)),
    # in French
    _t("tb-fr-float", "question", "Quel est le format par défaut des nombres à virgule flottante dans "
       "tabulate ?", _G, (_INIT,)),
    _t("tb-fr-count", "count", "Combien de fichiers .py y a-t-il dans le dossier test ?", number(8, "huit"),
       ("test",)),
    _notes("tb-fr-notes", "Note en une ligne le rôle de test/common.py et celui de benchmark.py.",
           ("test/common.py", "benchmark.py"), ("test/common.py", "benchmark.py")),
    # in Spanish
    _t("tb-es-what", "question", "¿Para qué sirve esta librería? Explícalo en una frase.", _WHAT,
       ("README.md",)),
    _t("tb-es-widechars", "question", "¿De qué depende el valor por defecto de WIDE_CHARS_MODE?",
       says(r"wcwidth"), (_INIT,)),
    _edit("tb-es-edit", 'En tabulate/__init__.py, cambia el valor por defecto del argumento tablefmt de la '
          'función tabulate de "simple" a "github".',
          python_edit(_INIT, (('tablefmt="simple",\n    floatfmt', 'tablefmt="github",\n    floatfmt'),)),
          (_INIT,)),
    # in German
    _t("tb-de-flake8", "question", "Welche maximale Zeilenlänge erlaubt flake8 laut tox.ini?",
       number(99, "neunundneunzig"), ("tox.ini",)),
    _t("tb-de-count", "count", "Wie viele Funktionen definiert test/common.py?", number(4, "vier"),
       ("test/common.py",)),
    _edit("tb-de-edit", 'Setz den Standard-Platzhalter für fehlende Werte (_DEFAULT_MISSINGVAL) auf "-".',
          python_edit(_INIT, (('_DEFAULT_MISSINGVAL = ""', '_DEFAULT_MISSINGVAL = "-"'),)), (_INIT,)),
)  # fmt: skip

"""The suite's ninth half, ``ninth``: held-out tasks nobody tuned on, written as a user of an
agent harness types them, on a ninth public project nobody here wrote: colorama 0.4.6 (it makes
ANSI escape sequences for colored terminal text and cursor positioning work on Windows, and gives
the ``Fore``, ``Back``, ``Style`` and ``Cursor`` shorthands for them; its registry sdist: 31
files, 23 of them .py, a ``colorama`` package of six modules (``ansi.py``, ``ansitowin32.py``,
``initialise.py``, ``win32.py``, ``winterm.py`` and ``__init__.py``, which holds the version)
with its tests inside it (``colorama/tests``: five ``*_test.py`` files, ``utils.py`` and an
``__init__.py``), a ``demos/`` folder of nine ``demoNN.py`` scripts, ``fixpath.py``, ``demo.sh``
and ``demo.bat``, pyproject.toml (built by hatchling, no setup.py nor setup.cfg), PKG-INFO,
README.rst, LICENSE.txt, CHANGELOG.rst and .gitignore).

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

The project has names a checker must tell apart: ``ansi.py`` (the escape codes) beside
``ansitowin32.py`` (the stream wrapper that strips or converts them), ``win32.py`` (the ctypes
calls) beside ``winterm.py`` (the WinTerm class), each beside its ``tests/*_test.py``, and
``colorama/__init__.py`` beside ``colorama/tests/__init__.py``; ``clear_screen`` and
``clear_line``, whose defaults are the same ``mode=2``; ``autoreset=False`` as the default of
both ``init`` and ``AnsiToWin32``; a color's ANSI code (``Fore.RED`` 31) beside its Windows
attribute (``WinColor.RED`` 4) and ``STDOUT`` (-11) beside ``STDERR`` (-12); the released 0.4.6
beside 0.4.5 and the broken 0.4.2 of CHANGELOG.rst; a license that is BSD, not MIT; Python 2.7
and 3.7 and later (``requires-python`` leaves out 3.0 to 3.6); the demos that call
``just_fix_windows_console`` beside those that call ``init``, and the one that imports ``init``
without calling it.
"""

from __future__ import annotations

import re
from pathlib import Path

from bench import task_checks
from bench.sdist import Pinned
from bench.task_checks import any_of, file_named, none_of, number
from bench.tasks import Checker, Task, says

HALF = "ninth"
PROJECT = "colorama"
PIN = Pinned("colorama", "0.4.6", "08695f5cb7ed6e0531a20572697297273c47b8cae5a63ffc6d6ed5c201be6e44")


def build_workspace(workspace: Path, archive: Path | None = None) -> list[str]:
    """colorama 0.4.6 in ``workspace`` (fetched and verified unless ``archive`` is given)."""
    return PIN.build(workspace, archive)


_EDITS = task_checks.Edits(PIN.originals)
python_edit, toml_edit = _EDITS.python_edit, _EDITS.toml_edit


# --- the tasks -------------------------------------------------------------------------------

_PKG = "colorama"
_INIT = f"{_PKG}/__init__.py"
_ANSI = f"{_PKG}/ansi.py"
_ANSITOWIN32 = f"{_PKG}/ansitowin32.py"
_INITIALISE = f"{_PKG}/initialise.py"
_WIN32 = f"{_PKG}/win32.py"
_WINTERM = f"{_PKG}/winterm.py"
_TESTS_DIR = f"{_PKG}/tests"
_DEMO06 = "demos/demo06.py"
_MODULES = (_INIT, _ANSI, _ANSITOWIN32, _INITIALISE, _WIN32, _WINTERM)
_TESTS = tuple(
    f"{_TESTS_DIR}/{n}_test.py" for n in ("ansi", "ansitowin32", "initialise", "isatty", "winterm")
)


def _release(version: str) -> str:
    """``version`` whole: not a part of 0.4.60 nor of 10.4.6."""
    return rf"(?<![\d.]){re.escape(version)}(?![\d]|\.\d)"


_V = _release("0.4.6")
_PY27 = r"(?<![\d.])2\.7(?![\d])"
_PY37 = r"(?<![\d.])3\.7(?![\d])"
_META = (_INIT, "PKG-INFO")
_LICENSE = ("LICENSE.txt", "pyproject.toml", "PKG-INFO")
_PYTHON = ("pyproject.toml", "PKG-INFO")
# BSD (the 3-clause text of LICENSE.txt, "BSD-3-Clause" in pyproject.toml), not another license.
_BSD = none_of(says(r"\bBSD\b"), r"\bMIT\b", r"\bApache\b", r"\bL?GPL\b")
# What the project does: colored text / ANSI codes in a terminal, on Windows too, in any words.
_WHAT = says(
    r"\bANSI\b|colou?r|couleur|Farb|颜色|彩色|着色",
    r"Windows|terminal|console|consola|Konsole|终端|控制台|cross-platform|multiplataforma|"
    r"multiplateforme|plattform",
)
_WINTERM_FILE = file_named("winterm.py")
_ANSITOWIN32_FILE = file_named("ansitowin32.py")
# The version's own file: colorama/__init__.py (not tests/__init__.py), or the name it binds.
_VERSION_FILE = any_of(file_named("__init__.py", "tests/__init__.py"), says(r"__version__"))
# An answer that names something the project needs ("it needs termcolor"), not "needs nothing".
_NEEDS = r"\b(?:requires?|needs?|depends on)\s+(?!no\b|nothing|none\b|any|python\b|only python\b)\w"
_NO = r"\bno\b|\bnone\b|\bnot\b|n't|\bnothing\b|\bzero\b|没有|不需要|无|\bpas\b|aucune|ninguna|keine"


def _demos(*numbers: int) -> str:
    """A demo script by its number: ``demo06``, ``demo06.py`` or ``demo 6``."""
    return rf"\bdemo\s?0?(?:{'|'.join(str(n) for n in numbers)})(?!\d)"


# The demos that call just_fix_windows_console (01, 02, 06, 07), none of those that call init or
# colorama_text (03, 04, 05, 08) or only import init (09).
_FIXING_DEMOS = none_of(says(*(_demos(n) for n in (1, 2, 6, 7))), _demos(3, 4, 5, 8, 9))
# -12, STDERR's handle in win32.py (not STDOUT's -11, nor 12 without its sign), or "moins 12".
_MINUS_12 = says(r"(?<![\w.])[-−–]\s?12(?![\d])|\b(?:moins|minus)\s+12(?![\d])")

# Facts a note may give of each file: words of the file itself (lower-case), then the same facts
# in other words (the words a Chinese, French, Spanish or German note uses).
_FACTS: dict[str, tuple[str, ...]] = {
    _INIT: ("__version__", "0.4.6", "just_fix_windows_console", "colorama_text", "fore", "cursor",
            "ansitowin32", "deinit", "reinit"),
    _ANSI: ("escape", "code_to_chars", "csi", "osc", "fore", "back", "style", "cursor", "set_title",
            "clear_screen", "clear_line", "colors"),
    _ANSITOWIN32: ("streamwrapper", "ansitowin32", "win32 function calls", "strip", "convert",
                   "write_and_convert", "proxy", "autoreset"),
    _INITIALISE: ("init", "deinit", "reinit", "just_fix_windows_console", "colorama_text", "wrap_stream",
                  "atexit", "reset_all", "stdout", "stderr"),
    _WIN32: ("ctypes", "windll", "kernel32", "console", "setconsoletextattribute",
             "getconsolescreenbufferinfo", "winapi_test", "coord", "wintypes"),
    _WINTERM: ("winterm", "wincolor", "winstyle", "console", "erase_screen", "erase_line", "cursor",
               "enable_vt_processing", "set_title", "attrs"),
    f"{_TESTS_DIR}/ansi_test.py": ("fore", "back", "style", "attributes"),
    f"{_TESTS_DIR}/ansitowin32_test.py": ("streamwrapper", "ansitowin32", "strip", "convert", "osc",
                                          "extract_params", "proxy", "autoreset"),
    f"{_TESTS_DIR}/initialise_test.py": ("init", "wrap", "autoreset", "just_fix_windows_console",
                                         "atexit"),
    f"{_TESTS_DIR}/isatty_test.py": ("isatty", "tty", "pycharm"),
    f"{_TESTS_DIR}/winterm_test.py": ("winterm", "wincolor", "winstyle", "set_console", "reset_all",
                                      "fore", "back"),
}  # fmt: skip
_TRANSLATED: dict[str, tuple[str, ...]] = {
    _INIT: ("版本", "导出", "入口", "exporte", "exporta", "exportiert"),
    _ANSI: ("转义", "颜色", "前景", "背景", "光标", "échappement", "couleur", "escape", "color", "farbe"),
    _ANSITOWIN32: ("包装", "转换", "剥离", "去掉", "流", "convertit", "convierte", "konvertiert", "flux",
                   "flujo", "strom"),
    _INITIALISE: ("初始化", "包装", "还原", "恢复", "initialis", "inicializa", "enveloppe", "restaure"),
    _WIN32: ("控制台", "接口", "consola", "konsole"),
    _WINTERM: ("控制台", "颜色", "光标", "清屏", "couleur", "curseur", "consola", "konsole", "farbe"),
    f"{_TESTS_DIR}/ansi_test.py": ("前景色", "背景色", "样式"),
    f"{_TESTS_DIR}/ansitowin32_test.py": ("包装", "转换", "剥离"),
    f"{_TESTS_DIR}/initialise_test.py": ("初始化",),
    f"{_TESTS_DIR}/isatty_test.py": ("终端",),
    f"{_TESTS_DIR}/winterm_test.py": ("控制台",),
}  # fmt: skip


def _facts(*paths: str) -> dict[str, tuple[str, ...]]:
    return {p: _FACTS[p] + _TRANSLATED[p] for p in paths}


_make = task_checks.TaskMaker(HALF, PROJECT, _facts)
_t, _edit, _notes = _make.t, _make.edit, _make.notes

_REQUIRES_PYTHON = 'requires-python = ">=2.7, !=3.0.*, !=3.1.*, !=3.2.*, !=3.3.*, !=3.4.*, !=3.5.*, !=3.6.*"'


def _requires_python(version: str) -> Checker:
    return _EDITS.requires_python(_REQUIRES_PYTHON, version, ("PKG-INFO",))


def _hatchling(version: str) -> Checker:
    """pyproject.toml's build requirement on hatchling raised to ``version`` (``>=1.0``, ``>=1``,
    ``>=1.0.0``, with or without spaces)."""
    spellings = {version, version.removesuffix(".0"), f"{version}.0"}
    return any_of(
        *(
            toml_edit("pyproject.toml", (('"hatchling>=0.25.1"', f'"hatchling{op}{v}"'),))
            for v in sorted(spellings)
            for op in (">=", " >= ", ">= ")
        )
    )


# demo06's MAXY raised to 30: in the tuple assignment it shares with MINY, or split in two.
_MAXY_30 = any_of(
    *(
        python_edit(_DEMO06, (("MINY, MAXY = 1, 24", new),))
        for new in ("MINY, MAXY = 1, 30", "MINY = 1\nMAXY = 30", "MAXY = 30\nMINY = 1")
    )
)
# The version bump: __version__ in colorama/__init__.py; the metadata and the changelog may follow.
_VERSION_BUMP = python_edit(_INIT, (("'0.4.6'", "'0.4.7'"),), ("PKG-INFO", "CHANGELOG.rst"))


TASKS: tuple[Task, ...] = (
    # questions that name a file
    _t("co-demo-sh-skip", "question", "demos/demo.sh leaves out one of the demos that demos/demo.bat runs. "
       "Which one?", says(_demos(6)), ("demos/demo.sh", "demos/demo.bat")),
    _t("co-build-backend", "question", "What does pyproject.toml use to build the package?",
       says(r"hatch"), ("pyproject.toml",)),
    _t("co-changelog-broken", "question", "CHANGELOG.rst warns people off one of the 0.4.x releases. Which "
       "one, and which release fixed it?", says(_release("0.4.2"), _release("0.4.3")), ("CHANGELOG.rst",)),
    # questions that name a symbol
    _t("co-def-winterm", "find", "Which file defines the WinTerm class?", _WINTERM_FILE, (_WINTERM,)),
    _t("co-def-ansitowin32", "find", "Where is the AnsiToWin32 class defined?", _ANSITOWIN32_FILE,
       (_ANSITOWIN32,)),
    _t("co-wincolor-red", "question", "What number does WinColor give RED?", number(4, "four"),
       (_WINTERM,)),
    _t("co-pycharm", "question", "Which environment variable makes StreamWrapper.isatty() report a "
       "terminal even when the stream isn't one?", says(r"PYCHARM_HOSTED"), (_ANSITOWIN32,)),
    _t("co-init-error", "question", "What exception does init() raise if I call it with wrap=False and "
       "autoreset=True?", says(r"\bValueError\b"), (_INITIALISE,)),
    # questions that name neither
    _t("co-version", "question", "What version is this?", says(_V), _META),
    _t("co-license", "question", "What license is this project under?", _BSD, _LICENSE),
    _t("co-what", "question", "What does this project do? One sentence please.", _WHAT, ("README.rst",)),
    _t("co-version-source", "find", "pyproject.toml doesn't have a version number. Where does the package "
       "get its version from?", _VERSION_FILE, ("pyproject.toml", _INIT)),
    _t("co-deps", "question", "Does colorama need any other packages installed to run?",
       none_of(says(_NO), r"\byes\b", _NEEDS), ("pyproject.toml", "README.rst")),
    _t("co-cli", "question", "Does installing this give me a command-line program?",
       none_of(says(_NO), r"\byes\b"), ("pyproject.toml",)),
    _t("co-python", "question", "Which Python versions does it support?", says(_PY27, _PY37), _PYTHON),
    # folder questions
    _t("co-count-demos", "count", "How many .py files are in the demos folder?", number(10, "ten"),
       ("demos",)),
    _t("co-which-demos-fix", "find", "Which of the demo scripts call just_fix_windows_console()?",
       _FIXING_DEMOS, ("demos",)),
    # counts in a file
    _t("co-count-init-funcs", "count", "How many functions does colorama/initialise.py define?",
       number(8, "eight"), (_INITIALISE,)),
    _t("co-count-isatty", "count", "How many test methods are in colorama/tests/isatty_test.py?",
       number(7, "seven"), (f"{_TESTS_DIR}/isatty_test.py",)),
    # edits
    _edit("co-edit-version", "Bump the version to 0.4.7.", _VERSION_BUMP, (_INIT,)),
    _edit("co-edit-passes", "In demos/demo06.py, lower PASSES from 1000 to 200.",
          python_edit(_DEMO06, (("PASSES = 1000", "PASSES = 200"),)), (_DEMO06,)),
    _edit("co-edit-clear-screen", "Make clear_screen() clear from the cursor to the end of the screen by "
          "default (mode 0) instead of the whole screen.",
          python_edit(_ANSI, (("def clear_screen(mode=2)", "def clear_screen(mode=0)"),)), (_ANSI,)),
    _edit("co-edit-hatchling", "In pyproject.toml, require hatchling 1.0 or newer to build the package.",
          _hatchling("1.0"), ("pyproject.toml",)),
    # a note per file of a set
    _notes("co-notes-three", "Write a one-line note for each of colorama/ansi.py, colorama/ansitowin32.py "
           "and colorama/win32.py saying what it is for.", (_ANSI, _ANSITOWIN32, _WIN32),
           (_ANSI, _ANSITOWIN32, _WIN32)),
    _notes("co-notes-tests", "For each colorama/tests/*_test.py file, add a one-line note on what it tests.",
           _TESTS, _TESTS),
    # English paraphrases of this half's tasks
    _t("co-para-release", "question", "Which release of colorama is this checkout?", says(_V), _META),
    _t("co-para-find", "find", "I want to read the code that strips ANSI escape sequences out of text "
       "written to a stream, or turns them into Win32 calls. Which file is it in?", _ANSITOWIN32_FILE,
       (_ANSITOWIN32,)),
    _t("co-para-count", "count", "How many Python files does the demos folder hold?", number(10, "ten"),
       ("demos",)),
    _t("co-para-red", "question", "In the WinColor class, what value is RED set to?", number(4, "four"),
       (_WINTERM,)),
    # in Chinese
    _t("co-zh-version", "question", "这个库现在是什么版本？", says(_V), _META),
    _t("co-zh-python3", "question", "如果用 Python 3 的话，最低要哪个版本？", says(_PY37), _PYTHON),
    _t("co-zh-def", "find", "StreamWrapper 这个类是在哪个文件里定义的？", _ANSITOWIN32_FILE, (_ANSITOWIN32,)),
    _t("co-zh-count-tests", "count", "colorama/tests/winterm_test.py 里一共有几个测试方法？",
       number(8, "八"), (f"{_TESTS_DIR}/winterm_test.py",)),
    _t("co-zh-count-ctx", "count", "colorama/tests/utils.py 里定义了几个上下文管理器？", number(4, "四"),
       (f"{_TESTS_DIR}/utils.py",)),
    _t("co-zh-license", "question", "这个项目用的是什么许可证？", _BSD, _LICENSE),
    _t("co-zh-deps", "question", "装这个包还要另外装别的依赖吗？", none_of(says(_NO), r"\byes\b", _NEEDS),
       ("pyproject.toml", "README.rst")),
    _edit("co-zh-edit", "不再支持 Python 2 了：把 pyproject.toml 里的 requires-python 改成 >=3.7，"
          "别的不要动。",
          _requires_python("3.7"), ("pyproject.toml",)),
    _notes("co-zh-notes", "帮我把 colorama 包里除了 tests 以外的每个 Python 模块都看一遍，"
           "各写一行笔记说明它是干什么的。",
           _MODULES, (_PKG,)),
    # in French
    _t("co-fr-count", "count", "Combien de fichiers *_test.py y a-t-il dans colorama/tests ?",
       number(5, "cinq"), (_TESTS_DIR,)),
    _t("co-fr-stderr", "question", "Quelle valeur colorama/win32.py donne-t-il à STDERR ?", _MINUS_12,
       (_WIN32,)),
    _notes("co-fr-notes", "Note en une ligne le rôle de colorama/initialise.py et celui de "
           "colorama/winterm.py.", (_INITIALISE, _WINTERM), (_INITIALISE, _WINTERM)),
    # in Spanish
    _t("co-es-what", "question", "¿Para qué sirve esta librería? Explícalo en una frase.", _WHAT,
       ("README.rst",)),
    _t("co-es-lightblue", "question", "¿Qué código ANSI usa Back.LIGHTBLUE_EX?",
       number(104, "ciento cuatro"), (_ANSI,)),
    _edit("co-es-edit", "En colorama/ansitowin32.py, haz que AnsiToWin32 tenga autoreset=True por defecto.",
          python_edit(_ANSITOWIN32, (("strip=None, autoreset=False):", "strip=None, autoreset=True):"),)),
          (_ANSITOWIN32,)),
    # in German
    _t("co-de-count", "count", "Wie viele Klassen definiert colorama/ansi.py?", number(5, "fünf"),
       (_ANSI,)),
    _t("co-de-changes", "question", "Laut CHANGELOG.rst: Mit welcher Version kam die Unterstützung für "
       "Python 3.9 dazu?", says(_release("0.4.5")), ("CHANGELOG.rst",)),
    _edit("co-de-edit", "Das Terminal hat 30 Zeilen: setz in demos/demo06.py MAXY von 24 auf 30.",
          _MAXY_30, (_DEMO06,)),
)  # fmt: skip

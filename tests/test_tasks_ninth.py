"""The task suite's ninth half (colorama 0.4.6, held out): the right and wrong reference answers,
edits and notes of every task (``tests/test_task_halves.py`` runs them, with what every half on a
public project shares: the pin, the targets, the project's size), and what is this half's own:
the counts and facts it asks are the project's (read from its files and, for what the code does,
from running it), the checkers tell apart ``ansi.py`` from ``ansitowin32.py`` and ``win32.py``
from ``winterm.py``, ``clear_screen`` from ``clear_line``, the ANSI code of a color from its
Windows attribute, STDERR from STDOUT, the version 0.4.6 from 0.4.5 and the broken 0.4.2, and
the version bump may touch the metadata and the changelog. No network: the tests that need the
real project skip when its pinned sdist has not been fetched (``python -m bench.task_suite
--half ninth`` fetches it)."""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from bench import notes_check, tasks_ninth

PKG = "colorama"
INIT = f"{PKG}/__init__.py"
ANSI = f"{PKG}/ansi.py"
ANSITOWIN32 = f"{PKG}/ansitowin32.py"
INITIALISE = f"{PKG}/initialise.py"
WIN32 = f"{PKG}/win32.py"
WINTERM = f"{PKG}/winterm.py"
TESTS = f"{PKG}/tests"
DEMO06 = "demos/demo06.py"


def _task(name: str) -> tasks_ninth.Task:
    return next(t for t in tasks_ninth.TASKS if t.name == name)


# --- every task: right references pass, wrong ones fail (run in tests/test_task_halves.py) -------

# question, find and count tasks: (right answers, wrong answers)
ANSWERS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "co-demo-sh-skip": (
        ("demo06.py: it is too visually disruptive.", "It skips demo06.", "demo 6"),
        ("demo09", "demo05.py", "None: both run the same demos.", "demo016"),
    ),
    "co-build-backend": (
        ("hatchling (build-backend = hatchling.build).", "Hatch's hatchling backend."),
        ("setuptools", "flit_core", "poetry-core", "setup.py"),
    ),
    "co-changelog-broken": (
        ("0.4.2 was broken (uploaded with missing files); 0.4.3 fixed it.", "0.4.2, fixed by 0.4.3"),
        ("0.4.2", "0.4.5, fixed by 0.4.6", "0.4.1 and 0.4.2", "0.4.20, fixed by 0.4.3"),
    ),
    "co-def-winterm": (
        ("colorama/winterm.py", "It's in winterm.py.", "在colorama/winterm.py里"),
        ("colorama/win32.py", "colorama/tests/winterm_test.py", "colorama/__init__.py", "winterm.pyi"),
    ),
    "co-def-ansitowin32": (
        ("colorama/ansitowin32.py", "In ansitowin32.py; __init__.py re-exports it."),
        ("colorama/ansi.py", "colorama/__init__.py", "colorama/tests/ansitowin32_test.py"),
    ),
    "co-wincolor-red": (
        ("RED = 4", "4 (the ANSI code for red is 31).", "four"),
        ("31", "41", "1", "14"),
    ),
    "co-pycharm": (
        ("PYCHARM_HOSTED", "If PYCHARM_HOSTED is set and the stream is sys.__stdout__ or sys.__stderr__."),
        ("TERM", "PYCHARM", "COLORTERM", "FORCE_COLOR"),
    ),
    "co-init-error": (
        ("ValueError('wrap=False conflicts with any other arg=True')", "a ValueError"),
        ("TypeError", "RuntimeError", "It raises nothing; autoreset is ignored."),
    ),
    "co-version": (("colorama 0.4.6",), ("0.4.5", "0.4.7", "0.4.3", "0.4.60")),
    "co-license": (
        ("The BSD license (3-clause).", "BSD-3-Clause"),
        ("MIT", "Apache 2.0", "GPL", "MIT or BSD"),
    ),
    "co-what": (
        (
            "It makes ANSI escape sequences for colored terminal text work on Windows too.",
            "Cross-platform colored terminal text.",
        ),
        (
            "It is a web framework.",
            "It generates color palettes for images.",
            "colorama is a Python library.",
        ),
    ),
    "co-version-source": (
        (
            "From colorama/__init__.py: hatchling reads __version__ there ([tool.hatch.version]).",
            "colorama/__init__.py",
            "The __version__ line of the package.",
        ),
        (
            "From setup.py.",
            "From the git tags, via setuptools_scm.",
            "From PKG-INFO.",
            "colorama/tests/__init__.py",
        ),
    ),
    "co-deps": (
        (
            "No, it has no runtime dependencies; only the standard library.",
            "None: pyproject.toml lists no dependencies (hatchling is only used to build).",
            "It doesn't need anything else.",
        ),
        ("Yes, it needs termcolor.", "It requires pywin32 on Windows.", "Yes."),
    ),
    "co-cli": (
        (
            "No, it is only a library; pyproject.toml has no [project.scripts].",
            "There is no command-line program (the demos are scripts you run by hand).",
        ),
        ("Yes, `colorama`.", "It installs the colorama command.", "Yes, demo09.py."),
    ),
    "co-python": (
        (
            "Python 2.7, and 3.7 or newer (3.0 to 3.6 are excluded).",
            "2.7 and 3.7+ (the classifiers list 3.7, 3.8, 3.9 and 3.10).",
        ),
        ("Python 3.7+", "Python 3.6 and newer", "2.7 only", "2.7 and 3.6+"),
    ),
    "co-count-demos": (("There are 10.", "ten .py files"), ("9", "12", "11")),
    "co-which-demos-fix": (
        (
            "demo01.py, demo02.py, demo06.py and demo07.py.",
            "demo01, demo02, demo06, demo07",
            "`demos/demo01.py`, `demos/demo02.py`, `demos/demo06.py`, `demos/demo07.py`",
        ),
        (
            "demo01.py and demo02.py",
            "demo01, demo02, demo06, demo07 and demo09",
            "All of them.",
            "demo03.py, demo04.py and demo05.py",
        ),
    ),
    "co-count-init-funcs": (
        ("8, counting _wipe_internal_state_for_tests.", "eight"),
        ("7", "6", "9", "18"),
    ),
    "co-count-isatty": (("7 test methods.", "seven"), ("8", "6", "17")),
    "co-para-release": (("You have colorama 0.4.6.",), ("0.4.5", "0.4.2")),
    "co-para-find": (
        ("colorama/ansitowin32.py", "In ansitowin32.py (AnsiToWin32.write_and_convert)."),
        ("colorama/ansi.py", "colorama/winterm.py", "colorama/win32.py", "colorama/initialise.py"),
    ),
    "co-para-count": (("10", "Ten."), ("9", "twelve")),
    "co-para-red": (("4", "RED = 4"), ("31", "41", "1")),
    "co-zh-version": (("版本是 0.4.6。", "0.4.6"), ("0.4.5", "0.4.7")),
    "co-zh-python3": (
        ("Python 3 最低要 3.7（3.0 到 3.6 都不支持）。", "3.7"),
        ("3.6", "Python 3.8", "3.5", "2.7"),
    ),
    "co-zh-def": (
        ("在 colorama/ansitowin32.py 里。", "在ansitowin32.py里定义"),
        ("colorama/ansi.py", "colorama/__init__.py", "colorama/tests/ansitowin32_test.py"),
    ),
    "co-zh-count-tests": (("一共 8 个。", "八个"), ("7", "4", "9")),
    "co-zh-count-ctx": (
        ("有 4 个：osname、replace_by、replace_original_by 和 pycharm。", "四个"),
        ("2", "6", "3"),
    ),
    "co-zh-license": (("BSD 许可证（3-Clause）。",), ("MIT", "Apache 2.0", "GPL")),
    "co-zh-deps": (
        ("不需要，只用标准库。", "没有运行时依赖。"),
        ("需要安装 termcolor。", "Yes, it needs pywin32."),
    ),
    "co-fr-count": (("Il y a 5 fichiers *_test.py.", "cinq"), ("7", "6", "4")),
    "co-fr-stderr": (
        ("STDERR = -12", "La valeur −12 (STDOUT vaut -11).", "moins 12"),
        ("-11", "12", "2", "-121"),
    ),
    "co-es-what": (
        ("Sirve para que los códigos ANSI de color funcionen en la terminal de Windows.",),
        ("Es un servidor web.", "Sirve para leer archivos TOML."),
    ),
    "co-es-lightblue": (("El 104.", "\\033[104m", "ciento cuatro"), ("94", "44", "34", "1040")),
    "co-de-count": (("5 Klassen: AnsiCodes, AnsiCursor, AnsiFore, AnsiBack, AnsiStyle.", "fünf"), ("4", "3")),
    "co-de-changes": (("0.4.5", "In Version 0.4.5."), ("0.4.6", "0.4.2", "0.4.4", "0.4.50")),
}

# edit tasks: (the file, the right edit, wrong ones), each made from the original text
Edit = Callable[[str], str]
EDITS: dict[str, tuple[str, Edit, tuple[Edit, ...]]] = {
    "co-edit-version": (
        INIT,
        lambda t: t.replace("'0.4.6'", '"0.4.7"'),
        (
            lambda t: t.replace("'0.4.6'", "'0.5.0'"),
            lambda t: t.replace("'0.4.6'", "'0.4.7'") + "__version_info__ = (0, 4, 7)\n",
            lambda t: t.replace("'0.4.6'", "'0.4.7'") + "import os\n",
        ),
    ),
    "co-edit-passes": (
        DEMO06,
        lambda t: t.replace("PASSES = 1000", "PASSES = 200  # fewer"),
        (
            lambda t: t.replace("PASSES = 1000", "PASSES = 2000"),
            lambda t: t.replace("PASSES = 1000", "PASSES = 200").replace(
                "MINX, MAXX = 1, 80", "MINX, MAXX = 1, 60"
            ),
        ),
    ),
    "co-edit-clear-screen": (
        ANSI,
        lambda t: t.replace("def clear_screen(mode=2):", "def clear_screen(mode=0):"),
        (
            lambda t: t.replace("def clear_screen(mode=2):", "def clear_screen(mode=1):"),
            lambda t: t.replace("(mode=2):", "(mode=0):"),  # clear_line too
        ),
    ),
    "co-edit-hatchling": (
        "pyproject.toml",
        lambda t: t.replace('"hatchling>=0.25.1"', "'hatchling>=1.0'"),
        (
            lambda t: t.replace('"hatchling>=0.25.1"', '"hatchling>=1.1"'),
            lambda t: t.replace('"hatchling>=0.25.1"', '"hatchling"'),
            lambda t: t.replace('"hatchling>=0.25.1"', '"hatchling>=1.0", "setuptools"'),
        ),
    ),
    "co-zh-edit": (
        "pyproject.toml",
        lambda t: t.replace(tasks_ninth._REQUIRES_PYTHON, 'requires-python = ">= 3.7"'),
        (
            lambda t: t.replace(tasks_ninth._REQUIRES_PYTHON, 'requires-python = ">=3.8"'),
            lambda t: t.replace(tasks_ninth._REQUIRES_PYTHON, 'requires-python = ">=3.7"').replace(
                '    "Programming Language :: Python :: 2.7",\n', ""
            ),
            lambda t: t.replace(tasks_ninth._REQUIRES_PYTHON, 'requires-python = ">=2.7"'),
        ),
    ),
    "co-es-edit": (
        ANSITOWIN32,
        lambda t: t.replace("strip=None, autoreset=False):", "strip=None, autoreset=True):"),
        (
            lambda t: t.replace("strip=None, autoreset=False):", "strip=None, autoreset=None):"),
            lambda t: t.replace("self.autoreset = autoreset", "self.autoreset = True"),
            lambda t: t.replace("strip=None, autoreset=False):", "strip=True, autoreset=True):"),
        ),
    ),
    "co-de-edit": (
        DEMO06,
        lambda t: t.replace("MINY, MAXY = 1, 24", "MINY, MAXY = 1, 30"),
        (
            lambda t: t.replace("MINY, MAXY = 1, 24", "MINY, MAXY = 1, 31"),
            lambda t: t.replace("MINX, MAXX = 1, 80", "MINX, MAXX = 1, 30"),
            lambda t: t.replace("80x24", "80x30"),  # the comment only
            lambda t: t.replace("MINY, MAXY = 1, 24", "MINY, MAXY = 0, 30"),
        ),
    ),
}

# notes tasks: (right notes, wrong notes)
NOTES: dict[str, tuple[str, str]] = {
    "co-notes-three": (
        "- colorama/ansi.py: the ANSI escape character codes (CSI, OSC) behind Fore, Back, Style and "
        "Cursor, with code_to_chars, set_title, clear_screen and clear_line\n"
        "- colorama/ansitowin32.py: AnsiToWin32 and StreamWrapper, a proxy stream that strips ANSI "
        "sequences or converts them into win32 function calls\n"
        "- colorama/win32.py: ctypes bindings to the kernel32 console functions "
        "(GetConsoleScreenBufferInfo, SetConsoleTextAttribute), windll and winapi_test\n",
        "- colorama/ansi.py: the module\n- colorama/ansitowin32.py: a module\n"
        "- colorama/win32.py: another module\n",
    ),
    "co-notes-tests": (
        "- colorama/tests/ansi_test.py: checks the Fore, Back and Style attributes\n"
        "- colorama/tests/ansitowin32_test.py: StreamWrapper as a proxy and AnsiToWin32 strip, convert, "
        "autoreset, extract_params and OSC codes\n"
        "- colorama/tests/initialise_test.py: init wraps stdout and stderr, autoreset, wrap=False, "
        "atexit and just_fix_windows_console\n"
        "- colorama/tests/isatty_test.py: isatty of a TTY and a non-TTY stream, with pycharm\n"
        "- colorama/tests/winterm_test.py: WinTerm with WinColor and WinStyle, reset_all and "
        "set_console\n",
        "- colorama/tests/ansi_test.py: tests\n- colorama/tests/ansitowin32_test.py: tests\n"
        "- colorama/tests/initialise_test.py: tests\n- colorama/tests/isatty_test.py: tests\n"
        "- colorama/tests/winterm_test.py: tests\n",
    ),
    "co-zh-notes": (
        "- colorama/__init__.py：包的入口，导出 init、just_fix_windows_console、Fore 等，定义 __version__\n"
        "- colorama/ansi.py：ANSI 转义码，Fore、Back、Style 和 Cursor\n"
        "- colorama/ansitowin32.py：AnsiToWin32 和 StreamWrapper，剥离 ANSI 序列或转换成 win32 调用\n"
        "- colorama/initialise.py：init、deinit、reinit 和 just_fix_windows_console，包装 stdout 和 stderr\n"
        "- colorama/win32.py：用 ctypes 调用 Windows 控制台 API（windll、kernel32）\n"
        "- colorama/winterm.py：WinTerm 类，设置控制台的颜色和光标（WinColor、WinStyle）\n",
        "- colorama/__init__.py：模块\n- colorama/ansi.py：模块\n- colorama/ansitowin32.py：模块\n"
        "- colorama/initialise.py：模块\n- colorama/win32.py：模块\n- colorama/winterm.py：模块\n",
    ),
    "co-fr-notes": (
        "- colorama/initialise.py : init, deinit, reinit et just_fix_windows_console wrap stdout et "
        "stderr (wrap_stream, atexit)\n"
        "- colorama/winterm.py : la classe WinTerm, WinColor et WinStyle pour la console Windows "
        "(erase_screen, set_title)\n",
        "- colorama/initialise.py : un module\n- colorama/winterm.py : un autre module\n",
    ),
}


# --- what is this half's own -----------------------------------------------------------------


@pytest.fixture(scope="module")
def archive() -> Path:
    path = tasks_ninth.PIN.folder / tasks_ninth.PIN.filename
    if not path.is_file():
        pytest.skip(
            "the pinned sdist has not been fetched (python -m bench.task_suite --half ninth fetches it)"
        )
    return tasks_ninth.PIN.verified(path)


@pytest.fixture
def project(archive: Path, tmp_path: Path) -> Path:
    tasks_ninth.build_workspace(tmp_path, archive)
    return tmp_path


def _top_level(path: Path, kind: type[ast.stmt]) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [n.name for n in tree.body if isinstance(n, kind)]  # type: ignore[attr-defined]


def _methods(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    classes = [n for n in tree.body if isinstance(n, ast.ClassDef)]
    return [m.name for c in classes for m in c.body if isinstance(m, ast.FunctionDef)]


def test_the_counts_asked_for_are_the_projects(project: Path) -> None:
    tests, demos = project / TESTS, project / "demos"
    assert len(list(tests.glob("*_test.py"))) == 5 and len(list(tests.glob("*.py"))) == 7
    assert len(list(demos.glob("*.py"))) == 10 and len(list(demos.glob("demo[0-9][0-9].py"))) == 9
    assert len(list((project / PKG).glob("*.py"))) == 6
    assert len(_top_level(project / INITIALISE, ast.FunctionDef)) == 8
    assert [m for m in _methods(tests / "isatty_test.py") if m.startswith("test")] == _methods(
        tests / "isatty_test.py"
    )
    assert len(_methods(tests / "isatty_test.py")) == 7
    assert len(_methods(tests / "winterm_test.py")) == 8
    assert _top_level(tests / "utils.py", ast.FunctionDef) == [
        "osname",
        "replace_by",
        "replace_original_by",
        "pycharm",
    ]
    assert _top_level(project / ANSI, ast.ClassDef) == [
        "AnsiCodes",
        "AnsiCursor",
        "AnsiFore",
        "AnsiBack",
        "AnsiStyle",
    ]


def test_the_facts_asked_for_are_the_projects(project: Path) -> None:
    def text(name: str) -> str:
        return (project / name).read_text(encoding="utf-8")

    pyproject = text("pyproject.toml")
    assert 'build-backend = "hatchling.build"' in pyproject and '"hatchling>=0.25.1"' in pyproject
    assert tasks_ninth._REQUIRES_PYTHON in pyproject and 'license = "BSD-3-Clause"' in pyproject
    assert '[tool.hatch.version]\npath = "colorama/__init__.py"' in pyproject
    assert "dependencies" not in pyproject and "scripts" not in pyproject
    assert not (project / "setup.py").exists() and not (project / "setup.cfg").exists()
    assert "Version: 0.4.6\n" in text("PKG-INFO")
    assert "No requirements other than the standard library" in text("README.rst")
    assert "__version__ = '0.4.6'" in text(INIT)
    assert "python demo06.py" in text("demos/demo.bat") and "python demo06.py" not in text("demos/demo.sh")
    for script in ("demos/demo.sh", "demos/demo.bat"):
        assert all(f"python demo{n}.py" in text(script) for n in ("01", "02", "03", "04", "05", "07", "08"))
    demos = (project / "demos").glob("demo*.py")
    calling = sorted(p.name for p in demos if "just_fix_windows_console()" in p.read_text())
    assert calling == ["demo01.py", "demo02.py", "demo06.py", "demo07.py"]
    assert "init(" not in text("demos/demo09.py").split("import argparse")[1]
    changes = text("CHANGELOG.rst")
    assert "0.4.6 Current release" in changes and "0.4.2 BROKEN DO NOT USE" in changes
    assert "0.4.3\n  * Fix release 0.4.2 which was uploaded with missing files." in changes
    assert changes.index("0.4.5\n") < changes.index("Add support for Python 3.9.") < changes.index("0.4.4\n")
    assert "class WinColor(object):" in text(WINTERM) and "    RED     = 4\n" in text(WINTERM)
    assert "STDOUT = -11\nSTDERR = -12\n" in text(WIN32)
    assert "'PYCHARM_HOSTED' in os.environ" in text(ANSITOWIN32)
    assert "def __init__(self, wrapped, convert=None, strip=None, autoreset=False):" in text(ANSITOWIN32)
    ansi = text(ANSI)
    assert "def clear_screen(mode=2):" in ansi and "def clear_line(mode=2):" in ansi
    assert "    LIGHTBLUE_EX    = 104\n" in ansi
    assert "PASSES = 1000\n" in text(DEMO06) and "MINY, MAXY = 1, 24\n" in text(DEMO06)
    license_text = text("LICENSE.txt")  # the BSD 3-clause text, its third clause and all
    assert "Copyright (c) 2010 Jonathan Hartley" in license_text and "* Neither the name of" in license_text


def test_what_the_code_does_is_what_the_answers_say(project: Path) -> None:
    script = (
        "import os, io, colorama as c\n"
        "from colorama import ansi, win32, winterm, ansitowin32\n"
        "print(c.__version__)\n"
        "print(repr(c.Fore.RED), winterm.WinColor.RED, repr(c.Back.LIGHTBLUE_EX))\n"
        "print(win32.STDOUT, win32.STDERR)\n"
        "print(repr(ansi.clear_screen()), repr(ansi.clear_line()))\n"
        "try:\n"
        "    c.init(wrap=False, autoreset=True)\n"
        "except ValueError:\n"
        "    print('ValueError')\n"
        "print(ansitowin32.AnsiToWin32(io.StringIO()).autoreset)\n"
        "import sys\n"
        "os.environ['PYCHARM_HOSTED'] = '1'\n"
        "print(ansitowin32.StreamWrapper(sys.__stdout__, None).isatty())\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=project,
        env={"PYTHONPATH": str(project)},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert done.stdout.splitlines() == [
        "0.4.6",
        "'\\x1b[31m' 4 '\\x1b[104m'",
        "-11 -12",
        "'\\x1b[2J' '\\x1b[2K'",
        "ValueError",
        "False",
        "True",
    ]


def test_the_ansi_module_is_not_the_stream_wrapper_nor_win32_the_winterm() -> None:
    here = Path(".")
    wrapper, winterm = _task("co-def-ansitowin32"), _task("co-def-winterm")
    assert wrapper.check("ansitowin32.py", here) and not wrapper.check("ansi.py", here)
    assert winterm.check("winterm.py", here) and not winterm.check("win32.py", here)
    assert not winterm.check("winterm_test.py", here) and not wrapper.check("ansitowin32_test.py", here)
    source = _task("co-version-source")
    assert source.check("colorama/__init__.py", here) and not source.check("colorama/tests/__init__.py", here)


def test_a_color_code_is_not_its_windows_attribute_nor_stderr_stdout() -> None:
    here = Path(".")
    for name in ("co-wincolor-red", "co-para-red"):
        assert _task(name).check("4", here) and not _task(name).check("31", here)
    stderr = _task("co-fr-stderr")
    assert stderr.check("-12", here) and stderr.check("STDERR = - 12", here)
    assert not stderr.check("-11", here) and not stderr.check("12", here) and not stderr.check("-120", here)


def test_a_note_may_name_a_file_beside_chinese_and_not_its_near_namesake(project: Path) -> None:
    task = _task("co-notes-three")
    right = NOTES["co-notes-three"][0]
    (project / "NOTES.md").write_text(right.replace("colorama/", ""), encoding="utf-8")
    assert task.check("", project)
    (project / "NOTES.md").write_text(
        right.replace("colorama/ansi.py", "colorama/ansitowin32.py"), encoding="utf-8"
    )
    assert not task.check("", project)  # a second note on ansitowin32.py is none on ansi.py
    (project / "NOTES.md").write_text(
        right.replace("colorama/win32.py", "colorama/winterm.py"), encoding="utf-8"
    )
    assert not task.check("", project)
    assert notes_check.names_file("转义码在ansi.py里", ANSI)
    assert not notes_check.names_file("转义码在ansitowin32.py里", ANSI)
    assert not notes_check.names_file("- tests/__init__.py: empty", INIT)


def test_the_version_bump_may_touch_the_metadata_and_the_changelog(project: Path) -> None:
    def bump(name: str, old: str, new: str) -> None:
        path = project / name
        path.write_text(path.read_text(encoding="utf-8").replace(old, new), encoding="utf-8")

    task = _task("co-edit-version")
    bump(INIT, "'0.4.6'", "'0.4.7'")
    assert task.check("Done.", project)
    bump("PKG-INFO", "Version: 0.4.6", "Version: 0.4.7")
    bump("CHANGELOG.rst", "0.4.6 Current release", "0.4.7 Current release\n  * Bump.\n0.4.6")
    assert task.check("Done.", project)
    bump("README.rst", "colorama >= 0.4.6", "colorama >= 0.4.7")
    assert not task.check("Done.", project)


def test_the_python_floor_edit_takes_either_spelling_and_nothing_else(project: Path) -> None:
    task = _task("co-zh-edit")
    pyproject = project / "pyproject.toml"
    original = pyproject.read_text(encoding="utf-8")
    line = tasks_ninth._REQUIRES_PYTHON
    for right in ('">=3.7"', '">= 3.7"', "'>=3.7'"):
        pyproject.write_text(original.replace(line, f"requires-python = {right}"), encoding="utf-8")
        assert task.check("好了。", project), right
    pyproject.write_text(original.replace(line, 'requires-python = ">=3.7,<4"'), encoding="utf-8")
    assert not task.check("好了。", project)


def test_the_hatchling_edit_takes_its_spellings(project: Path) -> None:
    task = _task("co-edit-hatchling")
    pyproject = project / "pyproject.toml"
    original = pyproject.read_text(encoding="utf-8")
    for right in ("hatchling>=1.0", "hatchling>=1", "hatchling>=1.0.0", "hatchling >= 1.0"):
        pyproject.write_text(original.replace('"hatchling>=0.25.1"', f'"{right}"'), encoding="utf-8")
        assert task.check("Done.", project), right
    pyproject.write_text(original.replace('"hatchling>=0.25.1"', '"hatchling>=1.0,<2"'), encoding="utf-8")
    assert not task.check("Done.", project)


def test_maxy_may_be_split_from_miny_and_clear_line_keeps_its_default(project: Path) -> None:
    demo = project / DEMO06
    original = demo.read_text(encoding="utf-8")
    demo.write_text(original.replace("MINY, MAXY = 1, 24", "MINY = 1\nMAXY = 30"), encoding="utf-8")
    assert _task("co-de-edit").check("Fertig.", project)
    demo.write_text(original, encoding="utf-8")
    clear = _task("co-edit-clear-screen")
    ansi = project / ANSI
    text = ansi.read_text(encoding="utf-8")
    ansi.write_text(
        text.replace("def clear_screen(mode=2):", "def clear_screen(mode = 0):"), encoding="utf-8"
    )
    assert clear.check("Done.", project)
    ansi.write_text(text.replace("def clear_line(mode=2):", "def clear_line(mode=0):"), encoding="utf-8")
    assert not clear.check("Done.", project)

"""The task suite's seventh half (tabulate 0.9.0, held out): the right and wrong reference answers,
edits and notes of every task (``tests/test_task_halves.py`` runs them, with what every half on a
public project shares: the pin, the targets, the project's size), and what is this half's own:
the counts and facts it asks are the project's, the checkers tell apart the test folder ``test/``
from a ``tests/`` it does not have and the format ``simple`` from ``simple_grid``, and the version
bump may touch the version tuple and the metadata. No network: the tests that need the real
project skip when its pinned sdist has not been fetched (``python -m bench.task_suite --half
seventh`` fetches it)."""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path

import pytest
from bench import notes_check, tasks_seventh

PKG = "tabulate"
INIT = f"{PKG}/__init__.py"
VERSION = f"{PKG}/version.py"


def _task(name: str) -> tasks_seventh.Task:
    return next(t for t in tasks_seventh.TASKS if t.name == name)


# --- every task: right references pass, wrong ones fail (run in tests/test_task_halves.py) -------

# question, find and count tasks: (right answers, wrong answers)
ANSWERS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "tb-tox-ignore": (
        ("benchmark.py", "It runs pytest with --ignore benchmark.py."),
        ("test/common.py", "It skips nothing.", "benchmark.pyc"),
    ),
    "tb-def-ssf": (
        ("tabulate/__init__.py", "It's in __init__.py of the tabulate package."),
        ("tabulate/version.py", "test/test_api.py", "__init__.pyi"),
    ),
    "tb-default-fmt": (
        ('"simple"', "The default is tablefmt='simple'."),
        ("simple_grid", "grid", "plain", "simple_outline"),
    ),
    "tb-bad-format-exit": (("It exits with code 3.", "sys.exit(3)", "three"), ("2", "1", "It exits with 0.")),
    "tb-version": (("tabulate 0.9.0",), ("0.9.1", "0.9.00", "0.8.10")),
    "tb-license": (("The MIT License.",), ("BSD 3-Clause", "Apache 2.0")),
    "tb-what": (
        (
            "It pretty-prints tabular data as plain-text tables, as a library and a command-line tool.",
            "It formats lists of rows into nicely aligned text tables.",
            "This project is a Python library for pretty-printing tabular data.",  # refused before
        ),
        ("It is a web framework.", "It parses TOML files.", "tabulate is a Python library."),
    ),
    "tb-version-source": (
        (
            "From setuptools_scm: it writes the version into tabulate/version.py.",
            "tabulate/version.py",
            "It is taken from the git tag by setuptools-scm.",
            "From the git tag of the release.",
        ),
        (
            "From setup.cfg.",
            "From __init__.py's __version__ = '0.9.0' line.",
            "It has no version.",
            "From PKG-INFO.",
        ),
    ),
    "tb-deps": (
        (
            "No, it has no required dependencies; wcwidth is an optional extra for wide characters.",
            "Nothing else is required.",
            "Only the optional wcwidth (the widechars extra).",
        ),
        ("Yes, it needs wcwidth.", "It requires numpy and pandas.", "Yes."),
    ),
    "tb-cli": (
        ("Yes, a `tabulate` script that runs tabulate:_main.", "tabulate._main"),
        ("Yes, it runs tabulate.tabulate.", "No, it has no command-line program.", "main()"),
    ),
    "tb-count-tests": (("There are 7.", "seven test files"), ("8", "6", "17")),
    "tb-test-folder": (
        ("They are in the test/ folder.", "The tests are in `test`.", "test"),
        ("tests/", "In the tests folder.", "tabulate/", "test_api.py"),
    ),
    "tb-count-classes": (
        ("2 (JupyterHTMLStr and _CustomTextWrap).", "two"),
        ("5", "3", "1"),
    ),
    "tb-para-release": (("You have tabulate 0.9.0.",), ("0.9.1", "0.8.10")),
    "tb-para-find": (
        ("tabulate/__init__.py", "In the package's __init__.py (the tabulate function)."),
        ("tabulate/version.py", "test/test_output.py", "benchmark.py"),
    ),
    "tb-para-count": (("7", "Seven modules."), ("8", "six")),
    "tb-para-fmt": (("You get the simple format.", '"simple"'), ("grid", "simple_grid", "plain")),
    "tb-zh-version": (("版本是 0.9.0。", "0.9.0"), ("0.9.1", "0.8.10")),
    "tb-zh-python": (("最低需要 Python 3.7（requires-python >=3.7）。",), ("Python 3.8", "3.10")),
    "tb-zh-def": (
        ("在 tabulate/__init__.py 里。", "在__init__.py里定义"),
        ("tabulate/version.py", "test/test_textwrapper.py"),
    ),
    "tb-zh-formats": (("一共 36 种。", "三十六种"), ("35", "16", "37")),
    "tb-zh-count-api": (("有 3 个测试函数。", "三个"), ("4", "2")),
    "tb-zh-license": (("MIT 许可证。",), ("Apache 2.0", "GPL")),
    "tb-fr-float": (
        ('Le format par défaut est "g" (_DEFAULT_FLOATFMT).', "g"),
        (".2f", "f", "Aucun format, les nombres sont affichés tels quels."),
    ),
    "tb-fr-count": (("Il y a 8 fichiers .py.", "huit"), ("7", "sept")),
    "tb-es-what": (
        ("Sirve para imprimir datos tabulares como tablas de texto bien formateadas.",),
        ("Es un servidor web.", "Sirve para leer archivos TOML."),
    ),
    "tb-es-widechars": (
        ("De si la librería wcwidth está instalada: es True si se puede importar wcwidth.",),
        ("Siempre es False.", "De la variable de entorno TABULATE_WIDE."),
    ),
    "tb-de-flake8": (("99 Zeichen.", "max-line-length = 99"), ("79", "88", "100")),
    "tb-de-count": (("4 Funktionen.", "vier"), ("3", "fünf")),
}

# edit tasks: (the file, the right edit, wrong ones), each made from the original text
Edit = Callable[[str], str]
EDITS: dict[str, tuple[str, Edit, tuple[Edit, ...]]] = {
    "tb-edit-version": (
        VERSION,
        lambda t: t.replace("'0.9.0'", '"0.9.1"').replace("(0, 9, 0)", "(0, 9, 1)"),
        (
            lambda t: t.replace("'0.9.0'", "'0.10.0'"),
            lambda t: t.replace("(0, 9, 0)", "(0, 9, 1)"),
            lambda t: t.replace("'0.9.0'", "'0.9.1'").replace("(0, 9, 0)", "(0, 9, 2)"),
        ),
    ),
    "tb-edit-padding": (
        INIT,
        lambda t: t.replace("MIN_PADDING = 2", "MIN_PADDING = 1  # was 2"),
        (
            lambda t: t.replace("MIN_PADDING = 2", "MIN_PADDING = 0"),
            lambda t: t.replace("MIN_PADDING = 2", "MIN_PADDING = 1").replace(
                "PRESERVE_WHITESPACE = False", "PRESERVE_WHITESPACE = True"
            ),
        ),
    ),
    "tb-edit-whitespace": (
        INIT,
        lambda t: t.replace("PRESERVE_WHITESPACE = False", "PRESERVE_WHITESPACE = True"),
        (
            lambda t: t.replace("PRESERVE_WHITESPACE = False", "PRESERVE_WHITESPACE = None"),
            lambda t: t.replace("PRESERVE_WHITESPACE = False", "PRESERVE_WHITESPACE = True").replace(
                "MIN_PADDING = 2", "MIN_PADDING = 0"
            ),
        ),
    ),
    "tb-zh-edit": (
        "pyproject.toml",
        lambda t: t.replace('requires-python = ">=3.7"', 'requires-python = ">= 3.8"'),
        (
            lambda t: t.replace('">=3.7"', '">=3.9"'),
            lambda t: t.replace('">=3.7"', '">=3.8"').replace(
                '    "Programming Language :: Python :: 3.7",\n', ""
            ),
        ),
    ),
    "tb-es-edit": (
        INIT,
        lambda t: t.replace('    tablefmt="simple",\n    floatfmt', "    tablefmt='github',\n    floatfmt"),
        (
            lambda t: t.replace('    tablefmt="simple",\n    floatfmt', '    tablefmt="grid",\n    floatfmt'),
            lambda t: t.replace('tablefmt = "simple"', 'tablefmt = "github"'),  # the command line's only
            lambda t: t.replace(
                'tablefmt="simple",\n    floatfmt', 'tablefmt="github",\n    floatfmt'
            ).replace('tablefmt = "simple"', 'tablefmt = "github"'),
        ),
    ),
    "tb-de-edit": (
        INIT,
        lambda t: t.replace('_DEFAULT_MISSINGVAL = ""', "_DEFAULT_MISSINGVAL = '-'"),
        (
            lambda t: t.replace('_DEFAULT_MISSINGVAL = ""', '_DEFAULT_MISSINGVAL = "--"'),
            lambda t: t.replace('_DEFAULT_MISSINGVAL = ""', '_DEFAULT_MISSINGVAL = "-"').replace(
                '_DEFAULT_INTFMT = ""', '_DEFAULT_INTFMT = "-"'
            ),
        ),
    ),
}

# notes tasks: (right notes, wrong notes)
NOTES: dict[str, tuple[str, str]] = {
    "tb-notes-three": (
        "- tabulate/version.py: generated by setuptools_scm, holds __version__ and version_tuple\n"
        "- test/common.py: pytest helpers assert_equal and assert_in, rows to pipe strings\n"
        "- benchmark.py: timeit benchmark of tabulate against asciitable, prettytable and texttable\n",
        "- tabulate/version.py: the module\n- test/common.py: common code\n- benchmark.py: a script\n",
    ),
    "tb-notes-tests": (
        "- test/test_api.py: API signature of tabulate, tabulate_formats and simple_separated_format\n"
        "- test/test_cli.py: the command-line interface through subprocess and stdin, --format\n"
        "- test/test_input.py: tabular data inputs: dict, namedtuple, dataclass, numpy and pandas\n"
        "- test/test_internal.py: internal functions such as _align_column, wrap and multiline\n"
        "- test/test_output.py: the output of each tablefmt: grid, pipe, latex, html\n"
        "- test/test_regression.py: regression tests of issues with ansi and unicode\n"
        "- test/test_textwrapper.py: the _CustomTextWrap textwrapper, wrap of wide wcwidth text\n",
        "- test/test_api.py: API signature\n- test/test_cli.py: tests\n- test/test_input.py: tests\n",
    ),
    "tb-zh-notes": (
        "- tabulate/__init__.py：把表格数据打印成文本表格（pretty-print tabular data），"
        "支持 latex、html 等格式\n"
        "- tabulate/version.py：setuptools_scm 自动生成的版本文件（__version__）\n",
        "- tabulate/__init__.py：主模块\n- tabulate/version.py：一个文件\n",
    ),
    "tb-fr-notes": (
        "- test/common.py : fonctions d'aide des tests (assert_equal, assert_in)\n"
        "- benchmark.py : mesure avec timeit la vitesse de tabulate face à prettytable et texttable\n",
        "- test/common.py : fonctions d'aide des tests (assert_equal)\n- benchmark.py : un script\n",
    ),
}


# --- what is this half's own -----------------------------------------------------------------


@pytest.fixture(scope="module")
def archive() -> Path:
    path = tasks_seventh.PIN.folder / tasks_seventh.PIN.filename
    if not path.is_file():
        pytest.skip(
            "the pinned sdist has not been fetched (python -m bench.task_suite --half seventh fetches it)"
        )
    return tasks_seventh.PIN.verified(path)


@pytest.fixture
def project(archive: Path, tmp_path: Path) -> Path:
    tasks_seventh.build_workspace(tmp_path, archive)
    return tmp_path


def _top_level(path: Path, kind: type[ast.stmt]) -> int:
    return sum(isinstance(n, kind) for n in ast.parse(path.read_text(encoding="utf-8")).body)


def _tests_in(path: Path) -> int:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return sum(isinstance(n, ast.FunctionDef) and n.name.startswith("test") for n in tree.body)


def test_the_counts_asked_for_are_the_projects(project: Path) -> None:
    test = project / "test"
    assert len(list(test.glob("test_*.py"))) == 7 and len(list(test.glob("*.py"))) == 8
    assert sorted(p.name for p in (project / PKG).iterdir()) == ["__init__.py", "version.py"]
    assert not (project / "tests").exists()
    assert _top_level(project / INIT, ast.ClassDef) == 2
    assert _top_level(test / "common.py", ast.FunctionDef) == 4
    assert _tests_in(test / "test_api.py") == 3


def test_the_facts_asked_for_are_the_projects(project: Path) -> None:
    init = (project / INIT).read_text(encoding="utf-8")
    pyproject = (project / "pyproject.toml").read_text(encoding="utf-8")
    tox = (project / "tox.ini").read_text(encoding="utf-8")
    assert "MIN_PADDING = 2\n" in init and "PRESERVE_WHITESPACE = False\n" in init
    assert '_DEFAULT_FLOATFMT = "g"\n' in init and '_DEFAULT_MISSINGVAL = ""\n' in init
    assert "WIDE_CHARS_MODE = wcwidth is not None\n" in init
    assert '    tablefmt="simple",\n    floatfmt=_DEFAULT_FLOATFMT,' in init
    assert 'print("%s is not a supported table format" % value)' in init
    assert init.count("sys.exit(3)") == 1
    assert "--ignore benchmark.py" in tox and "max-line-length = 99" in tox
    assert 'requires-python = ">=3.7"' in pyproject and 'dynamic = ["version"]' in pyproject
    assert 'write_to = "tabulate/version.py"' in pyproject and 'tabulate = "tabulate:_main"' in pyproject
    assert "dependencies = [" not in pyproject and 'widechars = ["wcwidth"]' in pyproject
    assert "__version__ = version = '0.9.0'" in (project / VERSION).read_text(encoding="utf-8")


def test_the_table_formats_counted_are_the_projects(project: Path) -> None:
    init = ast.parse((project / INIT).read_text(encoding="utf-8"))
    formats = next(
        n.value
        for n in init.body
        if isinstance(n, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == "_table_formats" for t in n.targets)
    )
    assert isinstance(formats, ast.Dict) and len(formats.keys) == 36


def test_the_test_folder_is_not_a_tests_folder() -> None:
    task = _task("tb-test-folder")
    assert task.check("测试都在 test/ 文件夹里。", Path("."))
    assert task.check("The tests live in the test folder.", Path("."))
    assert not task.check("测试都在 tests/ 文件夹里。", Path("."))


def test_a_note_may_name_a_package_file_beside_chinese(project: Path) -> None:
    task = _task("tb-zh-notes")
    right = NOTES["tb-zh-notes"][0]
    (project / "NOTES.md").write_text(right.replace("tabulate/", ""), encoding="utf-8")
    assert task.check("", project)
    (project / "NOTES.md").write_text(
        right.replace("tabulate/version.py", "test/version.py"), encoding="utf-8"
    )
    assert not task.check("", project)  # another folder's version.py is not the package's
    assert notes_check.names_file("版本在version.py里", VERSION)


def test_the_version_bump_may_leave_the_tuple_and_touch_the_metadata(project: Path) -> None:
    def bump(name: str, old: str, new: str) -> None:
        path = project / name
        path.write_text(path.read_text(encoding="utf-8").replace(old, new), encoding="utf-8")

    task = _task("tb-edit-version")
    bump(VERSION, "'0.9.0'", "'0.9.1'")
    assert task.check("Done.", project)  # the string alone, the tuple left as it was
    for name in ("PKG-INFO", "tabulate.egg-info/PKG-INFO"):
        bump(name, "Version: 0.9.0", "Version: 0.9.1")
    bump("CHANGELOG", "- 0.9.1: Future version.", "- 0.9.1: Bug fixes.")
    assert task.check("Done.", project)
    bump("setup.cfg", "tag_date = 0", "tag_date = 1")
    assert not task.check("Done.", project)


def test_the_python_floor_edit_takes_either_spelling_and_nothing_else(project: Path) -> None:
    task = _task("tb-zh-edit")
    pyproject = project / "pyproject.toml"
    original = pyproject.read_text(encoding="utf-8")
    for right in ('">=3.8"', '">= 3.8"', "'>=3.8'"):
        pyproject.write_text(original.replace('">=3.7"', right), encoding="utf-8")
        assert task.check("好了。", project), right
    pyproject.write_text(original.replace('">=3.7"', '">=3.8,<4"'), encoding="utf-8")
    assert not task.check("好了。", project)

"""The task suite's eighth half (isodate 0.7.2, held out): the right and wrong reference answers,
edits and notes of every task (``tests/test_task_halves.py`` runs them, with what every half on a
public project shares: the pin, the targets, the project's size), and what is this half's own:
the counts and facts it asks are the project's (read from its files and, for what the code does,
from running it), the checkers tell apart ``tzinfo.py`` from ``isotzinfo.py`` and ``duration.py``
from ``isoduration.py``, the format ``P%P`` from ``P%p``, the version 0.7.2 from the unreleased
0.7.3, and the version bump may touch the version tuple, the metadata and the changelog. No
network: the tests that need the real project skip when its pinned sdist has not been fetched
(``python -m bench.task_suite --half eighth`` fetches it)."""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from bench import notes_check, tasks_eighth

PKG = "src/isodate"
VERSION = f"{PKG}/version.py"
ISOSTRF = f"{PKG}/isostrf.py"
ISODURATION = f"{PKG}/isoduration.py"
ISOTZINFO = f"{PKG}/isotzinfo.py"
TZINFO = f"{PKG}/tzinfo.py"


def _task(name: str) -> tasks_eighth.Task:
    return next(t for t in tasks_eighth.TASKS if t.name == name)


# --- every task: right references pass, wrong ones fail (run in tests/test_task_halves.py) -------

# question, find and count tasks: (right answers, wrong answers)
ANSWERS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "is-precommit-flake8": (
        ("88 characters.", "flake8 runs with --max-line-length=88"),
        ("79", "127", "It sets none; flake8 uses its default of 79.", "888"),
    ),
    "is-readme-files": (
        (
            "README.rst, CHANGES.txt and TODO.txt.",
            'readme = {file=["README.rst", "CHANGES.txt", "TODO.txt"]}',
        ),
        ("README.rst", "README.rst and CHANGES.txt", "README.md, CHANGES.md and TODO.md"),
    ),
    "is-def-fixedoffset": (
        ("src/isodate/tzinfo.py", "It's in tzinfo.py.", "在src/isodate/tzinfo.py里"),
        ("src/isodate/isotzinfo.py", "src/isodate/__init__.py", "tests/test_time.py", "tzinfo.pyi"),
    ),
    "is-error-base": (
        ("ValueError.", "class ISO8601Error(ValueError)"),
        ("Exception", "TypeError", "ArithmeticError", "ValueErrors are unrelated; it is an Exception."),
    ),
    "is-duration-default": (
        ('"P%P", the D_DEFAULT format.', "D_DEFAULT", "format=D_DEFAULT, i.e. P%P"),
        ("P%p", "D_WEEK", "%Z", "PnnYnnMnnDTnnHnnMnnS", "P%Y"),
    ),
    "is-tz-limit": (
        ("99 hours; more raises OverflowError.", "ninety-nine"),
        ("24", "12 hours", "100", "999"),
    ),
    "is-version": (("isodate 0.7.2",), ("0.7.3", "0.6.1", "0.0.0.dev0", "0.7.20")),
    "is-license": (
        ("The BSD license (3-clause).", "BSD-3-Clause"),
        ("MIT", "Apache 2.0", "GPL", "MIT or BSD"),
    ),
    "is-what": (
        (
            "It parses and formats ISO 8601 dates, times and durations.",
            "An ISO8601 date/time/duration parser and formatter for Python.",
        ),
        (
            "It is a web framework.",
            "It converts times between time zones.",
            "isodate is a Python library.",
        ),
    ),
    "is-version-source": (
        (
            "From setuptools_scm: it writes the version into src/isodate/version.py.",
            "src/isodate/version.py",
            "It is taken from the git tag by setuptools-scm.",
        ),
        (
            "From setup.cfg.",
            "From __init__.py's __version__ = '0.7.2' line.",
            "It has no version.",
            "From PKG-INFO.",
        ),
    ),
    "is-deps": (
        (
            "No, it has no runtime dependencies; only the standard library.",
            "None: pyproject.toml lists no dependencies (setuptools_scm is only used to build).",
            "It doesn't need anything else.",
        ),
        (
            "Yes, it needs python-dateutil.",
            "It requires six and nothing else.",
            "Yes.",
        ),
    ),
    "is-cli": (
        (
            "No, it is only a library; pyproject.toml has no [project.scripts].",
            "There is no command-line program.",
        ),
        ("Yes, `isodate`.", "It installs the isodate command.", "Yes, it runs isodate.parse_date."),
    ),
    "is-count-tests": (("There are 6.", "six test files"), ("7", "5", "16")),
    "is-count-classes": (
        ("3 (Utc, FixedOffset and LocalTimezone).", "three"),
        ("2", "4", "1"),
    ),
    "is-para-release": (("You have isodate 0.7.2.",), ("0.7.3", "0.6.1")),
    "is-para-find": (
        ("src/isodate/isoduration.py", "In isoduration.py (parse_duration)."),
        ("src/isodate/duration.py", "tests/test_duration.py", "src/isodate/isodates.py"),
    ),
    "is-para-count": (("6", "Six modules."), ("7", "five")),
    "is-para-fmt": (
        ("It uses D_DEFAULT, which is P%P.", '"P%P"'),
        ("P%p", "D_WEEK", "%P"),
    ),
    "is-zh-version": (("版本是 0.7.2。", "0.7.2"), ("0.7.3", "0.6.1")),
    "is-zh-python": (
        ("最低需要 Python 3.7（requires-python >=3.7）。",),
        ("Python 3.9", "3.8", "Python 2.7"),
    ),
    "is-zh-def": (
        ("在 src/isodate/isotzinfo.py 里。", "在isotzinfo.py里定义"),
        ("src/isodate/tzinfo.py", "src/isodate/__init__.py", "tests/test_time.py"),
    ),
    "is-zh-count-date": (("一共 12 个。", "十二个"), ("11", "13", "6")),
    "is-zh-count-pickle": (("有 3 个测试函数。", "三个"), ("4", "2")),
    "is-zh-license": (("BSD 许可证。",), ("MIT", "Apache 2.0", "GPL")),
    "is-fr-yeardigits": (
        ("Quatre chiffres (yeardigits=4).", "4"),
        ("6", "deux chiffres", "2"),
    ),
    "is-fr-count": (("Il y a 11 fichiers .py.", "onze"), ("10", "12", "17")),
    "is-es-what": (
        ("Sirve para analizar y formatear fechas, horas y duraciones en formato ISO 8601.",),
        ("Es un servidor web.", "Sirve para leer archivos TOML."),
    ),
    "is-es-utc": (
        ("Devuelve 'Z'.", "Z", "Devuelve la cadena «Z» en vez de +00:00."),
        ("+00:00", "UTC", "%Z", "Una cadena vacía.", "z"),
    ),
    "is-de-changes": (("0.6.1 (2021-12-13).", "Version 0.6.1"), ("0.7.2", "0.6.0", "0.5.4")),
    "is-de-count": (
        ("2 Funktionen: fquotmod und max_days_in_month.", "zwei"),
        ("1", "3", "drei"),
    ),
}

# edit tasks: (the file, the right edit, wrong ones), each made from the original text
Edit = Callable[[str], str]
EDITS: dict[str, tuple[str, Edit, tuple[Edit, ...]]] = {
    "is-edit-version": (
        VERSION,
        lambda t: t.replace("'0.7.2'", '"0.7.3"').replace("(0, 7, 2)", "(0, 7, 3)"),
        (
            lambda t: t.replace("'0.7.2'", "'0.8.0'"),
            lambda t: t.replace("(0, 7, 2)", "(0, 7, 3)"),
            lambda t: t.replace("'0.7.2'", "'0.7.3'").replace("(0, 7, 2)", "(0, 7, 4)"),
        ),
    ),
    "is-edit-default": (
        ISOSTRF,
        lambda t: t.replace('D_DEFAULT = "P%P"', "D_DEFAULT = 'P%p'  # weeks"),
        (
            lambda t: t.replace('D_DEFAULT = "P%P"', 'D_DEFAULT = "P%W"'),
            lambda t: t.replace('D_DEFAULT = "P%P"', 'D_DEFAULT = "P%p"').replace(
                'D_WEEK = "P%p"', 'D_WEEK = "P%P"'
            ),
        ),
    ),
    "is-edit-timedelta": (
        ISODURATION,
        lambda t: t.replace("as_timedelta_if_possible=True", "as_timedelta_if_possible=False"),
        (
            lambda t: t.replace("as_timedelta_if_possible=True", "as_timedelta_if_possible=None"),
            lambda t: t.replace("if as_timedelta_if_possible and ", "if False and "),
            lambda t: t.replace("as_timedelta_if_possible=True", "as_timedelta_if_possible=False").replace(
                "if as_timedelta_if_possible and ", "if "
            ),
        ),
    ),
    "is-zh-edit": (
        "pyproject.toml",
        lambda t: t.replace('requires-python = ">=3.7"', 'requires-python = ">= 3.9"'),
        (
            lambda t: t.replace('">=3.7"', '">=3.10"'),
            lambda t: t.replace('">=3.7"', '">=3.9"').replace(
                '    "Programming Language :: Python :: 3.7",\n', ""
            ),
        ),
    ),
    "is-es-edit": (
        ISOTZINFO,
        lambda t: t.replace('def tz_isoformat(dt, format="%Z")', "def tz_isoformat(dt, format='%z')"),
        (
            lambda t: t.replace('def tz_isoformat(dt, format="%Z")', 'def tz_isoformat(dt, format="%h")'),
            lambda t: t.replace('"%Z"', '"%z"'),  # the default and the branch that reads it
        ),
    ),
    "is-de-edit": (
        TZINFO,
        lambda t: t.replace('name="UTC"', "name='Z'"),
        (
            lambda t: t.replace('name="UTC"', 'name="UTC+0"'),
            lambda t: t.replace('name="UTC"', 'name="Z"').replace('return "UTC"', 'return "Z"'),
        ),
    ),
}

# notes tasks: (right notes, wrong notes)
NOTES: dict[str, tuple[str, str]] = {
    "is-notes-three": (
        "- src/isodate/isoerror.py: defines ISO8601Error, the exception (a ValueError) raised when a "
        "string can not be parsed\n"
        "- src/isodate/tzinfo.py: tzinfo classes Utc, FixedOffset and LocalTimezone (UTC, fixed-offset "
        "and local time zones with DST)\n"
        "- src/isodate/isotzinfo.py: parse_tzinfo parses ISO 8601 time zone designators; tz_isoformat "
        "renders an offset\n",
        "- src/isodate/isoerror.py: the module\n- src/isodate/tzinfo.py: a module\n"
        "- src/isodate/isotzinfo.py: another module\n",
    ),
    "is-notes-parsers": (
        "- src/isodate/isodates.py: parse_date parses ISO 8601 date strings (basic, extended, week and "
        "ordinal dates); date_isoformat\n"
        "- src/isodate/isodatetime.py: parse_datetime splits at the time designator and combines "
        "parse_date and parse_time; datetime_isoformat\n"
        "- src/isodate/isoduration.py: the duration parser parse_duration (timedelta or Duration) and "
        "duration_isoformat\n"
        "- src/isodate/isoerror.py: ISO8601Error, the exception raised when a string can not be parsed\n"
        "- src/isodate/isostrf.py: strftime and the ISO 8601 format strings such as DATE_EXT_COMPLETE "
        "and D_DEFAULT\n"
        "- src/isodate/isotime.py: parse_time parses time strings with fractions and a time zone; "
        "time_isoformat\n"
        "- src/isodate/isotzinfo.py: parse_tzinfo and tz_isoformat for time zone designators\n",
        "- src/isodate/isodates.py: parse_date\n- src/isodate/isotime.py: parse_time\n"
        "- src/isodate/isoerror.py: errors\n",
    ),
    "is-zh-notes": (
        "- tests/test_date.py：测试 parse_date 和 date_isoformat 的日期解析与格式化\n"
        "- tests/test_datetime.py：测试 parse_datetime 和 datetime_isoformat（日期时间）\n"
        "- tests/test_duration.py：测试 parse_duration、duration_isoformat 和 Duration 的时长运算\n"
        "- tests/test_pickle.py：测试 pickle 序列化与反序列化\n"
        "- tests/test_strf.py：测试 strftime 的格式化，包括 DST 和 microseconds\n"
        "- tests/test_time.py：测试 parse_time 和 time_isoformat 的时间解析\n",
        "- tests/test_date.py：测试\n- tests/test_datetime.py：测试\n- tests/test_duration.py：测试\n"
        "- tests/test_pickle.py：测试\n- tests/test_strf.py：测试\n- tests/test_time.py：测试\n",
    ),
    "is-fr-notes": (
        "- src/isodate/duration.py : la classe Duration, comme timedelta mais avec years et months "
        "(fquotmod, max_days_in_month)\n"
        "- src/isodate/isoduration.py : analyse les durées ISO 8601 avec parse_duration et les formate "
        "avec duration_isoformat\n",
        "- src/isodate/duration.py : la classe Duration\n- src/isodate/isoduration.py : un module\n",
    ),
}


# --- what is this half's own -----------------------------------------------------------------


@pytest.fixture(scope="module")
def archive() -> Path:
    path = tasks_eighth.PIN.folder / tasks_eighth.PIN.filename
    if not path.is_file():
        pytest.skip(
            "the pinned sdist has not been fetched (python -m bench.task_suite --half eighth fetches it)"
        )
    return tasks_eighth.PIN.verified(path)


@pytest.fixture
def project(archive: Path, tmp_path: Path) -> Path:
    tasks_eighth.build_workspace(tmp_path, archive)
    return tmp_path


def _top_level(path: Path, kind: type[ast.stmt]) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [n.name for n in tree.body if isinstance(n, kind)]  # type: ignore[attr-defined]


def _assigned(path: Path) -> list[str]:
    assigns = [n for n in ast.parse(path.read_text(encoding="utf-8")).body if isinstance(n, ast.Assign)]
    return [t.id for n in assigns for t in n.targets if isinstance(t, ast.Name)]


def test_the_counts_asked_for_are_the_projects(project: Path) -> None:
    tests = project / "tests"
    assert len(list(tests.glob("test_*.py"))) == 6 and len(list(tests.glob("*.py"))) == 6
    assert len(list((project / PKG).glob("*.py"))) == 11
    assert _top_level(project / TZINFO, ast.ClassDef) == ["Utc", "FixedOffset", "LocalTimezone"]
    assert len([n for n in _assigned(project / ISOSTRF) if n.startswith("DATE_")]) == 12
    pickle_tests = _top_level(tests / "test_pickle.py", ast.FunctionDef)
    assert len([n for n in pickle_tests if n.startswith("test")]) == 3
    assert _top_level(project / PKG / "duration.py", ast.FunctionDef) == ["fquotmod", "max_days_in_month"]


def test_the_facts_asked_for_are_the_projects(project: Path) -> None:
    def text(name: str) -> str:
        return (project / name).read_text(encoding="utf-8")

    pyproject = text("pyproject.toml")
    assert '"--max-line-length=88"' in text(".pre-commit-config.yaml")
    assert 'readme = {file=["README.rst", "CHANGES.txt", "TODO.txt"]' in pyproject
    assert 'requires-python = ">=3.7"' in pyproject and 'dynamic = ["version", "readme"]' in pyproject
    assert 'write_to = "src/isodate/version.py"' in pyproject
    assert "dependencies" not in pyproject and "scripts" not in pyproject
    assert "Version: 0.7.2\n" in text("PKG-INFO") and "BSD License" in text("PKG-INFO")
    assert "__version__ = version = '0.7.2'" in text(VERSION)
    assert "class ISO8601Error(ValueError):" in text(f"{PKG}/isoerror.py")
    strf = text(ISOSTRF)
    assert 'D_DEFAULT = "P%P"\n' in strf and 'D_WEEK = "P%p"\n' in strf
    assert "def duration_isoformat(tduration, format=D_DEFAULT):" in text(ISODURATION)
    assert "def parse_duration(datestring, as_timedelta_if_possible=True):" in text(ISODURATION)
    assert "if hours > 99:" in text(ISOTZINFO) and 'def tz_isoformat(dt, format="%Z"):' in text(ISOTZINFO)
    assert "def parse_date(datestring, yeardigits=4," in text(f"{PKG}/isodates.py")
    assert 'name="UTC"):' in text(TZINFO) and text(TZINFO).count('name="UTC"') == 1
    changes = text("CHANGES.txt")
    assert "0.7.3 (unreleased)" in changes and "0.7.2 (2024-10-08)" in changes
    assert changes.index("0.6.1 (2021-12-13)") < changes.index("last version to support py 2.7")
    assert changes.index("last version to support py 2.7") < changes.index("0.6.0 (2017-10-13)")


def test_what_the_code_does_is_what_the_answers_say(project: Path) -> None:
    script = (
        "import datetime as d, isodate as i\n"
        "utc = d.datetime(2024, 1, 1, tzinfo=i.UTC)\n"
        "print(i.__version__)\n"
        "print(i.tz_isoformat(utc))\n"
        "weeks = d.timedelta(weeks=2)\n"
        "print(i.duration_isoformat(i.Duration(years=1)), i.duration_isoformat(weeks, 'P%p'))\n"
        "print(i.tz_isoformat(d.datetime(2024, 1, 1, tzinfo=i.FixedOffset(99, 0, 'x'))))\n"
        "try:\n"
        "    i.tz_isoformat(d.datetime(2024, 1, 1, tzinfo=i.FixedOffset(100, 0, 'x')))\n"
        "except OverflowError:\n"
        "    print('overflow')\n"
        "print(type(i.parse_duration('P3D')).__name__, type(i.parse_duration('P1Y')).__name__)\n"
        "print(i.FixedOffset().tzname(None), issubclass(i.ISO8601Error, ValueError))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=project,
        env={"PYTHONPATH": str(project / "src")},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert done.stdout.splitlines() == [
        "0.7.2",
        "Z",
        "P1Y P2W",
        "+99:00",
        "overflow",
        "timedelta Duration",
        "UTC True",
    ]


def test_the_tzinfo_module_is_not_the_time_zone_parser() -> None:
    here = Path(".")
    fixed, parser = _task("is-def-fixedoffset"), _task("is-zh-def")
    assert fixed.check("src/isodate/tzinfo.py", here) and not parser.check("src/isodate/tzinfo.py", here)
    assert parser.check("src/isodate/isotzinfo.py", here) and not fixed.check("isotzinfo.py", here)
    find = _task("is-para-find")
    assert find.check("isoduration.py", here) and not find.check("duration.py", here)


def test_the_duration_formats_differ_in_case_only() -> None:
    for name in ("is-duration-default", "is-para-fmt"):
        task = _task(name)
        assert task.check("P%P", Path(".")) and not task.check("P%p", Path("."))
        assert not task.check("p%p", Path(".")) and not task.check("d_week", Path("."))


def test_a_note_may_name_a_file_beside_chinese_and_not_its_near_namesake(project: Path) -> None:
    task = _task("is-notes-three")
    right = NOTES["is-notes-three"][0]
    (project / "NOTES.md").write_text(right.replace("src/isodate/", ""), encoding="utf-8")
    assert task.check("", project)
    (project / "NOTES.md").write_text(
        right.replace("src/isodate/tzinfo.py", "src/isodate/isotzinfo.py"), encoding="utf-8"
    )
    assert not task.check("", project)  # a second note on isotzinfo.py is none on tzinfo.py
    assert notes_check.names_file("时区在tzinfo.py里", TZINFO)
    assert not notes_check.names_file("时区在isotzinfo.py里", TZINFO)


def test_the_version_bump_may_leave_the_tuple_and_touch_the_metadata(project: Path) -> None:
    def bump(name: str, old: str, new: str) -> None:
        path = project / name
        path.write_text(path.read_text(encoding="utf-8").replace(old, new), encoding="utf-8")

    task = _task("is-edit-version")
    bump(VERSION, "'0.7.2'", "'0.7.3'")
    assert task.check("Done.", project)  # the string alone, the tuple left as it was
    for name in ("PKG-INFO", "src/isodate.egg-info/PKG-INFO"):
        bump(name, "Version: 0.7.2", "Version: 0.7.3")
    bump("CHANGES.txt", "0.7.3 (unreleased)", "0.7.3 (2024-12-01)")
    assert task.check("Done.", project)
    bump("pyproject.toml", 'fallback_version = "0.0.0.dev0"', 'fallback_version = "0.7.3"')
    assert not task.check("Done.", project)


def test_the_python_floor_edit_takes_either_spelling_and_nothing_else(project: Path) -> None:
    task = _task("is-zh-edit")
    pyproject = project / "pyproject.toml"
    original = pyproject.read_text(encoding="utf-8")
    for right in ('">=3.9"', '">= 3.9"', "'>=3.9'"):
        pyproject.write_text(original.replace('">=3.7"', right), encoding="utf-8")
        assert task.check("好了。", project), right
    pyproject.write_text(original.replace('">=3.7"', '">=3.9,<4"'), encoding="utf-8")
    assert not task.check("好了。", project)

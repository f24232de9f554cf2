"""The suite's eighth half, ``eighth``: held-out tasks nobody tuned on, written as a user of an
agent harness types them, on an eighth public project nobody here wrote: isodate 0.7.2 (the
ISO 8601 date, time and duration parser and formatter; its registry sdist: 33 files, 17 of them
.py, a ``src/isodate`` package of eleven modules (``duration.py``, the ``iso*.py`` parsers and
formatters, ``tzinfo.py`` and the setuptools_scm ``version.py``) beside its
``src/isodate.egg-info`` metadata, a ``tests/`` folder of six ``test_*.py`` files,
pyproject.toml and setup.cfg, tox.ini, ``.pre-commit-config.yaml`` and two GitHub workflows,
README.rst, LICENSE, CHANGES.txt and TODO.txt).

The sdist is a ``bench/sdist.py`` pin (``pip download --no-deps --no-binary :all:``, sha256
checked, never committed), unpacked into each task's fresh workspace. Tasks of every kind:
questions that name a file, a symbol, or neither (version, license, Python versions, what the
project does, where its version comes from, its dependencies, whether it has a command-line
tool), folder questions, counts in a file, edits (``bench/task_checks.py``: the edited file
parsed and compared with the pinned original with only the asked change made, every other file
untouched: a version, a constant, three default arguments, a TOML value, two that name no
file), a note per file of a set (named files, a glob, a folder in words); in English, Chinese,
French, Spanish and German, and English paraphrases of this half's own tasks. Each task lists
its ``targets``.

The project has names a checker must tell apart: ``tzinfo.py`` (the tzinfo classes) beside
``isotzinfo.py`` (the time zone parser), ``duration.py`` (the Duration class) beside
``isoduration.py`` (the duration parser) and ``tests/test_duration.py``, ``isodates.py`` beside
``isodatetime.py``; the duration formats ``P%P`` (``D_DEFAULT``) and ``P%p`` (``D_WEEK``), which
differ only in case; the released 0.7.2 beside the unreleased 0.7.3 of CHANGES.txt and the
fallback version 0.0.0.dev0; and PKG-INFO at the top and in the egg-info folder.
"""

from __future__ import annotations

import re
from pathlib import Path

from bench import task_checks
from bench.sdist import Pinned
from bench.task_checks import any_of, file_named, none_of, number
from bench.tasks import Checker, Task, says

HALF = "eighth"
PROJECT = "isodate"
PIN = Pinned("isodate", "0.7.2", "4cd1aa0f43ca76f4a6c6c0292a85f40b35ec2e43e315b59f06e6d32171a953e6")


def build_workspace(workspace: Path, archive: Path | None = None) -> list[str]:
    """isodate 0.7.2 in ``workspace`` (fetched and verified unless ``archive`` is given)."""
    return PIN.build(workspace, archive)


_EDITS = task_checks.Edits(PIN.originals)
python_edit, toml_edit = _EDITS.python_edit, _EDITS.toml_edit


def cased(*patterns: str) -> Checker:
    """The answer matches one of ``patterns``, case and all (``P%P`` is not ``P%p``)."""
    return lambda answer, _ws: any(re.search(p, answer) for p in patterns)


# --- the tasks -------------------------------------------------------------------------------

_PKG = "src/isodate"
_VERSION = f"{_PKG}/version.py"
_DURATION = f"{_PKG}/duration.py"
_ISODATES = f"{_PKG}/isodates.py"
_ISODATETIME = f"{_PKG}/isodatetime.py"
_ISODURATION = f"{_PKG}/isoduration.py"
_ISOERROR = f"{_PKG}/isoerror.py"
_ISOSTRF = f"{_PKG}/isostrf.py"
_ISOTIME = f"{_PKG}/isotime.py"
_ISOTZINFO = f"{_PKG}/isotzinfo.py"
_TZINFO = f"{_PKG}/tzinfo.py"
_EGG_INFO = "src/isodate.egg-info/PKG-INFO"
_V = r"(?<![\d.])0\.7\.2(?![\d]|\.\d)"
_PY37 = r"(?<![\d.])3\.7(?![\d])"
_META = (_VERSION, "PKG-INFO")
_LICENSE = ("LICENSE", "pyproject.toml", "PKG-INFO")
_PYTHON = ("pyproject.toml", "PKG-INFO")
# BSD (the 3-clause text of LICENSE, "BSD License" in the classifiers), not another license.
_BSD = none_of(says(r"\bBSD\b"), r"\bMIT\b", r"\bApache\b", r"\bL?GPL\b")
# What the project does: parses (and formats) ISO 8601 dates, times and durations, in any words.
_WHAT = says(
    r"\bISO[ -]?8601|\bISO\b",
    r"pars|format|date|time|duration|解析|格式|日期|时间|时长|analy|interpret|fecha|hora|duraci|"
    r"Datum|Daten|Zeit|Dauer",
)
# "P%P", the default format of duration_isoformat, or its name D_DEFAULT; not the weeks format
# "P%p" (D_WEEK), which differs only in case.
_P_P = cased(r"(?<![\w%])P%P(?![\w])", r"(?<![\w])D_DEFAULT(?![\w])")
# "Z", what tz_isoformat gives for UTC, as the letter alone (not "%Z", not a letter of a word).
_Z = cased(r"(?<![\w%])Z(?![\w%])")
_TZINFO_FILE = file_named("tzinfo.py")
_ISOTZINFO_FILE = file_named("isotzinfo.py")
_ISODURATION_FILE = file_named("isoduration.py")
# An answer that names something the project needs ("it needs pytz"), not "needs nothing".
_NEEDS = r"\b(?:requires?|needs?|depends on)\s+(?!no\b|nothing|none\b|any|python\b|only python\b)\w"
_NO = r"\bno\b|\bnone\b|\bnot\b|n't|\bnothing\b|\bzero\b|没有|不需要|无|\bpas\b|aucune|ninguna|keine"
_TESTS = tuple(f"tests/test_{n}.py" for n in ("date", "datetime", "duration", "pickle", "strf", "time"))
_PARSERS = (_ISODATES, _ISODATETIME, _ISODURATION, _ISOERROR, _ISOSTRF, _ISOTIME, _ISOTZINFO)

# Facts a note may give of each file: words of the file itself (lower-case), then the same facts
# in other words (the words a Chinese, French, Spanish or German note uses).
_FACTS: dict[str, tuple[str, ...]] = {
    _DURATION: ("duration class", "class duration", "timedelta", "years", "months", "fquotmod",
                "max_days_in_month"),
    _ISODATES: ("parse_date", "date_isoformat", "date string", "yeardigits", "expanded", "week date",
                "ordinal"),
    _ISODATETIME: ("parse_datetime", "datetime_isoformat", "date time", "time designator", "combine"),
    _ISODURATION: ("parse_duration", "duration_isoformat", "duration parser", "duration string",
                   "timedelta", "period"),
    _ISOERROR: ("exception", "iso8601error", "valueerror", "can not be parsed"),
    _ISOSTRF: ("strftime", "format string", "format code", "date_ext_complete", "d_default", "directive"),
    _ISOTIME: ("parse_time", "time_isoformat", "time string", "time zone", "fraction", "microsecond"),
    _ISOTZINFO: ("time zone", "parse_tzinfo", "tz_isoformat", "build_tzinfo", "designator", "offset"),
    _TZINFO: ("fixedoffset", "fixed-offset", "localtimezone", "local time", "utc", "daylight saving",
              "dst", "offset"),
    "tests/test_date.py": ("parse_date", "date_isoformat", "yeardigits", "date"),
    "tests/test_datetime.py": ("parse_datetime", "datetime_isoformat", "datetime"),
    "tests/test_duration.py": ("parse_duration", "duration_isoformat", "duration", "timedelta"),
    "tests/test_pickle.py": ("pickle", "pickling", "proto"),
    "tests/test_strf.py": ("strftime", "dt_ext_complete", "localtime", "dst", "microseconds", "mock"),
    "tests/test_time.py": ("parse_time", "time_isoformat", "time"),
}  # fmt: skip
_TRANSLATED: dict[str, tuple[str, ...]] = {
    _DURATION: ("时长类", "持续时间类", "年", "月", "classe", "années", "mois", "clase", "años", "meses",
                "klasse", "jahre", "monate"),
    _ISODATES: ("日期", "fecha", "datum"),
    _ISODATETIME: ("日期时间", "date et heure", "fecha y hora", "datum und zeit"),
    _ISODURATION: ("解析时长", "解析持续时间", "analyse", "analiza", "parst"),
    _ISOERROR: ("异常", "错误", "erreur", "excepción", "error", "fehler", "ausnahme"),
    _ISOSTRF: ("格式化", "格式字符串", "formatage", "formato", "formatier"),
    _ISOTIME: ("时间", "heure", "hora", "uhrzeit"),
    _ISOTZINFO: ("时区", "fuseau", "zona horaria", "zeitzone"),
    _TZINFO: ("时区", "偏移", "fuseau", "zona horaria", "zeitzone"),
    "tests/test_date.py": ("日期",),
    "tests/test_datetime.py": ("日期时间", "日期和时间"),
    "tests/test_duration.py": ("时长", "持续时间", "时间段"),
    "tests/test_pickle.py": ("序列化", "反序列化"),
    "tests/test_strf.py": ("格式化",),
    "tests/test_time.py": ("时间",),
}  # fmt: skip


def _facts(*paths: str) -> dict[str, tuple[str, ...]]:
    return {p: _FACTS[p] + _TRANSLATED[p] for p in paths}


_make = task_checks.TaskMaker(HALF, PROJECT, _facts)
_t, _edit, _notes = _make.t, _make.edit, _make.notes


def _requires_python(version: str) -> Checker:
    return _EDITS.requires_python('requires-python = ">=3.7"', version, ("PKG-INFO", _EGG_INFO))


_BUMP = ("PKG-INFO", _EGG_INFO, "CHANGES.txt")
# The version bump: the version string alone, or with the version tuple beside it.
_VERSION_BUMP = _EDITS.version_bump(_VERSION, (("'0.7.2'", "'0.7.3'"), ("(0, 7, 2)", "(0, 7, 3)")), _BUMP)


TASKS: tuple[Task, ...] = (
    # questions that name a file
    _t("is-precommit-flake8", "question", "What maximum line length does .pre-commit-config.yaml give "
       "flake8?", number(88, "eighty-eight"), (".pre-commit-config.yaml",)),
    _t("is-readme-files", "question", "pyproject.toml builds the package's long description out of more "
       "than one file. Which files?", says(r"README\.rst", r"CHANGES\.txt", r"TODO\.txt"),
       ("pyproject.toml",)),
    # questions that name a symbol
    _t("is-def-fixedoffset", "find", "Which file defines the FixedOffset class?", _TZINFO_FILE,
       (_TZINFO,)),
    _t("is-error-base", "question", "Which built-in exception is ISO8601Error a subclass of?",
       says(r"\bValueError\b"), (_ISOERROR,)),
    _t("is-duration-default", "question", "What is the default value of the format argument of "
       "duration_isoformat?", _P_P, (_ISODURATION,)),
    _t("is-tz-limit", "question", "What is the largest UTC offset, in hours, that tz_isoformat can "
       "format without raising an error?", number(99, "ninety-nine"), (_ISOTZINFO,)),
    # questions that name neither
    _t("is-version", "question", "What version is this?", says(_V), _META),
    _t("is-license", "question", "What license is this project under?", _BSD, _LICENSE),
    _t("is-what", "question", "What does this project do? One sentence please.", _WHAT, ("README.rst",)),
    _t("is-version-source", "find", "There's no version number in pyproject.toml. Where does the package "
       "get its version from?", any_of(says(r"setuptools[_-]scm|\bgit tags?\b"), file_named("version.py")),
       ("pyproject.toml", _VERSION)),
    _t("is-deps", "question", "Does isodate need any other packages installed to run?",
       none_of(says(_NO), r"\byes\b", _NEEDS), ("pyproject.toml",)),
    _t("is-cli", "question", "Does installing this give me a command-line program?",
       none_of(says(_NO), r"\byes\b"), ("pyproject.toml",)),
    # folder questions
    _t("is-count-tests", "count", "How many test files are in the tests folder?", number(6, "six"),
       ("tests",)),
    # counts in a file
    _t("is-count-classes", "count", "How many classes does src/isodate/tzinfo.py define?",
       number(3, "three"), (_TZINFO,)),
    # edits
    _edit("is-edit-version", "Bump the version to 0.7.3.", _VERSION_BUMP, (_VERSION,)),
    _edit("is-edit-default", 'In src/isodate/isostrf.py, make D_DEFAULT the weeks format "P%p" instead '
          'of "P%P".', python_edit(_ISOSTRF, (('D_DEFAULT = "P%P"', 'D_DEFAULT = "P%p"'),)), (_ISOSTRF,)),
    _edit("is-edit-timedelta", "parse_duration gives back a timedelta whenever it can. Make it return a "
          "Duration by default instead.",
          python_edit(_ISODURATION, (("as_timedelta_if_possible=True", "as_timedelta_if_possible=False"),)),
          (_ISODURATION,)),
    # a note per file of a set
    _notes("is-notes-three", "Write a one-line note for each of src/isodate/isoerror.py, "
           "src/isodate/tzinfo.py and src/isodate/isotzinfo.py saying what it is for.",
           (_ISOERROR, _TZINFO, _ISOTZINFO), (_ISOERROR, _TZINFO, _ISOTZINFO)),
    _notes("is-notes-parsers", "For each src/isodate/iso*.py file, add a one-line note on what it does.",
           _PARSERS, _PARSERS),
    # English paraphrases of this half's tasks
    _t("is-para-release", "question", "Which release of isodate do I have here?", says(_V), _META),
    _t("is-para-find", "find", 'I want to read the code that turns a string like "P3Y6M4DT12H30M5S" into '
       "a Python object. Which file is it in?", _ISODURATION_FILE, (_ISODURATION,)),
    _t("is-para-count", "count", "How many test modules does the tests folder have?", number(6, "six"),
       ("tests",)),
    _t("is-para-fmt", "question", "If I call duration_isoformat without passing a format, which format "
       "string does it use?", _P_P, (_ISODURATION,)),
    # in Chinese
    _t("is-zh-version", "question", "这个库现在是什么版本？", says(_V), _META),
    _t("is-zh-python", "question", "最低需要 Python 几？", says(_PY37), _PYTHON),
    _t("is-zh-def", "find", "parse_tzinfo 这个函数是在哪个文件里定义的？", _ISOTZINFO_FILE, (_ISOTZINFO,)),
    _t("is-zh-count-date", "count", "src/isodate/isostrf.py 里一共定义了多少个以 DATE_ 开头的格式常量？",
       number(12, "十二"), (_ISOSTRF,)),
    _t("is-zh-count-pickle", "count", "tests/test_pickle.py 里有几个测试函数？", number(3, "三"),
       ("tests/test_pickle.py",)),
    _t("is-zh-license", "question", "这个项目用的是什么许可证？", _BSD, _LICENSE),
    _edit("is-zh-edit", "把 pyproject.toml 里的 requires-python 改成 >=3.9，别的不要动。",
          _requires_python("3.9"), ("pyproject.toml",)),
    _notes("is-zh-notes", "帮我把测试文件夹里的每个 Python 文件都看一遍，各写一行笔记说明它测的是什么。",
           _TESTS, ("tests",)),
    # in French
    _t("is-fr-yeardigits", "question", "Par défaut, parse_date attend des années écrites avec combien de "
       "chiffres ?", number(4, "quatre"), (_ISODATES,)),
    _t("is-fr-count", "count", "Combien de fichiers .py y a-t-il dans le dossier src/isodate ?",
       number(11, "onze"), (_PKG,)),
    _notes("is-fr-notes", "Note en une ligne le rôle de src/isodate/duration.py et celui de "
           "src/isodate/isoduration.py.", (_DURATION, _ISODURATION), (_DURATION, _ISODURATION)),
    # in Spanish
    _t("is-es-what", "question", "¿Para qué sirve esta librería? Explícalo en una frase.", _WHAT,
       ("README.rst",)),
    _t("is-es-utc", "question", "¿Qué devuelve tz_isoformat cuando la hora está en UTC?", _Z,
       (_ISOTZINFO,)),
    _edit("is-es-edit", 'En src/isodate/isotzinfo.py, cambia el formato por defecto de tz_isoformat de '
          '"%Z" a "%z".',
          python_edit(_ISOTZINFO, (('tz_isoformat(dt, format="%Z")', 'tz_isoformat(dt, format="%z")'),)),
          (_ISOTZINFO,)),
    # in German
    _t("is-de-changes", "question", "Laut CHANGES.txt: Welche Version war die letzte, die noch Python 2.7 "
       "unterstützt hat?", says(r"(?<![\d.])0\.6\.1(?![\d]|\.\d)"), ("CHANGES.txt",)),
    _t("is-de-count", "count", "Wie viele Funktionen definiert src/isodate/duration.py außerhalb der "
       "Klasse Duration?", number(2, "zwei"), (_DURATION,)),
    _edit("is-de-edit", 'Setz in src/isodate/tzinfo.py den Standardnamen von FixedOffset von "UTC" auf "Z".',
          python_edit(_TZINFO, (('name="UTC"', 'name="Z"'),)), (_TZINFO,)),
)  # fmt: skip

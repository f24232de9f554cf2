"""The task suite's tenth half (idna 3.10, held out): the right and wrong reference answers, edits
and notes of every task (``tests/test_task_halves.py`` runs them, with what every half on a public
project shares: the pin, the targets, the project's size), and what is this half's own: the counts
and facts it asks are the project's (read from its files and, for what the code does, from
running it), the checkers tell apart ``codec.py`` from ``compat.py`` and ``core.py``,
``intranges.py`` from ``tests/test_intranges.py``, ``uts46_remap``'s module from the UTS 46 table,
the package's version 3.10 from the Unicode data's 15.1.0 and the tool's 16.0.0, ``encode``'s
``uts46`` default from ``decode``'s, a label's limit from a domain's, and the version bump may
touch the metadata and the changelog. No network: the tests that need the real project skip
when its pinned sdist has not been fetched (``python -m bench.task_suite --half tenth`` fetches
it)."""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from bench import notes_check, tasks_tenth

PKG = "idna"
INIT = f"{PKG}/__init__.py"
CODEC = f"{PKG}/codec.py"
COMPAT = f"{PKG}/compat.py"
CORE = f"{PKG}/core.py"
IDNADATA = f"{PKG}/idnadata.py"
INTRANGES = f"{PKG}/intranges.py"
PACKAGE_DATA = f"{PKG}/package_data.py"
UTS46DATA = f"{PKG}/uts46data.py"
TOOL = "tools/idna-data"
TESTS = "tests"


def _task(name: str) -> tasks_tenth.Task:
    return next(t for t in tasks_tenth.TASKS if t.name == name)


# --- every task: right references pass, wrong ones fail (run in tests/test_task_halves.py) -------

# question, find and count tasks: (right answers, wrong answers)
ANSWERS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "in-tool-unicode": (
        ("PREFERRED_VERSION = '16.0.0', so Unicode 16.0.0.", "16.0.0 (the shipped tables are 15.1.0)"),
        ("15.1.0", "9.0.0", "3.10", "16.0.1", "16.0"),
    ),
    "in-build-backend": (
        ("flit_core (build-backend = flit_core.buildapi).", "Flit."),
        ("setuptools", "hatchling", "poetry-core", "setup.py"),
    ),
    "in-history-cve": (
        ("3.7 (2024-04-11): encode() could take a very long time on crafted input.", "idna 3.7"),
        ("3.8", "3.6", "3.10", "3.7.1", "3.70"),
    ),
    "in-def-intranges": (
        ("idna/intranges.py", "It's in intranges.py; __init__.py re-exports it.", "在idna/intranges.py里"),
        ("idna/__init__.py", "tests/test_intranges.py", "idna/core.py", "intranges.pyi"),
    ),
    "in-def-decoder": (
        ("idna/codec.py", "In codec.py, beside IncrementalEncoder."),
        ("idna/compat.py", "idna/core.py", "tests/test_idna_codec.py", "codecs.py"),
    ),
    "in-label-length": (
        ("63: longer labels make it return False.", "sixty-three"),
        ("64", "253", "254", "255", "630"),
    ),
    "in-codec-name": (
        ('"idna2008"', "It registers idna2008 (not Python's own idna codec)."),
        ("idna", "punycode", "idna2003", "idna-2008"),
    ),
    "in-error-base": (
        ("UnicodeError", "It subclasses UnicodeError (itself a ValueError)."),
        ("ValueError", "Exception", "UnicodeDecodeError", "IDNABidiError"),
    ),
    "in-version": (("idna 3.10",), ("3.9", "3.1", "15.1.0", "16.0.0", "3.10.1", "3.100")),
    "in-license": (
        ("The BSD license (3-clause).", "BSD-3-Clause"),
        ("MIT", "Apache 2.0", "GPL", "MIT or BSD"),
    ),
    "in-what": (
        (
            "It converts internationalized domain names between Unicode and their ASCII (xn--) form.",
            "IDNA 2008 encoding and decoding of domain names, with the UTS 46 mapping.",
        ),
        (
            "It is a web framework.",
            "It is a DNS server.",
            "idna is a Python library.",
        ),
    ),
    "in-version-source": (
        (
            "idna/package_data.py: __init__.py imports __version__ from it and flit reads it there.",
            "From idna.package_data.",
            "package_data.py",
        ),
        (
            "idna/idnadata.py",
            "idna/__init__.py",
            "From the git tags, via setuptools_scm.",
            "From PKG-INFO.",
            "idna/uts46data.py",
        ),
    ),
    "in-deps": (
        (
            "No, it has no runtime dependencies; only the standard library.",
            "None: the 'all' extra lists only development tools (ruff, mypy, pytest, flake8).",
            "It doesn't need anything else.",
        ),
        ("Yes, it needs ruff, mypy, pytest and flake8.", "It requires pytest.", "Yes."),
    ),
    "in-cli": (
        (
            "No, it is only a library; pyproject.toml has no [project.scripts].",
            "No: tools/idna-data is a script in the source tree, but it isn't installed.",
        ),
        ("Yes, idna-data.", "It installs the idna-data command.", "Yes, `idna`."),
    ),
    "in-python": (
        (
            "Python 3.6 and newer (the classifiers list 3.6 to 3.13).",
            "3.6+; Python 2 needs idna<3.",
        ),
        ("Python 3.7+", "Python 3.8 and newer", "2.7 and 3.6+", "3.5+"),
    ),
    "in-count-tests": (("There are 7, with __init__.py.", "seven .py files"), ("6", "8", "5")),
    "in-which-generated": (
        (
            "idnadata.py and uts46data.py, both generated by tools/idna-data.",
            "`idna/idnadata.py` and `idna/uts46data.py`",
        ),
        (
            "idna/idnadata.py",
            "idnadata.py, uts46data.py and package_data.py",
            "idnadata.py, uts46data.py and intranges.py",
            "idna/core.py and idna/codec.py",
        ),
    ),
    "in-count-errors": (
        ("4: IDNAError, IDNABidiError, InvalidCodepoint, InvalidCodepointContext.", "four"),
        ("3", "5", "18", "1"),
    ),
    "in-count-intranges": (("8 (not counting _test_containment).", "eight"), ("9", "7", "4", "2")),
    "in-para-release": (("You have idna 3.10.",), ("3.9", "15.1.0")),
    "in-para-find": (
        ("idna/intranges.py", "In intranges.py (intranges_from_list and intranges_contain)."),
        ("idna/core.py", "idna/idnadata.py", "tests/test_intranges.py", "idna/uts46data.py"),
    ),
    "in-para-count": (("7", "Seven."), ("6", "eight")),
    "in-para-length": (("63", "At most 63."), ("64", "253", "62")),
    "in-zh-version": (("版本是 3.10。", "3.10"), ("3.9", "15.1.0", "3.1")),
    "in-zh-unicode": (
        ("Unicode 15.1.0（两个表里的 __version__ 都是 15.1.0）。", "15.1.0，不是工具默认的 16.0.0"),
        ("16.0.0", "15.0.0", "3.10", "15.1"),
    ),
    "in-zh-def": (
        ("在 idna/core.py 里。", "在core.py里定义"),
        ("idna/uts46data.py", "idna/__init__.py", "tests/test_idna_other.py", "idna/codec.py"),
    ),
    "in-zh-count-codec": (
        ("一共 5 个：Codec、IncrementalEncoder、IncrementalDecoder、StreamWriter、StreamReader。", "五个"),
        ("4", "6", "1", "3"),
    ),
    "in-zh-count-compat": (("3 个：ToASCII、ToUnicode 和 nameprep。", "三个"), ("2", "4", "1")),
    "in-zh-license": (("BSD 许可证（3-Clause）。",), ("MIT", "Apache 2.0", "GPL")),
    "in-zh-deps": (
        ("不需要，只用标准库。", "没有运行时依赖（all 这个 extra 只是开发工具）。"),
        ("需要安装 ruff 和 pytest。", "Yes, it needs mypy."),
    ),
    "in-fr-count": (("Il y a 6 fichiers test_*.py.", "six"), ("7", "5", "4")),
    "in-fr-domain-length": (
        ("253 caractères (254 avec un point final).", "deux cent cinquante-trois"),
        ("254", "63", "255", "2530"),
    ),
    "in-es-what": (
        ("Sirve para codificar y decodificar nombres de dominio internacionalizados (IDNA).",),
        ("Es un servidor DNS.", "Sirve para leer archivos TOML."),
    ),
    "in-es-empty": (
        ("IDNAError ('Empty domain').", "Lanza idna.IDNAError."),
        ("ValueError", "InvalidCodepoint", "IDNABidiError", "Devuelve b''."),
    ),
    "in-de-count": (("9 Testmethoden (setUp nicht mitgezählt).", "neun"), ("10", "8", "1")),
    "in-de-changes": (("3.9", "Mit Version 3.9 (2024-09-13)."), ("3.10", "3.5", "3.4", "3.90")),
}

# edit tasks: (the file, the right edit, wrong ones), each made from the original text
Edit = Callable[[str], str]
_ENCODE_TAIL = tasks_tenth._ENCODE_TAIL
_DECODE_TAIL = "    uts46: bool = False,\n    std3_rules: bool = False,\n) -> str:"
EDITS: dict[str, tuple[str, Edit, tuple[Edit, ...]]] = {
    "in-edit-version": (
        PACKAGE_DATA,
        lambda t: t.replace('"3.10"', "'3.11'"),
        (
            lambda t: t.replace('"3.10"', '"3.10.1"'),
            lambda t: t.replace('"3.10"', '"4.0"'),
            lambda t: t.replace('"3.10"', '"3.11"') + "__version_info__ = (3, 11)\n",
        ),
    ),
    "in-edit-check-ltr": (
        CORE,
        lambda t: t.replace("check_ltr: bool = False", "check_ltr: bool=True"),
        (
            lambda t: t.replace("    check_bidi(label)\n", "    check_bidi(label, True)\n"),
            lambda t: t.replace("check_ltr: bool = False", "check_ltr: bool = None"),
            lambda t: t.replace("check_ltr: bool = False", "check_ltr: bool = True").replace(
                "exception: bool = False", "exception: bool = True"
            ),
        ),
    ),
    "in-edit-uts46": (
        CORE,
        lambda t: t.replace(_ENCODE_TAIL, _ENCODE_TAIL.replace("uts46: bool = False", "uts46: bool=True")),
        (
            lambda t: t.replace("uts46: bool = False", "uts46: bool = True"),  # decode() too
            lambda t: t.replace(
                _DECODE_TAIL, _DECODE_TAIL.replace("uts46: bool = False", "uts46: bool = True")
            ),
            lambda t: t.replace(
                _ENCODE_TAIL, _ENCODE_TAIL.replace("std3_rules: bool = False", "std3_rules: bool = True")
            ),
            lambda t: t.replace(
                "    if uts46:\n        s = uts46_remap(s, std3_rules, transitional)",
                "    s = uts46_remap(s, std3_rules, transitional)",
            ),
        ),
    ),
    "in-edit-ruff": (
        "pyproject.toml",
        lambda t: t.replace("line-length = 127", "line-length = 120  # shorter"),
        (
            lambda t: t.replace("line-length = 127", "line-length = 100"),
            lambda t: t.replace("line-length = 127", 'line-length = "120"'),
            lambda t: t.replace("line-length = 127", "line-length = 120\nindent-width = 4"),
        ),
    ),
    "in-zh-edit": (
        "pyproject.toml",
        lambda t: t.replace(tasks_tenth._REQUIRES_PYTHON, 'requires-python = ">= 3.8"'),
        (
            lambda t: t.replace(tasks_tenth._REQUIRES_PYTHON, 'requires-python = ">=3.9"'),
            lambda t: t.replace(tasks_tenth._REQUIRES_PYTHON, 'requires-python = ">=3.8"').replace(
                '  "Programming Language :: Python :: 3.6",\n', ""
            ),
            lambda t: t.replace(tasks_tenth._REQUIRES_PYTHON, 'requires-python = ">=3.6,<3.8"'),
        ),
    ),
    "in-es-edit": (
        TOOL,
        lambda t: t.replace("PREFERRED_VERSION = '16.0.0'", 'PREFERRED_VERSION = "15.1.0"'),
        (
            lambda t: t.replace("PREFERRED_VERSION = '16.0.0'", "PREFERRED_VERSION = '15.0.0'"),
            lambda t: t.replace("PREFERRED_VERSION = '16.0.0'", "PREFERRED_VERSION = '15.1'"),
            lambda t: t.replace("PREFERRED_VERSION = '16.0.0'", "PREFERRED_VERSION = '15.1.0'").replace(
                "UTS46_SEGMENT_SIZE = 100", "UTS46_SEGMENT_SIZE = 200"
            ),
        ),
    ),
    "in-de-edit": (
        TOOL,
        lambda t: t.replace("UTS46_SEGMENT_SIZE = 100", "UTS46_SEGMENT_SIZE = 200"),
        (
            lambda t: t.replace("UTS46_SEGMENT_SIZE = 100", "UTS46_SEGMENT_SIZE = 2000"),
            lambda t: t.replace("UTS46_SEGMENT_SIZE = 100", "UTS46_SEGMENT_SIZE = 20"),
            lambda t: t.replace("idx // UTS46_SEGMENT_SIZE", "idx // 200"),
        ),
    ),
}

# notes tasks: (right notes, wrong notes)
NOTES: dict[str, tuple[str, str]] = {
    "in-notes-three": (
        "- idna/codec.py: the idna2008 codec for Python's codecs module (Codec, IncrementalEncoder, "
        "IncrementalDecoder, StreamWriter, StreamReader, search_function)\n"
        "- idna/compat.py: ToASCII, ToUnicode and nameprep, the encodings.idna functions mapped to "
        "IDNA 2008 (nameprep raises NotImplementedError)\n"
        "- idna/core.py: encode, decode, alabel, ulabel, check_label, check_bidi and uts46_remap, "
        "with IDNAError, IDNABidiError and InvalidCodepoint\n",
        "- idna/codec.py: the module\n- idna/compat.py: a module\n- idna/core.py: another module\n",
    ),
    "in-notes-tests": (
        "- tests/test_idna.py: alabel, ulabel, check_bidi, valid_contextj, valid_contexto, hyphen and "
        "combiner checks, TLD labels\n"
        "- tests/test_idna_codec.py: the idna2008 codec, its StreamReader, StreamWriter, "
        "IncrementalEncoder and IncrementalDecoder\n"
        "- tests/test_idna_compat.py: ToASCII, ToUnicode and nameprep of idna.compat\n"
        "- tests/test_idna_other.py: uts46_remap with std3_rules, InvalidCodepoint\n"
        "- tests/test_idna_uts46.py: the IdnaTestV2.txt lines of UTS46, transitional and not\n",
        "- tests/test_idna.py: tests\n- tests/test_idna_codec.py: tests\n- tests/test_idna_compat.py: tests\n"
        "- tests/test_idna_other.py: tests\n- tests/test_idna_uts46.py: tests\n",
    ),
    "in-zh-notes": (
        "- idna/__init__.py：包的入口，导出 encode、decode、alabel、ulabel、IDNAError 等，列在 __all__ 里\n"
        "- idna/codec.py：注册 idna2008 编解码器（Codec、IncrementalEncoder、IncrementalDecoder）\n"
        "- idna/compat.py：兼容 encodings.idna 的 ToASCII、ToUnicode 和 nameprep\n"
        "- idna/core.py：核心的域名编码解码，alabel、ulabel、check_bidi、uts46_remap 和 IDNAError\n"
        "- idna/intranges.py：把整数列表压成区间（intranges_from_list），用 bisect 查 intranges_contain\n"
        "- idna/package_data.py：只有 __version__，版本号\n",
        "- idna/__init__.py：模块\n- idna/codec.py：模块\n- idna/compat.py：模块\n- idna/core.py：模块\n"
        "- idna/intranges.py：模块\n- idna/package_data.py：模块\n",
    ),
    "in-fr-notes": (
        "- idna/idnadata.py : table générée par tools/idna-data (Unicode 15.1.0) : scripts, "
        "joining_types et codepoint_classes PVALID, CONTEXTJ, CONTEXTO\n"
        "- idna/uts46data.py : la table UTS46 (IDNA Mapping Table, Unicode 15.1.0) générée par "
        "tools/idna-data, en segments _seg_\n",
        "- idna/idnadata.py : un module\n- idna/uts46data.py : un autre module\n",
    ),
}


# --- what is this half's own -----------------------------------------------------------------


@pytest.fixture(scope="module")
def archive() -> Path:
    path = tasks_tenth.PIN.folder / tasks_tenth.PIN.filename
    if not path.is_file():
        pytest.skip(
            "the pinned sdist has not been fetched (python -m bench.task_suite --half tenth fetches it)"
        )
    return tasks_tenth.PIN.verified(path)


@pytest.fixture
def project(archive: Path, tmp_path: Path) -> Path:
    tasks_tenth.build_workspace(tmp_path, archive)
    return tmp_path


def _top_level(path: Path, kind: type[ast.stmt]) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [n.name for n in tree.body if isinstance(n, kind)]  # type: ignore[attr-defined]


def _methods(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    classes = [n for n in tree.body if isinstance(n, ast.ClassDef)]
    return [m.name for c in classes for m in c.body if isinstance(m, ast.FunctionDef)]


def test_the_counts_asked_for_are_the_projects(project: Path) -> None:
    tests = project / TESTS
    assert len(list(tests.glob("*.py"))) == 7 and len(list(tests.glob("test_*.py"))) == 6
    assert sorted(p.name for p in tests.glob("test_idna*.py")) == [Path(t).name for t in tasks_tenth._TESTS]
    assert len(list((project / PKG).glob("*.py"))) == 8
    assert _top_level(project / CORE, ast.ClassDef) == [
        "IDNAError",
        "IDNABidiError",
        "InvalidCodepoint",
        "InvalidCodepointContext",
    ]
    intranges_tests = _methods(tests / "test_intranges.py")
    assert len(intranges_tests) == 9 and len([m for m in intranges_tests if m.startswith("test")]) == 8
    codec_tests = _methods(tests / "test_idna_codec.py")
    assert len(codec_tests) == 10 and len([m for m in codec_tests if m.startswith("test")]) == 9
    assert _top_level(project / CODEC, ast.ClassDef) == [
        "Codec",
        "IncrementalEncoder",
        "IncrementalDecoder",
        "StreamWriter",
        "StreamReader",
    ]
    assert _top_level(project / COMPAT, ast.FunctionDef) == ["ToASCII", "ToUnicode", "nameprep"]
    assert not _top_level(project / COMPAT, ast.ClassDef)


def test_the_facts_asked_for_are_the_projects(project: Path) -> None:
    def text(name: str) -> str:
        return (project / name).read_text(encoding="utf-8")

    pyproject = text("pyproject.toml")
    assert 'build-backend = "flit_core.buildapi"' in pyproject and "line-length = 127\n" in pyproject
    assert tasks_tenth._REQUIRES_PYTHON in pyproject and 'dynamic = ["version"]' in pyproject
    assert '"License :: OSI Approved :: BSD License"' in pyproject and "scripts" not in pyproject
    assert "\ndependencies" not in pyproject and "[project.optional-dependencies]\nall = [" in pyproject
    assert not (project / "setup.py").exists() and not (project / "setup.cfg").exists()
    assert "Version: 3.10\n" in text("PKG-INFO") and "Requires-Python: >=3.6\n" in text("PKG-INFO")
    assert text(PACKAGE_DATA) == '__version__ = "3.10"\n'
    assert "from .package_data import __version__" in text(INIT)
    assert text("LICENSE.md").startswith("BSD 3-Clause License\n")
    for table in (IDNADATA, UTS46DATA):
        assert '__version__ = "15.1.0"' in text(
            table
        ) and "automatically generated by tools/idna-data" in text(table)
    for module in (INIT, CODEC, COMPAT, CORE, INTRANGES, PACKAGE_DATA):
        assert "generated" not in text(module)
    tool = text(TOOL)
    assert "PREFERRED_VERSION = '16.0.0'\n" in tool and "UTS46_SEGMENT_SIZE = 100\n" in tool
    assert "target_version = PREFERRED_VERSION" in tool
    history = text("HISTORY.rst")
    assert (
        history.index("3.10 (2024-09-15)")
        < history.index("Reverted to Unicode 15.1.0")
        < history.index("3.9 (")
    )
    assert history.index("3.9 (") < history.index("Update to Unicode 16.0.0") < history.index("3.8 (")
    assert history.index("3.7 (") < history.index("CVE-2024-3651") < history.index("3.6 (")
    core = text(CORE)
    assert "def uts46_remap(" in core and "def uts46_remap(" not in text(UTS46DATA)
    assert "class IDNAError(UnicodeError):" in core and "    if len(label) > 63:\n" in core
    assert "def check_bidi(label: str, check_ltr: bool = False) -> bool:" in core
    assert core.count("uts46: bool = False,") == 2 and core.count(tasks_tenth._ENCODE_TAIL) == 1
    assert 'if name != "idna2008":' in text(CODEC)


def test_what_the_code_does_is_what_the_answers_say(project: Path) -> None:
    script = (
        "import codecs, idna, idna.codec, idna.compat\n"
        "from idna import core, idnadata, uts46data\n"
        "print(idna.__version__, idnadata.__version__, uts46data.__version__)\n"
        "print(core.valid_label_length('a' * 63), core.valid_label_length('a' * 64))\n"
        "print(core.valid_string_length('a' * 253, False), core.valid_string_length('a' * 254, False))\n"
        "print(issubclass(idna.IDNAError, UnicodeError), codecs.lookup('idna2008').name)\n"
        "try:\n"
        "    idna.encode('')\n"
        "except idna.IDNAError as e:\n"
        "    print(type(e).__name__, e)\n"
        "try:\n"
        "    idna.compat.nameprep('a')\n"
        "except NotImplementedError:\n"
        "    print('NotImplementedError')\n"
        "print(idna.alabel('测试'))\n"
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
        "3.10 15.1.0 15.1.0",
        "True False",
        "True False",
        "True idna2008",
        "IDNAError Empty domain",
        "NotImplementedError",
        "b'xn--0zwm56d'",
    ]


def test_the_modules_are_told_apart() -> None:
    here = Path(".")
    intranges, decoder, remap = _task("in-def-intranges"), _task("in-def-decoder"), _task("in-zh-def")
    assert intranges.check("intranges.py", here) and not intranges.check("test_intranges.py", here)
    assert decoder.check("codec.py", here) and not decoder.check("compat.py", here)
    assert not decoder.check("test_idna_codec.py", here)
    assert remap.check("core.py", here) and not remap.check("uts46data.py", here)
    source = _task("in-version-source")
    assert source.check("idna/package_data.py", here) and not source.check("idna/idnadata.py", here)


def test_the_three_versions_are_told_apart() -> None:
    here = Path(".")
    for name in ("in-version", "in-para-release", "in-zh-version"):
        assert _task(name).check("3.10", here), name
        assert not any(_task(name).check(v, here) for v in ("15.1.0", "16.0.0", "3.1", "3.9")), name
    data, tool = _task("in-zh-unicode"), _task("in-tool-unicode")
    assert data.check("15.1.0", here) and not data.check("16.0.0", here) and not data.check("3.10", here)
    assert tool.check("16.0.0", here) and not tool.check("15.1.0", here) and not tool.check("3.10", here)


def test_a_label_limit_is_not_a_domain_limit() -> None:
    here = Path(".")
    for name in ("in-label-length", "in-para-length"):
        assert _task(name).check("63", here) and not _task(name).check("253", here)
    domain = _task("in-fr-domain-length")
    assert domain.check("253", here) and not domain.check("254", here) and not domain.check("63", here)


def test_a_note_may_name_a_file_beside_chinese_and_not_its_near_namesake(project: Path) -> None:
    task = _task("in-notes-three")
    right = NOTES["in-notes-three"][0]
    (project / "NOTES.md").write_text(right.replace("idna/", ""), encoding="utf-8")
    assert task.check("", project)
    (project / "NOTES.md").write_text(
        right.replace("idna/codec.py", "tests/test_idna_codec.py"), encoding="utf-8"
    )
    assert not task.check("", project)  # a note on the codec's tests is none on the codec
    (project / "NOTES.md").write_text(right.replace("idna/compat.py", "idna/codec.py"), encoding="utf-8")
    assert not task.check("", project)
    assert notes_check.names_file("编解码器在codec.py里", CODEC)
    assert not notes_check.names_file("编解码器在test_idna_codec.py里", CODEC)
    assert not notes_check.names_file("- tests/__init__.py: empty", INIT)


def test_the_glob_leaves_out_the_intranges_tests(project: Path) -> None:
    task = _task("in-notes-tests")
    right = NOTES["in-notes-tests"][0]
    (project / "NOTES.md").write_text(
        right + "- tests/test_intranges.py: intranges_from_list and intranges_contain\n", encoding="utf-8"
    )
    assert task.check("", project)
    without_other = "\n".join(line for line in right.splitlines() if "test_idna_other" not in line)
    (project / "NOTES.md").write_text(without_other, encoding="utf-8")
    assert not task.check("", project)


def test_the_version_bump_may_touch_the_metadata_and_the_changelog(project: Path) -> None:
    def bump(name: str, old: str, new: str) -> None:
        path = project / name
        path.write_text(path.read_text(encoding="utf-8").replace(old, new, 1), encoding="utf-8")

    task = _task("in-edit-version")
    bump(PACKAGE_DATA, '"3.10"', '"3.11"')
    assert task.check("Done.", project)
    bump("PKG-INFO", "Version: 3.10", "Version: 3.11")
    bump(
        "HISTORY.rst",
        "3.10 (2024-09-15)",
        "3.11 (unreleased)\n+++++++++++++++++\n\n- Bump.\n\n3.10 (2024-09-15)",
    )
    assert task.check("Done.", project)
    bump(IDNADATA, '__version__ = "15.1.0"', '__version__ = "15.1.1"')
    assert not task.check("Done.", project)  # the Unicode data's version is not the package's


def test_encode_takes_uts46_by_default_and_decode_does_not(project: Path) -> None:
    task = _task("in-edit-uts46")
    core = project / CORE
    original = core.read_text(encoding="utf-8")
    tail = tasks_tenth._ENCODE_TAIL
    core.write_text(
        original.replace(tail, tail.replace("uts46: bool = False", "uts46: bool = True")), encoding="utf-8"
    )
    assert task.check("Done.", project)
    core.write_text(original.replace("uts46: bool = False", "uts46: bool = True"), encoding="utf-8")
    assert not task.check("Done.", project)


def test_the_python_floor_edit_takes_either_spelling_and_nothing_else(project: Path) -> None:
    task = _task("in-zh-edit")
    pyproject = project / "pyproject.toml"
    original = pyproject.read_text(encoding="utf-8")
    line = tasks_tenth._REQUIRES_PYTHON
    for right in ('">=3.8"', '">= 3.8"', "'>=3.8'"):
        pyproject.write_text(original.replace(line, f"requires-python = {right}"), encoding="utf-8")
        assert task.check("好了。", project), right
    pyproject.write_text(original.replace(line, 'requires-python = ">=3.8,<4"'), encoding="utf-8")
    assert not task.check("好了。", project)
    pyproject.write_text(original.replace(line, 'requires-python = ">=3.8"'), encoding="utf-8")
    pkg_info = project / "PKG-INFO"
    pkg_info.write_text(
        pkg_info.read_text(encoding="utf-8").replace("Requires-Python: >=3.6", "Requires-Python: >=3.8"),
        encoding="utf-8",
    )
    assert task.check("好了。", project)  # the metadata may follow


def test_the_tool_is_python_without_a_suffix_and_its_constants_are_edited_in_place(project: Path) -> None:
    tool = project / TOOL
    original = tool.read_text(encoding="utf-8")
    ast.parse(original)
    tool.write_text(
        original.replace("UTS46_SEGMENT_SIZE = 100", "UTS46_SEGMENT_SIZE = 200  # bigger"), encoding="utf-8"
    )
    assert _task("in-de-edit").check("Fertig.", project)
    assert not _task("in-es-edit").check("Hecho.", project)
    tool.write_text(
        original.replace("PREFERRED_VERSION = '16.0.0'", "PREFERRED_VERSION = '15.1.0'"), encoding="utf-8"
    )
    assert _task("in-es-edit").check("Hecho.", project)
    assert not _task("in-de-edit").check("Fertig.", project)

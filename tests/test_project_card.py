"""The project card (guide.project): what a Python project's metadata states, every field said
even when absent, shown with the answer request of a question whose reads include the metadata.
Measured with the 0.5B: shown a pyproject.toml with no scripts table it answered "Yes" to
"Does installing this give me a command-line program?" on three projects, and shown a dynamic
version it made one up ("1.1.0")."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from focus_support import task_focus, write_files
from tinyharness.guide import TaskPlan
from tinyharness.guide.project import METADATA_FILES, project_card
from tinyharness.tools.files import ReadState

INIT = '__version__ = "2.4.1"\n'
HATCH = """\
[build-system]
requires = ["hatchling>=0.25.1"]
build-backend = "hatchling.build"

[project]
name = "tincture"
description = "Colors for terminals.\\nSecond line."
license = "BSD-3-Clause"
dynamic = ["version"]
requires-python = ">=3.9"
classifiers = [
    "License :: OSI Approved :: BSD License",
    "Programming Language :: Python :: 3",
    "Programming Language :: Python :: 3.9",
    "Programming Language :: Python :: 3.12",
]

[tool.hatch.version]
path = "tincture/__init__.py"
"""


def _card(files: dict[str, str]) -> str:
    return project_card(list(files), lambda path: files.get(path, ""))


def test_a_dynamic_version_is_read_where_the_build_backend_points_and_absences_are_said() -> None:
    card = _card({"pyproject.toml": HATCH, "tincture/__init__.py": '"""Doc."""\n__version__ = "2.4.1"\n'})
    assert "tincture version 2.4.1 (read from tincture/__init__.py): Colors for terminals." in card
    assert "Second line" not in card  # a field's first line only
    assert "License: BSD License." in card
    assert "It requires Python >=3.9 (versions listed: 3.9, 3.12)." in card
    # nothing to install and no command: said, not left out (a small model cannot read an absence)
    assert "It needs no other package installed to run." in card
    assert "It installs no command-line program." in card


def test_scripts_dependencies_and_markers_are_listed_and_extras_left_out() -> None:
    pyproject = """\
[project]
name = "tincture"
version = "1.0"
dependencies = ["wcwidth>=0.2", "tomli; python_version < '3.11'"]
[project.optional-dependencies]
docs = ["mkdocs"]
[project.scripts]
tinct = "tincture.cli:main"
"""
    card = _card({"pyproject.toml": pyproject})
    needs = "wcwidth>=0.2, tomli (when python_version < '3.11')"
    assert f"It needs these packages installed to run: {needs}." in card
    assert "mkdocs" not in card
    assert "It installs the command-line programs: tinct (runs tincture.cli:main)." in card


def test_pkg_info_comes_first_and_its_long_description_is_not_read_as_headers() -> None:
    pkg_info = (
        "Metadata-Version: 2.1\nName: tincture\nVersion: 3.0.2\nSummary: Colors.\n"
        "Requires-Python: >=3.8\nClassifier: License :: OSI Approved :: MIT License\n"
        'Requires-Dist: wcwidth\nRequires-Dist: pytest; extra == "test"\n\n'
        "Tincture\n========\nLicense: GPL\nVersion: 9.9\n"
    )
    card = _card({"PKG-INFO": pkg_info, "pyproject.toml": HATCH, "tincture/__init__.py": INIT})
    assert card.startswith("The project's metadata (PKG-INFO, pyproject.toml): tincture version 3.0.2 (")
    assert "9.9" not in card and "GPL" not in card and "License: MIT License." in card
    assert "It needs these packages installed to run: wcwidth." in card and "pytest" not in card


def test_setup_cfg_with_an_attr_version_and_console_scripts() -> None:
    setup_cfg = """\
[metadata]
name = tincture
version = attr: tincture.__version__
license = Apache-2.0

[options]
python_requires = >=3.7
install_requires =
    wcwidth
    # a comment

[options.entry_points]
console_scripts =
    tinct = tincture.cli:main
"""
    card = _card({"setup.cfg": setup_cfg, "src/tincture/__init__.py": '__version__ = "0.5"\n'})
    assert "tincture version 0.5 (read from src/tincture/__init__.py). License: Apache-2.0." in card
    assert "It requires Python >=3.7." in card
    assert "It needs these packages installed to run: wcwidth." in card
    assert "It installs the command-line programs: tinct (runs tincture.cli:main)." in card


def test_setup_py_literal_keywords_count_and_computed_ones_state_nothing() -> None:
    setup_py = (
        "from setuptools import setup\nsetup(name='tincture', version='1.2', install_requires=[],\n"
        "      entry_points={'console_scripts': ['tinct=tincture:main']})\n"
    )
    card = _card({"setup.py": setup_py})
    assert "tincture version 1.2." in card and "It needs no other package installed to run." in card
    assert "It installs the command-line programs: tinct (runs tincture:main)." in card
    computed = "from setuptools import setup\nsetup(name='tincture', install_requires=read_requirements())\n"
    card = _card({"setup.py": computed})
    assert "tincture" in card and "packages" not in card and "package" not in card  # unknown, not "none"


def test_a_version_from_the_git_tags_says_so_with_the_file_it_is_written_to() -> None:
    """tb-version-source, is-version-source: "There's no version number in pyproject.toml.
    Where does the package get its version from?" (setuptools_scm)."""
    pyproject = (
        '[build-system]\nrequires = ["setuptools>=64", "setuptools_scm>=8"]\n'
        '[project]\nname = "tincture"\ndynamic = ["version"]\n'
        '[tool.setuptools_scm]\nversion_file = "tincture/_version.py"\n'
    )
    card = _card({"pyproject.toml": pyproject})  # a checkout: the file is not written yet
    assert "tincture: its version is from the git tags, written to tincture/_version.py." in card
    card = _card({"pyproject.toml": pyproject, "tincture/_version.py": "__version__ = version = '4.0.1'\n"})
    assert "tincture version 4.0.1 (from the git tags, written to tincture/_version.py)." in card


def test_the_files_of_the_long_description_are_named() -> None:
    """is-readme-files: "pyproject.toml builds the package's long description out of more than
    one file. Which files?" (setuptools' dynamic readme)."""
    pyproject = (
        '[project]\nname = "tincture"\nversion = "1"\ndynamic = ["readme"]\n'
        '[tool.setuptools.dynamic]\nreadme = {file = ["README.rst", "CHANGES.txt"]}\n'
    )
    said = "Its long description is read from README.rst, CHANGES.txt."
    assert said in _card({"pyproject.toml": pyproject})
    static = '[project]\nname = "tincture"\nversion = "1"\nreadme = "README.md"\n'
    assert "read from README.md." in _card({"pyproject.toml": static})
    setup_cfg = "[metadata]\nname = tincture\nlong_description = file: README.rst, HISTORY.rst\n"
    assert "read from README.rst, HISTORY.rst." in _card({"setup.cfg": setup_cfg})


def test_a_version_the_package_imports_from_a_sibling_module_is_read_there() -> None:
    """flit's pattern: ``__init__.py`` does ``from .package_data import __version__``."""
    pyproject = (
        '[build-system]\nbuild-backend = "flit_core.buildapi"\n'
        '[project]\nname = "tincture"\ndynamic = ["version"]\n'
    )
    files = {
        "pyproject.toml": pyproject,
        "tincture/__init__.py": "from .package_data import __version__\nfrom .core import *\n",
        "tincture/package_data.py": "__version__ = '5.2'\n",
    }
    assert "tincture version 5.2 (read from tincture/package_data.py)." in _card(files)


def test_no_metadata_no_card() -> None:
    assert _card({"README.md": "# x\n", "tincture/__init__.py": '__version__ = "1"\n'}) == ""
    assert _card({"pyproject.toml": "[tool.ruff]\nline-length = 100\n"}) == ""
    assert _card({"pyproject.toml": "[project\nname = "}) == ""  # a broken file states nothing


@settings(max_examples=200, deadline=None)
@given(
    name=st.sampled_from(METADATA_FILES),
    text=st.text(max_size=400),
    deps=st.lists(st.from_regex(r"[a-z][a-z0-9-]{0,10}", fullmatch=True), max_size=4, unique=True),
)
def test_any_metadata_text_gives_a_card_or_nothing_and_lists_exactly_the_declared_packages(
    name: str, text: str, deps: list[str]
) -> None:
    card = _card({name: text})  # never raises, whatever the file holds
    assert card == "" or card.startswith("The project's metadata (")
    listed = ", ".join(f'"{d}"' for d in deps)
    card = _card({"pyproject.toml": f'[project]\nname = "p"\nversion = "1"\ndependencies = [{listed}]\n'})
    said = f"installed to run: {', '.join(deps)}." if deps else "It needs no other package installed"
    assert said in card


def test_the_answer_request_of_a_question_that_read_the_metadata_holds_the_card(tmp_path: Path) -> None:
    project = write_files(
        tmp_path,
        {
            "pyproject.toml": HATCH,
            "tincture/__init__.py": '__version__ = "2.4.1"\n',
            "tincture/ansi.py": "X = 1\n",
        },
    )
    state = ReadState()
    for path in ("pyproject.toml", "tincture/ansi.py"):
        state.record(path, 1, 20, 20)
    for task in ("这个库现在是什么版本？", "Does installing this give me a command-line program?"):
        focus = task_focus(project, state)
        focus.start(task, TaskPlan("answer", ("tincture/ansi.py", "pyproject.toml")))
        prompt = focus([])
        assert prompt is not None and "tincture version 2.4.1" in prompt
        assert "It installs no command-line program." in prompt
        assert prompt.rstrip().endswith(task)  # the question stays last
    focus = task_focus(project, state)  # a question that read only a module gets no card
    focus.start("What is X in tincture/ansi.py?", TaskPlan("answer"))
    prompt = focus([])
    assert prompt is not None and "metadata" not in prompt


def test_a_question_over_files_the_plan_chose_holds_the_card(tmp_path: Path) -> None:
    """in-para-release: "Which release of idna is this checkout?" names the package's folder,
    so the plan read three modules of it (none the metadata) and the 0.5B answered with a file
    name. A question that names none of its reads is asked with the card, in any language; one
    that names its file is not (its answer is in that file)."""
    project = write_files(
        tmp_path,
        {"pyproject.toml": HATCH, "tincture/__init__.py": INIT, "tincture/ansi.py": "X = 1\n"},
    )
    state = ReadState()
    state.record("tincture/ansi.py", 1, 20, 20)
    for task in (
        "Which release of tincture is this checkout?",
        "这是哪个发布版本？",
        "Quelle version est-ce ?",
    ):
        focus = task_focus(project, state)
        focus.start(task, TaskPlan("answer", ("tincture/ansi.py",)))
        prompt = focus([])
        assert prompt is not None and "tincture version 2.4.1" in prompt, task
        assert prompt.rstrip().endswith(task)
    focus = task_focus(project, state)
    focus.start("Which constant does tincture/ansi.py define?", TaskPlan("answer", ("tincture/ansi.py",)))
    prompt = focus([])
    assert prompt is not None and "metadata" not in prompt

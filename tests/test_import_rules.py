"""The layering written in the docstrings is the layering in the code.

Every package (its ``__init__.py``) and every top-level module says in its docstring which parts
of tinyharness it may import, in a sentence that starts with ``May import``: the names between
double backquotes, up to the end of that sentence (words in parentheses are comments), with
``nothing`` for none and ``anything`` for the top floor (the CLI, the public API). A module of a
package may import its own package's modules and what its package's rule names; a name allows
the module or package it names and everything under it. Imports inside functions and under
``TYPE_CHECKING`` count too: a layer is a promise about what a reader must know, not only
about import order. The rules themselves must form floors (no two parts allowed to import each
other, directly or around a loop), so "downward" has a meaning, and no two modules may import
each other either.

The checker runs on the real package, and on small bad packages written by the tests below, so
a checker that found nothing would fail here too.
"""

from __future__ import annotations

import ast
import re
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

import tinyharness

PACKAGE_ROOT = Path(tinyharness.__file__).parent
ANYTHING = "*"
_RULE = re.compile(r"May import:?\s(.*?)(?:[.;](?:\s|$)|$)", re.DOTALL)
_NAME = re.compile(r"``([A-Za-z_][\w.]*)``")
_PARENS = re.compile(r"\([^()]*\)")


@dataclass(frozen=True)
class Module:
    name: str  # dotted, relative to the root package: "context.flush", "" for the root itself
    path: Path
    is_package: bool

    @property
    def unit(self) -> str:
        """What the rule is about: the top-level package it belongs to, or itself."""
        return self.name.split(".")[0]


def read_rule(docstring: str | None) -> frozenset[str] | None:
    """The names a ``May import`` sentence allows; None when there is no such sentence."""
    if not docstring:
        return None
    match = _RULE.search(" ".join(docstring.split()))
    if match is None:
        return None
    sentence = _PARENS.sub("", match.group(1))
    names = frozenset(_NAME.findall(sentence))
    if not names and re.match(r"\s*anything\b", sentence):
        return frozenset({ANYTHING})
    if not names and not re.match(r"\s*nothing\b", sentence):
        raise ValueError(f"a 'May import' sentence with no names, 'nothing' or 'anything': {sentence!r}")
    return names


def modules(root: Path) -> list[Module]:
    found = []
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        is_package = parts[-1] == "__init__"
        name = ".".join(parts[:-1] if is_package else parts)
        found.append(Module(name, path, is_package))
    return found


def imported(module: Module, known: set[str]) -> set[str]:
    """The modules of the package ``module`` imports (dotted, relative to the root; "" is the
    root package itself, "__version__" a name taken from it)."""
    tree = ast.parse(module.path.read_text(encoding="utf-8"))
    own_package = module.name if module.is_package else module.name.rpartition(".")[0]
    root_name = module.path.parents[len(module.name.split(".")) - (0 if module.is_package else 1)].name
    targets: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = own_package.split(".") if own_package else []
                base = base[: len(base) - (node.level - 1)]
                where = ".".join([*base, *([node.module] if node.module else [])])
            elif node.module and (node.module == root_name or node.module.startswith(root_name + ".")):
                where = node.module[len(root_name) + 1 :]
            else:
                continue
            for alias in node.names:
                child = f"{where}.{alias.name}" if where else alias.name
                if child in known:
                    targets.add(child)
                elif where == "" and alias.name == "__version__":
                    targets.add("__version__")
                else:
                    targets.add(where)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == root_name or alias.name.startswith(root_name + "."):
                    targets.add(alias.name[len(root_name) + 1 :])
    return targets


def _allowed(target: str, names: frozenset[str]) -> bool:
    return ANYTHING in names or any(target == n or target.startswith(n + ".") for n in names)


def violations(root: Path) -> list[str]:
    """Every import that breaks a rule, every part without a rule, and every loop in the rules."""
    found = modules(root)
    known = {m.name for m in found}
    stated = {
        m.name: read_rule(ast.get_docstring(ast.parse(m.path.read_text(encoding="utf-8")))) for m in found
    }
    # The rules of the floors: packages and top-level modules. A module inside a package may
    # state a narrower rule of its own.
    rules = {m.name: stated[m.name] for m in found if m.name and (m.is_package or "." not in m.name)}
    problems = [
        f"{name}: no 'May import' sentence in its docstring" for name, rule in rules.items() if rule is None
    ]
    for module in found:
        if not module.name:
            continue  # the root package re-exports the public API
        rule = rules.get(module.unit) or frozenset()
        own = stated[module.name] if "." in module.name and not module.is_package else None
        for target in sorted(imported(module, known)):
            if target == module.unit or target.startswith(module.unit + "."):
                continue  # within its own package (or itself)
            for names in (rule, own):
                if names is not None and not _allowed(target, names):
                    problems.append(f"{module.name} imports {target or 'the root package'}, not in its rule")
    problems += _loops({unit: names for unit, names in rules.items() if names is not None})
    return problems


def _loops(rules: dict[str, frozenset[str]]) -> list[str]:
    """Loops among the rules: parts allowed to import each other, directly or around a cycle."""
    edges = {
        unit: {other for other in rules if other != unit and _allowed(other, names) and ANYTHING not in names}
        for unit, names in rules.items()
    }
    # Rules name modules inside packages ("models.base"); the edge goes to the package.
    for unit, names in rules.items():
        if ANYTHING not in names:
            edges[unit] |= {
                n.split(".")[0] for n in names if n.split(".")[0] in rules and n.split(".")[0] != unit
            }
    problems, state = [], dict.fromkeys(edges, 0)

    def visit(unit: str, trail: list[str]) -> None:
        state[unit] = 1
        for other in sorted(edges[unit]):
            if state[other] == 1:
                problems.append("rules form a loop: " + " -> ".join([*trail[trail.index(other) :], other]))
            elif state[other] == 0:
                visit(other, [*trail, other])
        state[unit] = 2

    for unit in sorted(edges):
        if state[unit] == 0:
            visit(unit, [unit])
    return problems


def module_cycles(root: Path) -> list[list[str]]:
    """Groups of modules that import each other, directly or around a loop (the modules of one
    package may import each other, but not in a circle: a reader must find a first one)."""
    found = modules(root)
    known = {m.name for m in found}
    graph = {m.name: sorted(t for t in imported(m, known) if t in known and t != m.name) for m in found}
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(name: str) -> None:  # Tarjan's strongly connected components
        order[name] = low[name] = len(order)
        stack.append(name)
        for other in graph[name]:
            if other not in order:
                visit(other)
                low[name] = min(low[name], low[other])
            elif other in stack:
                low[name] = min(low[name], order[other])
        if low[name] == order[name]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == name:
                    break
            if len(group) > 1:
                cycles.append(sorted(group))

    for name in graph:
        if name not in order:
            visit(name)
    return cycles


# --- the real package -------------------------------------------------------------------------


def test_every_import_in_tinyharness_keeps_its_rule() -> None:
    assert violations(PACKAGE_ROOT) == []


def test_no_two_modules_import_each_other() -> None:
    assert module_cycles(PACKAGE_ROOT) == []


def test_the_cycle_check_finds_a_cycle_inside_a_package(tmp_path: Path) -> None:
    files = dict(GOOD)
    files["tools/base.py"] += "from .files import f\n"  # files imports base already
    assert module_cycles(write_package(tmp_path, files)) == [["tools.base", "tools.files"]]
    assert module_cycles(write_package(tmp_path / "good", GOOD)) == []


def test_every_package_and_top_level_module_states_a_rule() -> None:
    stated = {
        m.name
        for m in modules(PACKAGE_ROOT)
        if m.name and read_rule(ast.get_docstring(ast.parse(m.path.read_text(encoding="utf-8")))) is not None
    }
    parts = {m.name for m in modules(PACKAGE_ROOT) if m.name and (m.is_package or "." not in m.name)}
    assert parts <= stated
    assert {"messages", "history", "models", "tools", "context", "memory", "agent", "cli"} <= parts


# --- the checker on bad packages --------------------------------------------------------------


def write_package(root: Path, files: dict[str, str]) -> Path:
    package = root / "pkg"
    for name, text in files.items():
        path = package / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return package


GOOD = {
    "__init__.py": '"""Root. May import anything."""\n',
    "messages.py": '"""Ground. May import nothing of the package."""\n',
    "history.py": '"""Queries. May import ``messages``."""\nfrom .messages import x\n',
    "tools/__init__.py": '"""Tools. May import ``messages`` and ``history`` (for queries)."""\n',
    "tools/files.py": '"""Files."""\nfrom ..history import y\nfrom . import base\n',
    "tools/base.py": '"""Base."""\nfrom pkg.messages import z\n',
    "context/__init__.py": '"""Context. May import ``messages``, ``history``; never ``tools``."""\n',
    "context/flush.py": '"""Flush. May import ``history``."""\nfrom ..history import q\n',
}


def test_the_checker_passes_a_package_that_keeps_its_rules(tmp_path: Path) -> None:
    assert violations(write_package(tmp_path, GOOD)) == []


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        # context reaches up into tools (the hole the review found), relative and absolute
        ("context/flush.py", "from ..tools.base import T\n", "context.flush imports tools.base"),
        ("context/restore.py", "import pkg.tools.files\n", "context.restore imports tools.files"),
        # the ground floor imports upward, and only inside a function
        ("messages.py", "def f():\n    from .history import y\n", "messages imports history"),
        # a module's own rule is narrower than its package's
        (
            "context/flush.py",
            '"""Flush. May import ``history``."""\nfrom ..messages import m\n',
            "context.flush imports messages",
        ),
        # taking a name from a package counts as importing the package
        (
            "history.py",
            '"""Queries. May import ``messages``."""\nfrom .tools import files\n',
            "history imports tools.files",
        ),
        (
            "history.py",
            '"""Queries. May import ``messages``."""\nfrom . import tools\n',
            "history imports tools",
        ),
    ],
)
def test_the_checker_finds_an_import_that_breaks_a_rule(
    tmp_path: Path, name: str, text: str, expected: str
) -> None:
    files = dict(GOOD)
    files[name] = files.get(name, '"""A module."""\n') + text if not text.startswith('"""') else text
    found = violations(write_package(tmp_path, files))
    assert any(expected in problem for problem in found), found


def test_the_checker_finds_a_part_without_a_rule_and_rules_that_loop(tmp_path: Path) -> None:
    files = dict(GOOD)
    files["events.py"] = '"""Events, with no rule."""\n'
    files["messages.py"] = '"""Ground. May import ``tools``."""\n'  # tools may import messages
    found = violations(write_package(tmp_path, files))
    assert "events: no 'May import' sentence in its docstring" in found
    assert any(p.startswith("rules form a loop:") and "messages" in p and "tools" in p for p in found), found


def test_rule_sentences_are_read_as_written() -> None:
    assert read_rule("Tools. May import ``models.base`` (for ``ToolSpec``) and ``errors``.") == {
        "models.base",
        "errors",
    }
    assert read_rule("May import: ``errors``, ``events``. Nothing else of the package.") == {
        "errors",
        "events",
    }
    assert read_rule("May import nothing of the package.") == frozenset()
    assert read_rule("May import anything: it is the top floor.") == {ANYTHING}
    assert read_rule("A module without a rule.") is None
    with pytest.raises(ValueError):
        read_rule("May import some things.")

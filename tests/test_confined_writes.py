"""Every file the harness writes goes through ``tinyharness.safefs``.

An AST scan of the package: no module but ``safefs`` opens a file for writing (``open`` with a
"w", "a", "x" or "+" mode, ``Path.open`` likewise, ``os.open`` with a write or create flag,
``os.fdopen`` for writing), writes or touches a file through ``pathlib``, creates a folder
(``mkdir``, ``os.makedirs``), copies or moves files (``shutil``), makes temporary files or folders
(``tempfile``) or opens a SQLite database (``sqlite3.connect``). ``safefs`` walks every such path
beneath the folder that owns it, so a link planted by a workspace cannot send a write outside.

The allow-list below is short and each entry says why. The scanner proves itself on a bad
fixture: a scanner that found nothing would fail here too.
"""

from __future__ import annotations

import ast
import textwrap
from dataclasses import dataclass
from pathlib import Path

import tinyharness

PACKAGE_ROOT = Path(tinyharness.__file__).parent
OWNER = "safefs.py"

# (module path relative to the package, enclosing function): why it may write itself.
ALLOWED: dict[tuple[str, str], str] = {
    # After a broken pipe, stdout is pointed at the null device: never a file of anyone's.
    ("cli.py", "main"): "opens os.devnull for writing",
    # The write end of a pipe (os.pipe) for an MCP server's stderr: no file, no path.
    ("mcp/client.py", "_StderrTail.__init__"): "wraps a pipe's write end",
    # FTS5's tokenizer run on an in-memory database (":memory:"): no file, no path.
    ("memory/text_index.py", "Tokenizer.__init__"): "opens an in-memory database",
}

_WRITE_FLAGS = {"O_WRONLY", "O_RDWR", "O_CREAT", "O_APPEND", "O_TRUNC"}
_PATH_WRITES = {"write_text", "write_bytes", "touch", "mkdir", "symlink_to", "hardlink_to"}
_OS_WRITES = {"mkdir", "makedirs", "mkfifo", "mknod", "symlink", "link"}
_SHUTIL = {"copy", "copy2", "copyfile", "copytree", "move", "copyfileobj"}
_TEMPFILE = {
    "TemporaryFile",
    "NamedTemporaryFile",
    "SpooledTemporaryFile",
    "mkstemp",
    "mkdtemp",
    "TemporaryDirectory",
}


@dataclass(frozen=True)
class Finding:
    module: str
    function: str
    line: int
    what: str


def _mode_writes(node: ast.expr | None) -> bool:
    """True unless the mode is a literal that only reads (no mode at all reads)."""
    if node is None:
        return False
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return any(c in node.value for c in "wax+")
    return True  # a mode computed at run time: cannot be shown to read only


def _flags_write(node: ast.expr) -> bool:
    names = {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)}
    names |= {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
    return bool(names & _WRITE_FLAGS)


def _arg(call: ast.Call, index: int, keyword: str) -> ast.expr | None:
    if len(call.args) > index:
        return call.args[index]
    return next((k.value for k in call.keywords if k.arg == keyword), None)


def _dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return "?"


def classify(call: ast.Call) -> str | None:
    """What kind of write ``call`` is, or None when it is not one."""
    func = call.func
    name = _dotted(func)
    if isinstance(func, ast.Name):
        if func.id == "open" and _mode_writes(_arg(call, 1, "mode")):
            return "open() for writing"
        if func.id in _TEMPFILE:
            return f"tempfile {func.id}"
        if func.id == "connect":
            return "connect() (sqlite3?)"
        return None
    if not isinstance(func, ast.Attribute):
        return None
    attr, base = func.attr, _dotted(func.value)
    if (
        base == "os"
        and attr == "open"
        and (flags := _arg(call, 1, "flags")) is not None
        and _flags_write(flags)
    ):
        return "os.open with a write flag"
    if base == "os" and attr == "fdopen" and _mode_writes(_arg(call, 1, "mode")):
        return "os.fdopen for writing"
    if base == "os" and attr in _OS_WRITES:
        return name
    if base == "shutil" and attr in _SHUTIL:
        return name
    if base == "tempfile" and attr in _TEMPFILE:
        return name
    if base == "sqlite3" and attr == "connect":
        return name
    if base in ("io", "codecs") and attr == "open" and _mode_writes(_arg(call, 1, "mode")):
        return f"{name} for writing"
    if attr in _PATH_WRITES and base not in ("os",):
        return f".{attr}()"
    if attr == "open" and base not in ("os", "io", "codecs"):
        # ``Path.open(mode)``; other ``.open(x)`` (a zip member, a session, a URL) take a name,
        # so only a literal mode, or ``mode=``, counts here.
        mode = _arg(call, 0, "mode")
        if isinstance(mode, ast.Constant) and isinstance(mode.value, str) and _mode_writes(mode):
            return ".open() for writing"
        keyword = next((k.value for k in call.keywords if k.arg == "mode"), None)
        if keyword is not None and _mode_writes(keyword):
            return ".open() for writing"
    return None


class _Scanner(ast.NodeVisitor):
    def __init__(self, module: str) -> None:
        self.module = module
        self.stack: list[str] = []
        self.found: list[Finding] = []

    def _enter(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> None:
        self.stack.append(node.name)
        self.generic_visit(node)
        self.stack.pop()

    visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = _enter

    def visit_Call(self, node: ast.Call) -> None:
        what = classify(node)
        if what is not None:
            self.found.append(Finding(self.module, ".".join(self.stack) or "<module>", node.lineno, what))
        self.generic_visit(node)


def scan_source(module: str, source: str) -> list[Finding]:
    scanner = _Scanner(module)
    scanner.visit(ast.parse(source))
    return scanner.found


def scan(root: Path) -> list[Finding]:
    found = []
    for path in sorted(root.rglob("*.py")):
        module = path.relative_to(root).as_posix()
        if module == OWNER:
            continue
        found += scan_source(module, path.read_text(encoding="utf-8"))
    return found


def _allowed(finding: Finding) -> bool:
    return any(
        finding.module == module
        and (finding.function == function or finding.function.endswith("." + function))
        for module, function in ALLOWED
    )


def test_no_module_but_safefs_writes_files() -> None:
    offenders = [f for f in scan(PACKAGE_ROOT) if not _allowed(f)]
    assert offenders == [], "\n".join(
        f"{f.module}:{f.line} in {f.function}: {f.what}; write through tinyharness.safefs instead"
        for f in offenders
    )


def test_every_allowed_entry_is_still_needed() -> None:
    """An allow-list entry nothing matches any more is removed, so the list stays short."""
    found = scan(PACKAGE_ROOT)
    for module, function in ALLOWED:
        assert any(
            f.module == module and (f.function == function or f.function.endswith("." + function))
            for f in found
        ), f"{module}:{function} is allowed to write but no longer does; drop it from ALLOWED"


BAD = textwrap.dedent(
    """
    import os, shutil, sqlite3, tempfile
    from pathlib import Path
    from tempfile import mkdtemp

    def a(p): open(p, "w")
    def b(p): open(p, mode="ab")
    def c(p): open(p, "r+")
    def d(p, m): open(p, m)
    def e(p): Path(p).write_text("x")
    def f(p): Path(p).write_bytes(b"x")
    def g(p): Path(p).touch()
    def h(p): Path(p).mkdir(parents=True)
    def i(p): os.open(p, os.O_WRONLY | os.O_CREAT)
    def j(p): os.open(p, flags=os.O_RDWR)
    def k(p): os.mkdir(p)
    def l(p): os.makedirs(p)
    def m(p, q): shutil.copy(p, q)
    def n(p, q): shutil.move(p, q)
    def o(): tempfile.NamedTemporaryFile(dir=".")
    def p_(): mkdtemp()
    def q(p): sqlite3.connect(p)
    def r(p): Path(p).open("w")
    def s(fd): os.fdopen(fd, "wb")
    class Sink:
        def __init__(self, p): self.f = open(p, "a", encoding="utf-8")
    """
)
GOOD = textwrap.dedent(
    """
    import os
    from pathlib import Path

    def a(p): open(p)
    def b(p): open(p, "rb")
    def c(p): Path(p).read_text()
    def d(p): os.open(p, os.O_RDONLY | os.O_DIRECTORY)
    def e(p): Path(p).open(encoding="utf-8")
    def f(fd): os.fdopen(fd, "rb")
    """
)


def test_the_scanner_finds_every_kind_of_write() -> None:
    found = scan_source("bad.py", BAD)
    functions = {f.function for f in found}
    expected = {
        "a",
        "b",
        "c",
        "d",
        "e",
        "f",
        "g",
        "h",
        "i",
        "j",
        "k",
        "l",
        "m",
        "n",
        "o",
        "p_",
        "q",
        "r",
        "s",
    }
    assert expected | {"Sink.__init__"} == functions


def test_the_scanner_lets_reads_pass() -> None:
    assert scan_source("good.py", GOOD) == []


def test_a_module_that_writes_fails_the_package_check(tmp_path: Path) -> None:
    """The package check itself, on a package with one offending module and one allowed."""
    (tmp_path / OWNER).write_text("def write(p):\n    open(p, 'w')\n", encoding="utf-8")
    (tmp_path / "cli.py").write_text(
        "import os\ndef main():\n    os.open(os.devnull, os.O_WRONLY)\n", encoding="utf-8"
    )
    (tmp_path / "sneaky.py").write_text("def save(p):\n    p.write_bytes(b'x')\n", encoding="utf-8")
    offenders = [f for f in scan(tmp_path) if not _allowed(f)]
    assert [(f.module, f.function) for f in offenders] == [("sneaky.py", "save")]

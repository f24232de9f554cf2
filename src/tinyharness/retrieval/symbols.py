"""Top-level definitions of a file: ``ast`` for Python, one line pattern per kind of file for
the rest (a ctags-like pass: cheap, and wrong only by missing a name, never by inventing one).
"""

from __future__ import annotations

import ast
import re
import warnings

# Python's own parser on files up to this size, the line pattern on larger ones: parsing is most
# of a map's cost (600 files of installed packages, 9 MB: 4.7 s of CPU with every file parsed,
# 2.0 s up to 32 KB, 0.3 s with the pattern alone, which found as many names).
MAX_AST_BYTES = 32_000

_PY = re.compile(r"^(?:async\s+def|def|class)\s+([A-Za-z_]\w*)|^([A-Za-z_]\w*)\s*(?::[^=\n]*)?=(?!=)", re.M)
_JS = re.compile(
    r"^(?:export\s+)?(?:default\s+)?(?:async\s+)?"
    r"(?:function\*?|class|const|let|var|interface|type|enum)\s+([A-Za-z_$][\w$]*)",
    re.M,
)
_GO = re.compile(r"^(?:func\s+(?:\([^)]*\)\s*)?|type\s+|var\s+|const\s+)([A-Za-z_]\w*)", re.M)
_RUST = re.compile(
    r"^(?:pub(?:\([^)]*\))?\s+)?(?:async\s+)?(?:fn|struct|enum|trait|mod|const|static|type|impl)\s+"
    r"(?:<[^>]*>\s*)?([A-Za-z_]\w*)",
    re.M,
)
_C_LIKE = re.compile(
    r"^(?:(?:public|private|protected|internal|static|final|abstract|sealed|export|inline|extern)\s+)*"
    r"(?:class|interface|struct|enum|record|object|trait|namespace|module|fun|fn|func|function|def|sub)"
    r"\s+([A-Za-z_]\w*)",
    re.M,
)
_C_FUNC = re.compile(r"^[A-Za-z_][\w \t*&:<>,]*?[ \t*&]([A-Za-z_]\w*)\s*\([^;{}\n]*\)\s*\{?\s*$", re.M)
_HEADING = re.compile(r"^#{1,3}[ \t]+(.+?)[ \t#]*$", re.M)
_SECTION = re.compile(r"^\[+([^\]\n]+)\]+\s*$|^([A-Za-z_][\w.-]*)\s*[=:]", re.M)
_SHELL = re.compile(r"^(?:function\s+)?([A-Za-z_][\w-]*)\s*\(\)\s*\{|^([A-Za-z_][\w-]*):(?!=)", re.M)

_BY_SUFFIX: dict[str, re.Pattern[str]] = {
    **dict.fromkeys((".js", ".jsx", ".mjs", ".cjs", ".ts", ".tsx"), _JS),
    ".go": _GO,
    ".rs": _RUST,
    **dict.fromkeys((".md", ".markdown", ".rst", ".txt"), _HEADING),
    **dict.fromkeys((".toml", ".ini", ".cfg", ".conf", ".yaml", ".yml", ".properties", ".env"), _SECTION),
    **dict.fromkeys((".sh", ".bash", ".mk"), _SHELL),
}
_C_SUFFIXES = (".c", ".h", ".cc", ".cpp", ".hpp", ".cxx")


def definitions(path: str, text: str, limit: int) -> tuple[str, ...]:
    """Up to ``limit`` names ``text`` (the file at ``path``) defines at its top level, in order,
    each once."""
    lower = path.lower()
    name = lower.rsplit("/", 1)[-1]
    suffix = "." + name.rsplit(".", 1)[-1] if "." in name else ""
    if suffix in (".py", ".pyi"):
        found = _python(text)
    elif name in ("makefile", "gnumakefile"):
        found = _matches(_SHELL, text)
    elif suffix in _C_SUFFIXES:
        found = _matches(_C_LIKE, text) + _matches(_C_FUNC, text)
    elif suffix in _BY_SUFFIX:
        found = _matches(_BY_SUFFIX[suffix], text)
    else:
        found = _matches(_C_LIKE, text)
    return tuple(dict.fromkeys(n.strip() for n in found if n.strip()))[:limit]


def _python(text: str) -> list[str]:
    if len(text) > MAX_AST_BYTES:
        return _matches(_PY, text)
    try:
        with warnings.catch_warnings():  # a file's own invalid escapes are not ours to report
            warnings.simplefilter("ignore")
            tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return _matches(_PY, text)
    names: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.append(node.name)
        elif isinstance(node, ast.Assign):
            names += [t.id for t in node.targets if isinstance(t, ast.Name)]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.append(node.target.id)
    return names


def _matches(pattern: re.Pattern[str], text: str) -> list[str]:
    return [next(g for g in m.groups() if g) for m in pattern.finditer(text) if any(m.groups())]

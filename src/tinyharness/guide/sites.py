"""Where a value lives in a Python file, and which of those places a task points to.

A small model asked to change a value picks the line to change from lines the harness offers.
Offered the line that defines the name the task writes, it changed the wrong thing when that
name is a class or a function holding the value: asked (in Chinese) to change ``Signer``'s
default key derivation from ``django-concat`` to ``hmac``, the 0.5B was offered ``class
Signer:`` and replaced it with ``class SigningAlgorithm:``; asked to make ``want_bytes`` default
to ``errors="replace"``, it was offered ``def want_bytes(`` (the defaults are on the next line)
and every edit it made broke the file.

So the places a value can be changed are found by structure (``binding_lines``: assignments,
annotated assignments, keyword defaults, ``def``/``class`` headers, found by ``ast``) and ranked
by the workspace strings the task writes (``written_tokens``): a string literal the task copies
(``django-concat``) comes before any name (``Signer``), since the value is what an edit of a
value changes. The task's tokens are runs of ASCII letters, digits and ``_.-``: what a task in
any language writes of a workspace verbatim (a Chinese task writes ``django-concat`` as an
English one does); an English word of the task only counts where the file holds it as a whole
name or a whole literal, the same property as BM25's.

``renamed_definitions`` is the check after the choice: an edit that changes the name a line
defines to a name the task does not write is no change the task asked for.
"""

from __future__ import annotations

import ast
import io
import keyword
import re
import tokenize
from collections.abc import Callable, Iterable, Sequence

# A run of ASCII letters, digits and ``_.-`` starting with a letter, digit or "_" (punctuation
# and ASCII bounds: the same in every language's sentence, not a list of words).
_TOKEN = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-]*")


def written_tokens(task: str) -> set[str]:
    """The task's ASCII tokens (``django-concat``, ``Signer``, ``2.2.1``), trailing dots cut.
    A run touching a letter of a cased alphabet that is not ASCII is part of a word of that
    language, not a token: "für" gives no "f" and "r" (the 0.5B, asked in German for
    ``_DEFAULT_MISSINGVAL``, was offered a line holding the literal "r"), "à" no "a". A run
    touching CJK (uncased) stays one: "在keys.py里" writes ``keys.py``."""
    found = set()
    for match in _TOKEN.finditer(task):
        start, end = match.span()
        before, after = task[start - 1 : start], task[end : end + 1]
        if _in_cased_word(before) or _in_cased_word(after):
            continue
        token = match.group().rstrip(".-")
        if token:
            found.add(token)
    return found


def _in_cased_word(char: str) -> bool:
    """``char`` is a non-ASCII letter of an alphabet with case (Latin, Greek, Cyrillic, ...)."""
    return not char.isascii() and _cased_letter(char)


def binding_lines(text: str) -> set[int]:
    """The 1-based numbers of the lines of Python ``text`` that bind a value: an assignment's
    first line, a keyword default's line, a ``def``/``class`` header's first line. An annotation
    alone (``version: str``) binds none: offered it for "Bump the version to 0.7.3.", the 0.5B
    rewrote it, and setuptools_scm's ``__version__ = version = '0.7.2'`` below it still set the
    version. Empty when ``ast`` cannot parse it."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return set()
    lines: set[int] = set()
    binders = (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    for node in ast.walk(tree):
        if isinstance(node, ast.AnnAssign) and node.value is None:
            continue
        if isinstance(node, binders):
            lines.add(node.lineno)
        elif isinstance(node, ast.arguments):
            lines.update(d.lineno for d in [*node.defaults, *node.kw_defaults] if d is not None)
    return lines


def line_tokens(line: str) -> tuple[set[str], set[str]]:
    """A Python line's names (keywords left out) and its literals' contents (strings unquoted,
    numbers as written);
    a line ``tokenize`` cannot read gives what it read before the error."""
    names: set[str] = set()
    literals: set[str] = set()
    try:
        for tok in tokenize.generate_tokens(io.StringIO(line.strip() + "\n").readline):
            if tok.type == tokenize.NAME and not keyword.iskeyword(tok.string):
                names.add(tok.string)
            elif tok.type == tokenize.NUMBER:
                literals.add(tok.string)
            elif tok.type == tokenize.STRING:
                try:
                    value = ast.literal_eval(tok.string)
                except (SyntaxError, ValueError):
                    continue
                if isinstance(value, str):
                    literals.add(value)
    except (tokenize.TokenError, SyntaxError):
        pass
    return names, literals


_SIGN = re.compile(r"[^\w\s]")  # a character neither a letter, a digit, "_" nor a space
# A release number: three or more dot-separated numbers (``3.7.1``), in any language's task.
_RELEASE = re.compile(r"\d+(?:\.\d+){2,}")


def releases(line: str, wanted: Sequence[tuple[int, ...]]) -> tuple[int, int]:
    """How a Python line holds release numbers, for a task writing the releases ``wanted``:
    how many string or number literals are shaped like one (``"0.12.1"``), and, for tuples or
    lists of three or more numbers first (``(3, 7, 0, 'final', 0)``), 1 + the most leading
    numbers one shares with a release wanted (``(3, 7, 0)`` is nearer 3.7.1 than ``(8, 16,
    32)``); 0 for none."""
    written = sum(1 for value in line_tokens(line)[1] if _RELEASE.fullmatch(value))
    heads = _number_heads(line)
    nearest = max((1 + max((_shared_head(h, w) for w in wanted), default=0) for h in heads), default=0)
    return written, nearest


def _number_heads(line: str) -> list[tuple[int, ...]]:
    """A Python line's tuples or lists whose first three or more items are numbers: those numbers."""
    try:
        tree = ast.parse(line.strip())
    except SyntaxError:
        return []
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Tuple | ast.List):
            numbers: list[int] = []
            for element in node.elts:
                if not (isinstance(element, ast.Constant) and type(element.value) is int):
                    break
                numbers.append(element.value)
            if len(numbers) >= 3:
                out.append(tuple(numbers))
    return out


def _as_releases(tokens: Iterable[str]) -> list[tuple[int, ...]]:
    return [tuple(int(part) for part in t.split(".")) for t in tokens if _RELEASE.fullmatch(t)]


def _shared_head(a: Sequence[int], b: Sequence[int]) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


def task_releases(task: str) -> list[tuple[int, ...]]:
    """The release numbers ``task`` writes (``3.7.1``), as numbers."""
    return _as_releases(written_tokens(task))


# Two dot-separated numbers ("3.11"): a release only beside a release written as a string of
# the same shape ("__version__ = '3.10'"); a float is written as a number (0.25), not a string.
_SHORT_RELEASE = re.compile(r"\d+\.\d+")


def task_short_releases(task: str) -> list[tuple[int, ...]]:
    """The two-part numbers ``task`` writes (``3.11``), as numbers: releases only where a file
    binds a string of that shape (``release_nearness(..., short=True)``)."""
    return [tuple(int(p) for p in t.split(".")) for t in written_tokens(task) if _SHORT_RELEASE.fullmatch(t)]


def _string_literals(line: str) -> list[str]:
    """The string literals of a Python line, unquoted."""
    return [value for _tok, value in _strings(line)]


def _strings(line: str) -> list[tuple[tokenize.TokenInfo, str]]:
    """The string tokens of a Python line (``_literal_tokens``) with their values."""
    found = []
    for tok in _literal_tokens(line.strip()):
        if tok.type != tokenize.STRING:
            continue
        try:
            value = ast.literal_eval(tok.string)
        except (SyntaxError, ValueError):
            continue
        if isinstance(value, str):
            found.append((tok, value))
    return found


def release_nearness(path: str, text: str, wanted: Sequence[tuple[int, ...]], short: bool = False) -> int:
    """How near a file comes to holding the release a task changes: the most leading numbers a
    release bound in it (a Python binding line's, a config file's key line's) shares with one
    ``wanted``; 0 for none (a test's ``"1.2.3"`` shares nothing with 0.7.3). ``short``: the
    task writes two-part releases ("Bump the version to 3.11."), matched only by two-part
    strings of the same count of parts (idna's ``__version__ = '3.10'``; measured with the
    0.5B: with no release read in "3.11", the ranking's best file, a Unicode data table, was
    edited and every edit refused)."""
    if path.endswith((".py", ".pyi")):
        numbered = text.splitlines()
        held = [numbered[n - 1] for n in sorted(binding_lines(text)) if 0 < n <= len(numbered)]
        if short:
            bound = [
                _release_numbers(v)
                for line in held
                for v in _string_literals(line)
                if _SHORT_RELEASE.fullmatch(v)
            ]
        else:
            bound = _as_releases(v for line in held for v in line_tokens(line)[1])
            bound += [head for line in held for head in _number_heads(line)]
    elif path.endswith(CONFIG_SUFFIXES):
        values = [v for line in text.splitlines() if _KEY.match(line) for v in config_values(line)]
        if short:
            bound = [_release_numbers(v) for v in values if _SHORT_RELEASE.fullmatch(v)]
        else:
            bound = _as_releases(values)
    else:
        return 0
    return max((_shared_head(release, w) for release in bound for w in wanted), default=0)


def _release_numbers(value: str) -> tuple[int, ...]:
    return tuple(int(part) for part in value.split("."))


def site_score(line: str, tokens: set[str], task: str) -> tuple[int, int, int]:
    """How much a binding line holds of what ``task`` writes (``tokens``: its written tokens): the
    literals the task copies (a token of it, or its text verbatim: ``"P%P"``) and,
    where the task writes a release number, the release numbers written as one; then releases
    held as numbers, the nearest first; then the names (a literal decides: an English task's
    words are names too, "key" and "hmac" in ``mac = hmac.new(key, ...)``, where a Chinese
    task's are not). The releases: a version's line, however it spells the version
    (Python-Markdown's is ``__version_info__ = (3, 7, 0, 'final', 0)``; the 0.5B, asked "Change
    this project's version to 3.7.1." and offered ``__version__ =
    _get_version(__version_info__)``, appended 'dev' to it three times); setuptools_scm's
    ``__version__ = version = '0.7.2'`` before its ``version_tuple = (0, 7, 2)``."""
    names, literals = line_tokens(line)
    wanted = _as_releases(tokens)
    written, numbers = releases(line, wanted) if wanted else (0, 0)
    # A literal with a sign in it is copied when the task holds it verbatim ("P%P"); one letter
    # is no value a task names ("P" of "P%P": the 0.5B, asked to make D_DEFAULT "P%p" and
    # offered the lines holding "P", rewrote D_ALT_EXT's).
    copied = {
        lit
        for lit in literals
        if (lit in tokens and not (len(lit) == 1 and lit.isalpha()))
        or (len(lit) > 1 and _SIGN.search(lit) and lit in task)
    }
    return len(copied) + written, numbers, len(names & tokens)


def value_sites(text: str, task: str, lines: Sequence[str]) -> list[str]:
    """Of ``lines`` (the candidate old texts of one Python file ``text``), the binding lines
    holding the most of what ``task`` writes; [] when none holds any of it (or the file does not
    parse)."""
    bound = binding_lines(text)
    if not bound:
        return []
    numbered = text.splitlines()
    bound_texts = {numbered[n - 1] for n in bound if 0 < n <= len(numbered)}
    tokens = written_tokens(task)
    stated = stated_assignments(task)
    scored = [
        (_with_stated(site_score(line, tokens, task), line, stated), line)
        for line in lines
        if line in bound_texts
    ]
    best = max((score for score, _ in scored), default=(0, 0, 0))
    return [line for score, line in scored if score == best] if best > (0, 0, 0) else []


def _with_stated(score: tuple[int, int, int], line: str, stated: dict[str, str]) -> tuple[int, int, int]:
    """``score`` with a line binding a name the task assigns as code (``autoreset=True``)
    counted as holding a literal the task copies: "haz que AnsiToWin32 tenga autoreset=True
    por defecto" offered the class header and ``__init__``'s, tied on the name, and the 0.5B
    edited the header five times."""
    if stated and any(name in stated for name, _ in _literal_bindings(line)):
        return (score[0] + 1, *score[1:])
    return score


def config_sites(task: str, lines: Sequence[str]) -> list[str]:
    """Of ``lines`` (the candidate old texts of one TOML/INI/cfg file), the ``key = value``
    lines holding the most of what ``task`` writes: a quoted value it copies first, then the
    key (``requires-python`` in 'raise requires-python to ">=3.9"'); [] when none holds any.
    The config file's ``value_sites`` (the 0.5B, offered every line of pyproject.toml for that
    task, changed ``build-backend``)."""
    tokens = written_tokens(task)
    scored = []
    for line in lines:
        if not _KEY.match(line):
            continue
        keys, literals = key_tokens(line)
        scored.append(((len(literals & tokens), len(keys & tokens)), line))
    best = max((score for score, _ in scored), default=(0, 0))
    return [line for score, line in scored if score == best] if best > (0, 0) else []


def unwritten_values(old: str, new: str, task: str, python: bool = True) -> list[str]:
    """The literals ``new`` (Python; ``python`` False: a TOML/INI line's values,
    ``config_values``) adds to ``old`` that the task does not write: neither found in the task
    as they are nor made only of the task's ASCII tokens (``00`` for ``">Q"`` in a task asking
    to rename a constant; ``"tabulate2"`` for pyproject.toml's ``name = "tabulate"`` in a task
    about whitespace). [] when every added value is the task's, in any language (a Chinese
    task writes ``40`` or ``'ps_dir'`` as it is)."""
    before = line_tokens(old)[1] if python else config_values(old)
    after = line_tokens(new)[1] if python else config_values(new)
    tokens = written_tokens(task)

    def written(value: str) -> bool:
        parts = written_tokens(value)
        return value in task or value in tokens or (bool(parts) and parts <= tokens)

    return sorted(v for v in after - before if not written(v))


def unwritten_names(old: str, new: str, task: str) -> list[str]:
    """The names a Python line ``new`` adds to ``old`` that the task does not write (in any
    case; a part of a dotted token it writes counts): ``loads`` for ``data = json.load(f)``
    turned into ``data = json.loads(data)`` in a task asking for an indent of two spaces (the
    0.5B's edit, a wrong change in the user's file). A rename the task asks for writes its new
    name; a change of a value adds none. [] when every added name is the task's."""
    tokens = {t.lower() for t in written_tokens(task)}
    tokens |= {part for t in tokens for part in t.split(".")}
    added = line_tokens(new)[0] - line_tokens(old)[0]
    return sorted(name for name in added if name.lower() not in tokens)


def config_values(line: str) -> set[str]:
    """A TOML/INI/cfg line's values: its quoted strings' contents and, outside quotes, its bare
    values (``99`` in ``max-line-length = 99``, ``0.12.1`` in ``version = 0.12.1``)."""
    key = _KEY.match(line)
    rest = line[key.end() :] if key else line
    quoted = {a or b for a, b in _QUOTED.findall(rest)}
    return {v for v in quoted if v} | set(_BARE.findall(_QUOTED.sub(" ", rest)))


_BARE = re.compile(r"[^\s,\[\]{}=:#\"']+")


def defined_names(line: str) -> set[str]:
    """The names a Python line defines: after ``def``/``class``, or an assignment's targets
    (``A = ...``, ``A: int = ...``, ``a, b = ...``); empty for any other line."""
    stripped = line.strip()
    head = re.match(r"(?:async\s+)?(?:def|class)\s+([A-Za-z_][A-Za-z0-9_]*)", stripped)
    if head:
        return {head.group(1)}
    names: set[str] = set()
    while target := _TARGET.match(stripped):  # every target of a chain: ``a = b = 1``
        names |= {part.strip() for part in target.group(1).split(",") if part.strip().isidentifier()}
        stripped = stripped[target.end() :]
    return names


_TARGET = re.compile(r"([A-Za-z_][A-Za-z0-9_.,\s]*?)\s*(?::[^=]*)?=(?!=)\s*")


def renamed_definitions(old: str, new: str, task: str) -> list[str]:
    """The names ``new`` defines where ``old`` defined others, that the task does not write:
    a rename nobody asked for (``class Signer:`` into ``class SigningAlgorithm:`` for a task
    changing a default). [] when the edit keeps the defined names, or renames to names the task
    writes (a rename the task asks for: "... to _UINT64_STRUCT")."""
    added = defined_names(new) - defined_names(old)
    if not defined_names(old):
        return []
    tokens = written_tokens(task)
    return sorted(name for name in added if name not in tokens)


def dropped_definitions(old: str, new: str, task: str) -> list[str]:
    """The names ``old`` binds that ``new``, still binding others, leaves out, that the task
    does not write: offered ``__version__ = version = '0.7.2'`` for "Bump the version to
    0.7.3.", the 0.5B wrote ``version = '0.7.3'``, and ``__version__`` was gone from the file."""
    before, after = defined_names(old), defined_names(new)
    if not after:
        return []
    tokens = written_tokens(task)
    return sorted(name for name in before - after if name not in tokens)


MAX_HELD_LINES = 6
# A TOML/INI/cfg line that binds a key: ``key = value`` or ``key: value`` (the file's syntax).
_KEY = re.compile(r"^[ \t]*([A-Za-z0-9_][A-Za-z0-9_.\-]*)[ \t]*[=:](?!:)")
_QUOTED = re.compile(r"\"([^\"\n]*)\"|'([^'\n]*)'")
CONFIG_SUFFIXES = (".toml", ".ini", ".cfg")


def unquoted_string(path: str, old: str, new: str) -> str | None:
    """The key of a TOML line whose value ``old`` writes as a quoted string and ``new`` writes
    bare (a number, a boolean: another type, which the file's reader takes as it is); None
    otherwise. Measured with the 0.5B on "把 pyproject.toml 里的 requires-python 改成 >=3.7":
    it wrote ``requires-python = 3.7``, a float where the packaging metadata wants a
    specifier string."""
    if not path.endswith(".toml"):
        return None
    before, after = _KEY.match(old), _KEY.match(new)
    if before is None or after is None or before.group(1) != after.group(1):
        return None
    was, now = old[before.end() :].strip(), new[after.end() :].strip()
    quotes = ('"', "'")
    return before.group(1) if was.startswith(quotes) and not now.startswith((*quotes, "[", "{")) else None


def key_tokens(line: str) -> tuple[set[str], set[str]]:
    """A TOML/INI line's key and its quoted values' contents (``key_tokens`` for a config file
    as ``line_tokens`` for Python)."""
    key = _KEY.match(line)
    literals = {a or b for a, b in _QUOTED.findall(line)}
    return ({key.group(1)} if key else set()), {
        v for v in literals if v
    }  # binding lines shown with the request for an answer


# A setuptools reference to a value kept in a module: ``version = attr: pkg._meta.__version__``
# (setup.cfg) or ``version = {attr = "pkg.__version__"}`` (pyproject.toml's dynamic metadata).
_ATTR = re.compile(r"""\battr\b\s*(?::|=)\s*["']?([A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)+)""")


def attr_modules(line: str) -> list[str]:
    """The files a config line's ``attr:`` reference may name (``pkg/_meta.py``,
    ``pkg/_meta/__init__.py``, then the same under ``src/``, for ``attr:
    pkg._meta.__version__``); [] for a line without one. The value the line stands for
    is in that module, not in the config file: an edit of it changes the module."""
    found = _ATTR.search(line)
    if found is None:
        return []
    module = found.group(1).split(".")[:-1]  # the attribute's module
    base = "/".join(module)
    return [f"{root}{base}{end}" for root in ("", "src/") for end in (".py", "/__init__.py")]


_PART = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")


def name_parts(name: str) -> set[str]:
    """A name's words, lower case: ``default_key_derivation`` -> default, key, derivation;
    ``HMACAlgorithm`` -> hmac, algorithm (the workspace's own spelling, split by case and _)."""
    return {part.lower() for part in _PART.findall(name)}


MIN_STEM = 5  # letters a word keeps of its stem before an ending is left to match
MAX_ENDING = 3  # letters an ending may add: commands/command, versions/version, authors/author


def same_word(a: str, b: str) -> bool:
    """``a`` and ``b`` (lower case) are one word, or one stem of ``MIN_STEM`` letters or more
    with short endings (``commands`` in tox.ini's key for "which command" or "quelle
    commande", ``requires`` for "require"): inflection by endings, as the languages written in
    Latin letters do it, not a word list of one of them."""
    if a == b:
        return True
    stem = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    return stem >= MIN_STEM and len(a) - stem <= MAX_ENDING and len(b) - stem <= MAX_ENDING


def shared_words(words: Iterable[str], task_words: set[str]) -> set[str]:
    """The ``words`` (a line's name parts) that the task writes, by ``same_word``."""
    return {w for w in words if w in task_words or any(same_word(w, t) for t in task_words)}


def definition_span(text: str, symbol: str) -> tuple[int, int] | None:
    """The first and last line of the first ``def``/``class`` of ``symbol`` in Python ``text``
    (None when ``ast`` finds none)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and node.name == symbol:
            return node.lineno, node.end_lineno or node.lineno
    return None


def assignment_lines(text: str, symbol: str, limit: int = MAX_HELD_LINES) -> list[tuple[int, str]]:
    """The lines of Python ``text`` whose assignment binds ``symbol`` (``WIDE_CHARS_MODE =
    wcwidth is not None``), in file order with their numbers, at most ``limit``."""
    numbered = text.splitlines()
    found = [
        (n, numbered[n - 1].strip())
        for n in sorted(binding_lines(text))
        if 0 < n <= len(numbered) and symbol in defined_names(numbered[n - 1])
    ]
    return found[:limit]


def held_lines(
    text: str,
    task: str,
    skip: Iterable[str] = (),
    limit: int = MAX_HELD_LINES,
    python: bool = True,
    within: tuple[int, int] | None = None,
    terms: Sequence[str] = (),
    whole: bool = False,
) -> list[tuple[int, str]]:
    """The binding lines of Python ``text`` holding the most of what ``task`` writes, with
    their numbers, at most ``limit``, in file order: a literal the task copies first, then the
    words of the line's names the task writes (``default_key_derivation`` for "Which key
    derivation ... by default?"), each word weighing less the more lines hold it (as BM25's
    idf). ``skip``: tokens that name the file itself (its path's words), matched by no line.
    What the answer to a question about a file's value needs when the read page does not reach
    it (the 0.5B answered a class name it saw on the first page, "NoneAlgorithm", for the
    default salt of line 132). ``python`` False: a TOML/INI file, whose ``key = value`` lines
    bind (``requires-python = ">=3.8"`` for "Which Python versions does it support?"; the 0.5B
    answered the project's version). Words match whole; only when no line matches so do
    they match by ``same_word`` (``commands`` for "command"). Only when the task's own words
    match no line do ``terms`` (the task's words as the code writes them, which the model gave:
    ``plan.TERMS_KEY``) match, the same two ways: a task in Chinese writes no word of
    ``__version__`` or ``commands``. ``whole``: only lines with a name (a key) whose every word
    matches, or a literal the task writes (where an edit may change a value it names by its
    words: ``__version__`` for "version", not ``__version_info__``); the file's own name does
    not keep the words in code from such a name (``version`` in ``version.py``: "把这个库的版本号
    改成 0.7.3。" was offered every line of setuptools_scm's file). [] when nothing matches."""
    passes = [(task, skip), (" ".join(terms), () if whole else skip)] if terms else [(task, skip)]
    for words, skipped in passes:
        for shared in (exact_words, shared_words):
            held = _held_lines(text, words, skipped, limit, python, within, shared, whole)
            if held:
                return held
    return []


def exact_words(words: Iterable[str], task_words: set[str]) -> set[str]:
    """The ``words`` the task writes whole."""
    return set(words) & task_words


def _held_lines(
    text: str,
    task: str,
    skip: Iterable[str],
    limit: int,
    python: bool,
    within: tuple[int, int] | None,
    shared: Callable[[Iterable[str], set[str]], set[str]],
    whole: bool = False,
) -> list[tuple[int, str]]:
    numbered = text.splitlines()
    if python:
        lines = [(n, numbered[n - 1]) for n in sorted(binding_lines(text)) if 0 < n <= len(numbered)]
    else:
        lines = [(n, line) for n, line in enumerate(numbered, 1) if _KEY.match(line)]
    if within is not None:
        lines = [(n, line) for n, line in lines if within[0] <= n <= within[1]]
    skipped = set().union(*(name_parts(t) for t in skip)) if skip else set()
    tokens = written_tokens(task)
    parts = set().union(*(name_parts(t) for t in tokens)) - skipped if tokens else set()
    sections = {} if python or whole else _sections(numbered)
    read = []
    for number, line in lines:
        names, literals = line_tokens(line) if python else key_tokens(line)
        # An INI key's section is part of its name for a question: "flake8" in "Welche maximale
        # Zeilenlänge erlaubt flake8 laut tox.ini?" names ``max-line-length = 99`` under
        # ``[flake8]``, a key that holds no word of the task itself (not for an edit's choice:
        # every key of the section would be a whole match).
        names = names | ({sections[number]} if sections.get(number) else set())
        split = {name: name_parts(name) for name in names}
        words = set().union(*split.values()) if split else set()
        # how much of its best-matched name the task writes: ``version`` all, ``python_version`` half
        cover = max((len(shared(p, parts)) / len(p) for p in split.values() if p), default=0.0)
        read.append((number, line, literals & tokens, shared(words, parts), cover))
    holding: dict[str, int] = {}
    for *_, words, _cover in read:
        for word in words:
            holding[word] = holding.get(word, 0) + 1
    scored = [
        (len(literals), cover * sum(1 / holding[w] for w in words), -number, number, line.strip())
        for number, line, literals, words, cover in read
        if literals or (words and (cover == 1.0 or not whole))
    ]
    scored.sort(reverse=True)
    if scored and scored[0][0] == 0:  # no literal: only the lines near the best
        scored = [item for item in scored if item[1] > scored[0][1] / 2]
    return sorted((number, line) for *_, number, line in scored[:limit])


_SECTION = re.compile(r"^[ \t]*\[+([^\]\n]+)\]+[ \t]*(?:[#;].*)?$")


def _sections(lines: Sequence[str]) -> dict[int, str]:
    """The 1-based number of each line of a TOML/INI file -> the section it is in ("" before
    the first ``[section]``)."""
    found: dict[int, str] = {}
    section = ""
    for number, line in enumerate(lines, 1):
        header = _SECTION.match(line)
        if header:
            section = header.group(1).strip()
        found[number] = section
    return found


# read_file's line-number column ("    12\t"), copied by a small model into an edit's new text.
_NUMBER_COLUMN = re.compile(r"^[ \t]*\d+(?:\t|[ ]{2,})")


def repairs(old: str, new: str) -> list[str]:
    """Other readings of an edit's ``new`` line, for when it breaks the file, the least change
    first: ``old`` with only its one changed literal changed (``errors: str = "strict"`` for
    ``errors: "replace"``: the 0.5B dropped the annotation with the value), ``new`` without
    read_file's line-number column it copied (``    1    s: str = ...``), and ``old`` with its
    one literal replaced by a ``new`` that is only a value (``value_only``). All are the tool's
    format and the line's tokens, no word of any task. [] when none applies."""
    found: list[str] = []
    if _NUMBER_COLUMN.match(new) and not _NUMBER_COLUMN.match(old):
        indent = old[: len(old) - len(old.lstrip())]
        new = indent + _NUMBER_COLUMN.sub("", new, count=1).lstrip()
        found.append(new)
    swapped = literal_swapped(old, new)
    if swapped is not None and swapped not in found:
        found.insert(0, swapped)  # the least change first
    valued = value_only(old, new)
    if valued is not None and valued not in found:
        found.append(valued)
    return found


def value_only(old: str, new: str) -> str | None:
    """``old`` with its one literal replaced by ``new`` when ``new`` is only a value, no name or
    bracket in it (``__version__ = "8.0.3"`` for ``old`` ``__version__ = "8.0.2"`` and ``new``
    ``8.0.3``: the 0.5B's edit five times, each breaking the file), quoted as the old literal
    when that was a string and the value is not; None otherwise."""
    before = _literal_tokens(old.strip())
    value = new.strip()
    if len(before) != 1 or not value or any(c in value for c in "=()[]{},:#\n"):
        return None
    try:
        kinds = [t.type for t in tokenize.generate_tokens(io.StringIO(value + "\n").readline)]
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return None
    if tokenize.NAME in kinds:
        return None
    literal = before[0]
    if literal.type == tokenize.STRING and value[0] not in "\"'":
        quote = literal.string[-1]
        if quote in value:
            return None
        value = f"{quote}{value}{quote}"
    indent = old[: len(old) - len(old.lstrip())]
    body = old.strip()
    return indent + body[: literal.start[1]] + value + body[literal.end[1] :]


def _literal_tokens(line: str) -> list[tokenize.TokenInfo]:
    try:
        return [
            tok
            for tok in tokenize.generate_tokens(io.StringIO(line + "\n").readline)
            if tok.type in (tokenize.STRING, tokenize.NUMBER)
        ]
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return []


def literal_values(line: str) -> list[str]:
    """A Python line's string and number literals as written, in order."""
    return [tok.string for tok in _literal_tokens(line.strip())]


def literal_swapped(old: str, new: str) -> str | None:
    """``old`` with the one literal that ``new`` does not keep replaced by the one literal
    ``new`` adds; None unless there is exactly one of each."""
    before, after = _literal_tokens(old.strip()), _literal_tokens(new.strip())
    kept = {tok.string for tok in after}
    gone = [tok for tok in before if tok.string not in kept]
    added = [tok for tok in after if tok.string not in {t.string for t in before}]
    if len(gone) != 1 or len(added) != 1 or gone[0].start[0] != 1:
        return None
    indent = old[: len(old) - len(old.lstrip())]
    body = old.strip()
    start, end = gone[0].start[1], gone[0].end[1]
    return indent + body[:start] + added[0].string + body[end:]


# A span the task quotes: between double quotes, backticks, typographic or CJK quotes or
# guillemets, or single quotes. Marks, not words.
_TASK_QUOTES = re.compile(
    r'"([^"\n]{1,80})"|`([^`\n]{1,80})`|“([^”\n]{1,80})”|「([^」\n]{1,80})」|«\s?([^»\n]{1,80}?)\s?»'
)
_SINGLE_QUOTED = re.compile(r"'([^'\n]{1,80})'")
_NUMERIC = re.compile(r"[+-]?\d+(?:\.\d+)*")


def quoted_spans(task: str) -> set[str]:
    """The spans ``task`` quotes (``_TASK_QUOTES``), in any language. A single quote touching a
    letter of a cased alphabet is an apostrophe inside a word ("project's", "l'outil",
    "м'ясо"), as ``written_tokens`` reads word bounds, and opens or closes no span; one
    touching CJK does ("改成'ps_dir'")."""
    spans = {next(g for g in match.groups() if g is not None) for match in _TASK_QUOTES.finditer(task)}
    start = 0
    while (match := _SINGLE_QUOTED.search(task, start)) is not None:
        before, after = task[match.start() - 1 : match.start()], task[match.end() : match.end() + 1]
        if _cased_letter(before) or _cased_letter(after):
            start = match.start() + 1  # that quote was an apostrophe: look from the next one
            continue
        spans.add(match.group(1))
        start = match.end()
    return spans


def _cased_letter(char: str) -> bool:
    """``char`` is a letter of an alphabet with case (Latin, Greek, Cyrillic, ...), ASCII or not."""
    return bool(char) and char.isalpha() and char.lower() != char.upper()


def stated_swap(old: str, task: str) -> str | None:
    """``old`` (a Python line) with its one literal the task writes replaced by the one other
    value of its kind the task writes: the edit a task of the form "from A to B" states, in
    any language ("make D_DEFAULT "P%p" instead of "P%P"", "把 2 改成 4"). A string's
    values are the spans the task quotes, a number's the numbers it writes; None unless there
    is exactly one of each."""
    tokens = _literal_tokens(old.strip())
    quoted, written = quoted_spans(task), written_tokens(task)
    numbers = {t for t in written if _NUMERIC.fullmatch(t)}
    found: list[tuple[tokenize.TokenInfo, str]] = []
    for tok in tokens:
        if tok.type == tokenize.NUMBER and tok.string in numbers:
            found.append((tok, tok.string))
        elif tok.type == tokenize.STRING:
            try:
                value = ast.literal_eval(tok.string)
            except (SyntaxError, ValueError):
                continue
            if isinstance(value, str) and value in quoted:
                found.append((tok, value))
    if len(found) != 1:
        return None
    tok, value = found[0]
    held = {t.string for t in tokens} | {value}
    if tok.type == tokenize.NUMBER:
        others = sorted(n for n in numbers if n not in held)
        replacement = others[0] if len(others) == 1 else None
    else:
        others = sorted(q for q in quoted if q != value and q not in held)
        replacement = tok.string.replace(value, others[0]) if len(others) == 1 else None
    if replacement is None or replacement == tok.string or tok.start[0] != 1:
        return None  # (a literal written with escapes holds its value in another spelling)
    indent = old[: len(old) - len(old.lstrip())]
    body = old.strip()
    return indent + body[: tok.start[1]] + replacement + body[tok.end[1] :]


# A binding the task writes as code: ``check_ltr=True``, ``MAXY = 30`` (a Python name, "=",
# a literal): the syntax of the code, in any language's sentence.
_ASSIGNED = re.compile(r"(?<![\w.=!<>])([A-Za-z_]\w*)\s?=\s?(\"[^\"\n]*\"|'[^'\n]*'|[^\s,;)\]}，。；）]+)")


def stated_assignments(task: str) -> dict[str, str]:
    """The bindings ``task`` writes as code (``check_ltr=True``), name to value as written;
    a value that is not a Python literal (``mode=fast``) is not one."""
    found: dict[str, str] = {}
    for match in _ASSIGNED.finditer(task):
        name, value = match.group(1), match.group(2).rstrip(".")
        try:
            ast.literal_eval(value)
        except (SyntaxError, ValueError):
            continue
        found.setdefault(name, value)
    return found


def _bound_values(line: str) -> list[tuple[str, ast.expr]]:
    """What a Python line binds, name to value node: an assignment's targets, a def header's
    defaults, a call's keywords (the header parsed with a body added)."""
    body = line.strip()
    tree = None
    for source in (body, body + "\n    pass"):  # a header parses with a body
        try:
            tree = ast.parse(source)
            break
        except (SyntaxError, ValueError):
            continue
    if tree is None:
        return []
    bound: list[tuple[str, ast.expr]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            args = node.args
            positional = [*args.posonlyargs, *args.args]
            with_default = positional[len(positional) - len(args.defaults) :]
            bound += [(a.arg, d) for a, d in zip(with_default, args.defaults, strict=True)]
            bound += [
                (a.arg, d) for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is not None
            ]
        elif isinstance(node, ast.Assign):
            bound += [(t.id, node.value) for t in node.targets if isinstance(t, ast.Name)]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            bound.append((node.target.id, node.value))
        elif isinstance(node, ast.keyword) and node.arg is not None:
            bound.append((node.arg, node.value))
    return [(name, value) for name, value in bound if value.lineno == 1 and value.end_lineno == 1]


def _literal(node: ast.expr) -> bool:
    """Whether a bound value is a literal (``2``, ``False``, ``"x"``, ``-1``): a default or a
    constant, not a value computed where it is bound."""
    try:
        ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return True


def _literal_bindings(line: str) -> list[tuple[str, ast.expr]]:
    """``_bound_values`` whose value is a literal: "change Parser's default to lookahead=3"
    means ``def __init__(self, lookahead=2):``, not ``lookahead = self._current_token()`` (the
    0.5B, offered both, rewrote the second: a wrong change in the user's file)."""
    return [(name, value) for name, value in _bound_values(line) if _literal(value)]


def stated_assignment(old: str, task: str) -> str | None:
    """``old`` (a Python line) with the value it binds to the one name the task assigns
    (``stated_assignments``) replaced by the task's value: "make check_bidi check
    left-to-right labels by default (check_ltr=True)" on ``def check_bidi(label: str,
    check_ltr: bool = False) -> bool:``. None unless exactly one such binding is on the line
    and its value differs."""
    stated = stated_assignments(task)
    hits = [(name, value) for name, value in _literal_bindings(old) if name in stated]
    if len(hits) != 1:
        return None
    name, node = hits[0]
    body = old.strip().encode()  # ast's columns count UTF-8 bytes
    start, end = node.col_offset, node.end_col_offset
    if end is None or body[start:end].decode() == stated[name]:
        return None
    indent = old[: len(old) - len(old.lstrip())]
    return indent + (body[:start] + stated[name].encode() + body[end:]).decode()


def assigned_as_stated(line: str, task: str) -> bool:
    """Whether a Python line binds a name the task assigns to the task's value, as written."""
    stated = stated_assignments(task)
    body = line.strip().encode()
    return any(
        name in stated
        and value.end_col_offset is not None
        and body[value.col_offset : value.end_col_offset].decode() == stated[name]
        for name, value in _bound_values(line)
    )


def stated_release(old: str, task: str) -> str | None:
    """``old`` (a Python line) with its one release-shaped string (``'1.0.1'``) changed to the
    one release the task writes of as many parts, the same major release or the next
    (``1.0.2``, ``2.0.0``): the change "Bump the version to 1.0.2." states, in any language.
    A two-part string counts (``'3.10'``), as in ``task_short_releases``. None unless exactly
    one of each."""
    written = [t for t in written_tokens(task) if _RELEASE.fullmatch(t) or _SHORT_RELEASE.fullmatch(t)]
    found = [(tok, v) for tok, v in _strings(old) if _RELEASE.fullmatch(v) or _SHORT_RELEASE.fullmatch(v)]
    if len(found) != 1:
        return None
    tok, value = found[0]
    major = _release_numbers(value)[0]
    # as many parts, the same major release or the next: a task's other numbers are not it
    wanted = [
        w
        for w in written
        if w != value and w.count(".") == value.count(".") and _release_numbers(w)[0] in (major, major + 1)
    ]
    if len(set(wanted)) != 1:
        return None
    indent = old[: len(old) - len(old.lstrip())]
    body = old.strip()
    start, end = tok.start[1], tok.end[1]
    return indent + body[:start] + tok.string.replace(value, wanted[0]) + body[end:]


def writes_release(line: str, task: str) -> bool:
    """Whether a Python line holds, as a string, a release the task writes."""
    written = set(written_tokens(task))
    return any(value in written for value in _string_literals(line) if _SHORT_RELEASE.match(value))


def _weighty(value: str) -> bool:
    """A literal that points to its line: a number of two digits or more, or a string of two
    characters or more that is not a word of letters alone (one digit, or "to", is everywhere)."""
    if _NUMERIC.fullmatch(value):
        return sum(c.isdigit() for c in value) >= 2
    return len(value) >= 2 and not value.isalpha()


def value_count(text: str, task: str) -> int:
    """How many of the values ``task`` writes (numbers, quoted spans, tokens with a digit or a
    sign: ``128``, ``"P%P"``) one binding line of Python ``text`` holds at most: where a change
    of a value the task writes is made ("keep up to 256 expressions instead of 128" in the
    file binding ``_MAX_SIZE = 128``). 0 for none."""
    written = {t for t in written_tokens(task) if _weighty(t)} | {
        q for q in quoted_spans(task) if _weighty(q)
    }
    if not written:
        return 0
    numbered = text.splitlines()
    best = 0
    for n in binding_lines(text):
        if 0 < n <= len(numbered):
            best = max(best, len(line_tokens(numbered[n - 1])[1] & written))
    return best

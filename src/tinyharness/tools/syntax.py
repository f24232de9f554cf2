"""Edits that cannot break a file: a parse check for the kinds of file the harness can parse.

``breaks(path, before, after)`` answers, for a write or an edit about to be applied, whether it
turns a file that parses into one that does not, and if so with the parser's own message and
the lines around the error, which the model reads as the tool's error. The file is then left
as it was. A file that did not parse before (or a kind no parser here reads) is never refused:
the check keeps working files working, it does not judge the model's style. SWE-agent's linting
edit tool is the model here; its paper measured the gain on real repositories.

Kinds: Python (``ast``), JSON, TOML (``tomllib``) and YAML (``yaml.safe_load``), by file name
suffix; files over ``MAX_CHECK_CHARS`` are not parsed (bounded cost).

May import nothing of the package.
"""

from __future__ import annotations

import ast
import json
import tomllib
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import PurePosixPath

MAX_CHECK_CHARS = 2_000_000
CONTEXT_LINES = 2  # lines shown on each side of the error


@dataclass(frozen=True)
class ParseError:
    kind: str  # "Python", "JSON", ...
    message: str
    line: int | None  # 1-based, when the parser says


def _python(text: str) -> None:
    with warnings.catch_warnings():  # SyntaxWarning (invalid escapes) is not an error here
        warnings.simplefilter("ignore")
        ast.parse(text)


def _yaml(text: str) -> None:
    import yaml

    for _ in yaml.safe_load_all(text):
        pass


PARSERS: dict[str, tuple[str, Callable[[str], object]]] = {
    ".py": ("Python", _python),
    ".pyi": ("Python", _python),
    ".json": ("JSON", json.loads),
    ".toml": ("TOML", tomllib.loads),
    ".yaml": ("YAML", _yaml),
    ".yml": ("YAML", _yaml),
}


def parse_error(path: str, text: str) -> ParseError | None:
    """Why ``text`` does not parse as the kind of file ``path`` names; None when it parses, is
    too large to check, or is of a kind no parser here reads."""
    parser = PARSERS.get(PurePosixPath(path).suffix.lower())
    if parser is None or len(text) > MAX_CHECK_CHARS:
        return None
    kind, parse = parser
    try:
        parse(text)
    except SyntaxError as exc:
        return ParseError(kind, f"{type(exc).__name__}: {exc.msg}", exc.lineno)
    except json.JSONDecodeError as exc:
        return ParseError(kind, exc.msg, exc.lineno)
    except tomllib.TOMLDecodeError as exc:
        return ParseError(kind, str(exc), _line_of(str(exc)))
    except RecursionError:
        return ParseError(kind, "nested too deeply to parse", None)
    except Exception as exc:  # yaml's errors, ValueError of a null byte, ...
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        return ParseError(kind, " ".join(str(exc).split())[:300], line)
    return None


def _line_of(message: str) -> int | None:
    marker = "(at line "
    if marker not in message:
        return None
    digits = message.split(marker, 1)[1].split(",", 1)[0].rstrip(")")
    return int(digits) if digits.isdigit() else None


def breaks(path: str, before: str | None, after: str) -> str | None:
    """The error the model reads when writing ``after`` over ``before`` would turn a file that
    parses into one that does not; None when the change may be applied."""
    if before is None or parse_error(path, before) is not None:
        return None  # a new file, or one that did not parse already
    error = parse_error(path, after)
    if error is None:
        return None
    where = f" at line {error.line}" if error.line else ""
    return (
        f"Not applied: after this change {path} would no longer parse as {error.kind} "
        f"({error.message}{where}); the file is unchanged.\n{excerpt(after, error.line)}"
        "Fix the new text (indentation, quotes, brackets) and try again."
    )


def excerpt(text: str, line: int | None) -> str:
    """The lines around ``line`` of ``text``, numbered, the error's line marked with ``>``."""
    if line is None:
        return ""
    lines = text.splitlines()
    first, last = max(1, line - CONTEXT_LINES), min(len(lines), line + CONTEXT_LINES)
    shown = [
        f"{'>' if number == line else ' '}{number:>5}\t{lines[number - 1][:200]}"
        for number in range(first, last + 1)
    ]
    return "\n".join(shown) + "\n" if shown else ""

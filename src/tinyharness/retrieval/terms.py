"""Words for ranking, the same for a task and for a file, in any language.

An identifier gives itself and its parts (``HRProcessor``: ``hrprocessor``, ``hr``,
``processor``; ``find_dotenv``: ``find_dotenv``, ``find``, ``dotenv``), a path gives its
folders, its file name and the name's stem and parts; a CJK run gives its characters and
overlapping bigrams (Chinese and Japanese have no spaces); any other letters form words as
Unicode sees them. A long word also gives its first ``PREFIX`` letters, so that inflections of
one word stem meet (``versions``/``version``) without a language's stemmer. No stopwords: BM25's
inverse document frequency already weighs down what every file says.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

PREFIX = 6  # letters a long word shares with its inflections in most alphabetic languages
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_TOKEN = re.compile(rf"[A-Za-z0-9_]+|[{_CJK}]+|[^\W\d_A-Za-z{_CJK}]+")
_CJK_RUN = re.compile(rf"[{_CJK}]+")
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
# A path or file name as written in a task: ASCII boundaries, so "改tables.py里" still counts.
_PATHLIKE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-/]*[A-Za-z0-9_]")


def identifier_parts(word: str) -> list[str]:
    """``word`` lower-cased, and its snake_case and camelCase parts when it has several."""
    parts = [piece.lower() for chunk in word.split("_") for piece in _CAMEL.findall(chunk)]
    whole = word.strip("_").lower()
    out = [whole] if whole else []
    if len(parts) > 1 or (parts and parts[0] != whole):
        out += [p for p in parts if p != whole]
    return out


def cjk_grams(run: str) -> list[str]:
    """Single characters and overlapping bigrams of a CJK run."""
    return list(run) + [run[i : i + 2] for i in range(len(run) - 1)]


def terms(text: str) -> list[str]:
    """Every ranking term of ``text``, in order, repeated as often as it occurs."""
    return list(_iter_terms(text))


def _iter_terms(text: str) -> Iterator[str]:
    for token in _TOKEN.findall(text):
        if _CJK_RUN.fullmatch(token):
            yield from cjk_grams(token)
            continue
        pieces = identifier_parts(token) if token.isascii() else [token.casefold()]
        for piece in pieces:
            yield piece
            if len(piece) > PREFIX + 1 and not piece.isdigit():
                yield piece[:PREFIX] + "~"


def path_terms(path: str) -> list[str]:
    """Terms of a workspace path: each folder and the file name whole (``toc.py``), and their
    word parts (``toc``, ``py``)."""
    out: list[str] = []
    for part in path.split("/"):
        out.append(part.lower())
        out += terms(part)
    return out


def pathlike_mentions(text: str) -> list[str]:
    """What in ``text`` could be a path or a file name (``markdown/core.py``, ``toc.py``,
    ``scripts/``), without leading ``./`` or trailing ``/`` or ``.``."""
    found = []
    for match in _PATHLIKE.finditer(text):
        word = match.group(0)
        while word.startswith("./"):
            word = word[2:]
        found.append(word.rstrip("/."))
    return [w for w in found if w]


def identifiers(text: str) -> set[str]:
    """The ASCII identifiers written in ``text``, as written (for exact symbol matches)."""
    return {t for t in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text)}

"""Quoting data (tool output, files, notes, transcripts) into text a model reads, so that the
data cannot end its quote early or open a new one.

``quote("file", body, path=name)`` gives ``<file path="...">\\nBODY\\n</file>``. Inside BODY
every tag-like spelling of ``<file`` or ``</file`` is defused by a backslash after the ``<``:
any letter case, spaces, line breaks or invisible characters around the ``/`` and inside the
name, full-width ``<`` and ``/`` (``</FILE >``, ``< /file>``, ``<\\u200b/file>``). A backslash
already there gets one more, so the escaping is reversible and ``blocks`` gives back exactly
what was quoted. Attribute values (file names) are entity-escaped, so a name holding ``"``,
``>`` or a line break cannot leave the opening tag.

May import nothing of the package: every layer (context, memory, tools) may use it.
"""

from __future__ import annotations

import re
from functools import cache

# Characters a reader may not see or may skip: whitespace, soft hyphen, zero-width and
# direction marks, word joiners, the byte-order mark.
_INVISIBLE = r"[\s\u00ad\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\ufeff]*"
_LESS = "[<\uff1c\ufe64]"
_SLASH = "[/\uff0f\u2044\u2215]"
_ENTITY = re.compile(r"&(amp|quot|lt|gt|#x[0-9a-f]+);")
_NAMED = {"amp": "&", "quot": '"', "lt": "<", "gt": ">"}


def quote(kind: str, body: str, **attributes: str) -> str:
    """``body`` between ``<kind ...>`` and ``</kind>`` as quoted data (see the module doc)."""
    if not re.fullmatch(r"[a-z][a-z0-9_]*", kind):
        raise ValueError(f"a quote kind is a lower-case name, got {kind!r}")
    attrs = "".join(f' {key}="{_escape_attribute(value)}"' for key, value in attributes.items())
    safe = _tag_like(kind).sub(lambda m: m.group(1) + m.group(2) + "\\", body)
    return f"<{kind}{attrs}>\n{safe}\n</{kind}>"


def blocks(text: str, kind: str) -> list[tuple[dict[str, str], str]]:
    """Every block ``quote(kind, ...)`` made in ``text``: its attributes and its body, exactly
    as they were given to ``quote``."""
    found = []
    for match in _block(kind).finditer(text):
        attrs = {key: _unescape_attribute(value) for key, value in _ATTRIBUTE.findall(match.group(1))}
        body = _escaped_tag_like(kind).sub(lambda m: m.group(1) + m.group(2), match.group(2))
        found.append((attrs, body))
    return found


def loose_tags(text: str, kind: str) -> int:
    """How many spellings of ``<kind`` or ``</kind`` a lenient reader could take for a tag: a
    quote made by ``quote`` has exactly two (its own)."""
    return sum(1 for m in _tag_like(kind).finditer(text) if not m.group(2))


_ATTRIBUTE = re.compile(r' ([a-z_]+)="([^"]*)"')


@cache
def _name(kind: str) -> str:
    letters = ["[_\\-]" if ch == "_" else re.escape(ch) for ch in kind]
    return _INVISIBLE.join(letters)


@cache
def _tag_like(kind: str) -> re.Pattern[str]:
    """``<`` (group 1), the backslashes after it (group 2), then the rest of an opening or
    closing tag of ``kind`` in any spelling (a lookahead, left in place)."""
    rest = f"(?={_INVISIBLE}{_SLASH}?{_INVISIBLE}{_name(kind)})"
    return re.compile(f"({_LESS})(\\\\*){rest}", re.IGNORECASE)


@cache
def _escaped_tag_like(kind: str) -> re.Pattern[str]:
    rest = f"(?={_INVISIBLE}{_SLASH}?{_INVISIBLE}{_name(kind)})"
    return re.compile(f"({_LESS})(\\\\*)\\\\{rest}", re.IGNORECASE)


@cache
def _block(kind: str) -> re.Pattern[str]:
    return re.compile(f'<{kind}((?: [a-z_]+="[^"]*")*)>\\n(.*?)\\n</{kind}>', re.DOTALL)


def _escape_attribute(value: str) -> str:
    out = []
    for ch in value:
        if ch in '&"<>':
            out.append({"&": "&amp;", '"': "&quot;", "<": "&lt;", ">": "&gt;"}[ch])
        elif ch != " " and (not ch.isprintable() or ch.isspace()):
            out.append(f"&#x{ord(ch):x};")  # line breaks, tabs, controls, invisible marks
        else:
            out.append(ch)
    return "".join(out)


def _unescape_attribute(value: str) -> str:
    def one(match: re.Match[str]) -> str:
        name = match.group(1)
        return chr(int(name[2:], 16)) if name.startswith("#x") else _NAMED[name]

    return _ENTITY.sub(one, value)

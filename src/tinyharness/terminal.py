"""What reaches a person's terminal: every line the harness prints passes through here.

Text that comes from outside the harness (a model's answer, a server's error message, a stored
memory, a run's task, a tool's output) can hold secrets and escape sequences. A terminal obeys
escape sequences: OSC 52 writes the clipboard, OSC 0 retitles the window, CSI clears the screen
or moves the cursor, a carriage return overwrites what is shown. Two steps defuse it:

- ``visible(text)`` shows every control character instead of sending it: C0 controls (ESC
  becomes ``␛``, the control pictures of Unicode), DEL, the C1 controls (``\\x9b``), the
  direction overrides that reorder what is shown (``\\u202e``) and the line and paragraph
  separators. Line breaks and tabs stay as they are.
- ``shown(text)`` is ``visible(redact(text))``: what a user may see.

``json_text(value)`` is JSON for a terminal: the same data, with those characters written as
``\\uXXXX`` escapes (``json.dumps`` leaves DEL, C1 and the separators raw).

``say(text)`` prints one user-facing message (to stderr with ``err=True``); a test fails when
code elsewhere prints an exception's text without ``shown``.

May import ``redact``.
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any, TextIO

from .redact import redact

__all__ = ["json_text", "say", "shown", "visible"]

# C0 without tab and line feed, DEL, C1; bidirectional overrides and isolates; the Unicode line
# and paragraph separators (a line break some terminals draw and others do not).
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]")


def _picture(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code < 0x20:
        return chr(0x2400 + code)  # ␀ … ␟: ESC is ␛, CR is ␍
    if code == 0x7F:
        return "\u2421"  # ␡
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def visible(text: str) -> str:
    """``text`` with every control character shown instead of obeyed (line breaks and tabs
    kept)."""
    return _CONTROL.sub(_picture, text)


def shown(text: str) -> str:
    """What a user may see of ``text``: secrets redacted, control characters visible."""
    return visible(redact(text))


def say(
    text: str, *, err: bool = False, end: str = "\n", flush: bool = False, file: TextIO | None = None
) -> None:
    """Print one user-facing message, redacted and defused (to stderr with ``err=True``)."""
    stream = file if file is not None else (sys.stderr if err else sys.stdout)
    print(shown(text), end=end, file=stream, flush=flush)


def json_text(value: Any, **options: Any) -> str:
    """``json.dumps(value, **options)`` with every control character escaped (same data)."""
    return _CONTROL.sub(lambda m: f"\\u{ord(m.group()):04x}", json.dumps(value, **options))

"""Secrets in adversarial spellings: recall of the corpus's one-line secrets spelled so that a
program reading the text gets the secret back while the plain text does not hold it, and the
look-alikes with the same characters added (which must come out unchanged).

Spellings: a zero-width space inside the secret; a zero-width joiner and a word joiner; its
punctuation as ``\\uXXXX`` escapes (a JWT's dots as ``\\u002e``); its punctuation as ``\\xXX``;
full-width letters. Recall counts a sample as redacted when no reading of the output (as
written, or with escapes decoded and invisible characters dropped) holds the secret.

    python -m bench.secrets_spellings_bench            # the redactor on the path
    PYTHONPATH=<old checkout>/src python -m bench.secrets_spellings_bench   # another one
"""

from __future__ import annotations

import re
import sys

from bench import ROOT

sys.path.insert(0, str(ROOT / "tests"))

from secrets_corpus import LOOK_ALIKES, SECRETS
from tinyharness.redact import redact

_ESCAPE = re.compile(r"\\u([0-9a-fA-F]{4})|\\x([0-9a-fA-F]{2})")
_INVISIBLE = re.compile("[\u00ad\u200b-\u200f\u2060-\u2064\ufeff]")


def _reading(text: str) -> str:
    """The text as a program would read it (independent of the redactor under test)."""
    decoded = _ESCAPE.sub(lambda m: chr(int(m.group(1) or m.group(2), 16)), text)
    folded = "".join(chr(ord(c) - 0xFEE0) if "\uff01" <= c <= "\uff5e" else c for c in decoded)
    return _INVISIBLE.sub("", folded)


def _middle(secret: str, mark: str) -> str:
    half = len(secret) // 2
    return secret[:half] + mark + secret[half:]


SPELLINGS = {
    "zero-width space": lambda s: _middle(s, "\u200b"),
    "joiner + word joiner": lambda s: _middle(_middle(s, "\u200d")[::-1], "\u2060")[::-1],
    "punctuation as \\uXXXX": lambda s: "".join(f"\\u{ord(c):04x}" if c in ".-_:/+=" else c for c in s),
    "punctuation as \\xXX": lambda s: "".join(f"\\x{ord(c):02x}" if c in ".-_:/+=" else c for c in s),
    "full-width": lambda s: "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in s),
}


def main() -> None:
    tokens = [row for row in SECRETS if "\n" not in row[2] and len(row[2]) >= 16 and " " not in row[2]]
    print(f"{len(tokens)} one-line secrets of the corpus, {len(LOOK_ALIKES)} look-alikes\n")
    print("| spelling | recall (secret gone) | look-alikes changed |")
    print("| --- | ---: | ---: |")
    for name, spell in SPELLINGS.items():
        gone = 0
        for _, text, secret in tokens:
            spelled = spell(secret)
            if spelled == secret:  # nothing to spell (no punctuation): counts as the plain form
                spelled = secret
            clean = redact(text.replace(secret, spelled))
            gone += secret not in clean and secret not in _reading(clean)
        changed = 0
        for _, text in LOOK_ALIKES:
            spelled = _middle(text, "\u200b") if "full" not in name else text
            changed += redact(spelled) != spelled
        print(f"| {name} | {gone / len(tokens):.1%} ({gone}/{len(tokens)}) | {changed}/{len(LOOK_ALIKES)} |")


if __name__ == "__main__":
    main()

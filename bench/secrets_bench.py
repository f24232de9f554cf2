"""Secret redaction: recall and false positives on the corpus, and speed on normal and hostile text.

Three redactors side by side, in the same run:

- **ours**: ``tinyharness.redact.redact`` (detect-secrets' plugins on bounded windows plus our
  own bounded rules);
- **ours before**: the redactor as it was before (``bench/redact_before.py``, frozen);
- **detect-secrets alone**: detect-secrets' file-scanning pipeline with its default plugins and
  filters (what ``detect-secrets scan`` does to a text file), each value it reports replaced.

Quality: tests/secrets_corpus.py holds generated secrets of 100+ kinds and 100+ look-alikes (hashes,
UUIDs, code, configs without secrets, git remotes, paths), alternating between a *tuning* half (the
rules were adjusted on it) and a *held-out* half (only measured). Recall is the share of samples
whose secret part is gone after redaction; the false-positive rate the share of look-alikes that
came out changed.

Speed: MB/s of characters on 1 MB of normal text (this project's own source, logs, JSON) and on
adversarial inputs (one unit repeated: each was built to make some backtracking rule quadratic).
Every measurement runs in a child process with a time limit, so a redactor that hangs shows as
"stopped" instead of stopping the bench.

Run alone: ``python -m bench.secrets_bench [--small]``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections.abc import Callable

from bench import ROOT, markdown_table

sys.path.insert(0, str(ROOT / "tests"))

from secrets_corpus import LOOK_ALIKES, SECRETS, half

IMPLEMENTATIONS = {
    "ours": "tinyharness.redact:redact",
    "ours before": "bench.redact_before:redact",
    "detect-secrets alone": "bench.secrets_bench:detect_secrets_redact",
}
ADVERSARIAL = {
    "a.a.a. (the reported case)": "a.",
    "one letter": "a",
    "://a (URL starts)": "://a",
    "password ==  (keywords)": "password ==  ",
    "eyJ (JWT starts)": "eyJ",
    "xoxb-1- (Slack starts)": "xoxb-1-",
    "digits": "1",
    "?key=abcdefgh& (query secrets)": "?key=abcdefgh&",
    "PEM BEGIN lines": "-----BEGIN RSA PRIVATE KEY-----\n",
    "a@ (address starts)": "a@",
}


def detect_secrets_redact(text: str) -> str:
    """Plain detect-secrets as a redactor: its file-scanning pipeline (default plugins and
    filters, as ``detect-secrets scan`` runs on a text file), each reported value replaced."""
    from detect_secrets.core.scan import _process_line_based_plugins
    from detect_secrets.settings import default_settings

    lines = text.splitlines(keepends=True)
    with default_settings():
        found = _process_line_based_plugins(list(enumerate(lines, start=1)), filename="notes.txt")
        values_by_line: dict[int, set[str]] = {}
        for secret in found:
            if secret.secret_value:
                values_by_line.setdefault(secret.line_number, set()).add(secret.secret_value)
    for number, values in values_by_line.items():
        line = lines[number - 1]
        for value in sorted(values, key=len, reverse=True):
            line = line.replace(value, "[REDACTED:secret]")
        lines[number - 1] = line
    return "".join(lines)


def _load(spec: str) -> Callable[[str], str]:
    module, name = spec.split(":")
    return getattr(__import__(module, fromlist=[name]), name)  # type: ignore[no-any-return]


def _leaks(secret: str, text: str) -> bool:
    return secret in text or json.dumps(secret, ensure_ascii=False)[1:-1] in text


def quality(redact: Callable[[str], str]) -> dict[str, tuple[int, int, int, int]]:
    """Per half: (secrets caught, secrets, look-alikes changed, look-alikes)."""
    result = {}
    for which in ("tuning", "held_out"):
        rows = [(text, secret) for i, (_, text, secret) in enumerate(SECRETS) if half(i) == which]
        looks = [text for i, (_, text) in enumerate(LOOK_ALIKES) if half(i) == which]
        caught = sum(not _leaks(secret, redact(text)) for text, secret in rows)
        changed = sum(redact(text) != text for text in looks)
        result[which] = (caught, len(rows), changed, len(looks))
    return result


def normal_text(size: int) -> str:
    """About ``size`` characters of what passes through the loop: source code, Markdown, log
    lines and JSON tool arguments (this project's own files), with a few secrets among them."""
    parts: list[str] = []
    files = [*sorted((ROOT / "src").rglob("*.py")), ROOT / "README.md"]
    for path in files:
        parts.append(path.read_text(encoding="utf-8"))
    for i in range(2000):
        parts.append(
            f"2026-12-01 10:{i % 60:02d}:00,123 INFO tool_call name=read_file args="
            + json.dumps({"path": f"src/module_{i}.py", "start_line": i})
        )
    parts.extend(text for _, text, _ in SECRETS[:40])
    text = "\n".join(parts)
    while len(text) < size:
        text += "\n" + text
    return text[:size]


def dense_text(size: int) -> str:
    """About ``size`` characters of the secrets corpus repeated: a finding every few dozen
    characters (the worst case for the overlap settling and the second pass)."""
    unit = "\n".join(text for _, text, _ in SECRETS)
    return (unit * (size // len(unit) + 1))[:size]


DENSE = "\0dense"  # the unit that stands for dense_text in the speed table

_CHILD = """
import sys, time
sys.path.insert(0, {root!r})
from bench.secrets_bench import DENSE, _load, dense_text, normal_text
redact = _load({spec!r})
unit = {unit!r}
size = {size}
if unit is None:
    text = normal_text(size)
elif unit == DENSE:
    text = dense_text(size)
else:
    text = (unit * (size // len(unit) + 1))[:size]
started = time.perf_counter()
redact(text)
print(time.perf_counter() - started)
"""


def speed(spec: str, unit: str | None, size: int, limit: float) -> str:
    """MB/s of one redactor on one input, measured in a child process stopped after ``limit`` s."""
    code = _CHILD.format(root=str(ROOT), spec=spec, unit=unit, size=size)
    try:
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=limit, check=False
        )
    except subprocess.TimeoutExpired:
        return f"stopped > {limit:.0f} s"
    if done.returncode != 0:
        return "error: " + (done.stderr.strip().splitlines() or ["?"])[-1][:60]
    seconds = float(done.stdout.strip().splitlines()[-1])
    return f"{size / seconds / 1e6:.2f}"


def _pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}% ({part}/{whole})"


def main(argv: list[str] | None = None) -> str:
    parser = argparse.ArgumentParser(
        prog="python -m bench.secrets_bench", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--small", action="store_true", help="smaller inputs and a shorter time limit")
    parser.add_argument(
        "--redactors",
        default=",".join(IMPLEMENTATIONS),
        help="which to measure, comma-separated (default: all: " + ", ".join(IMPLEMENTATIONS) + ")",
    )
    parser.add_argument(
        "--no-hostile", action="store_true", help="speed on normal and secret-dense text only"
    )
    args = parser.parse_args(argv)
    chosen = [name.strip() for name in args.redactors.split(",") if name.strip()]
    unknown = [name for name in chosen if name not in IMPLEMENTATIONS]
    if unknown:
        parser.error(f"unknown redactor {unknown[0]!r}; choose from {', '.join(IMPLEMENTATIONS)}")
    redactors = {name: IMPLEMENTATIONS[name] for name in chosen}
    normal_size = 200_000 if args.small else 1_000_000
    hostile_size = 100_000 if args.small else 1_000_000
    before_size = 20_000 if args.small else 60_000  # the old redactor is quadratic: smaller input
    limit = 60.0 if args.small else 120.0

    rows = []
    for name, spec in redactors.items():
        measured = quality(_load(spec))
        for which in ("tuning", "held_out"):
            caught, total, changed, looks = measured[which]
            rows.append([name, which.replace("_", "-"), _pct(caught, total), _pct(changed, looks)])
    kinds = len({kind for kind, _, _ in SECRETS})
    lines = [
        f"Corpus: {len(SECRETS)} secrets of {kinds} kinds and {len(LOOK_ALIKES)} look-alikes "
        "(tests/secrets_corpus.py, generated, none real); even rows are the tuning half, odd rows "
        "the held-out half.",
        "",
        markdown_table(
            ["redactor", "half", "recall (secret gone)", "false positives (look-alike changed)"], rows
        ),
        "",
    ]

    speed_rows = []
    inputs: list[tuple[str, str | None]] = [
        ("normal text (source, logs, JSON)", None),
        ("secret-dense text (the corpus repeated)", DENSE),
    ]
    if not args.no_hostile:
        inputs += list(ADVERSARIAL.items())
    for label, unit in inputs:
        row = [label]
        for name, spec in redactors.items():
            size = (
                normal_size
                if unit in (None, DENSE)
                else (before_size if name == "ours before" else hostile_size)
            )
            started = time.perf_counter()
            row.append(speed(spec, unit, size, limit))
            print(f"  {label} / {name}: {row[-1]} ({time.perf_counter() - started:.0f} s)", file=sys.stderr)
        speed_rows.append(row)
    lines += [
        f"Speed in MB/s of characters (higher is better): normal text {normal_size:,} characters; "
        f"adversarial inputs {hostile_size:,} characters, except *ours before* on "
        f"{before_size:,} (it is quadratic there: the issue measured 19 s on 60 KB of a.a.a.). "
        f"Each cell is one child process, stopped after {limit:.0f} s.",
        "",
        markdown_table(["input", *redactors], speed_rows),
    ]
    report = "\n".join(lines)
    print(report)
    return report


if __name__ == "__main__":
    main()

"""Edits that cannot break a file, reads that cannot crawl, and the seed-000 counter shown right.

- An edit or write that turns a file that parses (Python, JSON, TOML, YAML) into one that does
  not is refused with the parser's message and the lines around it; the file is untouched
  (property: whatever the edit, a file that parsed before parses after).
- A line range shorter than a page is widened to a page (or the rest of the file).
- With ``--counter chars4`` the counter is characters/4 of the window whatever usage the model
  reports; under any counter the ``[compact]`` line never shows a count that grew.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hardening_support import answer, read_events, tool_turn, write_script
from tinyharness.context.config import ContextConfig
from tinyharness.context.manager import build_context
from tinyharness.context.tokens import Chars4Counter
from tinyharness.events import compaction_tokens
from tinyharness.messages import Message, TextBlock
from tinyharness.models.base import ModelRequest, ModelResponse, Usage
from tinyharness.tools.base import ToolError
from tinyharness.tools.files import MIN_READ_LINES, file_tools
from tinyharness.tools.syntax import parse_error
from tinyharness.tools.workspace import Workspace

BASES = {
    "pkg/version.py": (
        '"""The version."""\n\n__version__ = "1.0.1"\n\n\ndef version():\n    return __version__\n'
    ),
    "data.json": '{"name": "shop", "port": 8042, "tags": ["a", "b"]}\n',
    "pyproject.toml": '[project]\nname = "shop"\nversion = "1.0.1"\n',
    "config.yaml": "name: shop\nport: 8042\ntags:\n  - a\n  - b\n",
}


def tools_in(root: Path) -> dict[str, Any]:
    return {tool.name: tool for tool in file_tools(Workspace(root))}


def call(tool: Any, **args: Any) -> str:
    return str(tool.function(**args))


def seeded(tmp_path: Path) -> Path:
    for name, text in BASES.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    return tmp_path


def test_the_version_edit_that_broke_the_file_is_refused_and_says_why(tmp_path: Path) -> None:
    root = seeded(tmp_path)
    edit = tools_in(root)["edit_file"]
    with pytest.raises(ToolError) as refused:
        call(edit, path="pkg/version.py", old='__version__ = "1.0.1"', new="1.0.2")
    message = str(refused.value)
    assert "would no longer parse as Python" in message and "unchanged" in message
    assert re.search(r">\s+3\t1\.0\.2", message)  # the error's line, marked, with its neighbours
    assert (root / "pkg/version.py").read_text() == BASES["pkg/version.py"]
    # the right edit goes through
    call(edit, path="pkg/version.py", old='"1.0.1"', new='"1.0.2"')
    assert '__version__ = "1.0.2"' in (root / "pkg/version.py").read_text()


@pytest.mark.parametrize(
    ("name", "broken"),
    [
        ("data.json", '{"name": "shop", "port": 8042,'),
        ("pyproject.toml", '[project\nname = "shop"\n'),
        ("config.yaml", "name: shop\n  port: [8042\n"),
        ("pkg/version.py", "def version(:\n    return 1\n"),
    ],
)
def test_a_write_that_breaks_a_parsing_file_is_refused(tmp_path: Path, name: str, broken: str) -> None:
    root = seeded(tmp_path)
    with pytest.raises(ToolError, match="would no longer parse"):
        call(tools_in(root)["write_file"], path=name, content=broken)
    assert (root / name).read_text() == BASES[name]


def test_new_files_and_files_that_never_parsed_are_not_judged(tmp_path: Path) -> None:
    root = seeded(tmp_path)
    tools = tools_in(root)
    call(tools["write_file"], path="draft.json", content="{not json yet")  # a new file: written
    assert (root / "draft.json").read_text() == "{not json yet"
    (root / "broken.py").write_text("def f(:\n    pass\n")
    call(tools["edit_file"], path="broken.py", old="pass", new="return 1")  # was broken already
    assert "return 1" in (root / "broken.py").read_text()
    call(tools["write_file"], path="notes.txt", content="{(")  # a kind no parser reads
    assert (root / "notes.txt").read_text() == "{("


PIECES = st.sampled_from(['"', "'", "(", ")", "[", "]", "{", "}", ":", ",", "=", " ", "\n", "    ", "x", "1"])


@settings(max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    name=st.sampled_from(sorted(BASES)),
    start=st.integers(min_value=0, max_value=200),
    length=st.integers(min_value=1, max_value=12),
    new=st.lists(PIECES, max_size=6).map("".join),
)
def test_whatever_the_edit_a_file_that_parsed_still_parses(
    tmp_path_factory: pytest.TempPathFactory, name: str, start: int, length: int, new: str
) -> None:
    root = seeded(tmp_path_factory.mktemp("ws"))
    text = BASES[name]
    start %= len(text)
    old = text[start : start + length]
    if not old or text.count(old) != 1 or old == new:
        return
    expected = text.replace(old, new, 1)
    try:
        call(tools_in(root)["edit_file"], path=name, old=old, new=new)
    except ToolError:
        assert (root / name).read_text() == text  # refused: untouched
        assert parse_error(name, expected) is not None  # and only because it would break
        return
    after = (root / name).read_text()
    assert after == expected and parse_error(name, after) is None


def test_a_short_range_reads_a_page_or_the_rest(tmp_path: Path) -> None:
    (tmp_path / "main.py").write_text("".join(f"line_{n} = {n}\n" for n in range(1, 101)))
    read = tools_in(tmp_path)["read_file"]
    page = call(read, path="main.py", start_line=11, end_line=11)
    assert f"(lines 11-{10 + MIN_READ_LINES} of 100)" in page
    assert "line_11 = 11" in page and f"line_{10 + MIN_READ_LINES} =" in page
    tail = call(read, path="main.py", start_line=95, end_line=95)
    assert "(lines 95-100 of 100)" in tail and "more lines not shown" not in tail
    longer = call(read, path="main.py", start_line=1, end_line=80)  # a range over a page stays
    assert "(lines 1-80 of 100)" in longer


# --- the seed-000 counter -------------------------------------------------------------------


def _user(text: str) -> Message:
    return Message("user", [TextBlock(text)])


@given(reported=st.integers(min_value=1, max_value=5_000_000))
def test_chars4_counts_characters_not_the_reported_usage(reported: int) -> None:
    context = build_context(ContextConfig(window=1_000_000, counter="chars4"))
    messages = [_user("x" * 4000)]
    request = ModelRequest(system="sys", messages=messages, tools=[], purpose="agent")
    reply = Message("assistant", [TextBlock("y" * 400)])
    context.record_response(request, ModelResponse(reply, "end_turn", Usage(reported, 7)))
    chars4 = Chars4Counter()
    window = chars4.count_text("sys") + chars4.count_text("x" * 4000) + chars4.count_text("y" * 400)
    assert abs(context.tokens - window) <= 8  # message framing only; never the reported usage
    assert context.tokens == context.accountant.window_estimate


def _compaction_script(tmp_path: Path, usage: int) -> str:
    turns = []
    for n in range(8):
        turn = tool_turn((f"t{n}", "read_file", {"path": "big.txt", "start_line": 1 + 40 * n}))
        turn["usage"] = {"input_tokens": usage, "output_tokens": 5}
        turns.append(turn)
    summary = answer("Summary: the file was read in pages.", purpose="compact")
    done = answer("Done.")
    done["usage"] = {"input_tokens": usage, "output_tokens": 5}
    return write_script(tmp_path / "script.json", [*turns, *[summary] * 8, done])


@pytest.mark.parametrize(
    ("counter", "usage"),
    # chars4 ignores the usage, so any reported value; auto trusts it, so one that fills the window
    [("chars4", 10), ("chars4", 1345), ("chars4", 90_000), ("auto", 2_900), ("auto", 90_000)],
)
def test_the_compact_line_never_shows_a_count_that_grew(tmp_path: Path, counter: str, usage: int) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "big.txt").write_text("".join(f"{n:05d} " + "word " * 20 + "\n" for n in range(400)))
    script = _compaction_script(tmp_path, usage)
    events = tmp_path / "events.jsonl"
    done = subprocess.run(
        [sys.executable, "-m", "tinyharness", "run", "--model", f"scripted:{script}", "--workspace",
         str(workspace), "--context-window", "3000", "--counter", counter, "--strategy", "summarize",
         "--no-memory", "--events", str(events), "Read big.txt"],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    shown = [
        tuple(map(int, m)) for m in re.findall(r"\[compact\] #\d+ \S+: tokens (\d+) -> (\d+)", done.stderr)
    ]
    assert shown, done.stderr[-2000:]
    assert all(after < before for before, after in shown), shown
    compactions = [e for e in read_events(events) if e["type"] == "compaction"]
    assert [compaction_tokens(e) for e in compactions] == shown
    if counter == "chars4":  # the model_call tokens are characters/4 of the window, not usage
        calls = [e for e in read_events(events) if e["type"] == "model_call" and e["purpose"] == "agent"]
        assert all(e["tokens"] != usage + 5 for e in calls[1:])


def test_compaction_tokens_prefers_the_window_pair() -> None:
    event = {"tokens_before": 1345, "tokens_after": 7566, "window_before": 9000, "window_after": 2100}
    assert compaction_tokens(event) == (9000, 2100)
    assert compaction_tokens({"tokens_before": 5, "tokens_after": 3}) == (5, 3)
    assert json.dumps(compaction_tokens({})) == "[null, null]"

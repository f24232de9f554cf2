"""What small local models need from the harness, each a finding measured with
Qwen2.5-Coder-0.5B/1.5B on a 38-file project: the files read are state of the run (not of the
window), a partial read says more follows and stays on offer, a read cut to a preview can be
read on, tools that would always be refused are not offered, the summarizer never sees harness
placeholders as facts, no frequency penalty on constrained output, and the request timeout is
fitted to the model's speed."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from tinyharness.cli import _guide, _tools, build_parser
from tinyharness.context.rewrite import TAG_PREFIX
from tinyharness.context.strategies import CLEARED_PREFIX, OFFLOADED_MARK, Offload, StepContext
from tinyharness.events import EventBus
from tinyharness.history import (
    CLEARED_RESULT_PREFIX,
    HARNESS_TEXT_PREFIX,
    OFFLOADED_RESULT_MARK,
    transcript_lines,
)
from tinyharness.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock
from tinyharness.models.base import ModelRequest
from tinyharness.models.local import QWEN_05B, fitted_timeout
from tinyharness.models.openai_chat import OpenAIChatModel
from tinyharness.profiles import is_local as _is_local
from tinyharness.tools import NotesFile, ToolRegistry, builtin_tools
from tinyharness.tools.files import MIN_READ_LINES, ReadState


def read(registry: ToolRegistry, call_id: str, **args: Any) -> list[Message]:
    result = asyncio.run(registry.execute("read_file", args))
    assert result.ok, result.content
    use = ToolUseBlock(call_id, "read_file", args)
    block = ToolResultBlock(call_id, result.content, truncated=result.truncated, next_line=result.next_line)
    return [Message("assistant", (use,)), Message("user", (block,))]


def offered(registry: ToolRegistry, messages: list[Message]) -> list[str]:
    spec = next(s for s in registry.specs if s.name == "read_file")
    assert spec.choices is not None
    return spec.choices(messages)["path"]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    for name in ("a.py", "b.py", "c.py"):
        (tmp_path / name).write_text(f'"""Module {name}."""\n' + "x = 1\n" * 30, encoding="utf-8")
    return tmp_path


def test_files_read_stay_read_after_the_window_forgets_them(project: Path) -> None:
    """A compaction clears or summarizes the reads; the choices must not offer the file again
    (with the reads forgotten, 38 reads covered only 13 of 38 files)."""
    registry = builtin_tools(project)
    read(registry, "r1", path="a.py")
    assert offered(registry, [Message.user("task")]) == ["b.py", "c.py"]  # an empty window


def test_files_named_in_this_runs_notes_are_not_offered_but_older_notes_do_not_count(project: Path) -> None:
    (project / "NOTES.md").write_text("c.py: an older note from another run\n", encoding="utf-8")
    notes = NotesFile(project / "NOTES.md")
    registry = builtin_tools(project, notes=notes)
    assert offered(registry, []) == ["NOTES.md", "a.py", "b.py", "c.py"]
    notes.append("b.py: module b")
    assert offered(registry, []) == ["NOTES.md", "a.py", "c.py"]


def test_a_range_read_says_more_follows_and_the_file_stays_on_offer(project: Path) -> None:
    (project / "a.py").write_text('"""Module a.py."""\n' + "x = 1\n" * 99, encoding="utf-8")
    registry = builtin_tools(project)
    first = read(registry, "r1", path="a.py", start_line=1, end_line=10)  # widened to a page
    text = first[1].content[0].content  # type: ignore[union-attr]
    page = MIN_READ_LINES
    more = f"[{100 - page} more lines not shown; if you need them: read_file(path='a.py', "
    more += f"start_line={page + 1})]"
    assert text.endswith(more)
    assert "a.py" in offered(registry, first)
    rest = read(registry, "r2", path="a.py", start_line=page + 1)
    assert "a.py" not in offered(registry, [*first, *rest])
    assert "a.py" not in offered(registry, [])  # read to the end in two parts: done for the run


def test_a_read_cut_to_a_preview_points_at_the_same_file_and_stays_on_offer(project: Path) -> None:
    registry = builtin_tools(project)
    window = read(registry, "r1", path="a.py")
    ctx = StepContext(
        system="",
        call_model=None,  # type: ignore[arg-type]
        count=lambda _m: 0,
        count_text=lambda text: len(text) // 2,
        keep_recent=4,
        target=0,
        offload_cap=40,
    )
    cut = Offload().message(window[1], ctx)
    preview = cut.content[0].content  # type: ignore[union-attr]
    assert ".tinyharness" not in preview
    assert preview.startswith("a.py (lines 1-31 of 31)\n")
    shown = preview.splitlines()[-2].split("\t")[0].strip()
    assert preview.endswith(f"continue with read_file(path='a.py', start_line={int(shown) + 1})]")
    assert "a.py" in offered(registry, [window[0], cut])
    assert "a.py" in offered(registry, [])  # the run state forgot it too: it was never seen whole


def test_list_dir_on_a_file_answers_with_how_to_read_it(project: Path) -> None:
    result = asyncio.run(builtin_tools(project).execute("list_dir", {"path": "b.py"}))
    assert result.ok and "read_file(path='b.py')" in result.content and "a.py" in result.content


def test_tools_that_would_always_be_refused_are_not_offered(tmp_path: Path) -> None:
    """Offered without --allow-write or a terminal, write_file was the 0.5B model's top choice,
    refused five times, then the run stopped as stuck."""

    def offered_tools(*argv: str) -> list[str]:
        args = build_parser().parse_args(["run", "task", *argv])
        return _tools(args, tmp_path, EventBus(), 20_000).names

    default = offered_tools()
    assert "write_file" not in default and "edit_file" not in default
    assert {"read_file", "note", "update_notes"} <= set(default)  # notes are always allowed
    assert {"write_file", "edit_file"} <= set(offered_tools("--allow-write"))
    assert "write_file" in offered_tools("--allow", "write_file:docs/*")
    assert "read_file" not in offered_tools("--deny", "read_file")
    assert "grep" in offered_tools("--deny", "grep:*.lock")  # a rule for some calls only


def test_every_local_model_string_keeps_memory_off(tmp_path: Path) -> None:
    """``local:PATH`` turned long-term memory on (only ``local`` was checked): the 0.5B model
    stored the echoed task as a preference and the next run answered junk."""
    assert _is_local("local") and _is_local("local:qwen2.5-coder-1.5b") and _is_local("local:/m/x.gguf")
    assert not _is_local("openai:local-model")


def test_the_summarizer_never_sees_placeholders_or_harness_inserts() -> None:
    """Shown "[tool result cleared ...; call it again if you need them]", the summarizer wrote
    "the user should not clear any of the tool results" as a fact."""
    messages = [
        Message("assistant", (ToolUseBlock("c1", "read_file", {"path": "a.py"}),)),
        Message(
            "user",
            (
                ToolResultBlock(
                    "c1", "[tool result cleared to save context: read_file returned 900 characters]"
                ),
                TextBlock("[context: 80% of the window is used; save notes now.]"),
            ),
        ),
        Message("assistant", (ToolUseBlock("c2", "read_file", {"path": "b.py"}),)),
        Message("user", (ToolResultBlock("c2", "b.py holds the parser"),)),
    ]
    spelled = (HARNESS_TEXT_PREFIX, CLEARED_RESULT_PREFIX, OFFLOADED_RESULT_MARK)
    assert spelled == (TAG_PREFIX, CLEARED_PREFIX, OFFLOADED_MARK)
    text = "\n".join(transcript_lines(messages, 1500))
    assert "cleared" not in text and "80% of the window" not in text
    assert 'read_file(path="a.py")' in text and "b.py holds the parser" in text


def test_no_frequency_penalty_on_schema_constrained_requests() -> None:
    """Under the grammar every action repeats the same quote tokens; penalised, string
    arguments became "" (five write_file calls with empty content)."""
    sent: list[dict[str, Any]] = []

    class Completions:
        async def create(self, **params: Any) -> Any:
            sent.append(params)
            raise RuntimeError("stop here")

    model = OpenAIChatModel("m", base_url="http://127.0.0.1:9/v1", tool_mode="json", frequency_penalty=0.5,
                            free_text_penalty_only=True)  # fmt: skip
    model._client.chat.completions = Completions()  # type: ignore[assignment]
    tools = builtin_tools(Path(".")).specs
    for request in (
        ModelRequest((Message.user("x"),), tools=tools),
        ModelRequest((Message.user("summarize"),)),
    ):
        with pytest.raises(RuntimeError):
            asyncio.run(model.complete(request))
    constrained, free_text = sent
    assert "response_format" in constrained and "frequency_penalty" not in constrained
    assert free_text["frequency_penalty"] == 0.5


def test_the_local_timeout_fits_the_models_speed(tmp_path: Path) -> None:
    """120 s (with retries) killed the 1.5B model at call 3 on a busy machine."""
    small = tmp_path / QWEN_05B.file
    assert fitted_timeout(small, 4096) == round((4096 / 143 + 1024 / 21) * 3)
    big = tmp_path / "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
    assert fitted_timeout(big, 8192) > fitted_timeout(small, 8192) > 120
    unknown = tmp_path / "other.gguf"
    unknown.write_bytes(b"x" * 1000)  # tiny file, scaled from the 0.5B: the floor applies
    assert fitted_timeout(unknown, 4096) == 120


def test_reading_a_paged_file_again_without_start_line_goes_on(project: Path) -> None:
    """The 0.5B model called read_file(path) again after a page instead of giving start_line,
    and got the same first page three times; a read without start_line goes on instead."""
    registry = builtin_tools(project, result_cap=700)  # a page of about 200 characters
    first = read(registry, "r1", path="a.py")
    page = first[1].content[0].content  # type: ignore[union-attr]
    assert page.startswith("a.py (lines 1-") and "if you need them" in page
    again = read(registry, "r2", path="a.py")
    text = again[1].content[0].content  # type: ignore[union-attr]
    shown_last = int(page.split(" of ")[0].split("-")[1])
    assert text.startswith(
        f"[lines 1-{shown_last} were read before; here is what follows]\na.py (lines {shown_last + 1}-"
    )
    explicit = read(registry, "r3", path="a.py", start_line=1, end_line=2)  # asked for: from line 1
    assert explicit[1].content[0].content.startswith("a.py (lines 1-")  # type: ignore[union-attr]


def test_a_file_read_in_part_stays_on_offer_when_the_notes_name_it(project: Path) -> None:
    """A note naming a file must not end its reading: the 0.5B model, with README.md named in
    NOTES.md after two of its pages, asked for start_line=213 and the path grammar sent it to
    another file."""
    (project / "a.py").write_text('"""Module a.py."""\n' + "x = 1\n" * 99, encoding="utf-8")
    notes = NotesFile(project / "NOTES.md")
    registry = builtin_tools(project, notes=notes)
    first = read(registry, "r1", path="a.py", start_line=1, end_line=10)
    notes.append("a.py: module a, a constant x")
    notes.append("b.py: module b")
    choices = offered(registry, first)
    assert "a.py" in choices and "b.py" not in choices
    rest = read(registry, "r2", path="a.py", start_line=MIN_READ_LINES + 1)
    assert "a.py" not in offered(registry, [*first, *rest])  # read to the end: done


def test_a_page_just_over_the_offload_cap_keeps_what_fits_not_a_quarter(project: Path) -> None:
    """read_file sizes its pages in characters and the offload cap counts tokens; a page a few
    tokens over the cap came back as a 358-character preview at window 3000 (a quarter of it)."""
    (project / "long.py").write_text("".join(f"value_{n} = {n}\n" for n in range(120)), encoding="utf-8")
    registry = builtin_tools(project)
    window = read(registry, "r1", path="long.py")
    text = window[1].content[0].content  # type: ignore[union-attr]
    cap = int(len(text) / 3 * 0.95)  # the page is ~5% over the cap
    ctx = StepContext(
        system="",
        call_model=None,  # type: ignore[arg-type]
        count=lambda _m: 0,
        count_text=lambda t: len(t) // 3,
        keep_recent=4,
        target=0,
        offload_cap=cap,
    )
    cut = Offload().message(window[1], ctx).content[0].content  # type: ignore[union-attr]
    assert OFFLOADED_MARK in cut
    assert cap * 0.75 <= len(cut) // 3 <= cap


@pytest.mark.parametrize("tool_mode", ["json", "native"])
def test_the_counter_counts_the_tool_list_the_adapter_sends(tmp_path: Path, tool_mode: str) -> None:
    """JSON tool mode sends a short protocol text, not the schemas: counted as schemas, the
    local tool list was 860 tokens where 309 were sent, and a compaction's counter jumped from
    452 to 973 tokens with nothing added."""
    from tinyharness.context.config import ContextConfig
    from tinyharness.context.manager import build_context
    from tinyharness.context.tokens import Chars4Counter, count_tools
    from tinyharness.models.json_mode import protocol_prompt

    model = OpenAIChatModel("m", base_url="http://127.0.0.1:9/v1", api_key="x", tool_mode=tool_mode)  # type: ignore[arg-type]
    context = build_context(ContextConfig(window=8000, counter="chars4"), model=model)
    specs = builtin_tools(tmp_path).specs
    context.accountant.set_fixed("sys", specs)
    chars4 = Chars4Counter()
    sent = chars4.count_text(protocol_prompt(specs)) if tool_mode == "json" else count_tools(chars4, specs)
    assert context.accountant.fixed_tokens == chars4.count_text("sys") + sent
    if tool_mode == "json":
        assert sent < count_tools(chars4, specs) / 2


def test_the_ablation_options_switch_their_feature_off(tmp_path: Path) -> None:
    """The task suite switches features off one at a time through options users have too."""

    def args(*argv: str) -> Any:
        return build_parser().parse_args(["run", "Read a.py", "--model", "local", *argv])

    def read_spec(*argv: str) -> Any:
        tools = _tools(args(*argv), tmp_path, EventBus(), 20_000)
        return next(s for s in tools.specs if s.name == "read_file")

    assert read_spec().choices is not None and read_spec("--no-path-choices").choices is None

    def guide(parsed: Any) -> Any:
        return _guide(parsed, tmp_path, EventBus(), ReadState(), builtin_tools(tmp_path), "run")

    assert guide(args()) is not None
    assert guide(args("--no-task-focus")) is None
    assert guide(build_parser().parse_args(["run", "x", "--model", "openai:m"])) is None
    assert args("--restore-files", "0").restore_files == 0

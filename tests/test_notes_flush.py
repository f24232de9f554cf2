"""The notes flush (``--flush-notes``) through the real Agent: right before a compaction the
model must call the note tool, once per file still in the window; the notes land in NOTES.md,
which comes back into the window after the compaction, and the flush stays out of the history."""

from __future__ import annotations

import asyncio
import functools
from pathlib import Path
from typing import Any

from tinyharness.agent import Agent, AgentConfig
from tinyharness.context.config import ContextConfig
from tinyharness.context.flush import FILE_PROMPT, FLUSH_PROMPT, NotesFlush
from tinyharness.context.manager import build_context
from tinyharness.errors import ModelTimeout
from tinyharness.events import EventBus, ListSink
from tinyharness.messages import Message, ToolResultBlock, ToolUseBlock
from tinyharness.models.base import ModelRequest, ModelResponse
from tinyharness.models.scripted import ScriptedModel
from tinyharness.tools.builtin import builtin_tools

FILES = 6


def reply(purpose: str, content: list[dict[str, Any]], stop: str = "tool_use") -> dict[str, Any]:
    return {"purpose": purpose, "stop_reason": stop, "content": content, "usage": {}}


def read(i: int) -> dict[str, Any]:
    call = {"type": "tool_use", "id": f"r{i}", "name": "read_file", "input": {"path": f"m{i}.py"}}
    return reply("agent", [call])


SCRIPT = {
    "responses": [
        *(read(i) for i in range(FILES)),
        reply("agent", [{"type": "text", "text": "done"}], "end_turn"),
        reply("compact", [{"type": "text", "text": "Summary: read the modules."}], "end_turn"),
    ]
}


class NotingModel(ScriptedModel):
    """The script for agent and compaction requests. A flush request gets a note on the file
    the request fixes the note's path to (as a grammar-constrained model must write), or, with
    ``note=False``, a plain text reply (a model that ignores the request)."""

    def __init__(self, note: bool = True) -> None:
        super().__init__(SCRIPT)
        self.note = note

    async def complete(self, request: ModelRequest) -> ModelResponse:
        if request.purpose != "flush":
            return await super().complete(request)
        self.requests.append(request)
        if not self.note:
            return ModelResponse(Message.assistant("Nothing to add."), "end_turn")
        spec = next(s for s in request.tools if s.name == request.tool_choice)
        assert spec.choices is not None
        (path,) = spec.choices(request.messages)["path"]
        args = {"path": path, "text": f"holds the step rules of {path}"}
        return ModelResponse(Message("assistant", (ToolUseBlock(f"n-{path}", "note", args),)), "tool_use")


def run(tmp_path: Path, model: NotingModel) -> tuple[Any, ListSink]:
    for i in range(FILES):
        (tmp_path / f"m{i}.py").write_text(f"def step_{i}(order):\n    return order  # rule {i}\n" * 40)
    sink = ListSink()
    events = EventBus([sink])
    tools = builtin_tools(tmp_path)
    context = build_context(
        ContextConfig(
            "summarize",
            window=6000,
            ratio=0.7,
            keep_recent=1,
            counter="chars4",
            notes_path=tmp_path / "NOTES.md",
            workspace=tmp_path,
            flush_notes=True,
        ),
        events=events,
        run_call=functools.partial(tools.run_call, events=events),
    )
    agent = Agent(model, tools, context=context, events=events, config=AgentConfig(max_iterations=20))
    result = agent.run("Read every module and note what each one does.")
    asyncio.run(model.aclose())  # every scripted response was used
    return result, sink


def test_before_the_compaction_the_model_notes_each_file_still_in_the_window(tmp_path: Path) -> None:
    model = NotingModel()
    result, sink = run(tmp_path, model)
    assert result.stop == "end_turn" and result.compactions == 1
    purposes = [r.purpose for r in model.requests]
    first = purposes.index("flush")
    flushes = model.requests[first : purposes.index("compact")]
    assert flushes and all(r.purpose == "flush" and r.tool_choice == "note" for r in flushes)
    # One request per file read and still in the window, oldest first, each about that file.
    asked = []
    for request in flushes:
        spec = next(s for s in request.tools if s.name == "note")
        assert spec.choices is not None
        (path,) = spec.choices(request.messages)["path"]
        assert request.messages[-1].text.endswith(FILE_PROMPT.format(path=path))
        asked.append(path)
    assert asked == sorted(asked) and len(asked) >= 2
    # Each request shows the task and that one file's reads, nothing else: with neighbours in
    # view, a small model described the neighbour.
    for path, request in zip(asked, flushes, strict=True):
        assert request.messages[0].text == "Read every module and note what each one does."
        shown = [b.input["path"] for m in request.messages for b in m.tool_uses]
        assert shown == [path]
    assert flushes[0].tools == model.requests[first - 1].tools  # same tools: same prompt prefix
    notes = (tmp_path / "NOTES.md").read_text(encoding="utf-8")
    assert notes.splitlines() == [f"{p}: holds the step rules of {p}" for p in asked]
    # Each note ran as a tool call (reported like any) before the compaction event.
    types = [(e["type"], e.get("name")) for e in sink.events]
    assert types.count(("tool_call", "note")) == len(asked)
    assert types.index(("tool_call", "note")) < types.index(("compaction", None))
    # After the compaction, NOTES.md is read back into the window of the next agent request.
    after = model.requests[purposes.index("compact") + 1]
    assert after.purpose == "agent" and f"holds the step rules of {asked[-1]}" in after.messages[0].text
    # Like a summarizer request, the flush stays out of the history: the notes come back
    # through NOTES.md only. And the near-trigger warning is not given: the flush asks instead.
    assert not any(c.name == "note" for m in result.messages for c in m.tool_uses)
    assert all("Write a note" not in m.text for m in result.messages)
    assert not any("take notes" in e["message"] for e in sink.of_type("context_warning"))


def test_a_flush_reply_without_a_note_is_reported_and_the_next_file_is_asked(tmp_path: Path) -> None:
    model = NotingModel(note=False)
    result, sink = run(tmp_path, model)
    assert result.stop == "end_turn" and result.compactions == 1
    flushes = [r.purpose for r in model.requests].count("flush")
    assert flushes >= 2  # one reply without a note does not end the flush
    assert not (tmp_path / "NOTES.md").exists()
    warnings = [e["message"] for e in sink.of_type("context_warning")]
    assert sum("notes flush before compaction skipped: the model wrote no" in w for w in warnings) == flushes


def test_a_failed_flush_request_ends_the_flush(tmp_path: Path) -> None:
    for name in ("a.py", "b.py"):
        (tmp_path / name).write_text(f"# {name}\n", encoding="utf-8")
    history = [Message.user("task")]
    for name in ("a.py", "b.py"):
        history.append(Message("assistant", (ToolUseBlock(f"r-{name}", "read_file", {"path": name}),)))
        history.append(Message("user", (ToolResultBlock(f"r-{name}", f"# {name}"),)))
    sink = ListSink()
    requests: list[ModelRequest] = []

    async def call_model(request: ModelRequest) -> ModelResponse:
        requests.append(request)
        raise ModelTimeout("the server did not answer in 120 s")

    tools, events = builtin_tools(tmp_path), EventBus([sink])
    flush = NotesFlush(functools.partial(tools.run_call, events=events), events)
    assert asyncio.run(flush("sys", history, tools.specs, call_model, 256)) == 0
    assert len(requests) == 1
    (warning,) = sink.of_type("context_warning")
    assert "request failed" in warning["message"] and "120 s" in warning["message"]


def test_with_no_file_in_the_window_the_flush_asks_once_in_general(tmp_path: Path) -> None:
    tools, events = builtin_tools(tmp_path), EventBus()
    flush = NotesFlush(functools.partial(tools.run_call, events=events), events)
    requests: list[ModelRequest] = []

    async def call_model(request: ModelRequest) -> ModelResponse:
        requests.append(request)
        call = ToolUseBlock("n1", "note", {"text": "the build needs Python 3.11"})
        return ModelResponse(Message("assistant", (call,)), "tool_use")

    history = [Message.user("task"), Message.assistant("thinking"), Message.user("go on")]
    assert asyncio.run(flush("sys", history, tools.specs, call_model, 256)) == 1
    assert len(requests) == 1 and requests[0].messages[-1].text.endswith(FLUSH_PROMPT)
    note = next(s for s in requests[0].tools if s.name == "note")
    assert note.choices is None  # no path is fixed
    assert (tmp_path / "NOTES.md").read_text(encoding="utf-8") == "the build needs Python 3.11\n"


def _read_history(tmp_path: Path, names: list[str]) -> list[Message]:
    history = [Message.user("task")]
    for name in names:
        (tmp_path / name).write_text(f"# {name}\n", encoding="utf-8")
        history.append(Message("assistant", (ToolUseBlock(f"r-{name}", "read_file", {"path": name}),)))
        history.append(Message("user", (ToolResultBlock(f"r-{name}", f"# {name}"),)))
    return history


def test_files_already_noted_are_not_asked_and_no_general_request_replaces_them(tmp_path: Path) -> None:
    """Every file read is noted (a.py by an earlier flush, b.py in NOTES.md): no request at
    all. Asked the general question then, the 0.5B model copied the prompt into NOTES.md."""
    history = _read_history(tmp_path, ["a.py", "b.py"])
    (tmp_path / "NOTES.md").write_text("b.py: the second module\n", encoding="utf-8")
    requests: list[ModelRequest] = []

    async def call_model(request: ModelRequest) -> ModelResponse:
        requests.append(request)
        raise AssertionError("no request expected")

    notes = tmp_path / "NOTES.md"
    tools, events = builtin_tools(tmp_path), EventBus()
    run_call = functools.partial(tools.run_call, events=events)
    flush = NotesFlush(run_call, events, {"a.py"}, lambda: notes.read_text(encoding="utf-8"))
    assert asyncio.run(flush("sys", history, tools.specs, call_model, 256)) == 0
    assert requests == []


def _flush(tmp_path: Path, sink: ListSink | None = None) -> tuple[NotesFlush, Any]:
    tools, events = builtin_tools(tmp_path), EventBus([sink] if sink else [])
    return NotesFlush(functools.partial(tools.run_call, events=events), events), tools.specs


def test_every_file_in_the_window_is_asked_without_a_cap(tmp_path: Path) -> None:
    names = [f"m{i:02d}.py" for i in range(12)]  # more than the old cap of 8
    history = _read_history(tmp_path, names)
    asked: list[str] = []

    async def call_model(request: ModelRequest) -> ModelResponse:
        spec = next(s for s in request.tools if s.name == "note")
        assert spec.choices is not None
        (path,) = spec.choices(request.messages)["path"]
        asked.append(path)
        call = ToolUseBlock(f"n-{path}", "note", {"path": path, "text": "a module"})
        return ModelResponse(Message("assistant", (call,)), "tool_use")

    flush, specs = _flush(tmp_path)
    assert asyncio.run(flush("sys", history, specs, call_model, 256)) == 12
    assert asked == names


def test_a_general_note_that_echoes_the_flush_prompt_is_not_written(tmp_path: Path) -> None:
    async def call_model(request: ModelRequest) -> ModelResponse:
        text = "the window is nearly full, so older messages will be summarized; call the note tool"
        return ModelResponse(Message("assistant", (ToolUseBlock("n1", "note", {"text": text}),)), "tool_use")

    history = [Message.user("task"), Message.assistant("thinking"), Message.user("go on")]
    sink = ListSink()
    flush, specs = _flush(tmp_path, sink)
    assert asyncio.run(flush("sys", history, specs, call_model, 256)) == 0
    assert not (tmp_path / "NOTES.md").exists()
    assert "wrote no complete note" in sink.of_type("context_warning")[0]["message"]


def test_a_file_note_that_echoes_the_task_or_the_ask_is_not_written(tmp_path: Path) -> None:
    """Asked for README.md's note, the 0.5B model wrote the task back; with README.md then named
    in the notes, read_file stopped offering it and the model read another file from line 213."""
    (tmp_path / "README.md").write_text("# shop\nA tiny shop.\n", encoding="utf-8")
    task = "Read README.md and tell me in one sentence what this project is"
    history = [
        Message.user(task),
        Message("assistant", (ToolUseBlock("r1", "read_file", {"path": "README.md"}),)),
        Message("user", (ToolResultBlock("r1", "README.md (lines 1-2 of 2)\n     1\t# shop"),)),
    ]
    echoes = iter([task, "Write a note with one line about what README.md does"])

    async def call_model(request: ModelRequest) -> ModelResponse:
        call = ToolUseBlock("n1", "note", {"path": "README.md", "text": next(echoes)})
        return ModelResponse(Message("assistant", (call,)), "tool_use")

    for _ in range(2):
        sink = ListSink()
        flush, specs = _flush(tmp_path, sink)
        assert asyncio.run(flush("sys", history, specs, call_model, 256)) == 0
        assert "wrote no complete note on README.md" in sink.of_type("context_warning")[0]["message"]
    assert not (tmp_path / "NOTES.md").exists()

"""function_tool schemas and ToolRegistry error paths: every failure is an error result."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import threading
import time
from pathlib import Path
from typing import Any, Literal

import pytest

from tinyharness.tools import (
    PermissionDenied,
    Tool,
    ToolError,
    ToolRegistry,
    ToolResult,
    function_tool,
)
from tinyharness.tools.base import cap_text, decode_arguments


def run(registry: ToolRegistry, name: str, args: Any) -> ToolResult:
    return asyncio.run(registry.execute(name, args))


def search(query: str, limit: int = 5, mode: Literal["fast", "exact"] = "fast") -> str:
    """Search the index for documents.

    Args:
        query: Words to look for.
        limit: How many results to return,
            at most 50.
        mode: Matching strategy.

    Returns:
        The matches, one per line.
    """
    return f"{query}:{limit}:{mode}"


def add(a: int, b: int | None = None) -> int:
    """Add two numbers."""
    return a + (b or 0)


def explode() -> str:
    """Always fails."""
    raise ValueError("boom")


def refuse() -> str:
    """Fails the way tools are meant to."""
    raise ToolError("file is missing; try list_dir")


# --- schema from the signature and docstring ----------------------------------------------------


def test_schema_types_required_and_descriptions_come_from_signature_and_docstring() -> None:
    tool = function_tool(search)
    assert tool.name == "search"
    assert tool.description == "Search the index for documents."
    assert tool.input_schema == {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "Words to look for."},
            "limit": {"type": "integer", "description": "How many results to return, at most 50."},
            "mode": {"enum": ["fast", "exact"], "description": "Matching strategy."},
        },
        "required": ["query"],
        "additionalProperties": False,
    }


def test_schema_for_optional_list_float_and_bool_parameters() -> None:
    def configure(tags: list[str], ratio: float, verbose: bool = False, note: str | None = None) -> str:
        """Configure."""
        return ""

    properties = function_tool(configure).input_schema["properties"]
    assert properties["tags"] == {"type": "array", "items": {"type": "string"}}
    assert properties["ratio"] == {"type": "number"}
    assert properties["verbose"] == {"type": "boolean"}
    assert properties["note"] == {"type": "string"}
    assert function_tool(configure).input_schema["required"] == ["tags", "ratio"]


def test_decorator_form_sets_name_description_and_risk() -> None:
    @function_tool(name="save", description="Save it.", risk="write")
    def save_document(text: str) -> str:
        return text

    assert isinstance(save_document, Tool)
    assert (save_document.name, save_document.description, save_document.risk) == (
        "save",
        "Save it.",
        "write",
    )
    assert save_document.spec.input_schema["required"] == ["text"]


def test_multi_paragraph_summary_has_no_doubled_spaces() -> None:
    def tool() -> str:
        """First paragraph.

        Second paragraph.
        """
        return ""

    assert function_tool(tool).description == "First paragraph. Second paragraph."


# --- registry: success --------------------------------------------------------------------------


def test_valid_call_runs_the_function_with_decoded_json_arguments() -> None:
    registry = ToolRegistry([function_tool(search)])
    result = run(registry, "search", '{"query": "cats", "limit": 3}')
    assert result == ToolResult("cats:3:fast", ok=True, truncated=False)


def test_non_string_results_are_sent_as_json() -> None:
    registry = ToolRegistry([function_tool(add)])
    assert run(registry, "add", {"a": 2, "b": 3}).content == "5"


def test_unserialisable_result_does_not_raise() -> None:
    def odd() -> object:
        """Returns an object JSON cannot encode."""
        return {"when": object()}

    result = run(ToolRegistry([function_tool(odd)]), "odd", {})
    assert result.ok
    assert "object object at" in result.content


def test_null_for_an_optional_argument_means_not_given() -> None:
    registry = ToolRegistry([function_tool(add)])
    assert run(registry, "add", {"a": 4, "b": None}) == ToolResult("4")


def test_null_for_a_required_argument_is_still_a_schema_error() -> None:
    result = run(ToolRegistry([function_tool(add)]), "add", {"a": None})
    assert not result.ok
    assert "invalid arguments for add" in result.content


@pytest.mark.parametrize("raw", [None, "", "   ", {}])
def test_empty_arguments_mean_an_empty_object(raw: Any) -> None:
    def ping() -> str:
        """Ping."""
        return "pong"

    assert run(ToolRegistry([function_tool(ping)]), "ping", raw) == ToolResult("pong")


# --- registry: every failure becomes an error result --------------------------------------------


def test_unknown_tool_lists_the_available_ones() -> None:
    result = run(ToolRegistry([function_tool(search), function_tool(add)]), "serch", {})
    assert not result.ok
    assert "unknown tool 'serch'" in result.content
    assert "add, search" in result.content


def test_invalid_json_string_arguments_are_reported_with_position() -> None:
    result = run(ToolRegistry([function_tool(search)]), "search", '{"query": "x",}')
    assert not result.ok
    assert "not valid JSON" in result.content
    assert "position" in result.content


def test_json_that_is_not_an_object_is_refused() -> None:
    result = run(ToolRegistry([function_tool(search)]), "search", "[1, 2]")
    assert not result.ok
    assert "must be a JSON object, got list" in result.content


@pytest.mark.parametrize(
    ("args", "where"),
    [
        ({}, "'query' is a required property"),
        ({"query": 5}, "query: 5 is not of type 'string'"),
        ({"query": "x", "limit": "ten"}, "limit"),
        ({"query": "x", "mode": "slow"}, "mode"),
        ({"query": "x", "extra": 1}, "Additional properties are not allowed"),
    ],
)
def test_schema_mismatch_is_an_error_that_shows_the_schema(args: dict[str, Any], where: str) -> None:
    result = run(ToolRegistry([function_tool(search)]), "search", args)
    assert not result.ok
    assert where in result.content
    assert "Expected schema" in result.content


def test_a_tool_that_raises_does_not_escape() -> None:
    result = run(ToolRegistry([function_tool(explode)]), "explode", {})
    assert result == ToolResult("Error: explode raised ValueError: boom", ok=False)


def test_tool_error_is_reported_without_the_exception_type() -> None:
    result = run(ToolRegistry([function_tool(refuse)]), "refuse", {})
    assert result == ToolResult("Error: file is missing; try list_dir", ok=False)


def test_timeout_returns_an_error_result() -> None:
    release = threading.Event()

    def slow() -> str:
        """Waits until released."""
        release.wait(5)
        return "late"

    registry = ToolRegistry([function_tool(slow)], timeout=0.05)

    async def scenario() -> ToolResult:
        try:
            return await registry.execute("slow", {})
        finally:
            release.set()  # asyncio.run waits for the worker thread, so let it end now

    result = asyncio.run(scenario())
    assert result == ToolResult("Error: slow timed out after 0.05 s", ok=False)


def test_a_timeout_error_raised_by_the_tool_is_not_mistaken_for_the_registry_timeout() -> None:
    def remote() -> str:
        """Talks to a server that does not answer."""
        raise TimeoutError("server did not answer")

    result = run(ToolRegistry([function_tool(remote)], timeout=30), "remote", {})
    assert not result.ok
    assert result.content == "Error: remote raised TimeoutError: server did not answer"


def test_permission_denied_is_an_error_result_and_the_tool_never_runs() -> None:
    calls: list[str] = []

    def delete(path: str) -> str:
        """Delete a file."""
        calls.append(path)
        return "deleted"

    class DenyAll:
        def check(self, tool: Tool, args: dict[str, Any]) -> None:
            raise PermissionDenied(f"permission denied: {tool.name} is not allowed")

    registry = ToolRegistry([function_tool(delete)], permissions=DenyAll())
    result = run(registry, "delete", {"path": "a"})
    assert result == ToolResult("Error: permission denied: delete is not allowed", ok=False)
    assert calls == []


def test_result_cap_keeps_head_and_tail_and_flags_truncation() -> None:
    def big() -> str:
        """A big output."""
        return "HEAD" + "x" * 5000 + "TAIL"

    result = run(ToolRegistry([function_tool(big)], result_cap=200), "big", {})
    assert result.ok and result.truncated
    assert result.content.startswith("HEAD")
    assert result.content.endswith("TAIL")
    assert "characters omitted" in result.content
    assert len(result.content) < 300


def test_results_under_the_cap_are_untouched() -> None:
    result = run(ToolRegistry([function_tool(search)], result_cap=200), "search", {"query": "q"})
    assert result == ToolResult("q:5:fast", ok=True, truncated=False)


@pytest.mark.parametrize("limit", [0, 1, 3, 4, 10])
def test_cap_text_never_returns_the_whole_text_when_over_the_limit(limit: int) -> None:
    text = "abcdefghij" * 10
    capped, truncated = cap_text(text, limit)
    assert truncated
    assert "omitted" in capped
    assert capped.count("abcdefghij") < 10


def test_every_exported_name_exists() -> None:
    import tinyharness.tools as package

    assert package.__all__
    assert [name for name in package.__all__ if not hasattr(package, name)] == []


def test_decode_arguments_accepts_dicts_and_json_objects() -> None:
    assert decode_arguments({"a": 1}) == {"a": 1}
    assert decode_arguments('{"a": [1, 2]}') == {"a": [1, 2]}
    with pytest.raises(ToolError, match="got int"):
        decode_arguments(7)
    assert json.loads(json.dumps(decode_arguments(None))) == {}


def test_a_tool_thread_is_told_to_stop_when_its_caller_gives_up() -> None:
    """A plain function runs in a thread, which cannot be cancelled: when the call's task is
    cancelled (Ctrl-C in the chat) or times out, the tool is told through ``stop_requested``
    and a long loop ends instead of running on unseen."""
    from tinyharness.tools import raise_if_stopped, stop_requested

    ended = threading.Event()
    seen: list[bool] = []

    def crawl(rounds: int) -> str:
        """Walk for a long time.

        Args:
            rounds: how many steps.
        """
        try:
            for _ in range(rounds):
                raise_if_stopped()
                time.sleep(0.01)
            return "walked"
        finally:
            seen.append(stop_requested())
            ended.set()

    registry = ToolRegistry([function_tool(crawl)], timeout=600)

    async def cancel_soon() -> None:
        task = asyncio.ensure_future(registry.execute("crawl", {"rounds": 100_000}))
        await asyncio.sleep(0.2)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    asyncio.run(cancel_soon())
    assert ended.wait(10) and seen == [True]  # it stopped on its own, seeing the request
    ended.clear()
    seen.clear()
    quick = ToolRegistry([function_tool(crawl)], timeout=0.2)
    result = asyncio.run(quick.execute("crawl", {"rounds": 100_000}))
    assert not result.ok and "timed out" in result.content
    assert ended.wait(10) and seen == [True]  # a timeout tells it too


def test_grep_stops_walking_when_told(tmp_path: Path) -> None:
    from tinyharness.tools import builtin_tools
    from tinyharness.tools.base import _STOP

    for i in range(50):
        (tmp_path / f"f{i}.txt").write_text("needle\n")
    grep = builtin_tools(tmp_path).get("grep")
    assert grep is not None
    stop = threading.Event()
    stop.set()
    _STOP.set(stop)
    try:
        with pytest.raises(ToolError, match="stopped"):
            grep.function(pattern="needle", path=".")
    finally:
        _STOP.set(None)


def test_tool_threads_are_reused_and_a_hung_tool_keeps_its_own() -> None:
    """Plain functions run on reused daemon threads: calls one after another start no thread each,
    one hung call never holds up the next (it gets another thread), and the stop request of a
    call that was given up on does not reach the next call its thread runs."""
    from tinyharness.tools import stop_requested

    release = threading.Event()
    threads: list[threading.Thread] = []
    stopped: list[bool] = []

    def hang() -> str:
        """Wait until released."""
        threads.append(threading.current_thread())
        release.wait(10)
        return "late"

    def where() -> str:
        """Say which thread runs it."""
        threads.append(threading.current_thread())
        stopped.append(stop_requested())
        return "here"

    registry = ToolRegistry([function_tool(hang), function_tool(where)], timeout=0.2)

    async def scenario() -> list[ToolResult]:
        results = [await registry.execute("where", {}) for _ in range(10)]
        running = threading.active_count()
        hung = await registry.execute("hang", {})  # times out; its thread stays on it
        after = await registry.execute("where", {})
        counts.append(running)
        return [*results, hung, after]

    counts = [threading.active_count()]
    try:
        *results, hung, after = asyncio.run(scenario())
    finally:
        release.set()
    assert all(r.ok for r in results) and after.ok and not hung.ok and "timed out" in hung.content
    assert counts[1] <= counts[0] + 1  # ten calls in a row: at most one new thread
    assert len(set(threads[:10])) < 10  # (a thread per call: ten threads)
    assert threads[-1] != threads[-2]  # the hung call's thread was not waited for
    assert stopped == [False] * 11
    time.sleep(0.1)  # the released thread finishes its call and waits for the next one
    late = asyncio.run(registry.execute("where", {}))
    assert late.ok and stopped[-1] is False  # the given-up call's stop did not follow its thread


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_runs_tools_on_threads_of_its_own() -> None:
    """A child forked after tool calls has none of its parent's idle tool threads: its calls
    start threads of their own instead of waiting for one that does not exist there."""
    import warnings

    def where() -> str:
        """Say something."""
        return "here"

    registry = ToolRegistry([function_tool(where)], timeout=5)
    assert asyncio.run(registry.execute("where", {})).ok  # the parent now has an idle thread
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # fork with threads (3.12+)
        pid = os.fork()
    if pid == 0:  # the child: exit at once, whatever happens
        try:
            ok = asyncio.run(asyncio.wait_for(registry.execute("where", {}), 10)).ok
        finally:
            os._exit(0 if locals().get("ok") else 1)
    deadline = time.monotonic() + 20
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            pytest.fail("the child's tool call never ran")
        time.sleep(0.05)
    assert os.waitstatus_to_exitcode(status) == 0

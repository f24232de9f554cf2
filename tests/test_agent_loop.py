"""The agent loop on the scripted model: stops, errors the model can read, limits, guards."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from typing import Any

import pytest

from tinyharness.agent import Agent, AgentConfig
from tinyharness.context.config import ContextConfig
from tinyharness.context.manager import build_context
from tinyharness.errors import ScriptError
from tinyharness.events import EventBus, ListSink
from tinyharness.guards import NUDGE_AFTER, STOP_AFTER
from tinyharness.messages import ToolResultBlock, ToolUseBlock
from tinyharness.models.scripted import ScriptedModel
from tinyharness.session import UNKNOWN_OUTCOME, TurnProgress
from tinyharness.tools.base import ToolRegistry, function_tool


def text(value: str, stop: str = "end_turn", usage: tuple[int, int] = (10, 5)) -> dict[str, Any]:
    return {
        "stop_reason": stop,
        "content": [{"type": "text", "text": value}],
        "usage": {"input_tokens": usage[0], "output_tokens": usage[1]},
    }


def calls(*uses: tuple[str, str, Any], usage: tuple[int, int] = (10, 5)) -> dict[str, Any]:
    return {
        "stop_reason": "tool_use",
        "content": [{"type": "tool_use", "id": i, "name": n, "input": a} for i, n, a in uses],
        "usage": {"input_tokens": usage[0], "output_tokens": usage[1]},
    }


ran: list[str] = []


@function_tool
def echo(word: str) -> str:
    """Say a word back.

    Args:
        word: the word to repeat
    """
    ran.append(word)
    return f"echo:{word}"


@function_tool
def explode() -> str:
    """Always fails."""
    raise RuntimeError("boom")


def make_agent(responses: list[dict[str, Any]], **limits: Any) -> tuple[Agent, ScriptedModel, ListSink]:
    ran.clear()
    model = ScriptedModel({"responses": responses})
    sink = ListSink()
    agent = Agent(model, ToolRegistry([echo, explode]), events=EventBus([sink]), config=AgentConfig(**limits))
    return agent, model, sink


def last_results(model: ScriptedModel, request_index: int) -> list[ToolResultBlock]:
    return model.requests[request_index].messages[-1].tool_results


def test_end_turn_returns_the_text_and_reports_events() -> None:
    agent, model, sink = make_agent([text("done", usage=(30, 7))])
    result = agent.run("say done")
    assert (result.stop, result.final, result.model_calls) == ("end_turn", "done", 1)
    assert [e["type"] for e in sink.events] == ["run_start", "model_call", "run_end"]
    call = sink.of_type("model_call")[0]
    assert call["call"] == 1 and call["purpose"] == "agent" and call["stop_reason"] == "end_turn"
    assert call["usage"] == {"input_tokens": 30, "output_tokens": 7}
    assert call["tokens"] == 37
    assert all(e["run_id"] == sink.events[0]["run_id"] for e in sink.events)
    assert [e["seq"] for e in sink.events] == [1, 2, 3]
    assert sink.of_type("run_end")[0]["stop"] == "end_turn"
    asyncio.run(model.aclose())  # nothing left over


def test_parallel_calls_in_one_turn_are_all_answered_in_order() -> None:
    agent, model, sink = make_agent(
        [calls(("a", "echo", {"word": "x"}), ("b", "echo", {"word": "y"})), text("ok")]
    )
    result = agent.run("echo twice")
    assert result.ok and sorted(ran) == ["x", "y"]
    results = last_results(model, 1)
    assert [(r.tool_use_id, r.content, r.is_error) for r in results] == [
        ("a", "echo:x", False),
        ("b", "echo:y", False),
    ]
    assert sorted(e["call_id"] for e in sink.of_type("tool_result")) == ["a", "b"]


def test_bad_calls_become_error_results_and_the_loop_goes_on() -> None:
    agent, model, sink = make_agent(
        [
            calls(
                ("u", "no_such_tool", {}),
                ("j", "echo", '{"word": "unterminated'),
                ("s", "echo", {"word": 3}),
                ("r", "explode", {}),
            ),
            text("recovered"),
        ]
    )
    result = agent.run("misbehave")
    assert result.stop == "end_turn" and result.final == "recovered"
    by_id = {r.tool_use_id: r for r in last_results(model, 1)}
    assert all(r.is_error for r in by_id.values())
    assert "unknown tool 'no_such_tool'" in by_id["u"].content and "echo" in by_id["u"].content
    assert "not valid JSON" in by_id["j"].content
    assert "invalid arguments" in by_id["s"].content and "word" in by_id["s"].content
    assert "RuntimeError: boom" in by_id["r"].content
    assert ran == []
    assert [e["ok"] for e in sink.of_type("tool_result")] == [False] * 4


def test_max_iterations_stops_with_a_final_answer_request_without_tools() -> None:
    looping = [calls((f"c{i}", "echo", {"word": f"w{i}"})) for i in range(3)]
    agent, model, sink = make_agent([*looping, text("best effort")], max_iterations=3)
    result = agent.run("never ends")
    assert result.stop == "max_iterations" and result.final == "best effort"
    final_request = model.requests[-1]
    assert final_request.final_only and final_request.tools == agent.tools.specs  # a stable prefix
    assert "final answer" in final_request.messages[-1].text
    assert sink.of_type("run_end")[0]["stop"] == "max_iterations"


def test_token_budget_stops_the_run() -> None:
    agent, model, _ = make_agent(
        [calls(("a", "echo", {"word": "1"}), usage=(60, 50)), text("summary")], token_budget=100
    )
    result = agent.run("spend")
    assert result.stop == "token_budget" and "100" in result.detail
    assert result.final == "summary" and model.requests[-1].final_only


def test_cut_off_tool_call_is_not_run_and_the_model_is_asked_to_continue() -> None:
    cut = calls(("a", "echo", {"word": "half"}))
    cut["stop_reason"] = "max_tokens"
    agent, model, _ = make_agent([cut, text("finished")])
    result = agent.run("long output")
    assert result.ok and ran == []
    reply = model.requests[1].messages[-1]
    assert reply.tool_results[0].is_error and "cut off" in reply.text


def test_repeated_cut_offs_stop_the_run() -> None:
    agent, _, _ = make_agent([text("a", stop="max_tokens")] * 3 + [text("final")])
    assert agent.run("x").stop == "max_tokens"


def test_repeated_identical_calls_get_a_nudge_then_a_stop() -> None:
    same = [calls((f"c{i}", "echo", {"word": "same"})) for i in range(STOP_AFTER)]
    agent, model, _ = make_agent([*same, text("gave up")])
    result = agent.run("loop")
    assert result.stop == "stuck" and result.final == "gave up"
    nudged = model.requests[NUDGE_AFTER].messages[-1]
    assert "exact arguments" in nudged.text
    assert "exact arguments" not in model.requests[NUDGE_AFTER - 1].messages[-1].text


def test_running_out_of_script_is_a_clear_error_and_leftovers_are_reported() -> None:
    agent, _model, sink = make_agent([calls(("a", "echo", {"word": "x"}))])
    result = agent.run("x")
    assert result.stop == "error" and "out of responses" in result.detail
    assert sink.of_type("error")[0]["kind"] == "ScriptError"
    leftover = ScriptedModel({"responses": [text("a"), text("b")]})
    asyncio.run(leftover.complete(make_agent([])[0]._request()))
    with pytest.raises(ScriptError, match="1 scripted response"):
        asyncio.run(leftover.aclose())


def test_trace_adds_the_exact_request() -> None:
    agent, _, sink = make_agent([text("hi")])
    agent.config = dataclasses.replace(agent.config, trace=True)
    agent.run("hello")
    request = sink.of_type("model_call")[0]["request"]
    assert request["messages"] == [{"role": "user", "content": [{"type": "text", "text": "hello"}]}]
    assert request["system"] == agent.config.system


def test_purpose_tagged_scripts_serve_each_purpose_from_its_own_queue() -> None:
    from tinyharness.messages import Message
    from tinyharness.models.base import ModelRequest

    model = ScriptedModel(
        {
            "responses": [
                {**text("agent one"), "purpose": "agent"},
                {**text("summary"), "purpose": "compact"},
                {**text("agent two"), "purpose": "agent"},
            ]
        }
    )
    ask = (Message.user("q"),)
    first = asyncio.run(model.complete(ModelRequest(ask)))
    summary = asyncio.run(model.complete(ModelRequest(ask, purpose="compact")))
    second = asyncio.run(model.complete(ModelRequest(ask)))
    assert [first.message.text, summary.message.text, second.message.text] == [
        "agent one",
        "summary",
        "agent two",
    ]


@pytest.mark.parametrize(
    ("script", "message"),
    [
        ({"responses": [{"stop_reason": "done"}]}, "stop_reason"),
        ({"responses": [{"stop_reason": "end_turn", "content": [{"type": "video"}]}]}, "bad content"),
        ({"responses": [{"stop_reason": "end_turn", "usage": {"input_tokens": "x"}}]}, "usage"),
        ({"responses": [{"stop_reason": "end_turn", "purpose": "other"}]}, "purpose"),
        ({"answers": []}, "responses"),
    ],
)
def test_malformed_scripts_are_rejected_with_the_reason(script: dict[str, Any], message: str) -> None:
    with pytest.raises(ScriptError, match=message):
        ScriptedModel(script)


class SnapshotCheckpointer:
    """Keeps every commit: (messages, state, the turn's progress at that moment)."""

    def __init__(self) -> None:
        self.snapshots: list[tuple[list[Any], dict[str, Any], TurnProgress]] = []
        self.turn = TurnProgress()

    def save(self, messages: Any, state: dict[str, Any], *, starting: Any = ()) -> None:
        if not (messages and messages[-1].tool_uses):
            self.turn = TurnProgress()
        self.turn.started.update(call.id for call in starting)
        self._by_save = {call.id for call in starting}
        self.snapshots.append((list(messages), json.loads(json.dumps(state)), self._copy()))

    def call_started(self, call: ToolUseBlock) -> None:
        if call.id in getattr(self, "_by_save", ()):
            return  # recorded by the save of its reply, as SQLiteSession does
        self.turn.started.add(call.id)
        self.snapshots.append((self.snapshots[-1][0], self.snapshots[-1][1], self._copy()))

    def call_finished(self, result: ToolResultBlock) -> None:
        self.turn.started.discard(result.tool_use_id)
        self.turn.finished[result.tool_use_id] = result
        self.snapshots.append((self.snapshots[-1][0], self.snapshots[-1][1], self._copy()))

    def _copy(self) -> TurnProgress:
        return TurnProgress(dict(self.turn.finished), set(self.turn.started))


def test_a_resumed_run_does_not_repeat_a_finished_tool_call() -> None:
    turn = calls(("a", "echo", {"word": "first"}), ("b", "echo", {"word": "second"}))
    agent, _, _ = make_agent([turn, text("done")])
    checkpointer = SnapshotCheckpointer()
    agent.checkpoint = checkpointer
    agent.run("two calls")
    # The commit made after one of the two calls finished; a kill there, had the other call
    # not started yet (the calls of a turn start together, so that is left out by hand).
    messages, state, progress = next(s for s in checkpointer.snapshots if len(s[2].finished) == 1)
    progress = TurnProgress(progress.finished, set())
    (finished,) = progress.finished
    assert messages[-1].tool_uses and state["model_calls"] == 1

    resumed, model, _ = make_agent([text("done after resume")])
    result = resumed.run(None, history=messages, state=state, turn=progress)
    assert result.ok and result.final == "done after resume"
    assert ran == ["second" if finished == "a" else "first"]  # only the call that never started ran
    answered = model.requests[0].messages[-1].tool_results
    assert sorted(r.tool_use_id for r in answered) == ["a", "b"]
    assert result.model_calls == 2  # counted across the kill


def test_a_call_cut_off_by_a_kill_is_never_run_again() -> None:
    """Started, no result recorded: its effect may or may not be in place, so the resumed run
    does not run it; the model is told its outcome is unknown and to check first."""
    turn = calls(("a", "echo", {"word": "first"}), ("b", "echo", {"word": "second"}))
    agent, _, _ = make_agent([turn, text("done")])
    checkpointer = SnapshotCheckpointer()
    agent.checkpoint = checkpointer
    agent.run("two calls")
    messages, state, progress = next(s for s in checkpointer.snapshots if len(s[2].started) == 2)

    resumed, model, sink = make_agent([text("checked")])
    result = resumed.run(None, history=messages, state=state, turn=progress)
    assert result.ok and ran == []  # neither call ran again
    answered = model.requests[0].messages[-1].tool_results
    assert [r.content for r in answered] == [UNKNOWN_OUTCOME, UNKNOWN_OUTCOME]
    assert all(r.is_error for r in answered)
    assert [e["outcome"] for e in sink.of_type("tool_result")] == ["unknown", "unknown"]


def test_every_step_is_committed() -> None:
    agent, _, _ = make_agent([calls(("a", "echo", {"word": "x"})), text("done")])
    checkpointer = SnapshotCheckpointer()
    agent.checkpoint = checkpointer
    agent.run("x")
    lengths = [len(messages) for messages, _, _ in checkpointer.snapshots]
    assert lengths[0] == 1 and lengths[-1] == 4
    assert {2, 3, 4} <= set(lengths)  # after the reply, after the results, after the answer


def test_the_final_answer_request_is_compacted_like_any_turn() -> None:
    """A run stopped with a full window used to send its final-answer request uncompacted, which
    the local server refused (measured: 5917 tokens against 4096); it now goes through the
    context policy first."""
    sizes = [10, 10, 1200]  # the last tool result fills the window
    looping = [
        calls((f"c{i}", "echo", {"word": f"{i}" + " x" * n}), usage=(300 + 20 * i, 20))
        for i, n in enumerate(sizes)
    ]
    model = ScriptedModel({"responses": [*looping, text("best effort")]})
    sink = ListSink()
    context = build_context(
        ContextConfig("sliding-window", window=1000, keep_recent=1), events=EventBus([sink])
    )
    agent = Agent(
        model,
        ToolRegistry([echo]),
        context=context,
        events=EventBus([sink]),
        config=AgentConfig(max_iterations=3),
    )
    result = agent.run("never ends")
    assert result.stop == "max_iterations" and result.final == "best effort"
    kinds = [e["type"] for e in sink.events]
    last_result = max(i for i, kind in enumerate(kinds) if kind == "tool_result")
    assert "compaction" in kinds[last_result:]
    final_request = model.requests[-1]
    sent = "".join(r.content for m in final_request.messages for r in m.tool_results)
    assert final_request.final_only and "echo:0" not in sent

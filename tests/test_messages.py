"""The neutral message type: serializer round trips and API-round grouping."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tinyharness.events import EventBus, JsonlSink
from tinyharness.messages import (
    Message,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    group_rounds,
    message_from_dict,
    message_to_dict,
)

blocks = st.one_of(
    st.builds(TextBlock, st.text()),
    st.builds(ThinkingBlock, st.text(), st.text()),
    st.builds(ThinkingBlock, st.just(""), st.just(""), redacted=st.text()),
    st.builds(
        ToolUseBlock, st.text(min_size=1), st.text(min_size=1), st.dictionaries(st.text(), st.integers())
    ),
    st.builds(ToolResultBlock, st.text(min_size=1), st.text(), st.booleans()),
)


@given(st.sampled_from(["user", "assistant"]), st.lists(blocks, max_size=5))
def test_serializer_round_trips_every_block(role: str, content: list) -> None:
    message = Message(role, tuple(content))  # type: ignore[arg-type]
    wire = json.loads(json.dumps(message_to_dict(message)))
    assert message_from_dict(wire) == message


def test_signed_thinking_keeps_its_signature_on_the_wire() -> None:
    message = Message("assistant", (ThinkingBlock("plan", "sig-123"), TextBlock("hi")))
    assert message_to_dict(message)["content"][0] == {
        "type": "thinking",
        "thinking": "plan",
        "signature": "sig-123",
    }


def test_tool_result_content_may_arrive_as_a_list_of_text_parts() -> None:
    message = message_from_dict(
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "t", "content": [{"type": "text", "text": "a"}]}
            ],
        }
    )
    assert message.tool_results[0].content == "a"


def test_unknown_roles_and_blocks_are_refused() -> None:
    with pytest.raises(ValueError, match="role"):
        message_from_dict({"role": "tool", "content": "x"})
    with pytest.raises(ValueError, match="block type"):
        message_from_dict({"role": "user", "content": [{"type": "image"}]})


def _history(n_rounds: int) -> list[Message]:
    history = [Message.user("task")]
    for i in range(n_rounds):
        history.append(Message("assistant", (ToolUseBlock(f"t{i}", "read_file", {"path": str(i)}),)))
        history.append(Message("user", (ToolResultBlock(f"t{i}", "data"),)))
    return history


@given(st.integers(min_value=0, max_value=30))
def test_rounds_keep_every_tool_use_with_its_result(n_rounds: int) -> None:
    rounds = group_rounds(_history(n_rounds))
    assert len(rounds) == n_rounds + 1
    assert [m for r in rounds for m in r] == _history(n_rounds)
    for round_ in rounds[1:]:
        asked = {b.id for b in round_[0].tool_uses}
        answered = {b.tool_use_id for m in round_[1:] for b in m.tool_results}
        assert asked == answered


def test_jsonl_sink_writes_one_stamped_object_per_line(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "events.jsonl"
    sink = JsonlSink(path)
    bus = EventBus([sink], run_id="r1")
    bus.emit("run_start", task="日本語")
    bus.emit("run_end", stop="end_turn")
    sink.close()
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert [(e["type"], e["seq"], e["run_id"]) for e in lines] == [
        ("run_start", 1, "r1"),
        ("run_end", 2, "r1"),
    ]
    assert lines[0]["task"] == "日本語" and isinstance(lines[0]["ts"], float)

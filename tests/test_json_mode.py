"""JSON tool mode: the action schema, the protocol text, text history, tolerant reply parsing."""

from __future__ import annotations

import json

import jsonschema
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tinyharness.errors import ConfigError
from tinyharness.messages import (
    Message,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from tinyharness.models import json_mode
from tinyharness.models.base import ModelRequest, ToolSpec

CALC = ToolSpec(
    "calculator",
    "Evaluate an arithmetic expression.",
    {
        "type": "object",
        "properties": {"expression": {"type": "string"}},
        "required": ["expression"],
        "additionalProperties": False,
    },
)
CLOCK = ToolSpec("current_time", "The current time.", {"type": "object", "properties": {}})


def is_valid(instance: object, schema: dict[str, object]) -> bool:
    return jsonschema.Draft202012Validator(schema).is_valid(instance)


def test_action_schema_constrains_tool_names_and_their_arguments() -> None:
    schema = json_mode.action_schema([CALC, CLOCK])
    jsonschema.Draft202012Validator.check_schema(schema)
    assert is_valid({"tool": "calculator", "arguments": {"expression": "1+2"}}, schema)
    assert is_valid({"tool": "current_time", "arguments": {}}, schema)
    assert is_valid({"tool": "final_answer", "arguments": {"answer": "done"}}, schema)
    # The answer is a tool like the others: no separate "final" key for a model to jump to.
    assert not is_valid({"final": "done"}, schema)
    assert not is_valid({"tool": "calculator", "arguments": {"expr": "1+2"}}, schema)
    assert not is_valid({"tool": "rm_rf", "arguments": {}}, schema)
    assert not is_valid({"tool": "calculator"}, schema)
    assert not is_valid({"final": "x", "tool": "calculator"}, schema)


def test_final_only_schema_allows_only_a_final_answer() -> None:
    schema = json_mode.action_schema([CALC], final_only=True)
    assert is_valid({"tool": "final_answer", "arguments": {"answer": "the answer"}}, schema)
    assert not is_valid({"tool": "calculator", "arguments": {"expression": "1"}}, schema)


def test_plan_appends_the_protocol_and_lists_every_tool_as_a_signature() -> None:
    request = ModelRequest((Message.user("hi"),), system="Be terse.", tools=(CALC, CLOCK))
    plan = json_mode.plan_request(request)
    assert plan.expects_action
    assert plan.system.startswith("Be terse.\n\n")  # the protocol comes last: small models follow it
    assert '{"tool": "<tool name>", "arguments": {<arguments>}}' in plan.system
    assert "call final_answer with your answer" in plan.system
    assert "- final_answer(answer: string): Give your final answer" in plan.system
    assert '"final"' not in plan.system
    assert f"- calculator(expression: string): {CALC.description}" in plan.system
    assert f"- {CLOCK.name}(): {CLOCK.description}" in plan.system
    assert plan.schema == json_mode.action_schema([CALC, CLOCK])


def test_the_example_call_is_concrete_when_read_file_is_offered() -> None:
    read = ToolSpec("read_file", "Read a file. Long details.", {"type": "object", "properties": {}})
    plan = json_mode.plan_request(ModelRequest((Message.user("hi"),), tools=(read,)))
    assert '{"tool": "read_file", "arguments": {"path": "README.md"}}' in plan.system
    assert "- read_file(): Read a file." in plan.system and "Long details" not in plan.system


def test_plan_without_tools_is_free_text_and_response_schema_wins() -> None:
    plain = json_mode.plan_request(ModelRequest((Message.user("summarize"),), system="S"))
    assert (plain.schema, plain.expects_action, plain.system) == (None, False, "S")
    wanted = {"type": "object", "properties": {"facts": {"type": "array"}}}
    structured = json_mode.plan_request(
        ModelRequest((Message.user("x"),), tools=(CALC,), response_schema=wanted)
    )
    assert (structured.schema, structured.expects_action) == (wanted, False)


def test_final_only_plan_without_tools_says_tools_are_unavailable() -> None:
    # Even without tools: a history of JSON actions would lead the model to write one more.
    request = ModelRequest((Message.user("x"),), tools=(), final_only=True)
    plan = json_mode.plan_request(request)
    assert "not available" in plan.system
    assert plan.schema == json_mode.action_schema([], final_only=True)
    assert plan.expects_action


def test_final_only_plan_with_tools_keeps_the_prompt_prefix_and_allows_only_the_answer() -> None:
    """The system prompt is the agent requests' own, so the server's cached prefix still holds;
    only the grammar changes (a new prefix cost the 0.5B model the whole window again)."""
    history = (Message.user("x"),)
    agent = json_mode.plan_request(ModelRequest(history, system="sys", tools=(CALC,)))
    final = json_mode.plan_request(ModelRequest(history, system="sys", tools=(CALC,), final_only=True))
    assert final.system == agent.system and "calculator" in final.system
    assert final.schema == json_mode.action_schema([], final_only=True)
    assert final.expects_action


def test_history_becomes_text_actions_and_result_messages() -> None:
    history = (
        Message.user("What is 2+2?"),
        Message(
            "assistant",
            (
                ThinkingBlock("let me think", "sig"),
                ToolUseBlock("call_1", "calculator", {"expression": "2+2"}),
            ),
        ),
        Message("user", (ToolResultBlock("call_1", "4"),)),
        Message("assistant", (ToolUseBlock("call_2", "calculator", "{bad json"),)),
        Message("user", (ToolResultBlock("call_2", "invalid arguments", is_error=True),)),
    )
    text = json_mode.history_as_text(history)
    assert [m.role for m in text] == ["user", "assistant", "user", "assistant", "user"]
    assert all(len(m.content) == 1 and isinstance(m.content[0], TextBlock) for m in text)
    assert json.loads(text[1].text) == {"tool": "calculator", "arguments": {"expression": "2+2"}}
    assert "let me think" not in text[1].text
    assert text[2].text == f"Result of calculator (call_1):\n4\n\n{json_mode.NEXT_ACTION_HINT}"
    assert json.loads(text[3].text)["arguments"] == "{bad json"
    assert text[4].text.startswith("Result of calculator (call_2) (error):\ninvalid arguments\n\n")


def test_reply_with_a_tool_action_becomes_a_tool_use() -> None:
    reply = '{\n  "tool": "calculator",\n  "arguments": {"expression": "17*23"}\n}'
    blocks, stop = json_mode.parse_reply(reply, truncated=False, call_id="call_7")
    assert blocks == (ToolUseBlock("call_7", "calculator", {"expression": "17*23"}),)
    assert stop == "tool_use"


def test_reply_with_a_final_answer_becomes_text() -> None:
    blocks, stop = json_mode.parse_reply('{"final": "391"}', truncated=False, call_id="call_1")
    assert (blocks, stop) == ((TextBlock("391"),), "end_turn")


@pytest.mark.parametrize(
    ("reply", "expected_input"),
    [
        ('```json\n{"tool": "calculator", "arguments": {"expression": "1"}}\n```', {"expression": "1"}),
        ('Sure! {"tool": "calculator", "arguments": {"expression": "1"}} done', {"expression": "1"}),
        ('{"tool": "calculator", "arguments": "{\\"expression\\": \\"1\\"}"}', {"expression": "1"}),
        ('{"tool": "calculator", "arguments": "not json"}', "not json"),
        ('{"tool": "calculator"}', {}),
    ],
)
def test_tolerant_parsing_of_tool_actions(reply: str, expected_input: object) -> None:
    blocks, stop = json_mode.parse_reply(reply, truncated=False, call_id="call_1")
    assert blocks == (ToolUseBlock("call_1", "calculator", expected_input),)
    assert stop == "tool_use"


def test_invalid_json_is_a_text_reply_never_an_exception() -> None:
    cut = '{"tool": "calculator", "argum'
    assert json_mode.parse_reply(cut, truncated=True, call_id="c") == ((TextBlock(cut),), "max_tokens")
    prose = "I think the answer is 4."
    assert json_mode.parse_reply(prose, truncated=False, call_id="c") == (
        (TextBlock(prose),),
        "end_turn",
    )


def test_a_final_answer_cut_by_max_tokens_keeps_its_text() -> None:
    blocks, stop = json_mode.parse_reply('{\n  "final": "Paris is the cap\\u00e', truncated=True, call_id="c")
    assert (blocks, stop) == ((TextBlock("Paris is the cap"),), "max_tokens")


@given(st.text())
def test_parse_reply_never_raises(reply: str) -> None:
    blocks, stop = json_mode.parse_reply(reply, truncated=False, call_id="call_1")
    assert stop in ("tool_use", "end_turn")
    assert len(blocks) == 1


def test_call_ids_stay_unique_across_history_and_process() -> None:
    history = (
        Message("assistant", (ToolUseBlock("call_4", "calculator", {}),)),
        Message("assistant", (ToolUseBlock("toolu_x", "calculator", {}),)),
    )
    assert json_mode.next_call_id(history, 0) == ("call_5", 5)
    assert json_mode.next_call_id(history, 9) == ("call_10", 10)
    assert json_mode.next_call_id((), 0) == ("call_1", 1)


def test_tool_mode_is_checked() -> None:
    assert json_mode.check_tool_mode("json") == "json"
    with pytest.raises(ConfigError, match="native, json"):
        json_mode.check_tool_mode("xml")


NOTE = ToolSpec(
    "note",
    "Append a line to the notes.",
    {
        "type": "object",
        "properties": {"text": {"type": "string"}, "path": {"type": "string"}},
        "required": ["text"],
        "additionalProperties": False,
    },
    choices=lambda _messages: {"path": ["src/a.py"]},
)


def test_a_forced_call_gives_its_narrowed_arguments_first() -> None:
    """With tool_choice, only that tool's branch is allowed, and the arguments its choices fix
    become required and come first (the grammar writes properties in order), so a note is
    written after the path it is about."""
    other = ToolSpec("list_dir", "List.", {"type": "object", "properties": {}})
    forced = json_mode.action_schema([other, NOTE], tool_choice="note")
    arguments = forced["properties"]["arguments"]
    assert forced["properties"]["tool"] == {"const": "note"}
    assert list(arguments["properties"]) == ["path", "text"]
    assert arguments["properties"]["path"]["enum"] == ["src/a.py"]
    assert arguments["required"] == ["path", "text"]
    jsonschema.validate({"tool": "note", "arguments": {"path": "src/a.py", "text": "x"}}, forced)
    for wrong in (
        {"tool": "note", "arguments": {"text": "x"}},
        {"tool": "list_dir", "arguments": {}},
        {"final": "done"},
    ):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(wrong, forced)
    # Not forced: the narrowed argument stays optional, and every tool and the answer are allowed.
    free = json_mode.action_schema([other, NOTE])
    branch = next(b for b in free["anyOf"] if b["properties"].get("tool") == {"const": "note"})
    assert branch["properties"]["arguments"]["required"] == ["text"]
    jsonschema.validate({"tool": "final_answer", "arguments": {"answer": "done"}}, free)


EDIT = ToolSpec(
    "edit_file",
    "Edit.",
    {
        "type": "object",
        "properties": {
            "path": {"type": "string"},
            "old": {"type": "string"},
            "new": {"type": "string"},
            "count": {"type": "integer"},
        },
        "required": ["path", "old", "new"],
    },
    choices=lambda _messages: {"old": ["X = 1", "Y = 22"], "new": 30, "count": 4, "path": 0},
)


@pytest.mark.parametrize("tool_choice", [None, "edit_file"])
def test_a_length_choice_bounds_a_string_the_grammar_would_leave_free(tool_choice: str | None) -> None:
    """An int among a tool's choices is the longest its string may be: the grammar's maxLength
    ends a new line the model repeats (edit_file is otherwise unbounded: file text must fit);
    an enum still comes first in a forced call, and a bound on a non-string is ignored."""
    schema = json_mode.action_schema([EDIT], tool_choice=tool_choice)
    branch = (
        schema
        if tool_choice
        else next(b for b in schema["anyOf"] if b["properties"]["tool"]["const"] == "edit_file")
    )
    arguments = branch["properties"]["arguments"]
    assert arguments["properties"]["new"] == {"type": "string", "maxLength": 30}
    assert arguments["properties"]["old"]["enum"] == ["X = 1", "Y = 22"]
    assert arguments["properties"]["count"] == {"type": "integer"}
    assert arguments["properties"]["path"] == {"type": "string"}  # 0: no bound
    call = {"tool": "edit_file", "arguments": {"path": "a.py", "old": "X = 1", "new": "X = 2"}}
    jsonschema.validate(call, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**call, "arguments": {**call["arguments"], "new": "X = " + "1 + " * 20}}, schema)
    if tool_choice:
        assert next(iter(arguments["properties"])) == "old"


def test_a_length_choice_never_loosens_a_bound_of_the_schema() -> None:
    tight = ToolSpec(
        "look",
        "Look.",
        {"type": "object", "properties": {"q": {"type": "string", "maxLength": 10}}},
        choices=lambda _messages: {"q": 50},
    )
    arguments = json_mode.action_schema([tight])["anyOf"][0]["properties"]["arguments"]
    assert arguments["properties"]["q"]["maxLength"] == 10


def test_one_reply_path_for_every_wire_adapter() -> None:
    """Both wire adapters turn a JSON-mode reply into a message through ``reply_message``: ids go
    on from the history and from the last one issued, reasoning goes first, and a reply to the
    caller's own schema stays text."""
    from tinyharness.messages import ThinkingBlock

    ids = json_mode.CallIds()
    history = [Message("assistant", (ToolUseBlock("call_3", "read_file", {"path": "a"}),))]
    action = '{"tool": "read_file", "arguments": {"path": "b"}}'
    first, stop = json_mode.reply_message(
        action,
        truncated=False,
        expects_action=True,
        messages=history,
        call_ids=ids,
        thinking=(ThinkingBlock("hm"),),
    )
    assert stop == "tool_use" and first.content[0] == ThinkingBlock("hm")
    assert first.tool_uses[0].id == "call_4"
    second, _ = json_mode.reply_message(
        action, truncated=False, expects_action=True, messages=(), call_ids=ids
    )
    assert second.tool_uses[0].id == "call_5"  # never reused, even when the history is compacted away
    text, stop = json_mode.reply_message(
        '{"facts": []}', truncated=True, expects_action=False, messages=(), call_ids=ids
    )
    assert text.text == '{"facts": []}' and stop == "max_tokens" and ids.last_issued == 5

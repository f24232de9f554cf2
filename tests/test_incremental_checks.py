"""The per-turn checks that reuse the previous request's work (prefix-share metric, usage
calibration, request validator, tool argument validation) give exactly what a full recheck
gives, over random edit sequences: appends, in-place rewrites, truncations, compactions that
keep some of the same objects, resumed histories of equal copies, and invalid histories."""

from __future__ import annotations

import asyncio
import copy
import json
import pickle
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tinyharness.context.accounting import Accountant
from tinyharness.context.prefix import PrefixTracker, _common, identical_prefix, message_size
from tinyharness.context.tokens import HeuristicCounter
from tinyharness.context.validator import InvalidRequest, RequestValidator, validate_messages
from tinyharness.messages import (
    MAX_SNAPSHOTS,
    Block,
    Message,
    Snapshot,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    Transcript,
    known_prefix,
    message_to_dict,
    messages_from_dicts,
    messages_to_dicts,
)
from tinyharness.models.base import ModelRequest, ModelResponse, Usage
from tinyharness.tools.base import Tool, ToolRegistry, function_tool

# --- generated messages and edits -------------------------------------------------------------

IDS = ("a", "b", "c")


@st.composite
def blocks(draw: Any) -> Block:
    kind = draw(st.sampled_from(["text", "text", "use", "result", "thinking", "redacted"]))
    if kind == "text":
        return TextBlock(draw(st.sampled_from(["ok", "x" * 40, "库存 lock", "n=1"])))
    if kind == "use":
        return ToolUseBlock(draw(st.sampled_from(IDS)), "grep", {"n": draw(st.sampled_from([1, 1.0, True]))})
    if kind == "result":
        return ToolResultBlock(draw(st.sampled_from(IDS)), draw(st.sampled_from(["found", "y" * 30])))
    if kind == "thinking":
        return ThinkingBlock("hmm", draw(st.sampled_from(["", "sig"])))
    return ThinkingBlock("", "", redacted="opaque")


@st.composite
def random_messages(draw: Any) -> Message:
    role = draw(st.sampled_from(["user", "assistant"]))
    return Message(role, tuple(draw(st.lists(blocks(), min_size=1, max_size=3))))


def valid_next(history: Sequence[Message], n: int) -> Message:
    """A message that keeps ``history`` valid when appended (valid with signed thinking only
    until a third of the thinking blocks come unsigned)."""
    if not history or history[-1].role == "assistant":
        uses = history[-1].tool_uses if history else []
        if uses:
            return Message("user", tuple(ToolResultBlock(u.id, f"result {n}") for u in uses))
        return Message.user(f"go on {n}")
    calls = tuple(ToolUseBlock(i, "grep", {"n": n}) for i in IDS[: n % 3])
    thinking = ThinkingBlock(f"t{n}", "" if n % 3 == 0 else "sig")
    return Message("assistant", (thinking, TextBlock(f"step {n}"), *calls))


GROW = st.tuples(st.just("grow"), st.integers(1, 4))  # the agent's common case, weighted up
EDITS = st.one_of(
    GROW,
    GROW,
    GROW,
    GROW,
    GROW,
    st.tuples(st.just("append"), random_messages()),  # often invalid
    st.tuples(st.just("replace"), st.integers(0, 40), random_messages()),
    st.tuples(st.just("copy_one"), st.integers(0, 40)),  # an equal copy in place of one message
    st.tuples(st.just("repeat"), st.integers(0, 40)),  # the same object twice in the list
    st.tuples(st.just("truncate"), st.integers(0, 40)),
    st.tuples(st.just("compact"), st.integers(0, 6)),  # a new head, some of the same tail objects
    st.tuples(st.just("resume"), st.just(0)),  # equal copies of every message (a checkpoint)
    st.tuples(st.just("again"), st.just(0)),  # the very same list again
)


def apply(history: list[Message], edit: tuple[Any, ...], counter: list[int]) -> list[Message]:
    """The edited history, a new list (the caller may still hold the old one)."""
    kind = edit[0]
    out = list(history)
    if kind == "grow":
        for _ in range(edit[1]):
            counter[0] += 1
            out.append(valid_next(out, counter[0]))
    elif kind == "append":
        out.append(edit[1])
    elif kind == "replace" and out:
        out[edit[1] % len(out)] = edit[2]
    elif kind == "copy_one" and out:
        i = edit[1] % len(out)
        out[i] = Message(out[i].role, out[i].content)
    elif kind == "repeat" and out:
        out.append(out[edit[1] % len(out)])
    elif kind == "truncate":
        del out[edit[1] % (len(out) + 1) :]
    elif kind == "compact":
        counter[0] += 1
        tail = out[len(out) - edit[1] :] if edit[1] else []
        out = [Message.user(f"task, summary {counter[0]}"), *tail]
    elif kind == "resume":
        out = messages_from_dicts(messages_to_dicts(out))
    return out


def verdict(check: Callable[[], None]) -> str | None:
    try:
        check()
    except InvalidRequest as exc:
        return str(exc)
    return None


# --- the request validator --------------------------------------------------------------------


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    steps=st.lists(
        st.tuples(st.sampled_from(["agent", "compact"]), st.booleans(), st.booleans(), EDITS),
        min_size=1,
        max_size=40,
    )
)
def test_incremental_validator_matches_full_check(steps: list[tuple[str, bool, bool, Any]]) -> None:
    validator = RequestValidator()
    lists: dict[str, list[Message]] = {"agent": [Message.user("task")], "compact": [Message.user("c")]}
    counter = [0]
    for purpose, signed, as_tuple, edit in steps:
        history = apply(lists[purpose], edit, counter)
        lists[purpose] = history
        sent: Sequence[Message] = tuple(history) if as_tuple else history
        expected = verdict(partial(validate_messages, history, signed_thinking=signed))
        got = verdict(partial(validator.check, sent, purpose=purpose, signed_thinking=signed))
        assert got == expected, (purpose, signed, edit)


def test_validator_snapshots_a_list_that_grows_in_place() -> None:
    """The agent appends to its own list: the validator must not keep the live list."""
    history = [Message.user("task"), Message("assistant", (ToolUseBlock("a", "grep", {}),))]
    validator = RequestValidator()
    with pytest.raises(InvalidRequest, match="unanswered"):
        validator.check(history)
    history.append(Message("user", (ToolResultBlock("a", "found"),)))
    validator.check(history)
    history.append(Message.user("not alternating"))  # in place, same list object
    with pytest.raises(InvalidRequest, match="both have role user"):
        validator.check(history)


def test_validator_rechecks_the_last_shared_message() -> None:
    """A valid list whose last tool_use is answered; the next list keeps the call but drops
    the answer and ends there (a truncation): the call must be rechecked."""
    call = Message("assistant", (ToolUseBlock("a", "grep", {}),))
    answer = Message("user", (ToolResultBlock("a", "found"),))
    task = Message.user("task")
    validator = RequestValidator()
    validator.check([task, call, answer])
    with pytest.raises(InvalidRequest, match="unanswered"):
        validator.check([task, call])
    with pytest.raises(InvalidRequest, match=r"tool calls \['a'\] in message 1 have no result"):
        validator.check([task, call, Message.user("no result")])


def test_validator_compaction_and_agent_requests_alternate() -> None:
    """Agent requests, compaction requests over the same history, and the rewritten history
    after a compaction: every verdict is the full check's."""
    agent = [Message.user("task")]
    validator = RequestValidator()
    for n in range(1, 60):
        agent.append(valid_next(agent, n))
        if agent[-1].role != "user":
            continue
        validator.check(agent)
        if n % 7 == 0:  # a compaction request, then the history it rewrites
            request = [Message.user("summarize this:"), Message.assistant("ok"), *agent[1:]]
            got = verdict(partial(validator.check, request, purpose="compact"))
            assert got == verdict(partial(validate_messages, request))
            agent = [Message.user("task + summary")]
        if n % 11 == 0:  # a broken agent request in between is refused, and forgotten
            with pytest.raises(InvalidRequest, match="both have role user"):
                validator.check([*agent, Message.user("twice")])
    if agent[-1].role == "assistant":
        agent.append(valid_next(agent, 99))
    validator.check(agent)
    with pytest.raises(InvalidRequest, match="both have role user"):
        validator.check([*agent, Message.user("twice")])


def test_validator_signed_rule_is_cached_apart() -> None:
    unsigned = [
        Message.user("task"),
        Message("assistant", (ThinkingBlock("x"), TextBlock("a"))),
        Message.user("more"),
        Message.assistant("b"),
    ]
    validator = RequestValidator()
    validator.check(unsigned)
    with pytest.raises(InvalidRequest, match="message 1 has a thinking block without its signature"):
        validator.check([*unsigned, Message.user("more")], signed_thinking=True)


# --- the prefix-share metric ------------------------------------------------------------------


class FullPrefixTracker:
    """PrefixTracker.observe from scratch: every size and comparison redone each request."""

    def __init__(self) -> None:
        self.previous: tuple[str, tuple[Message, ...]] | None = None

    def observe(self, system: str, messages: Sequence[Message]) -> float:
        def text(m: Message) -> str:
            return json.dumps(message_to_dict(m), ensure_ascii=False, default=str)

        current = tuple(messages)
        total = len(system) + sum(message_size(m) for m in current)
        shared = 0
        if self.previous is not None:
            old_system, old = self.previous
            shared = _common(system, old_system)
            if shared == len(system):
                for index, message in enumerate(current):
                    if index >= len(old):
                        break
                    before = old[index]
                    if before is message or before == message:
                        shared += message_size(message)
                        continue
                    shared += min(_common(text(message), text(before)), message_size(message))
                    break
        self.previous = (system, current)
        return shared / total if total else 0.0


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=st.lists(st.tuples(st.sampled_from(["sys", "sys", "sys", "other sys"]), EDITS), max_size=40))
def test_incremental_prefix_share_matches_full(steps: list[tuple[str, Any]]) -> None:
    tracker, reference = PrefixTracker(), FullPrefixTracker()
    history = [Message.user("task")]
    counter = [0]
    assert tracker.observe("sys", history) == reference.observe("sys", history)
    for system, edit in steps:
        history = apply(history, edit, counter)
        assert tracker.observe(system, history) == reference.observe(system, history), edit


def test_prefix_tracker_equal_copy_with_other_serialization() -> None:
    """An equal message that serializes to another length (1 == 1.0) is not the same object:
    its own size counts, as before."""
    first = Message("assistant", (ToolUseBlock("a", "grep", {"n": 1}),))
    copy = Message("assistant", (ToolUseBlock("a", "grep", {"n": 1.0}),))
    assert first == copy
    task, answer = Message.user("t"), Message("user", (ToolResultBlock("a", "r"),))
    tracker, reference = PrefixTracker(), FullPrefixTracker()
    for history in ([task, first, answer], [task, copy, answer], [task, copy, answer, Message.user("x")]):
        assert tracker.observe("s", history) == reference.observe("s", history)


def test_prefix_tracker_cache_pruning_keeps_values() -> None:
    tracker, reference = PrefixTracker(), FullPrefixTracker()
    history = [Message.user("task")]
    for n in range(1, 1500):
        history = (
            [Message.user(f"task {n}"), *history[-3:]] if n % 100 == 0 else [*history, valid_next(history, n)]
        )
        assert tracker.observe("s", history) == reference.observe("s", history)
    assert len(tracker._sizes) <= 4 * 256 + 1


# --- the usage calibration --------------------------------------------------------------------


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=st.lists(st.tuples(EDITS, st.booleans()), max_size=40))
def test_calibration_estimate_matches_a_full_count(steps: list[tuple[Any, bool]]) -> None:
    counter = HeuristicCounter()
    accountant = Accountant(counter)
    seen: list[tuple[int, int]] = []
    calibrate = accountant._calibrate

    def spy(messages_raw: int, reported: int) -> None:
        seen.append((messages_raw, reported))
        calibrate(messages_raw, reported)

    accountant._calibrate = spy  # type: ignore[method-assign]
    history = [Message.user("task")]
    numbers = [0]
    for n, (edit, compacted) in enumerate(steps):
        history = apply(history, edit, numbers)
        if compacted:
            accountant.reset(history)
        request = ModelRequest(tuple(history), "system", purpose="agent")
        response = ModelResponse(Message.assistant(f"r{n}"), "end_turn", Usage(100 + n, 5))
        accountant.record_response(request, response)
        full = sum(counter.count_message(m) for m in history)
        assert seen[-1] == (full, 100 + n)
        # a compaction request in between is not the agent's and changes nothing
        other = ModelRequest((Message.user("summarize"),), "s", purpose="compact")
        accountant.record_response(other, ModelResponse(Message.assistant("sum"), "end_turn", Usage(9, 9)))


def test_identical_prefix() -> None:
    a, b, c = Message.user("a"), Message.user("b"), Message.user("c")
    assert identical_prefix((), (a,)) == 0
    assert identical_prefix((a, b), (a, b, c)) == 2
    assert identical_prefix((a, b, c), (a, b)) == 2
    assert identical_prefix((a, b), (a, Message.user("b"))) == 1  # equal is not identical
    assert identical_prefix([a, b], (c, b)) == 0
    old, new = (a, b), (a, b, c)
    assert identical_prefix(old, new) == 2
    assert identical_prefix(old, new) == 2  # remembered for these two tuples
    assert identical_prefix(old, (a, c)) == 1
    live = [a, b]
    assert identical_prefix(live, (a, b, c)) == 2
    live[1] = c  # a list may change in place: never remembered
    assert identical_prefix(live, (a, b, c)) == 1


# --- tool argument validation -----------------------------------------------------------------


@function_tool
def lookup(path: str, limit: int = 10, mode: str | None = None) -> str:
    """Look something up.

    Args:
        path: where
        limit: how many
        mode: how
    """
    return f"{path} {limit} {mode}"


NESTED = Tool(
    "nested",
    "nested schema",
    {
        "type": "object",
        "properties": {
            "items": {"type": "array", "items": {"type": "integer", "minimum": 0}},
            "kind": {"enum": ["a", "b"]},
            "opt": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
        },
        "required": ["items"],
        "additionalProperties": False,
    },
    lambda **kwargs: "ok",
)


def old_message(tool: Tool, args: dict[str, Any]) -> str | None:
    """The error text the registry gave when it called jsonschema.validate on every call."""
    try:
        jsonschema.validate(args, tool.input_schema)
    except jsonschema.ValidationError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "arguments"
        return (
            f"Error: invalid arguments for {tool.name} ({where}: {exc.message}). "
            f"Expected schema: {json.dumps(tool.input_schema, ensure_ascii=False)}"
        )
    return None


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        (lookup, {}),
        (lookup, {"path": 3}),
        (lookup, {"path": "x", "limit": "many"}),
        (lookup, {"path": "x", "extra": 1}),
        (lookup, {"limit": "x", "extra": 1}),  # several errors: best_match picks the same one
        (NESTED, {"items": [1, -2, "x"]}),
        (NESTED, {"items": [], "kind": "c", "opt": 1.5}),
        (NESTED, {"items": "no", "kind": "z", "more": 1}),
    ],
)
def test_tool_argument_errors_unchanged(tool: Tool, args: dict[str, Any]) -> None:
    registry = ToolRegistry([tool])
    expected = old_message(tool, args)
    assert expected is not None
    result = asyncio.run(registry.execute(tool.name, args))
    assert not result.ok
    assert result.content == expected


def test_tool_validator_is_built_once(monkeypatch: pytest.MonkeyPatch) -> None:
    registry = ToolRegistry([lookup, NESTED])

    def never(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("jsonschema.validate must not run for a valid schema")

    monkeypatch.setattr(jsonschema, "validate", never)
    monkeypatch.setattr(type(registry._validators["lookup"][1]), "check_schema", never)
    for i in range(3):
        assert asyncio.run(registry.execute("lookup", {"path": f"p{i}"})).ok
        assert asyncio.run(registry.execute("nested", {"items": [i]})).ok


def test_invalid_schema_reported_as_before() -> None:
    broken = Tool("broken", "bad schema", {"type": "no-such-type"}, lambda **kwargs: "ran")
    registry = ToolRegistry([broken])
    result = asyncio.run(registry.execute("broken", {}))
    with pytest.raises(jsonschema.SchemaError) as raised:
        jsonschema.validate({}, broken.input_schema)
    assert not result.ok
    assert result.content == f"Error: broken raised SchemaError: {raised.value}"


def test_replaced_tool_gets_its_own_validator() -> None:
    registry = ToolRegistry([lookup])
    strict = Tool(
        "lookup",
        "strict",
        {"type": "object", "properties": {"path": {"type": "integer"}}, "required": ["path"]},
        lambda path: f"n{path}",
    )
    assert asyncio.run(registry.execute("lookup", {"path": "x"})).ok
    registry.add(strict)
    assert not asyncio.run(registry.execute("lookup", {"path": "x"})).ok
    assert asyncio.run(registry.execute("lookup", {"path": 2})).content == "n2"
    registry._tools["lookup"] = lookup  # replaced behind add's back: the cache notices
    assert asyncio.run(registry.execute("lookup", {"path": "x"})).ok


# --- through the context manager: compactions and a resume ------------------------------------


def test_context_path_with_compactions_and_resume_matches_full_checks() -> None:
    """The agent's per-turn path (prepare, request, record_response, appends) over a history
    that compacts several times and is restored from its dicts half-way: the prefix shares, the
    calibration estimates and every validator verdict equal a full recomputation."""
    from tinyharness.context.config import ContextConfig
    from tinyharness.context.manager import build_context

    context = build_context(ContextConfig("default", window=4000, ratio=0.7, keep_recent=2))
    validator = RequestValidator()
    requests: list[ModelRequest] = []
    estimates: list[int] = []
    calibrate = context.accountant._calibrate

    def spy(messages_raw: int, reported: int) -> None:
        estimates.append(messages_raw)
        calibrate(messages_raw, reported)

    context.accountant._calibrate = spy  # type: ignore[method-assign]

    async def call_model(request: ModelRequest) -> ModelResponse:  # the compaction's calls
        validator.check(request.messages, purpose=request.purpose)
        return ModelResponse(Message.assistant("summary of the work so far"), "end_turn", Usage(50, 10))

    async def run() -> None:
        messages = [Message.user("Read every module and note what it does.")]
        for turn in range(60):
            if turn == 30:  # resumed from a checkpoint: equal copies, none the same object
                messages = messages_from_dicts(messages_to_dicts(messages))
            messages = await context.prepare("sys", messages, call_model)
            request = ModelRequest(tuple(messages), "sys", purpose="agent")
            assert verdict(partial(validator.check, request.messages)) is None
            validate_messages(request.messages)
            call = ToolUseBlock(f"c{turn}", "read_file", {"path": f"m{turn}.py"})
            reply = Message("assistant", (TextBlock(f"reading {turn}"), call))
            response = ModelResponse(reply, "tool_use", Usage(context.accountant.window_estimate + 7, 20))
            context.record_response(request, response)
            requests.append(request)
            messages.append(reply)
            context.record_appended([reply])
            messages.append(Message("user", (ToolResultBlock(f"c{turn}", f"code {turn} " * 60),)))
            context.record_appended(messages[-1:])

    asyncio.run(run())
    assert context.compactions >= 3
    reference = FullPrefixTracker()
    assert context.prefix.shares == [reference.observe(r.system, r.messages) for r in requests]
    counter = context.accountant.raw.counter
    assert estimates == [sum(counter.count_message(m) for m in r.messages) for r in requests]


# --- the agent's Transcript: a list that knows it only grew -----------------------------------

IN_PLACE = st.one_of(
    GROW,
    GROW,
    GROW,
    st.tuples(st.just("extend"), st.integers(1, 3)),
    st.tuples(st.just("setitem"), st.integers(0, 40), random_messages()),
    st.tuples(st.just("delete"), st.integers(0, 40)),
    st.tuples(st.just("insert"), st.integers(0, 40), random_messages()),
    st.tuples(st.just("pop"), st.just(0)),
    st.tuples(st.just("pop_append"), st.just(0)),  # same length again, last message another
    st.tuples(st.just("clear_extend"), st.just(0)),  # the same objects back, a rewrite all the same
    st.tuples(st.just("reverse"), st.just(0)),
    st.tuples(st.just("slice"), st.integers(0, 40)),  # t[i:] = [...]
    st.tuples(st.just("times"), st.just(2)),  # t *= 2
    st.tuples(st.just("compact"), st.integers(0, 6)),  # the agent assigns a new list
    st.tuples(st.just("snapshot"), st.just(0)),  # a snapshot with no change in between
)


def edit_in_place(transcript: Transcript, edit: tuple[Any, ...], counter: list[int]) -> Transcript:
    """``edit`` done on ``transcript`` itself with a list method (or, for a compaction, a new
    Transcript, as the agent's setter makes one)."""
    kind, size = edit[0], len(transcript)
    if kind == "grow":
        for _ in range(edit[1]):
            counter[0] += 1
            transcript.append(valid_next(transcript, counter[0]))
    elif kind == "extend":
        counter[0] += 1
        transcript += [Message.user(f"more {counter[0]}") for _ in range(edit[1])]
    elif kind == "setitem" and size:
        transcript[edit[1] % size] = edit[2]
    elif kind == "delete" and size:
        del transcript[edit[1] % size]
    elif kind == "insert":
        transcript.insert(edit[1] % (size + 1), edit[2])
    elif kind == "pop" and size:
        transcript.pop()
    elif kind == "pop_append" and size:
        transcript.pop()
        counter[0] += 1
        transcript.append(Message.user(f"instead {counter[0]}"))
    elif kind == "clear_extend":
        kept = list(transcript)
        transcript.clear()
        transcript.extend(kept)
    elif kind == "reverse":
        transcript.reverse()
    elif kind == "slice":
        counter[0] += 1
        transcript[edit[1] % (size + 1) :] = [Message.user(f"cut {counter[0]}")]
    elif kind == "times":
        transcript *= edit[1]
    elif kind == "compact":
        counter[0] += 1
        tail = list(transcript[size - edit[1] :]) if edit[1] else []
        transcript = Transcript([Message.user(f"task, summary {counter[0]}"), *tail])
    return transcript


def walk(old: Sequence[object], new: Sequence[object]) -> int:
    """The identity prefix the slow way."""
    keep = 0
    while keep < min(len(old), len(new)) and old[keep] is new[keep]:
        keep += 1
    return keep


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=st.lists(IN_PLACE, min_size=1, max_size=40))
def test_transcript_snapshots_share_exactly_the_identity_prefix(steps: list[tuple[Any, ...]]) -> None:
    """Whatever list methods change a Transcript, the prefix known without a walk between any
    two of its snapshots (and those of the Transcripts that replace it) is the walked one, and
    the per-turn checks fed with the snapshots give what a full recheck gives."""
    transcript = Transcript([Message.user("task")])
    counter = [0]
    snapshots = [transcript.snapshot()]
    validator, tracker, reference = RequestValidator(), PrefixTracker(), FullPrefixTracker()
    for edit in steps:
        transcript = edit_in_place(transcript, edit, counter)
        snapshot = transcript.snapshot()
        assert snapshot == tuple(transcript)
        for old in snapshots[-(MAX_SNAPSHOTS - 1) :]:
            assert identical_prefix(old, snapshot) == walk(old, snapshot), edit
            known = known_prefix(old, snapshot)
            assert known is None or known == walk(old, snapshot), edit
        assert verdict(partial(validator.check, snapshot)) == verdict(partial(validate_messages, snapshot))
        assert tracker.observe("sys", snapshot) == reference.observe("sys", snapshot)
        snapshots.append(snapshot)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=st.lists(IN_PLACE, min_size=1, max_size=40), probe=st.integers(-50, 50))
def test_a_snapshot_stays_the_tuple_it_was_taken_as(steps: list[tuple[Any, ...]], probe: int) -> None:
    """A snapshot is taken in O(1) over the Transcript's own list: whatever list methods change
    the Transcript afterwards, every snapshot still reads as the tuple of the messages at the
    time it was taken (length, items, slices, iteration, equality, hash, pickling)."""
    transcript = Transcript([Message.user("task")])
    counter = [0]
    taken: list[tuple[Snapshot, tuple[Message, ...]]] = []
    for edit in steps:
        transcript = edit_in_place(transcript, edit, counter)
        snapshot = transcript.snapshot()
        taken.append((snapshot, tuple(transcript)))
        for old, expected in taken:
            assert len(old) == len(expected) and tuple(old) == expected and old == expected
            assert list(reversed(old)) == list(reversed(expected))
            assert old[probe : probe // 2 or None] == expected[probe : probe // 2 or None]
            assert old[::-2] == expected[::-2] and old[1::3] == expected[1::3]
            if -len(expected) <= probe < len(expected):
                assert old[probe] is expected[probe]
            else:
                with pytest.raises(IndexError):
                    old[probe]
    last, expected = taken[-1]
    assert pickle.loads(pickle.dumps(last)) == expected
    try:
        hashed = hash(expected)
    except TypeError:  # tool input is a dict: neither hashes
        with pytest.raises(TypeError):
            hash(last)
    else:
        assert hash(last) == hashed


def test_transcript_growth_is_known_without_a_walk() -> None:
    transcript = Transcript([Message.user("task")])
    first = transcript.snapshot()
    assert transcript.snapshot() is first  # nothing changed: the same tuple
    transcript.append(Message.assistant("a"))
    transcript.extend([Message.user("b")])
    second = transcript.snapshot()
    assert known_prefix(first, second) == 1 and known_prefix(second, first) == 1
    epoch = transcript.epoch
    transcript[-1] = Message.user("c")  # a rewrite: a new epoch, nothing known
    assert transcript.epoch != epoch
    assert known_prefix(second, transcript.snapshot()) is None
    copied = copy.copy(transcript)
    assert isinstance(copied, Transcript) and copied.epoch != transcript.epoch
    assert known_prefix(copied.snapshot(), transcript.snapshot()) is None


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=st.lists(st.tuples(IN_PLACE, st.sampled_from([0, 0, 1, 2])), min_size=1, max_size=25))
def test_session_saves_of_a_transcript_load_back_exactly(
    tmp_path_factory: pytest.TempPathFactory, steps: list[tuple[tuple[Any, ...], int]]
) -> None:
    """A session saved after any edits of the agent's Transcript (saved once, several times or
    not at all between edits) loads back as exactly the last saved history."""
    from tinyharness.session import SessionStore

    with SessionStore(tmp_path_factory.mktemp("s") / "runs.sessions.db") as store:
        session = store.open("s")
        transcript = Transcript([Message.user("task")])
        counter = [0]
        saved: list[Message] = []
        for edit, saves in steps:
            transcript = edit_in_place(transcript, edit, counter)
            for n in range(saves):
                session.save(transcript, {"n": n})
                saved = list(transcript)
        if saved:
            loaded = SessionStore(store.path).open("s").load()
            assert loaded is not None
            assert messages_to_dicts(loaded.messages) == messages_to_dicts(saved)


def test_snapshots_kept_alive_past_the_pruning_all_keep_what_they_saw() -> None:
    """Views are pruned only when their list doubled: none that is alive may be lost, or a
    rewrite would leave it reading the changed list."""
    transcript = Transcript([Message.user("start")])
    kept = []
    for i in range(300):
        transcript.append(Message.assistant(f"step {i}"))
        kept.append(transcript.snapshot())
        if i % 3 == 0:
            transcript.snapshot()  # the same snapshot again while nothing changed
    expected = [tuple(snap) for snap in kept]
    transcript[0] = Message.user("rewritten")
    transcript.clear()
    assert [tuple(snap) for snap in kept] == expected


def test_tool_specs_are_reused_until_a_tool_changes() -> None:
    """Every request carries the specs; they are the same objects while the tools are, and new
    ones as soon as a tool is added, removed or replaced (by ``add`` or behind its back)."""
    registry = ToolRegistry([lookup])
    first = registry.specs
    assert registry.specs is first
    strict = Tool("lookup", "strict", {"type": "object", "properties": {}}, lambda: "s")
    registry.add(strict)
    assert registry.specs != first and registry.specs[0].description == "strict"
    registry._tools["lookup"] = lookup
    assert registry.specs == first
    registry.remove("lookup")
    assert registry.specs == ()

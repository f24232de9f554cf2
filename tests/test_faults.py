"""Many scripted runs under injected model faults, through the real Agent, a real
ContextManager and the builtin tools in a temporary workspace.

Each run draws its own script (tool turns with parallel calls, notes, writes, reads) and its own
fault pattern from a seed. Whatever happens, every run must end with a stated reason (a known
stop code and a ``run_end`` event), no request may ever break the request validator, and every
tool call in the final history must have its result. Size: 200 runs, times
``TINYHARNESS_SUITE_SCALE``.
"""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from hardening_support import (
    KNOWN_STOPS,
    ValidatingModel,
    answer,
    scaled,
    tool_turn,
    unanswered_tool_calls,
)
from tinyharness.agent import Agent, AgentConfig
from tinyharness.context.config import ContextConfig
from tinyharness.context.manager import build_context
from tinyharness.errors import ContextLengthExceeded, ModelError, ModelTimeout
from tinyharness.events import EventBus, ListSink
from tinyharness.messages import Message
from tinyharness.models.base import ModelRequest
from tinyharness.models.faults import ERROR_KINDS, FAULT_KINDS, FaultyModel
from tinyharness.models.scripted import ScriptedModel
from tinyharness.tools.builtin import builtin_tools
from tinyharness.tools.notes import NotesFile
from tinyharness.tools.permissions import Permissions

RUNS = scaled(200)
STRATEGIES = [None, "summarize", "restart", "clear-tool-results,summarize", "sliding-window"]


def _calls(rng: random.Random, turn: int) -> list[tuple[str, str, Any]]:
    menu: list[tuple[str, Any]] = [
        ("read_file", {"path": f"data/f{rng.randrange(4)}.txt"}),
        ("read_file", {"path": "README.md", "start_line": 1, "end_line": 3}),
        ("list_dir", {"path": "."}),
        ("grep", {"pattern": "fact", "path": "data"}),
        ("calculator", {"expression": f"{turn} * 7 + 2**10"}),
        ("note", {"text": f"fact from turn {turn}"}),
        ("write_file", {"path": f"out/t{turn}.txt", "content": f"turn {turn}\n" * 20}),
        ("edit_file", {"path": "README.md", "old": "demo", "new": "demo"}),  # a tool error
        ("current_time", {}),
    ]
    picks = rng.sample(menu, rng.choice([1, 1, 2, 3]))
    return [(f"c{turn}_{i}", name, args) for i, (name, args) in enumerate(picks)]


def make_script(rng: random.Random, seed: int) -> list[dict[str, Any]]:
    turns = rng.randint(2, 9)
    script = [tool_turn(*_calls(rng, t)) for t in range(turns)]
    script.append(answer(f"done {seed}"))
    script += [answer(f"summary {i} of run {seed}: read files, noted facts", "compact") for i in range(30)]
    return script


def make_workspace(root: Path) -> Path:
    (root / "data").mkdir(parents=True)
    (root / "README.md").write_text("# demo\nA tiny demo project.\nThird line.\n", encoding="utf-8")
    for i in range(4):
        body = "".join(f"fact {i}.{j}: value {j * i}\n" for j in range(120))
        (root / "data" / f"f{i}.txt").write_text(body, encoding="utf-8")
    return root


@dataclass
class Outcome:
    stop: str
    final: str
    events: ListSink
    messages: list[Message]
    faults: FaultyModel
    checked: ValidatingModel


def faulty_run(root: Path, seed: int, rate: float, kinds: tuple[str, ...] = FAULT_KINDS) -> Outcome:
    rng = random.Random(seed)
    workspace = make_workspace(root)
    sink = ListSink()
    bus = EventBus([sink])
    faults = FaultyModel(ScriptedModel({"responses": make_script(rng, seed)}), rate, seed, kinds)
    checked = ValidatingModel(faults)
    notes = NotesFile(workspace / "NOTES.md")
    context = build_context(
        ContextConfig(
            rng.choice(STRATEGIES),
            window=rng.choice([1500, 2500, 6000]),
            notes_path=workspace / "NOTES.md",
            workspace=workspace,
            keep_recent=rng.choice([1, 2, 4]),
        ),
        events=bus,
    )
    tools = builtin_tools(workspace, notes=notes, permissions=Permissions(allow_write=True), timeout=5)
    agent = Agent(
        checked,
        tools,
        context=context,
        events=bus,
        config=AgentConfig(max_iterations=rng.choice([6, 12, 30]), token_budget=rng.choice([None, 3000])),
    )
    result = agent.run("Read the data files and note one fact about each.")
    return Outcome(result.stop, result.final, sink, result.messages, faults, checked)


def check_invariants(outcome: Outcome, seed: int) -> None:
    where = f"seed {seed}, faults {outcome.faults.injected}"
    assert outcome.stop in KNOWN_STOPS, where
    ends = outcome.events.of_type("run_end")
    assert len(ends) == 1 and ends[0]["stop"] == outcome.stop, where
    assert outcome.events.events[-1]["type"] == "run_end", where
    assert outcome.checked.violations == [], where
    assert unanswered_tool_calls(outcome.messages) == [], where
    calls = {e["call_id"] for e in outcome.events.of_type("tool_call")}
    results = {e["call_id"] for e in outcome.events.of_type("tool_result")}
    assert calls == results, where
    if outcome.stop != "end_turn":
        errors = outcome.events.of_type("error")
        assert errors and errors[0]["message"], where  # a stated reason, not a silent stop
    if outcome.stop == "error":
        assert outcome.faults.injected, where
        assert outcome.faults.injected[-1].kind in ERROR_KINDS, where


def test_many_runs_under_faults_end_with_a_reason_and_break_no_invariant(tmp_path: Path) -> None:
    stops: Counter[str] = Counter()
    kinds: Counter[str] = Counter()
    for seed in range(RUNS):
        outcome = faulty_run(
            tmp_path / f"run{seed}", seed, rate=random.Random(-seed).choice([0.1, 0.2, 0.35])
        )
        check_invariants(outcome, seed)
        stops[outcome.stop] += 1
        kinds.update(outcome.faults.counts())
    # The suite really exercised what it claims to.
    assert set(kinds) == set(FAULT_KINDS), kinds
    assert stops["end_turn"] > 0 and stops["error"] > 0, stops


def test_malformed_responses_alone_never_stop_a_run_early(tmp_path: Path) -> None:
    """Bad JSON arguments, unknown tools and cut-off replies become error results the model
    reads; the run still reaches the scripted final answer."""
    kinds = ("bad_json", "unknown_tool")
    for seed in range(scaled(20)):
        outcome = faulty_run(tmp_path / f"run{seed}", seed, rate=0.3, kinds=kinds)
        check_invariants(outcome, seed)
        if outcome.stop == "end_turn":
            assert outcome.final == f"done {seed}"
        else:  # the extra turns can only run into the iteration or token limits
            assert outcome.stop in {"max_iterations", "token_budget", "stuck"}, outcome.stop


def test_repeated_cut_offs_stop_the_run_with_max_tokens_and_a_valid_history(tmp_path: Path) -> None:
    outcome = faulty_run(tmp_path / "ws", 1, rate=1.0, kinds=("cut_off",))
    check_invariants(outcome, 1)
    assert outcome.stop == "max_tokens"


def test_context_length_on_every_request_stops_with_context_overflow(tmp_path: Path) -> None:
    outcome = faulty_run(tmp_path / "ws", 2, rate=1.0, kinds=("context_length",))
    check_invariants(outcome, 2)
    assert outcome.stop == "context_overflow"


@pytest.mark.parametrize(
    ("kind", "error"),
    [
        ("rate_limit", ModelError),
        ("server_error", ModelError),
        ("connection", ModelError),
        ("timeout", ModelTimeout),
        ("context_length", ContextLengthExceeded),
    ],
)
def test_error_kinds_raise_the_adapters_typed_errors(kind: str, error: type[Exception]) -> None:
    inner = ScriptedModel({"responses": [answer("never served", None)]})
    model = FaultyModel(inner, 1.0, 0, (kind,))
    with pytest.raises(error) as raised:
        asyncio.run(model.complete(ModelRequest((Message.user("hi"),))))
    assert type(raised.value) is error
    assert inner.unused() == 1  # a fault does not consume the inner model's response


def test_fault_pattern_depends_only_on_the_seed() -> None:
    def pattern(seed: int) -> list[tuple[int, str]]:
        inner = ScriptedModel({"responses": [answer(str(i), None) for i in range(50)]})
        model = FaultyModel(inner, 0.3, seed, ("empty", "unknown_tool"))
        for _ in range(50):
            asyncio.run(model.complete(ModelRequest((Message.user("hi"),))))
        return [(f.request, f.kind) for f in model.injected]

    assert pattern(7) == pattern(7) != pattern(8)
    assert 5 < len(pattern(7)) < 30


def test_bad_rates_and_kinds_are_refused() -> None:
    inner = ScriptedModel({"responses": []})
    with pytest.raises(ValueError):
        FaultyModel(inner, 1.5, 0)
    with pytest.raises(ValueError):
        FaultyModel(inner, 0.5, 0, ("meteor",))

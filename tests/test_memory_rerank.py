"""The optional model reranker: one request per recall, the model's order first, nothing lost
when its answer is unreadable."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from memory_conftest import *  # noqa: F403 - fixtures memory_store, memory_backend
from tinyharness.memory import MemoryManager, Scope
from tinyharness.memory.base import MemoryStore
from tinyharness.memory.rerank import ModelReranker, chosen_numbers
from tinyharness.models.scripted import ScriptedModel


def scripted(*texts: str) -> ScriptedModel:
    return ScriptedModel(
        {"responses": [{"stop_reason": "end_turn", "content": [{"type": "text", "text": t}]} for t in texts]}
    )


@pytest.mark.parametrize(
    ("text", "numbers"),
    [
        ('{"best": [3, 1]}', [3, 1]),
        ('```json\n{"best": [2, 2, 9, 0, true, "1", 1]}\n```', [2, 1]),
        ("[4]", [4]),
        ("I think the third one", []),
    ],
)
def test_chosen_numbers(text: str, numbers: list[int]) -> None:
    assert chosen_numbers(text, 4) == numbers


def test_recall_puts_the_models_choice_first(memory_store: MemoryStore) -> None:
    for text in ("tea note one", "tea note two", "tea note three"):
        memory_store.add(text, Scope("alice"))
    model = scripted(json.dumps({"best": [3]}))
    manager = MemoryManager(memory_store, reranker=ModelReranker(model.complete, depth=3))
    baseline = [h.item.content for h in memory_store.search("tea note", Scope("alice"), limit=3)]
    recalled = asyncio.run(manager.recall("tea note", Scope("alice"), limit=2))
    assert [i.content for i in recalled] == [baseline[2], baseline[0]]
    request = model.requests[0]
    assert request.purpose == "memory" and all(f"[{n}]" in request.messages[0].text for n in (1, 2, 3))


def test_an_unreadable_answer_keeps_the_store_order(memory_store: MemoryStore) -> None:
    for text in ("coffee one", "coffee two"):
        memory_store.add(text, Scope("alice"))
    manager = MemoryManager(memory_store, reranker=ModelReranker(scripted("no idea").complete))
    baseline = [h.item.content for h in memory_store.search("coffee", Scope("alice"), limit=2)]
    recalled: Any = asyncio.run(manager.recall("coffee", Scope("alice"), limit=2))
    assert [i.content for i in recalled] == baseline

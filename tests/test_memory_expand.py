"""The optional query expansion: a model's hypothetical answer is searched beside the question,
the two rankings fused; an empty answer leaves the question's own ranking."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from memory_conftest import *  # noqa: F403 - fixtures memory_store, memory_backend
from tinyharness.memory import Scope
from tinyharness.memory.base import MemoryStore
from tinyharness.memory.expand import QueryExpander
from tinyharness.memory.sqlite_store import SQLiteStore
from tinyharness.models.scripted import ScriptedModel

QUESTION = "What hobbies does Ann have?"
MEMORIES = [
    "Ann: Went camping with the kids by the lake last weekend!",
    "Ann: Do you have hobbies? I never know what to say.",
    "Bob: Ann, what hobbies do you have these days?",
    "Bob: The lake was cold.",
]


def scripted(*texts: str) -> ScriptedModel:
    return ScriptedModel(
        {"responses": [{"stop_reason": "end_turn", "content": [{"type": "text", "text": t}]} for t in texts]}
    )


def test_the_hypothetical_answer_finds_what_the_question_misses(memory_store: MemoryStore) -> None:
    for text in MEMORIES:
        memory_store.add(text, Scope("u"))
    plain = [h.item.content for h in memory_store.search(QUESTION, Scope("u"), limit=2)]
    assert MEMORIES[0] not in plain  # shares no word with the question
    model = scripted("I love camping with my kids!")
    expander = QueryExpander(model.complete)
    found = [h.item.content for h in asyncio.run(expander.search(memory_store, QUESTION, Scope("u"), 2))]
    assert MEMORIES[0] in found and plain[0] in found  # both rankings count
    request = model.requests[0]
    assert request.purpose == "memory" and QUESTION in request.messages[0].text


def test_an_empty_answer_keeps_the_questions_ranking(memory_store: MemoryStore) -> None:
    for text in MEMORIES:
        memory_store.add(text, Scope("u"))
    plain = [h.item.id for h in memory_store.search(QUESTION, Scope("u"), limit=3)]
    expander = QueryExpander(scripted("  ").complete)
    found = [h.item.id for h in asyncio.run(expander.search(memory_store, QUESTION, Scope("u"), 3))]
    assert found == plain


def _scripted_file(path: Path, text: str) -> Path:
    path.write_text(
        json.dumps({"responses": [{"stop_reason": "end_turn", "content": [{"type": "text", "text": text}]}]}),
        encoding="utf-8",
    )
    return path


def test_cli_search_expand(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``memory search --expand MODEL`` searches with the model's answer too."""
    from tinyharness.cli import main

    db = str(tmp_path / "m.db")
    store = SQLiteStore(db)
    for text in MEMORIES:
        store.add(text, Scope("alice"))
    store.close()
    argv = ["memory", "search", QUESTION, "--memory", db, "--embedder", "none", "--user", "alice", "--json"]
    assert main([*argv, "--limit", "2"]) == 0
    assert MEMORIES[0] not in [hit["content"] for hit in json.loads(capsys.readouterr().out)]
    model = _scripted_file(tmp_path / "expand.json", "Camping with my kids, always.")
    assert main([*argv, "--limit", "2", "--expand", f"scripted:{model}"]) == 0
    assert MEMORIES[0] in [hit["content"] for hit in json.loads(capsys.readouterr().out)]


def test_cli_search_expand_bad_model_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tinyharness.cli import main

    db = str(tmp_path / "m.db")
    assert (
        main(["memory", "search", "tea", "--memory", db, "--embedder", "none", "--expand", "nonsense:x"]) == 2
    )
    err = capsys.readouterr().err
    assert "--expand: unknown model" in err and err.count("\n") == 1

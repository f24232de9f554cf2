"""The memory benchmark runs in its small size and prints its tables."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench" / "memory_bench.py"


def test_small_memory_bench_runs() -> None:
    module = _load_bench()
    report = module.main(["--small", "--parts", "scale,chinese,locomo,code"])
    assert "\nsqlite          2000 " in report
    section = report.split("## chinese set", 1)[1]  # the last part printed
    chinese = [line for line in section.splitlines() if line.startswith("sqlite     fts-only")]
    assert chinese and float(chinese[-1].split()[3]) >= 0.7  # recall@5 of full-text alone on the Chinese set
    if module.LOCOMO.exists():
        assert "through the public import" in report and "check" in report
    else:
        assert "locomo: skipped" in report
    code = report.split("## code history", 1)[1].split("##", 1)[0]
    assert "no git history" in code or "sqlite     fts-only" in code


def _load_bench() -> Any:
    spec = importlib.util.spec_from_file_location("memory_bench", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["memory_bench"] = module
    spec.loader.exec_module(module)
    return module


def _dialogue(number: int) -> dict[str, Any]:
    """A LoCoMo-shaped dialogue: eight turns about a boat, the last one answering the question."""
    turns = [
        {"speaker": "Ann", "dia_id": f"D1:{i}", "text": f"The boat trip number {i} was fun."}
        for i in range(1, 8)
    ]
    turns.append({"speaker": "Ann", "dia_id": "D1:8", "text": "My boat is painted red."})
    return {
        "sample_id": f"conv-{number}",
        "conversation": {"session_1": turns, "session_1_date_time": "1:56 pm on 8 May, 2023"},
        "qa": [{"question": "What colour is Ann's boat?", "evidence": ["D1:8"], "category": 4}],
    }


def test_rerank_part_scores_the_store_and_the_model_on_the_same_check_questions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The rerank part asks the check half's questions (dialogues 3-4), one model request each
    after a warm-up, reports both orders on the same questions with the model's tokens, and counts
    the questions whose top 5 the model changed (here: it names the last candidates first)."""
    module = _load_bench()
    locomo = tmp_path / "locomo.json"
    locomo.write_text(json.dumps([_dialogue(n) for n in range(5)]), encoding="utf-8")
    reversed_order = json.dumps({"best": [8, 7, 6, 5, 4]})
    script = {
        "responses": [
            {
                "stop_reason": "end_turn",
                "content": [{"type": "text", "text": text}],
                "usage": {"input_tokens": 10, "output_tokens": 2},
            }
            for text in ["OK", reversed_order, reversed_order]
        ]
    }
    model = tmp_path / "model.json"
    model.write_text(json.dumps(script), encoding="utf-8")
    rows = module.bench_rerank({"fts-only": None}, locomo, tmp_path, 10, [f"scripted:{model}"])
    assert [(name, count) for name, _, _, _, count in rows] == [
        ("store alone", 2),
        (f"store + scripted:{model} top 20", 2),
    ]
    assert rows[1][3] == 12  # model tokens per question: one request each
    assert "top 5 changed in 2 of 2, unreadable answers 0" in capsys.readouterr().out


def test_expand_part_scores_the_store_and_the_expansion_on_the_same_questions(tmp_path: Path) -> None:
    """The expand part asks one half's questions, each searched by the store alone and with the
    model's hypothetical answer (one request each after a warm-up). Here the question's words
    ("colour") are in no turn, and the answer names the boat's paint: only the expansion finds it."""
    module = _load_bench()
    dialogues = [_dialogue(n) for n in range(5)]
    for dialogue in dialogues:
        dialogue["qa"][0]["question"] = "Which colour is it?"
    locomo = tmp_path / "locomo.json"
    locomo.write_text(json.dumps(dialogues), encoding="utf-8")
    answers = ["OK", "My boat is painted red.", "My boat is painted red."]
    script = {
        "responses": [{"stop_reason": "end_turn", "content": [{"type": "text", "text": t}]} for t in answers]
    }
    model = tmp_path / "model.json"
    model.write_text(json.dumps(script), encoding="utf-8")
    plain, expanded = module.bench_expand(
        {"fts-only": None}, locomo, tmp_path, f"scripted:{model}", "check", {4}
    )
    assert (plain.count(), expanded.count()) == (2, 2)
    assert plain.mean() == 0.0 and expanded.mean() == 1.0

"""Token counters: seed 000's chars/4, the CJK-honest estimate against a real BPE tokenizer,
usage correction, and the per-message cache that makes counting incremental."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tinyharness.context.tokens import (
    CachedCounter,
    CalibratedCounter,
    Chars4Counter,
    HeuristicCounter,
    TiktokenCounter,
    make_counter,
    offline_encoding,
)
from tinyharness.messages import Message, ToolResultBlock, ToolUseBlock

CHINESE = (
    "上下文工程的核心是把有限的注意力花在刀刃上。每一轮该让模型看到什么，永远是一个要不断权衡的"
    "工程判断。压缩是被动的、事后的，它总结的是触发那一刻窗口里还剩什么；笔记是主动的、随写随存的"
    "补丁。新窗口醒来时手里有两份材料：模型自己总结的摘要，和代理亲手写下的笔记。"
) * 3
JAPANESE = (
    "コンテキストウィンドウは有限の資源です。エージェントは重要な決定をノートに書き、"
    "圧縮の後でそれを読み戻します。長いタスクでも目標を忘れずに作業を続けられます。"
) * 3
KOREAN = (
    "컨텍스트 창은 한정된 자원입니다. 에이전트는 중요한 결정을 노트에 기록하고 압축 후에 "
    "다시 읽어 들입니다. 긴 작업에서도 목표를 잊지 않고 계속 진행할 수 있습니다."
) * 3
ENGLISH = (
    "The harness keeps a running count of the tokens in the window. When the count crosses the "
    "threshold, the middle of the conversation is summarized and the recent rounds are kept."
) * 3
CODE = (
    "def apply(order, ledger):\n    if order.version != ledger.version(order.id):\n"
    "        raise ConflictError(f'order {order.id} changed')\n    return ledger.save(order)\n"
) * 4

SAMPLES = {"zh": CHINESE, "ja": JAPANESE, "ko": KOREAN, "en": ENGLISH, "code": CODE}


def test_chars4_is_seed_000_exactly() -> None:
    counter = Chars4Counter()
    assert counter.count_message(Message.user("x" * 41)) == 10
    message = Message("assistant", (ToolUseBlock("a", "read_file", {"path": "中文.py"}),))
    expected = '[{"type": "tool_use", "id": "a", "name": "read_file", "input": {"path": "中文.py"}}]'
    assert counter.count_message(message) == len(expected) // 4


@pytest.mark.parametrize("lang", ["zh", "ja", "ko"])
def test_heuristic_counts_cjk_about_one_token_per_character(lang: str) -> None:
    text = SAMPLES[lang]
    chars = sum(1 for ch in text if not ch.isspace())
    estimate = HeuristicCounter().count_text(text)
    assert 0.8 * chars <= estimate <= 1.4 * chars
    assert Chars4Counter().count_text(text) < 0.35 * estimate  # chars/4 is blind to CJK


@pytest.mark.skipif(offline_encoding() is None, reason="no offline BPE encoding installed")
@pytest.mark.parametrize("lang", sorted(SAMPLES))
@pytest.mark.parametrize(("profile", "encoding"), [("cl100k", "cl100k_base"), ("o200k", "o200k_base")])
def test_heuristic_is_honest_against_a_real_tokenizer(lang: str, profile: str, encoding: str) -> None:
    text = SAMPLES[lang]
    real = TiktokenCounter(encoding).count_text(text)
    estimate = HeuristicCounter(profile).count_text(text)
    assert abs(estimate - real) / real <= 0.3, (estimate, real)
    if lang in ("zh", "ja", "ko"):
        chars4 = Chars4Counter().count_text(text)
        assert abs(chars4 - real) / real >= 0.4  # what the estimate fixes


def test_calibration_follows_reported_usage_smoothly() -> None:
    counter = CalibratedCounter(HeuristicCounter())
    counter.observe(1000, 1500)
    assert counter.ratio == pytest.approx(1.5)
    counter.observe(1000, 1000)
    assert 1.0 < counter.ratio < 1.5  # one sample moves it, but not all the way
    counter.observe(0, 100)
    counter.observe(100, 0)
    assert counter.observations == 2  # missing usage is ignored
    counter.observe(10, 10_000)
    assert counter.ratio <= CalibratedCounter.HIGHEST
    counter.at_least(3.9)
    assert counter.ratio == pytest.approx(3.9)


def test_cache_counts_each_message_once() -> None:
    cached = CachedCounter(HeuristicCounter())
    history = [Message.user(f"message {i} about orders") for i in range(50)]
    first = cached.count_messages(history)
    assert cached.misses == 50
    assert cached.count_messages(history) == first
    assert cached.misses == 50
    equal_but_new = Message.user("message 0 about orders")
    cached.count_message(equal_but_new)
    assert cached.misses == 51  # identity, not equality: an equal message is a new entry


def test_cache_is_bounded() -> None:
    cached = CachedCounter(HeuristicCounter(), max_entries=10)
    for i in range(30):
        cached.count_message(Message.user(str(i)))
    assert len(cached._cache) == 10


def test_make_counter_choices() -> None:
    assert make_counter("chars4").name == "chars4"
    assert make_counter("auto").name.startswith("estimate")
    exact = make_counter("exact", exact=lambda text: len(text.split()))
    assert exact.count_message(Message("user", (ToolResultBlock("a", "one two three"),))) >= 3
    with pytest.raises(ValueError):
        make_counter("bogus")


@settings(max_examples=300, deadline=None)
@given(text=st.text(alphabet=st.sampled_from(list("ab Z9_-(){}\n\t  .,:;'\"é库存ｱ한\u00a0")), max_size=80))
def test_heuristic_ascii_shortcut_counts_as_the_full_passes(text: str) -> None:
    """An ASCII text skips the two non-ASCII passes; any text counts exactly as with all six."""
    from tinyharness.context import tokens

    for profile in tokens.PROFILES:
        counter = tokens.HeuristicCounter(profile)
        w = counter._w
        cjk = len(tokens._CJK.findall(text))
        other = len(tokens._NON_ASCII.findall(text)) - cjk
        digit_groups = sum((len(run) + 2) // 3 for run in tokens._DIGITS.findall(text))
        total = (
            w["cjk"] * cjk
            + w["word"] * len(tokens._WORD.findall(text))
            + w["digits"] * digit_groups
            + w["punct"] * len(tokens._PUNCT.findall(text))
            + w["indent"] * len(tokens._INDENT.findall(text))
            + w["other"] * other
        )
        assert counter.count_text(text) == (max(1, round(total)) if text else 0)


@settings(max_examples=500, deadline=None)
@given(
    text=st.text(alphabet=st.characters(max_codepoint=127), max_size=200)
    | st.text(alphabet=st.sampled_from(list("ab Z9 00 123\n\n  \t.,_-(")), max_size=200)
)
def test_heuristic_byte_tables_count_as_the_regular_expressions(text: str) -> None:
    """The byte-table counts of an ASCII text equal the four regular-expression passes, so the
    faster estimate is the same estimate (any ASCII character, and runs of digits, spaces after
    newlines and tabs, where the two could part)."""
    from tinyharness.context import tokens

    expected = (
        len(tokens._WORD.findall(text)),
        sum((len(run) + 2) // 3 for run in tokens._DIGITS.findall(text)),
        len(tokens._PUNCT.findall(text)),
        len(tokens._INDENT.findall(text)),
    )
    assert tokens._ascii_features(text) == expected

"""``bench.plan_probe``'s recording: a replay gives back each reply the model gave, and refuses a
request the recording does not hold (a replay that guessed would measure nothing)."""

from __future__ import annotations

import asyncio

import pytest
from bench.plan_probe import recording

from tinyharness.messages import Message, TextBlock
from tinyharness.models.base import ModelRequest, ModelResponse


def _request(text: str) -> ModelRequest:
    return ModelRequest(messages=(Message("user", (TextBlock(text),)),), system="s", purpose="plan")


def test_a_replay_gives_back_the_recorded_replies_and_refuses_others() -> None:
    asked: list[str] = []

    async def model(request: ModelRequest) -> ModelResponse:
        asked.append(request.messages[0].text)
        return ModelResponse(Message("assistant", (TextBlock(f"reply to {asked[-1]}"),)), "end_turn")

    replies: dict[str, str] = {}
    record = recording(model, replies)
    first = asyncio.run(record(_request("任务一")))
    asyncio.run(record(_request("task two")))
    assert first.message.text == "reply to 任务一" and len(replies) == 2

    replay = recording(None, dict(replies))
    again = asyncio.run(replay(_request("任务一")))
    assert again.message.text == "reply to 任务一"
    assert asked == ["任务一", "task two"]  # the replay asked no model
    with pytest.raises(KeyError):
        asyncio.run(replay(_request("task three")))

"""What a persisting sink writes of an event: every string redacted, the value made JSON. The
walk that skips the round trip through JSON text must give what the round trip gives."""

from __future__ import annotations

import enum
import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from tinyharness.events import (
    _NOT_PLAIN,
    _STRICT,
    _redacted_by_round_trip,
    _redacted_plain,
    redacted_event,
)

AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
strings = st.one_of(
    st.text(max_size=30),
    st.sampled_from(
        ["", "b12", "ok 3", f'aws_secret = "{AWS_SECRET}"', "mail me: ann@example.com", "\ud800x"]
    ),
)
scalars = st.one_of(
    strings,
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.none(),
)
plain_values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.lists(inner, max_size=4).map(tuple),
        st.dictionaries(strings, inner, max_size=4),
    ),
    max_leaves=20,
)


def _same(value: Any) -> None:
    encoded, plain = redacted_event(value)
    expected = _redacted_by_round_trip(value)
    assert encoded == _STRICT.encode(expected)
    assert json.dumps(plain) == json.dumps(expected)  # NaN-safe comparison of the two values
    assert _types(plain) == _types(expected)  # JSON types only: lists, never tuples


def _types(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _types(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return (type(value), [_types(item) for item in value])
    return type(value)


@given(plain_values)
def test_the_walk_gives_what_the_round_trip_gives(value: Any) -> None:
    assert _redacted_plain(value, 0) is not _NOT_PLAIN  # the walk is what ran
    _same(value)


class Level(enum.IntEnum):
    LOW = 1


class Name(enum.StrEnum):
    ANN = "ann@example.com"


def test_other_values_take_the_round_trip_and_come_out_the_same() -> None:
    odd: list[Any] = [
        {7: "int key", 2.5: "float key", False: "bool key", None: "null key"},
        {"level": Level.LOW, "name": Name.ANN, "set": {3}},
        [[[[[[[[]]]]]]]] * 3,
        {"deep": _nested(80)},
    ]
    for value in odd:
        _same(value)
    assert _redacted_plain(odd[0], 0) is _NOT_PLAIN and _redacted_plain(odd[1], 0) is _NOT_PLAIN


def test_secrets_in_keys_and_values_are_redacted() -> None:
    encoded, plain = redacted_event({"type": "tool_call", f"key {AWS_SECRET}": [f"x {AWS_SECRET}", (1, 2.0)]})
    assert AWS_SECRET not in encoded and AWS_SECRET not in json.dumps(plain)
    assert "[REDACTED" in encoded and "[1, 2.0]" in encoded


def _nested(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = {"next": value}
    return value

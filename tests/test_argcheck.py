"""The fast argument check (``tools.argcheck``) may only skip jsonschema where jsonschema would
find nothing wrong: over random plain schemas and random arguments, every argument set it
accepts, jsonschema accepts too; and it does accept the valid calls of the built-in tools'
schemas (else it would save nothing)."""

from __future__ import annotations

from typing import Any

import jsonschema
from hypothesis import given, settings
from hypothesis import strategies as st

from tinyharness.tools import builtin_tools
from tinyharness.tools.argcheck import plain_check

_TYPES = ["string", "integer", "number", "boolean", "array", "object", "null"]
_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=2), inner, max_size=2),
    max_leaves=6,
)


@st.composite
def _property(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.sampled_from(_TYPES))
    schema: dict[str, Any] = {"type": kind, "description": "x"}
    if kind == "array" and draw(st.booleans()):
        schema["items"] = {"type": draw(st.sampled_from(_TYPES))}
    if draw(st.integers(0, 9)) == 0:
        schema["minLength"] = 1  # a keyword the fast check does not know: it must stand aside
    return schema


@st.composite
def _schema(draw: st.DrawFn) -> dict[str, Any]:
    names = draw(st.lists(st.sampled_from(["a", "b", "c", "d"]), unique=True, max_size=4))
    schema: dict[str, Any] = {"type": "object", "properties": {name: draw(_property()) for name in names}}
    schema["required"] = draw(st.lists(st.sampled_from(["a", "b", "c", "d"]), unique=True, max_size=3))
    if draw(st.booleans()):
        schema["additionalProperties"] = draw(st.booleans())
    return schema


@settings(max_examples=400, deadline=None)
@given(_schema(), st.dictionaries(st.sampled_from(["a", "b", "c", "d", "e"]), _VALUES, max_size=5))
def test_what_the_fast_check_accepts_jsonschema_accepts(schema: dict[str, Any], args: dict[str, Any]) -> None:
    check = plain_check(schema)
    if check is not None and check(args):
        jsonschema.validate(args, schema)  # raises if the fast check let a wrong call through


@settings(max_examples=200, deadline=None)
@given(_schema(), st.dictionaries(st.sampled_from(["a", "b", "c", "d", "e"]), _VALUES, max_size=5))
def test_the_fast_check_accepts_plain_valid_calls(schema: dict[str, Any], args: dict[str, Any]) -> None:
    """Where jsonschema accepts, a plain schema's check accepts too unless a value is a float
    with an integer's value (jsonschema's integer) or a bool inside a number (never here)."""
    check = plain_check(schema)
    if check is None:
        return
    try:
        jsonschema.validate(args, schema)
    except jsonschema.ValidationError:
        return
    integral_floats = any(type(v) is float and v.is_integer() for v in args.values()) or any(
        type(x) is float and x.is_integer() for v in args.values() if type(v) is list for x in v
    )
    assert check(args) or integral_floats


def test_every_built_in_tool_gets_the_fast_check(tmp_path: Any) -> None:
    registry = builtin_tools(tmp_path, shell=True)
    plain = {tool.name for tool in registry._tools.values() if plain_check(tool.input_schema) is not None}
    assert plain == set(registry.names)
    read = plain_check(registry.get("read_file").input_schema)  # type: ignore[union-attr]
    assert read is not None
    assert read({"path": "a.py", "start_line": 3})
    assert not read({"path": "a.py", "start_line": True})  # a bool is no integer
    assert not read({"path": "a.py", "mystery": 1})  # additionalProperties: false
    assert not read({"start_line": 3})  # path is required

"""A fast check of a tool call's arguments against the plain schemas tools mostly have.

``jsonschema`` walks its keyword functions and builds an error iterator for every call (about
50 µs a call, most of a tool call's own cost in the loop). Most tool schemas are an object of
named properties, each a string, integer, number, boolean or array of one of those, with
``required`` and ``additionalProperties``. ``plain_check`` compiles such a schema into one
function that answers True only when jsonschema would find no error; any other schema gives
None, and a False answer means "ask jsonschema", which then gives its usual error.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["ArgsCheck", "plain_check"]

ArgsCheck = Callable[[dict[str, Any]], bool]

# Keywords that say nothing about validity (annotations only).
_ANNOTATIONS = frozenset({"description", "title", "default", "examples"})


def _is_integer(value: object) -> bool:
    return type(value) is int  # a bool is not an integer in JSON Schema


def _is_number(value: object) -> bool:
    return type(value) is int or type(value) is float


_SCALARS: dict[str, Callable[[object], bool]] = {
    "string": lambda value: type(value) is str,
    "integer": _is_integer,
    "number": _is_number,
    "boolean": lambda value: type(value) is bool,
}


def _property_check(schema: object) -> Callable[[object], bool] | None:
    if not isinstance(schema, dict) or not set(schema) - _ANNOTATIONS <= {"type", "items"}:
        return None
    kind = schema.get("type")
    if kind in _SCALARS and "items" not in schema:
        return _SCALARS[kind]
    if kind == "array":
        items = schema.get("items")
        if items is None:
            return lambda value: type(value) is list
        item = _property_check(items)
        if item is None or not isinstance(items, dict) or items.get("type") == "array":
            return None
        return lambda value: type(value) is list and all(map(item, value))
    return None


def plain_check(schema: dict[str, Any]) -> ArgsCheck | None:
    """A function true only for arguments ``schema`` accepts, or None when the schema is not
    of the plain shape (then every call goes to jsonschema)."""
    if schema.get("type") != "object" or not set(schema) - _ANNOTATIONS <= {
        "type",
        "properties",
        "required",
        "additionalProperties",
    }:
        return None
    properties = schema.get("properties", {})
    required = schema.get("required", [])
    extra = schema.get("additionalProperties", True)
    if not isinstance(properties, dict) or not isinstance(required, list) or type(extra) is not bool:
        return None
    if not all(type(name) is str for name in required):
        return None
    checks: dict[str, Callable[[object], bool]] = {}
    for name, sub in properties.items():
        check = _property_check(sub)
        if check is None:
            return None
        checks[name] = check
    needed = tuple(required)

    def valid(args: dict[str, Any]) -> bool:
        if type(args) is not dict:
            return False
        for name in needed:
            if name not in args:
                return False
        for name, value in args.items():
            check = checks.get(name)
            if check is None:
                if not extra:
                    return False
            elif not check(value):
                return False
        return True

    return valid

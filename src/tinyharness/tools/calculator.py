"""A calculator tool that evaluates arithmetic by walking the AST; eval/exec are never used.

Only numbers, the arithmetic operators, parentheses and a whitelist of math functions and
constants are accepted. Sizes are bounded before work is done (expression length, nesting
depth, integer size of powers and factorials), so an expression like ``10**10**10`` is refused
instead of freezing the process.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable
from typing import Any

from .base import ToolError

Number = int | float

MAX_EXPRESSION_CHARS = 1000
MAX_DEPTH = 100
MAX_INT_BITS = 12_000  # about 3600 digits: below Python's 4300-digit int-to-str limit
MAX_FACTORIAL = 1000
MAX_ROUND_DIGITS = 100

CONSTANTS: dict[str, float] = {"pi": math.pi, "e": math.e, "tau": math.tau}

_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
}


def _int_power_too_large(base: Number, exponent: Number) -> bool:
    """Integer powers are exact, so their size is known before computing them: at least
    (bit_length(base) - 1) * exponent bits."""
    if not (isinstance(base, int) and isinstance(exponent, int)) or exponent <= 0:
        return False
    return abs(base) > 1 and (abs(base).bit_length() - 1) * exponent > MAX_INT_BITS


def _power(base: Number, exponent: Number) -> Number:
    if _int_power_too_large(base, exponent):
        raise ToolError(f"{base} ** {exponent} is too large to compute")
    result: Number = operator.pow(base, exponent)
    if isinstance(result, complex):
        raise ToolError("a negative number to a fractional power has no real result")
    if isinstance(result, int) and result.bit_length() > MAX_INT_BITS:
        raise ToolError(f"{base} ** {exponent} is too large")
    return result


def _factorial(value: Number) -> int:
    if isinstance(value, float):
        if not value.is_integer():
            raise ToolError("factorial() needs a whole number")
        value = int(value)
    if value < 0:
        raise ToolError("factorial() needs a number that is not negative")
    if value > MAX_FACTORIAL:
        raise ToolError(f"factorial() is limited to n <= {MAX_FACTORIAL}")
    return math.factorial(value)


def _round(value: Number, digits: int | None = None) -> Number:
    if digits is None:
        return round(value)
    if not isinstance(digits, int) or abs(digits) > MAX_ROUND_DIGITS:
        raise ToolError(
            f"round() digits must be a whole number between -{MAX_ROUND_DIGITS} and {MAX_ROUND_DIGITS}"
        )
    return round(value, digits)


def _log(value: Number, base: Number | None = None) -> float:
    return math.log(value) if base is None else math.log(value, base)


FUNCTIONS: dict[str, Callable[..., Number]] = {
    "abs": abs,
    "round": _round,
    "min": min,
    "max": max,
    "pow": _power,
    "sqrt": math.sqrt,
    "cbrt": lambda x: math.copysign(abs(x) ** (1 / 3), x),
    "exp": math.exp,
    "log": _log,
    "ln": math.log,
    "log10": math.log10,
    "log2": math.log2,
    "sin": math.sin,
    "cos": math.cos,
    "tan": math.tan,
    "asin": math.asin,
    "acos": math.acos,
    "atan": math.atan,
    "atan2": math.atan2,
    "sinh": math.sinh,
    "cosh": math.cosh,
    "tanh": math.tanh,
    "hypot": math.hypot,
    "degrees": math.degrees,
    "radians": math.radians,
    "floor": math.floor,
    "ceil": math.ceil,
    "trunc": math.trunc,
    "factorial": _factorial,
    "gcd": math.gcd,
}


def calculator(expression: str) -> str:
    """Evaluate an arithmetic expression exactly and safely.

    Supports + - * / // % ** and parentheses, the constants pi, e and tau, and the functions
    sqrt, cbrt, exp, log (natural, or log(x, base)), log10, log2, sin, cos, tan, asin, acos,
    atan, atan2, sinh, cosh, tanh, hypot, degrees, radians, floor, ceil, trunc, round, abs,
    min, max, pow, factorial, gcd. Angles are in radians.

    Args:
        expression: The expression, e.g. "(12 + 8) * 3" or "sqrt(2) * sin(pi / 4)".
    """
    return format_number(evaluate(expression))


def evaluate(expression: str) -> Number:
    """The value of ``expression``, or ToolError saying what is wrong with it."""
    if not isinstance(expression, str) or not expression.strip():
        raise ToolError("expression is empty")
    if len(expression) > MAX_EXPRESSION_CHARS:
        raise ToolError(f"expression is longer than {MAX_EXPRESSION_CHARS} characters")
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except SyntaxError as exc:
        raise ToolError(f"cannot parse {_show(expression)}: {exc.msg}") from None
    except (RecursionError, MemoryError):
        raise ToolError("expression is too deeply nested or too large") from None
    except ValueError as exc:  # e.g. an integer literal beyond Python's digit limit
        raise ToolError(f"cannot parse {_show(expression)}: {exc}") from None
    _check_depth(tree)
    try:
        value = _evaluate(tree.body)
    except ZeroDivisionError:
        raise ToolError("division by zero") from None
    except OverflowError:
        raise ToolError("the result is too large") from None
    except (ValueError, TypeError) as exc:
        raise ToolError(f"cannot evaluate {_show(expression)}: {exc}") from None
    if isinstance(value, float) and not math.isfinite(value):
        raise ToolError("the result is not a finite number (overflow or undefined)")
    return value


def _show(expression: str) -> str:
    """The expression quoted for an error message, shortened so it cannot flood the context."""
    return repr(expression if len(expression) <= 80 else expression[:60] + "...")


def format_number(value: Number) -> str:
    if isinstance(value, int):
        return str(value)
    if value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return repr(value)


def _check_depth(tree: ast.AST) -> None:
    """Refuse deep trees before the recursive evaluator could hit the recursion limit."""
    stack: list[tuple[ast.AST, int]] = [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise ToolError(f"expression is nested more than {MAX_DEPTH} levels deep; split it into steps")
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))


def _evaluate(node: ast.expr) -> Number:
    if isinstance(node, ast.Constant):
        if isinstance(node.value, bool) or not isinstance(node.value, (int, float)):
            raise ToolError(f"only numbers are allowed, not {node.value!r}")
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.UAdd, ast.USub)):
        operand = _evaluate(node.operand)
        return operand if isinstance(node.op, ast.UAdd) else -operand
    if isinstance(node, ast.BinOp):
        return _binary(node)
    if isinstance(node, ast.Name):
        if node.id in CONSTANTS:
            return CONSTANTS[node.id]
        raise ToolError(f"unknown name {node.id!r}; known constants: {', '.join(CONSTANTS)}")
    if isinstance(node, ast.Call):
        return _call(node)
    if isinstance(node, ast.Attribute):
        raise ToolError("attribute access (a.b) is not allowed")
    raise ToolError(f"{type(node).__name__} is not allowed; use numbers, operators and functions")


def _binary(node: ast.BinOp) -> Number:
    left = _evaluate(node.left)
    right = _evaluate(node.right)
    if isinstance(node.op, ast.Pow):
        return _power(left, right)
    if isinstance(node.op, ast.BitXor):
        raise ToolError("'^' is not a power here; use ** (e.g. 2 ** 8)")
    operation = _BINARY.get(type(node.op))
    if operation is None:
        raise ToolError(f"operator {type(node.op).__name__} is not allowed")
    result: Number = operation(left, right)
    if isinstance(result, int) and result.bit_length() > MAX_INT_BITS:
        raise ToolError("the result is too large")
    return result


def _call(node: ast.Call) -> Number:
    if isinstance(node.func, ast.Attribute):
        raise ToolError("attribute access (a.b) is not allowed")
    if not isinstance(node.func, ast.Name):
        raise ToolError("only calls of the listed functions by name are allowed")
    function = FUNCTIONS.get(node.func.id)
    if function is None:
        raise ToolError(f"unknown function {node.func.id!r}; known: {', '.join(FUNCTIONS)}")
    if node.keywords:
        raise ToolError(f"{node.func.id}() takes positional arguments only")
    if any(isinstance(arg, ast.Starred) for arg in node.args):
        raise ToolError("*arguments are not allowed")
    arguments = [_evaluate(arg) for arg in node.args]
    result = function(*arguments)
    if isinstance(result, int) and result.bit_length() > MAX_INT_BITS:
        raise ToolError("the result is too large")
    return result

"""The task suite's tasks: a small shop project the suite writes into a fresh workspace, and
tasks about it, each with a checker that reads the final answer and the workspace.

Half the tasks are for tuning the harness (``tune``), half only for checking it (``check``):
a change is judged on the check half, which nobody tuned against.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

Checker = Callable[[str, Path], bool]

FILES: dict[str, str] = {
    "README.md": """\
# Tiny Shop

Tiny Shop is a small shopping cart library for Python: carts, prices with tax and discounts,
stock keeping and user accounts.

Written by Mara Quist. Licensed under the MIT license.

Run the tests with `python -m pytest tests`.
""",
    "config.toml": """\
[server]
host = "127.0.0.1"
port = 8042

[shop]
currency = "EUR"
""",
    "data/items.csv": """\
sku,name,price
A1,apple,0.50
B2,bread,2.20
C3,cheese,4.75
D4,dates,3.10
E5,eggs,2.95
""",
    "src/shop/__init__.py": '''\
"""Tiny Shop: a shopping cart library."""

__version__ = "1.4.2"
''',
    "src/shop/pricing.py": '''\
"""Prices: tax and discounts."""

TAX_RATE = 0.2


def apply_discount(price: float, percent: float) -> float:
    """The price after a discount of ``percent`` percent."""
    return round(price * (1 - percent / 100), 2)


def with_tax(price: float) -> float:
    """The price with tax added."""
    return round(price * (1 + TAX_RATE), 2)
''',
    "src/shop/cart.py": '''\
"""The shopping cart."""

from .pricing import with_tax


class Cart:
    """Items a customer wants to buy, with their quantities."""

    def __init__(self) -> None:
        self.items: dict[str, tuple[float, int]] = {}

    def add_item(self, name: str, price: float, quantity: int = 1) -> None:
        old_price, old_quantity = self.items.get(name, (price, 0))
        self.items[name] = (price, old_quantity + quantity)

    def total(self) -> float:
        """The sum of all items, with tax."""
        return with_tax(sum(price * quantity for price, quantity in self.items.values()))
''',
    "src/shop/inventory.py": '''\
"""Stock keeping."""

MAX_STOCK = 500


class Inventory:
    """How many of each item the shop has in stock."""

    def __init__(self) -> None:
        self.stock: dict[str, int] = {}

    def restock(self, name: str, count: int) -> None:
        self.stock[name] = min(MAX_STOCK, self.stock.get(name, 0) + count)

    def take(self, name: str, count: int) -> bool:
        if self.stock.get(name, 0) < count:
            return False
        self.stock[name] -= count
        return True
''',
    "src/shop/users.py": '''\
"""User accounts."""

import hashlib


class User:
    def __init__(self, email: str, password: str) -> None:
        self.email = email
        self.password_hash = hashlib.sha256(password.encode()).hexdigest()


def check_password(user: User, password: str) -> bool:
    """True when ``password`` is the user's password."""
    return hashlib.sha256(password.encode()).hexdigest() == user.password_hash
''',
    "src/shop/settings.py": '''\
"""Settings read at start-up."""

DEFAULT_CURRENCY = "EUR"
PAGE_SIZE = 25
''',
    "src/shop/utils.py": '''\
"""Small helpers."""


def slugify(text: str) -> str:
    """``text`` in lower case with spaces turned into dashes."""
    return "-".join(text.lower().split())


def clamp(value: int, low: int, high: int) -> int:
    return max(low, min(high, value))


def chunks(items: list[int], size: int) -> list[list[int]]:
    return [items[i : i + size] for i in range(0, len(items), size)]
''',
    "tests/test_pricing.py": """\
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from shop.pricing import TAX_RATE, with_tax


def test_tax() -> None:
    assert with_tax(100.0) == round(100 * (1 + TAX_RATE), 2)
""",
}


@dataclass(frozen=True)
class Task:
    name: str
    half: str  # "tune" or "check"
    kind: str  # question, find, count, edit, notes
    prompt: str
    check: Checker
    allow_write: bool = False
    max_iterations: int = 8


def says(*patterns: str) -> Checker:
    """The answer matches every pattern (case-insensitive regular expressions)."""
    return lambda answer, _ws: all(re.search(p, answer, re.IGNORECASE) for p in patterns)


def file_matches(path: str, *patterns: str, absent: tuple[str, ...] = ()) -> Checker:
    def check(_answer: str, ws: Path) -> bool:
        target = ws / path
        if not target.is_file():
            return False
        text = target.read_text(encoding="utf-8", errors="replace")
        return all(re.search(p, text) for p in patterns) and not any(re.search(p, text) for p in absent)

    return check


def tests_pass_and(inner: Checker) -> Checker:
    def check(answer: str, ws: Path) -> bool:
        if not inner(answer, ws):
            return False
        done = subprocess.run(
            [sys.executable, "-c", "import tests.test_pricing as t; t.test_tax()"],
            cwd=ws,
            capture_output=True,
            timeout=60,
            check=False,
        )
        return done.returncode == 0

    return check


def notes_name(files: dict[str, tuple[str, ...]]) -> Checker:
    """NOTES.md has, for each file, a line naming it with at least one of its facts."""

    def check(_answer: str, ws: Path) -> bool:
        notes = ws / "NOTES.md"
        if not notes.is_file():
            return False
        lines = notes.read_text(encoding="utf-8", errors="replace").lower().splitlines()
        for path, facts in files.items():
            name = Path(path).name.lower()
            # The facts must be in the line besides the file's own name ("cart.py" says "cart").
            if not any(
                name in line and any(f.lower() in line.replace(name, "") for f in facts) for line in lines
            ):
                return False
        return True

    return check


TASKS: tuple[Task, ...] = (
    Task(
        "readme",
        "tune",
        "question",
        "Read README.md and tell me in one sentence what this project is",
        says(r"cart|shop"),
    ),
    Task(
        "tax-rate",
        "check",
        "question",
        "What is the value of TAX_RATE in src/shop/pricing.py?",
        says(r"0\.2\b"),
    ),
    Task("port", "tune", "question", "Which port does config.toml set for the server?", says(r"8042")),
    Task(
        "version", "check", "question", "What version string does src/shop/__init__.py set?", says(r"1\.4\.2")
    ),
    Task(
        "author", "tune", "question", "Who wrote this project, according to README.md?", says(r"Mara|Quist")
    ),
    Task("max-stock", "check", "question", "What is MAX_STOCK in src/shop/inventory.py?", says(r"\b500\b")),
    Task(
        "first-item",
        "tune",
        "question",
        "What is the name of the first item in data/items.csv?",
        says(r"apple"),
    ),
    Task(
        "slugify",
        "check",
        "question",
        "What does slugify in src/shop/utils.py return for 'Hello World'? Read the code.",
        says(r"(?<![\w-])hello-world"),  # not "-hello-world", an answer the 0.5B model gave
    ),
    Task("def-inventory", "tune", "find", "Which file defines the class Inventory?", says(r"inventory\.py")),
    Task(
        "def-currency", "check", "find", "In which file is DEFAULT_CURRENCY defined?", says(r"settings\.py")
    ),
    Task("def-discount", "tune", "find", "Which file has the function apply_discount?", says(r"pricing\.py")),
    Task(
        "def-password",
        "check",
        "find",
        "Which function checks a user's password, and in which file is it?",
        says(r"check_password", r"users\.py"),
    ),
    Task(
        "count-items",
        "tune",
        "count",
        "How many items are listed in data/items.csv, not counting the header line?",
        says(r"\b5\b|five"),
    ),
    Task(
        "count-functions",
        "check",
        "count",
        "How many functions does src/shop/utils.py define?",
        says(r"\b3\b|three"),
    ),
    Task(
        "list-modules",
        "tune",
        "count",
        "List the .py files in the folder src/shop.",
        says(*(rf"{n}\.py" for n in ("cart", "pricing", "inventory", "users", "settings", "utils"))),
    ),
    Task(
        "edit-tax",
        "tune",
        "edit",
        "In src/shop/pricing.py, change TAX_RATE from 0.2 to 0.25.",
        tests_pass_and(file_matches("src/shop/pricing.py", r"TAX_RATE = 0\.25\b")),
        allow_write=True,
    ),
    Task(
        "edit-rename",
        "check",
        "edit",
        "In src/shop/utils.py, rename the function slugify to make_slug.",
        file_matches("src/shop/utils.py", r"def make_slug\(", absent=(r"def slugify\(",)),
        allow_write=True,
    ),
    Task(
        "edit-page-size",
        "check",
        "edit",
        "In src/shop/settings.py, set PAGE_SIZE to 50.",
        file_matches("src/shop/settings.py", r"PAGE_SIZE = 50\b", absent=(r"PAGE_SIZE = 25",)),
        allow_write=True,
    ),
    Task(
        "notes-two",
        "tune",
        "notes",
        "Read src/shop/cart.py and src/shop/pricing.py and write a one-line summary of each into the notes "
        "with the note tool",
        notes_name({"cart.py": ("cart", "item", "total"), "pricing.py": ("tax", "discount", "price")}),
        max_iterations=10,
    ),
    Task(
        "notes-all",
        "check",
        "notes",
        "Read every .py file under src/shop one by one and write a one-line summary of each into the notes "
        "with the note tool",
        notes_name(
            {
                "cart.py": ("cart", "item", "total"),
                "pricing.py": ("tax", "discount", "price"),
                "inventory.py": ("stock", "inventor"),
                "users.py": ("user", "password", "account"),
                "settings.py": ("setting", "currency", "page"),
                "utils.py": ("helper", "slug", "clamp", "chunk", "util"),
            }
        ),
        max_iterations=20,
    ),
)


def build_workspace(root: Path) -> None:
    for relative, text in FILES.items():
        target = root / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")

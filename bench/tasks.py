"""The task suite's tasks: a small shop project the suite writes into a fresh workspace, and
tasks about it, each with a checker that reads the final answer and the workspace.

Half the tasks are for tuning the harness (``tune``), half only for checking it (``check``):
a change is judged on the check half, which nobody tuned against.
"""

from __future__ import annotations

import random
import re
import subprocess
import sys
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
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
    # "tune", "check", "unseen" (bench/tasks_unseen.py), "fourth" (bench/tasks_fourth.py),
    # "fifth" (bench/tasks_fifth.py), "sixth" (bench/tasks_sixth.py), "seventh"
    # (bench/tasks_seventh.py), "eighth" (bench/tasks_eighth.py), "ninth" (bench/tasks_ninth.py),
    # "tenth" (bench/tasks_tenth.py) or "eleventh" (bench/tasks_eleventh.py)
    half: str
    kind: str  # question, find, count, edit, notes, long
    prompt: str
    check: Checker
    allow_write: bool = False
    max_iterations: int = 8
    # Files this task's workspace has besides the shop project (the long documents of the
    # tasks that fill the window).
    extra: dict[str, str] = field(default_factory=dict)
    # The project the workspace holds: "shop" (this file's), "markdown" (bench/tasks_unseen.py),
    # "itsdangerous" (bench/tasks_fourth.py), "pathspec" (bench/tasks_fifth.py), "cachetools"
    # (bench/tasks_sixth.py), "tabulate" (bench/tasks_seventh.py), "isodate" (bench/tasks_eighth.py),
    # "colorama" (bench/tasks_ninth.py), "idna" (bench/tasks_tenth.py) or "jmespath"
    # (bench/tasks_eleventh.py).
    project: str = "shop"
    # The files or folders that answer the task (retrieval's recall is measured on them).
    targets: tuple[str, ...] = ()

    @property
    def asks_for_notes(self) -> bool:
        """Whether the task asks for notes (any line in NOTES.md is wrong otherwise)."""
        return self.kind == "notes"


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


# --- long documents: tasks whose answer is in an early file once later reads filled the window ---

# Sentences that pad a chapter to about 1,500 tokens (about 6,000 characters): plausible
# operations prose with no number, port, name or date, so the facts each chapter states are the
# only ones of their kind. Picked by a seeded random, so the workspace is the same every run.
_FILLER = (
    "Keep the change small and write down what you did in the shared log before you move on.",
    "When two people work on the same system, agree first on who makes the change.",
    "Every step here can be undone; if a step fails, stop and ask before going further.",
    "The checks below are run by hand the first time and by the scheduler after that.",
    "If the dashboard and the log disagree, trust the log and report the dashboard.",
    "Read the whole section once before you start, since some steps depend on later ones.",
    "A change that touches customer data needs a second person to look at it.",
    "Most problems here come from a configuration file that was edited in two places.",
    "Leave the old setting in place until the new one has worked for a full day.",
    "The staging copy behaves like production, only smaller, so try every change there first.",
    "Write the reason for a change in the ticket, not only what was changed.",
    "The team reviews this page every quarter and removes what is no longer true.",
    "Alerts that fire too often are tuned, not silenced, so that real ones still reach people.",
    "Ask in the team channel when a step is unclear; an unclear step is a bug in this page.",
    "The commands are the same on every machine, so there is no need to adapt them.",
    "After the change, watch the error rate for a while before you close the ticket.",
    "Old servers are kept for a week after a move, in case something was missed.",
    "A step marked optional can be skipped when the system is under heavy load.",
    "The scripts print what they are about to do and wait for a yes before doing it.",
    "Keep secrets out of tickets, logs and chat; the vault is the only place for them.",
)


def _chapter(title: str, facts: tuple[str, ...], sections: tuple[str, ...], seed: int) -> str:
    """A markdown chapter: its title, its facts in the first paragraph, then sections of filler."""
    rng = random.Random(seed)
    parts = [f"# {title}\n", textwrap.fill(" ".join(facts), 100) + "\n"]
    for heading in sections:
        paragraph = textwrap.fill(" ".join(rng.sample(_FILLER, 9)), 100)
        parts.append(f"## {heading}\n\n{paragraph}\n")
    return "\n".join(parts)


_SECTIONS = (
    "Before you start",
    "Who is involved",
    "The usual case",
    "When it goes wrong",
    "Checks afterwards",
    "Known problems",
    "History of this page",
    "Further reading",
)

HANDBOOK: dict[str, str] = {
    f"docs/handbook/{name}": _chapter(title, facts, _SECTIONS, seed)
    for seed, (name, title, facts) in enumerate(
        (
            (
                "01-backups.md",
                "Backups",
                (
                    "Backups of the shop database are taken by the backup service, "
                    "which listens on port 7311.",
                    "A full backup runs every night; the files are copied to a second site the next morning.",
                ),
            ),
            (
                "02-deploys.md",
                "Deploys",
                (
                    "New versions are deployed by the release pipeline.",
                    "A deploy waits for the tests to pass.",
                ),
            ),
            (
                "03-monitoring.md",
                "Monitoring",
                (
                    "The metrics service listens on port 9102.",
                    "Dashboards show the last two weeks of metrics.",
                ),
            ),
            (
                "04-incidents.md",
                "Incidents",
                (
                    "An incident has one lead, who decides.",
                    "Every incident gets a written review afterwards.",
                ),
            ),
            (
                "05-access.md",
                "Access",
                ("The login service listens on port 8443.", "Access to production is granted per person."),
            ),
            (
                "06-storage.md",
                "Storage",
                ("Product images live in the object store.", "Disks are replaced before they are full."),
            ),
            (
                "07-releases.md",
                "Releases",
                ("Releases are named after rivers.", "A release is announced to customers a week ahead."),
            ),
        )
    )
}

GUIDE: dict[str, str] = {
    f"docs/guide/{name}": _chapter(title, facts, _SECTIONS, 100 + seed)
    for seed, (name, title, facts) in enumerate(
        (
            (
                "setup.md",
                "Setting up the job runner",
                (
                    "The job runner keeps the logs of each job for 19 days by default, then deletes them.",
                    "It is installed on every worker machine by the configuration tool.",
                ),
            ),
            (
                "config.md",
                "Configuring jobs",
                (
                    "Each job has a name, a schedule and an owner.",
                    "Access tokens for jobs expire after 30 days.",
                ),
            ),
            (
                "jobs.md",
                "Writing a job",
                ("A job is a script with a short header.", "A job that fails is retried twice."),
            ),
            (
                "limits.md",
                "Limits",
                ("A job may use at most two cores.", "Reports made by jobs are archived after 90 days."),
            ),
            (
                "faq.md",
                "Questions people ask",
                ("Jobs run in the time zone of the worker.", "A paused job keeps its schedule."),
            ),
            (
                "history.md",
                "History",
                ("The job runner replaced a set of cron tables.", "Its first version ran three jobs."),
            ),
        )
    )
}


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
    Task(
        "long-handbook",
        "tune",
        "long",
        "Read every .md file under docs/handbook, then tell me which port the backup service listens on.",
        says(r"\b7311\b"),
        max_iterations=20,
        extra=HANDBOOK,
    ),
    Task(
        "long-guide",
        "check",
        "long",
        "Read docs/guide/setup.md, docs/guide/config.md, docs/guide/jobs.md, docs/guide/limits.md, "
        "docs/guide/faq.md and docs/guide/history.md, then tell me for how many days the job runner keeps "
        "the logs of a job by default.",
        says(r"\b19\b|nineteen"),
        max_iterations=20,
        extra=GUIDE,
    ),
)


def build_workspace(root: Path, extra: dict[str, str] | None = None) -> None:
    """The shop project (and a task's ``extra`` files) in ``root``."""
    for relative, text in {**FILES, **(extra or {})}.items():
        target = root / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")

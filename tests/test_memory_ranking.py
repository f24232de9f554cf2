"""Ranking rules of the SQL stores that are about the data, not the database: what a name in a
question does when full-text statistics span every scope."""

from __future__ import annotations

from pathlib import Path

from tinyharness.memory import Scope, SQLiteStore
from tinyharness.memory.base import SUBJECT_KEY


def test_a_name_rare_in_the_store_does_not_outweigh_the_topic(tmp_path: Path) -> None:
    """SQLite's BM25 counts a term over the whole store: a person's name, common in their own
    scope but rare elsewhere, then weighs more than the topic, and the other speaker's greetings
    ("Hey Zed!") fill the top. The named person's own memory about the topic must come first."""
    store = SQLiteStore(tmp_path / "m.db")
    alice, others = Scope("alice"), Scope("others")
    for n in range(30):  # "adopt" is common elsewhere, "zed" is not
        store.add(f"someone wants to adopt a cat, note {n}", others)
    for n in range(10):  # enough to push its own memory down the full-text list, not out of it
        store.add(f"Hey Zed, good to see you Zed! ({n})", alice, metadata={SUBJECT_KEY: "Bob"})
    own = store.add("I adopted a puppy last week", alice, metadata={SUBJECT_KEY: "Zed"})
    hits = store.search("What did Zed adopt?", alice, limit=3)
    store.close()
    assert hits and hits[0].item.id == own.id

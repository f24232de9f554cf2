"""Ranking documents (files and folders) against a task: BM25 over weighted fields, exact
mentions first, and an embedder's ranking fused in when one is given.

A document has three fields: its path, the names it defines, and the start of its text
(a folder: its path, and the names of what it holds). Each field is scored with BM25 on its own
and the scores are summed with weights: a word in a path says more about a file than one in its
text, and many matches in a long text cannot outweigh one in a file's names (one saturation over
all fields, BM25F, let README.md outrank the file defining ``__version__`` for "what version").
Exact mentions are not words of a language but strings of the workspace, so they come first:
the task's path (``markdown/core.py``) or folder (``tests/basic``), then a path's tail or a file
name (``core.py``), then a name the file defines, when written as code is
(``find_dotenv``, ``HRProcessor``, ``PIPE_RIGHT``: an underscore, a capital after the first
letter, or a digit) and defined in few files.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ..memory.embed import Embedder
from ..memory.text import reciprocal_rank_fusion
from .terms import identifier_parts, identifiers, path_terms, pathlike_mentions, terms

# Tiers of exact mentions (added to a score in [0, 1), so a tier always wins).
FULL_PATH = 3.0
PATH_TAIL = 2.0
DEFINED_NAME = 1.0
NAME_WORDS = 1.0  # a defined name whose every word the task writes
MIN_NAME_CHARS = 4  # shorter names ("x", "id") say too little to count as NAME_WORDS
_CODE_LIKE = re.compile(r"_|[a-z][A-Z]|[A-Z]{2}|\d")


@dataclass(frozen=True)
class RankConfig:
    """Weights of the fields and BM25's constants (``k1``, ``b``: the usual values), how much
    the embedder's list counts in the fusion, and in how many files at most a name may be
    defined to count as an exact mention (``print``-like names are everywhere)."""

    path_weight: float = 3.0
    symbol_weight: float = 2.0
    head_weight: float = 1.0
    k1: float = 1.2
    b: float = 0.75
    vector_weight: float = 1.0
    max_defining_files: int = 5
    embed_head_chars: int = 400


@dataclass(frozen=True)
class Document:
    path: str
    kind: str  # "file" or "dir"
    path_text: str
    symbols: tuple[str, ...]
    body: str


@dataclass
class Field:
    """One field's inverted index: term -> (document, count), and each document's length."""

    weight: float
    postings: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    lengths: list[int] = field(default_factory=list)

    def add(self, number: int, words: list[str]) -> None:
        self.lengths.append(len(words))
        for word, count in Counter(words).items():
            self.postings.setdefault(word, []).append((number, count))


@dataclass
class Index:
    """The inverted index of a list of documents (built once per map)."""

    docs: Sequence[Document]
    config: RankConfig
    fields: list[Field] = field(default_factory=list)
    defined_in: dict[str, list[int]] = field(default_factory=dict)
    by_path: dict[str, int] = field(default_factory=dict)
    by_tail: dict[str, list[int]] = field(default_factory=dict)
    vectors: np.ndarray | None = None

    @classmethod
    def build(cls, docs: Sequence[Document], config: RankConfig) -> Index:
        paths, names, heads = (
            Field(config.path_weight),
            Field(config.symbol_weight),
            Field(config.head_weight),
        )
        index = cls(docs, config, [paths, names, heads])
        for number, doc in enumerate(docs):
            paths.add(number, path_terms(doc.path_text))
            names.add(number, [t for name in doc.symbols for t in terms(name)])
            heads.add(number, terms(doc.body))
            for name in doc.symbols:
                index.defined_in.setdefault(name, []).append(number)
            index.by_path[doc.path] = number
            parts = doc.path.split("/")
            for start in range(1, len(parts)):
                index.by_tail.setdefault("/".join(parts[start:]), []).append(number)
        return index

    # --- scores ----------------------------------------------------------------------------

    def bm25(self, task: str) -> dict[int, float]:
        """Each field's BM25 score of the task's distinct terms, weighted and summed: a field
        saturates on its own, so many matches in a file's text cannot outweigh one in its
        names or path."""
        total = len(self.docs)
        scores: dict[int, float] = {}
        if not total:
            return scores
        k1, b = self.config.k1, self.config.b
        words = list(dict.fromkeys(terms(task)))
        for one in self.fields:
            average = sum(one.lengths) / total or 1.0
            for word in words:
                postings = one.postings.get(word)
                if not postings:
                    continue
                idf = math.log(1 + (total - len(postings) + 0.5) / (len(postings) + 0.5))
                for number, count in postings:
                    norm = k1 * (1 - b + b * one.lengths[number] / average)
                    gain = one.weight * idf * count * (k1 + 1) / (count + norm)
                    scores[number] = scores.get(number, 0.0) + gain
        return scores

    def tiers(self, task: str) -> dict[int, float]:
        """Documents the task mentions exactly, with the tier of the mention."""
        found: dict[int, float] = {}

        def lift(number: int, tier: float) -> None:
            found[number] = max(found.get(number, 0.0), tier)

        mentions = pathlike_mentions(task)
        for mention in mentions:
            if mention in self.by_path:
                lift(self.by_path[mention], FULL_PATH)
            for number in self.by_tail.get(mention, ()):
                lift(number, PATH_TAIL)
        # A defined name whose every word the task writes ("version" for ``__version__``,
        # "page size" for ``PAGE_SIZE``), in few files: the file that holds what the task
        # is about. The name's own words, not a language's (measured: for "Change this
        # project's version to 3.7.1." BM25 ranked change logs first, and __meta__.py was not
        # among the ten best).
        written = set(terms(task))
        for name, holders in self.defined_in.items():
            words = identifier_parts(name)[1:] or identifier_parts(name)
            if (
                0 < len(holders) <= self.config.max_defining_files
                and sum(map(len, words)) >= MIN_NAME_CHARS
                and all(w in written for w in words)
            ):
                for number in holders:
                    lift(number, NAME_WORDS)
        # Names inside a path the task writes are the path's, not names of code.
        code = " ".join(m for m in mentions if "/" not in m and "." not in m)
        for name in identifiers(code):
            defining = self.defined_in.get(name, ())
            if _CODE_LIKE.search(name) and 0 < len(defining) <= self.config.max_defining_files:
                for number in defining:
                    lift(number, DEFINED_NAME)
        return found

    def vector_ranking(self, task: str, embedder: Embedder) -> list[int]:
        if self.vectors is None:
            texts = [_embed_text(doc, self.config.embed_head_chars) for doc in self.docs]
            self.vectors = embedder.embed_documents(texts) if texts else np.zeros((0, embedder.dim))
        if not len(self.docs):
            return []
        similarity = self.vectors @ embedder.embed_query(task)
        return [int(i) for i in np.argsort(-similarity, kind="stable")]


def rank(index: Index, task: str, k: int, embedder: Embedder | None = None) -> list[tuple[int, float]]:
    """The ``k`` best documents for ``task`` with their scores: an exact mention's tier plus
    the fused score scaled into [0, 1); ties broken by path."""
    lexical = index.bm25(task)
    tiers = index.tiers(task)
    if embedder is not None and index.docs:
        by_words = [
            str(n) for n, _ in sorted(lexical.items(), key=lambda kv: (-kv[1], index.docs[kv[0]].path))
        ]
        by_meaning = [str(n) for n in index.vector_ranking(task, embedder)]
        fused = {
            int(key): score
            for key, score in reciprocal_rank_fusion(
                [by_words, by_meaning], weights=[1.0, index.config.vector_weight]
            )
        }
    else:
        fused = lexical
    top = max(fused.values(), default=0.0) or 1.0
    scores = {n: 0.999 * s / top for n, s in fused.items() if s > 0}
    for number, tier in tiers.items():
        scores[number] = tier + scores.get(number, 0.0)
    ordered = sorted(scores.items(), key=lambda kv: (-kv[1], index.docs[kv[0]].path))
    return ordered[: max(0, k)]


def _embed_text(doc: Document, head_chars: int) -> str:
    return f"{doc.path}\n{' '.join(doc.symbols)}\n{doc.body[:head_chars]}"

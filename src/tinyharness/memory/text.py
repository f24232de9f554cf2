"""Text preparation shared by the stores: what goes into the full-text index, how a question
becomes a full-text query, and reciprocal rank fusion of ranked lists.

Full-text tokenisers split on spaces, and Chinese or Japanese have none: a whole sentence would
be one token. ``index_text`` therefore spells every CJK run as its single characters and its
overlapping bigrams, so ``用户喜欢绿茶`` matches ``绿茶``. Latin text is left to the store's own
tokeniser (Porter stemming in SQLite, the ``english`` configuration in PostgreSQL).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from .base import SUBJECT_KEY as SUBJECT_KEY  # re-exported: the boost below is about it

# Ranking constants, chosen by bench/memory_bench.py (LoCoMo dev and the Chinese set):
# Full-text weight of a memory's context relative to its content. 0.4 was chosen when each
# dialogue was searched alone; with every dialogue in one SQLite store (as an outside check
# imports them) the LoCoMo tuning half gave 0.765 at 0.4, 0.771 at 0.6, 0.772 at 0.8, 0.764 at 1.0.
CONTEXT_WEIGHT = 0.7
# Rank-fusion weight of the vector list relative to the full-text list. With multilingual-e5-small,
# equal weights: on the 200-memory Chinese set (same-topic distractors) 0.5 gave recall@5 0.91 and
# 1.0 gave 0.96. With EmbeddingGemma the vectors deserve more: on the LoCoMo tuning half 1.0 / 1.3 /
# 1.6 / 2.0 gave 0.812 / 0.818 / 0.812 / 0.814 (with neighbour weight 0.3); e5 moved 0.783 -> 0.779.
VECTOR_WEIGHT = 1.3
RRF_K = 5.0  # small k: the top of each list counts much more than its tail
# A query term found in more than this share of the memories is left out of the full-text query
# (unless all are): BM25 gives it almost no weight, and ranking every row it matches is what makes
# full-text search slow on a large store.
# A third of LoCoMo's questions name a speaker who says half of the dialogue: a lower share drops the
# name, and with it what ``content_coordination`` needs to prefer that speaker's own turns.
COMMON_SHARE = 0.5
MAX_TERM_ROWS = 5000  # ... and so is a term in more memories than this (bounds the ranking work)
# A memory's ``metadata[SUBJECT_KEY]`` names who or what it is about (the person who said or wrote
# it, the project it concerns). The fused top RERANK_DEPTH memories whose subject the query names get
# their score multiplied by SUBJECT_BOOST: on LoCoMo 95% of evidence turns are spoken by someone the
# question names, yet the other speaker's turns that mention that name used to fill the top 5.
SUBJECT_BOOST = 2.0
RERANK_DEPTH = 20
# A question that names a time ("in May 2023", "last week") lifts the memories whose event time
# falls in it; one that asks "when" lifts the memories that tell a time (``timeparse``).
TIME_BOOST = 1.5
TIME_POOL = 5  # ... and such a question reranks this many times more candidates
WHEN_BOOST = 1.3


def common_term_cap(total: int) -> int:
    """How many memories a query term may be found in and still be searched for."""
    return max(50, min(int(total * COMMON_SHARE), MAX_TERM_ROWS))


def content_coordination(in_content: int, terms: int) -> float:
    """The factor a memory's full-text score is multiplied by, given how many of the query's
    ``terms`` its content (not its context) holds: ``(1 + in_content) / (1 + terms)``.

    Why: BM25 sums term weights, so a memory whose *context* repeats one rare query word beats the
    memory that *itself* holds several of them, and a frequent but telling word (a person's name,
    a month) weighs next to nothing. Coordination on the content field rewards the memory that is
    about all of the question (on LoCoMo: the named speaker's own turn over the neighbour that
    mentions them), while the ``1 +`` keeps memories found only through their context in the list.
    """
    return (1 + in_content) / (1 + terms)


def names_subject(terms: frozenset[str], subject: object) -> bool:
    """Whether a query with these ``query_terms`` names ``subject``: one of the subject's own terms
    (a first name is enough: "Caroline" names "Caroline Smith") is among them. A store where every
    memory has the same subject is left as it was: all are boosted alike."""
    if not isinstance(subject, str) or not subject:
        return False
    return any(term in terms for term in query_terms(subject))


def without_subjects(query: str, subjects: Iterable[str]) -> str:
    """``query`` without the words (and a possessive 's) of the ``subjects`` it names; ``query`` as
    it was if nothing else is left to search for."""
    terms = frozenset(query_terms(query))
    words = {term for subject in subjects if names_subject(terms, subject) for term in query_terms(subject)}
    if not words:
        return query
    pattern = re.compile(r"\b(?:" + "|".join(map(re.escape, sorted(words))) + r")(?:'s)?\b", re.IGNORECASE)
    left = " ".join(pattern.sub(" ", query).split())
    return left if query_terms(left) else query


_CJK = r"\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
_CJK_RUN = re.compile(f"[{_CJK}]+")
_WORD = re.compile(f"[{_CJK}]+|[^\\W_]+")

# Words that carry no topic; left out of queries so an OR query does not match everything.
STOPWORDS = frozenset(
    [
        "a",
        "about",
        "above",
        "after",
        "again",
        "all",
        "also",
        "am",
        "an",
        "and",
        "any",
        "are",
        "as",
        "at",
        "be",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "doing",
        "done",
        "down",
        "during",
        "each",
        "else",
        "ever",
        "few",
        "for",
        "from",
        "further",
        "get",
        "got",
        "had",
        "has",
        "have",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "herself",
        "him",
        "himself",
        "his",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "itself",
        "just",
        "like",
        "me",
        "might",
        "more",
        "most",
        "much",
        "must",
        "my",
        "myself",
        "no",
        "nor",
        "not",
        "now",
        "of",
        "off",
        "on",
        "once",
        "only",
        "or",
        "other",
        "our",
        "ours",
        "ourselves",
        "out",
        "over",
        "own",
        "really",
        "same",
        "shall",
        "she",
        "should",
        "so",
        "some",
        "such",
        "than",
        "that",
        "the",
        "their",
        "theirs",
        "them",
        "themselves",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "to",
        "too",
        "under",
        "until",
        "up",
        "us",
        "very",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "whose",
        "why",
        "will",
        "with",
        "would",
        "yeah",
        "yes",
        "you",
        "your",
        "yours",
        "yourself",
        "yourselves",
        "的",
        "了",
        "吗",
        "呢",
        "吧",
        "啊",
        "是",
        "在",
        "我",
        "你",
        "他",
        "她",
        "它",
        "们",
        "这",
        "那",
        "和",
        "与",
        "也",
        "就",
        "都",
        "而",
        "及",
        "或",
        "一",
        "个",
        "有",
        "么",
        "什",
        "怎",
        "哪",
        "谁",
    ]
)


def cjk_grams(run: str) -> list[str]:
    """Single characters and overlapping bigrams of a CJK run."""
    grams = list(run)
    grams += [run[i : i + 2] for i in range(len(run) - 1)]
    return grams


def index_text(text: str) -> str:
    """``text`` as the full-text index should see it (CJK runs expanded to grams)."""
    return _CJK_RUN.sub(lambda m: " " + " ".join(cjk_grams(m.group(0))) + " ", text)


def query_terms(query: str, *, limit: int = 48) -> list[str]:
    """The distinct content terms of a question, lower-case, stopwords left out, in order."""
    terms: list[str] = []
    seen: set[str] = set()
    for token in _WORD.findall(query.casefold()):
        pieces = cjk_grams(token) if _CJK_RUN.fullmatch(token) else [token]
        for piece in pieces:
            if piece in STOPWORDS or piece in seen:
                continue
            if len(piece) == 1 and piece.isascii():
                continue
            seen.add(piece)
            terms.append(piece)
    return terms[:limit]


def query_phrases(query: str, *, limit: int = 16) -> list[str]:
    """Pairs of content terms that stand side by side in the question, as "word word" ("ice
    cream", "dance festival"). Why: a full-text OR query scores "ice" and "cream" alone, so a
    memory about ice and another about cream ties with the one that says "ice cream"; searching
    the pair as a phrase too rewards the words in the question's order (the sequential dependence
    idea of term proximity). CJK runs are left out: their bigrams are already terms."""
    phrases: list[str] = []
    previous: re.Match[str] | None = None
    for match in _WORD.finditer(query.casefold()):
        word = match.group(0)
        if _CJK_RUN.fullmatch(word) or word in STOPWORDS or len(word) == 1:
            previous = None
            continue
        if previous is not None and not query[previous.end() : match.start()].strip(" -"):
            phrase = f"{previous.group(0)} {word}"
            if phrase not in phrases:
                phrases.append(phrase)
        previous = match
    return phrases[:limit]


def fts5_term(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


def fts5_query(query: str) -> str:
    """A SQLite FTS5 query matching any content term (BM25 ranks by how many and how rare)."""
    return " OR ".join(fts5_term(term) for term in query_terms(query))


def tsquery_text(query: str) -> str:
    """A PostgreSQL ``to_tsquery`` string matching any content term."""
    return " | ".join(re.sub(r"[^\w]", "", term) for term in query_terms(query) if re.sub(r"[^\w]", "", term))


def reciprocal_rank_fusion(
    rankings: Sequence[Sequence[str]], *, k: float = RRF_K, weights: Iterable[float] | None = None
) -> list[tuple[str, float]]:
    """Fuse ranked id lists: each list gives ``weight / (k + rank)`` to its ids (rank from 1)."""
    scores: dict[str, float] = {}
    for ranking, weight in zip(rankings, weights or [1.0] * len(rankings), strict=True):
        for rank, key in enumerate(ranking, start=1):
            scores[key] = scores.get(key, 0.0) + weight / (k + rank)
    return sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))

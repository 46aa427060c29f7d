"""Query and unit text as the lexical parts of bridge expansion and packing
see it: lower-cased content words (PILAR App. H.1's BM25 over words),
Porter-stemmed as the page index's FTS5 tokenizer (``porter unicode61``)
stems them, so a question word meets a unit as it met the page ("attended"
and "Attendance" are both ``attend``), without the question words
:data:`pilar.retrieval.STOPWORDS` that BM25 queries leave out on every
backend; and BM25 over a handful of such texts (:func:`bm25_scores`)."""

from __future__ import annotations

import math
import threading
from collections import Counter
from collections.abc import Sequence
from functools import lru_cache

import numpy as np
import snowballstemmer

from pilar.model import Unit
from pilar.parts import words
from pilar.retrieval import STOPWORDS

_STEMMERS = threading.local()  # a snowballstemmer stemmer keeps state between calls


@lru_cache(maxsize=200_000)
def _stem(w: str) -> str | None:
    """The Porter stem of the lower-cased word ``w``; None for a stopword."""
    if w in STOPWORDS:
        return None
    stemmer = getattr(_STEMMERS, "porter", None)
    if stemmer is None:
        stemmer = _STEMMERS.porter = snowballstemmer.stemmer("porter")
    return stemmer.stemWord(w)


@lru_cache(maxsize=100_000)
def tokens(text: str) -> tuple[str, ...]:
    """Lower-cased content-word tokens, Porter-stemmed, stopwords left out;
    cached, since the same units are scored again and again."""
    stems = map(_stem, words(text.lower()))
    return tuple(w for w in stems if w)


@lru_cache(maxsize=100_000)
def term_counts(text: str) -> tuple[dict[str, int], int]:
    """``({token: occurrences}, number of tokens)`` of ``text``'s
    :func:`tokens`; cached like them (BM25 over units looks up a few query
    terms per unit, never walks a unit's tokens again)."""
    toks = tokens(text)
    return dict(Counter(toks)), len(toks)


def unit_term_counts(unit: Unit) -> tuple[dict[str, int], int]:
    """:func:`term_counts` of a unit's completed text: the counts stored at
    ingest (:class:`~pilar.model.UnitStats`) when the unit carries them, else
    counted now (an older store's unit not yet filled)."""
    if unit.stats is not None:
        return unit.stats.terms, unit.stats.length
    return term_counts(unit.completed_text)


def bm25_scores(query: Sequence[str], texts: Sequence[str], k1: float = 1.5,
                b: float = 0.75) -> np.ndarray:
    """BM25Okapi scores (k1=1.5, b=0.75 as PILAR App. H.1) of ``texts`` (each
    a document, read as its :func:`tokens`) for the
    ``query`` tokens; shape ``(len(texts),)``. Term counts per text are
    cached (:func:`term_counts`)."""
    return bm25_with_idf(query, texts, k1, b)[0]


def bm25_with_idf(query: Sequence[str], texts: Sequence[str], k1: float = 1.5,
                  b: float = 0.75) -> tuple[np.ndarray, dict[str, float]]:
    """:func:`bm25_scores` and the IDF of each query term found in ``texts``
    (the same floats as :func:`bm25_of_postings` on their term counts)."""
    return bm25_of_counts(query, [term_counts(t) for t in texts], k1, b)


def bm25_of_counts(query: Sequence[str], counts: Sequence[tuple[dict[str, int], int]],
                   k1: float = 1.5, b: float = 0.75) -> tuple[np.ndarray, dict[str, float]]:
    """:func:`bm25_with_idf` of documents given by their :func:`term_counts`
    (``(term -> occurrences, length)``, e.g. a unit's statistics stored at
    ingest): no text is tokenised again. Shape ``(len(counts),)``."""
    n = len(counts)
    idf_of: dict[str, float] = {}
    if n == 0:
        return np.zeros(0), idf_of
    lengths = np.fromiter((size for _, size in counts), dtype=np.float64, count=n)
    norm = (k1 * (1 - b + b * lengths / (lengths.mean() or 1.0))).tolist()
    held: dict[str, list[int]] = {t: [] for t in query}  # the documents holding each term
    for i, (c, _) in enumerate(counts):
        for t in c.keys() & held.keys():
            if c[t]:
                held[t].append(i)
    scores = [0.0] * n  # a term a document lacks would add 0.0: only holders are summed
    for t, docs in held.items():
        if docs:
            df = len(docs)
            idf = idf_of[t] = math.log(1 + (n - df + 0.5) / (df + 0.5))
            for i in docs:
                tf = float(counts[i][0][t])
                scores[i] += idf * tf * (k1 + 1) / (tf + norm[i])
    return np.array(scores), idf_of


class Postings:
    """The term counts of a run of documents (e.g. one page's units) turned
    around: per term, the positions of the documents holding it and how
    often; built once, so BM25 over many runs touches only the query's
    terms (:func:`bm25_of_postings`). ``counts`` are :func:`term_counts`
    results (``(term -> occurrences, length)``), e.g. stored at ingest."""

    __slots__ = ("lengths", "terms")

    def __init__(self, counts: Sequence[tuple[dict[str, int], int]]):
        self.lengths = np.fromiter((size for _, size in counts), dtype=np.float64,
                                   count=len(counts))
        at: dict[str, tuple[list[int], list[int]]] = {}
        for i, (c, _) in enumerate(counts):
            for t, k in c.items():
                where = at.get(t)
                if where is None:
                    where = at[t] = ([], [])
                where[0].append(i)
                where[1].append(k)
        self.terms = {t: (np.array(ix, dtype=np.intp), np.array(ks, dtype=np.float64))
                      for t, (ix, ks) in at.items()}

    def __len__(self) -> int:
        return len(self.lengths)


def bm25_of_postings(query: Sequence[str], runs: Sequence[Postings], k1: float = 1.5,
                     b: float = 0.75) -> tuple[np.ndarray, dict[str, float]]:
    """BM25Okapi (k1, b as :func:`bm25_scores`) of the documents of ``runs``
    taken in order as one collection: scores of shape ``(total documents,)``
    and the IDF of each query term found."""
    n = sum(len(r) for r in runs)
    idf_of: dict[str, float] = {}
    if n == 0:
        return np.zeros(0), idf_of
    lengths = np.concatenate([r.lengths for r in runs])
    norm = k1 * (1 - b + b * lengths / (lengths.mean() or 1.0))
    scores = np.zeros(n)
    for t in dict.fromkeys(query):
        tf = np.zeros(n)
        start = 0
        for r in runs:
            hit = r.terms.get(t)
            if hit is not None:
                tf[hit[0] + start] = hit[1]
            start += len(r)
        df = int(np.count_nonzero(tf))
        if df:
            idf = idf_of[t] = math.log(1 + (n - df + 0.5) / (df + 0.5))
            scores += idf * tf * (k1 + 1) / (tf + norm)
    return scores, idf_of

"""Query and unit text as the lexical parts of bridge expansion and packing
see it: lower-cased content words (PILAR App. H.1's BM25 over words),
Porter-stemmed as the page index's FTS5 tokenizer (``porter unicode61``)
stems them, so a question word meets a unit as it met the page ("attended"
and "Attendance" are both ``attend``), without the question words
:data:`pilar.retrieval.STOPWORDS` that BM25 queries leave out on every
backend; and BM25 over a handful of such texts (:func:`bm25_scores`)."""

from __future__ import annotations

import math
import re
import threading
from collections import Counter
from collections.abc import Sequence
from functools import lru_cache

import numpy as np
import snowballstemmer

from pilar.retrieval import STOPWORDS

_WORD = re.compile(r"\w+", re.UNICODE)
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
    stems = map(_stem, _WORD.findall(text.lower()))
    return tuple(w for w in stems if w)


@lru_cache(maxsize=100_000)
def term_counts(text: str) -> tuple[dict[str, int], int]:
    """``({token: occurrences}, number of tokens)`` of ``text``'s
    :func:`tokens`; cached like them (BM25 over units looks up a few query
    terms per unit, never walks a unit's tokens again)."""
    toks = tokens(text)
    return dict(Counter(toks)), len(toks)


def bm25_scores(query: Sequence[str], texts: Sequence[str], k1: float = 1.5,
                b: float = 0.75) -> np.ndarray:
    """BM25Okapi scores (k1=1.5, b=0.75 as PILAR App. H.1) of ``texts`` (each
    a document, read as its :func:`tokens`) for the
    ``query`` tokens; shape ``(len(texts),)``. Term counts per text are
    cached (:func:`term_counts`)."""
    return bm25_with_idf(query, texts, k1, b)[0]


def bm25_with_idf(query: Sequence[str], texts: Sequence[str], k1: float = 1.5,
                  b: float = 0.75) -> tuple[np.ndarray, dict[str, float]]:
    """:func:`bm25_scores` and the IDF of each query term found in ``texts``."""
    return bm25_of_counts(query, [term_counts(t) for t in texts], k1, b)


def bm25_of_counts(query: Sequence[str], counts: Sequence[tuple[dict[str, int], int]],
                   k1: float = 1.5, b: float = 0.75) -> tuple[np.ndarray, dict[str, float]]:
    """BM25Okapi over documents given as their :func:`term_counts`
    (``(term -> occurrences, length)``, e.g. stored at ingest): scores of
    shape ``(len(counts),)`` and the IDF of each query term found, the same
    floats as :func:`bm25_with_idf` on the texts."""
    n = len(counts)
    idf_of: dict[str, float] = {}
    if n == 0:
        return np.zeros(0), idf_of
    lengths = np.fromiter((size for _, size in counts), dtype=np.float64, count=n)
    norm = k1 * (1 - b + b * lengths / (lengths.mean() or 1.0))
    scores = np.zeros(n)
    for t in dict.fromkeys(query):
        tf = np.fromiter((c.get(t, 0) for c, _ in counts), dtype=np.float64, count=n)
        df = int(np.count_nonzero(tf))
        if df:
            idf = idf_of[t] = math.log(1 + (n - df + 0.5) / (df + 0.5))
            scores += idf * tf * (k1 + 1) / (tf + norm)
    return scores, idf_of

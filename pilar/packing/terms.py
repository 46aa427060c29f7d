"""Query and unit text as the lexical parts of packing see it: lower-cased
content words (PILAR App. H.1's BM25 over words), Porter-stemmed as the
page index's FTS5 tokenizer (``porter unicode61``) stems them, so a question
word meets a unit as it met the page ("attended" and "Attendance" are both
``attend``), without the question words :data:`pilar.retrieval.STOPWORDS`
that BM25 queries leave out on every backend."""

from __future__ import annotations

import re
import threading
from collections import Counter
from functools import lru_cache

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

"""Query and unit text as the lexical parts of packing see it: lower-cased
content words with a light suffix strip (PILAR App. H.1's BM25 over words)."""

from __future__ import annotations

import re
from collections import Counter
from functools import lru_cache

_WORD = re.compile(r"\w+", re.UNICODE)
_STOP = frozenset("a an and are as at be by did do does for from had has have how in is it its "
                  "of on or that the their there this to was were what when where which who "
                  "whom whose why will with".split())


@lru_cache(maxsize=200_000)
def _stem(w: str) -> str | None:
    if w in _STOP:
        return None
    for suf in ("ing", "es", "s", "ed"):
        if len(w) > len(suf) + 2 and w.endswith(suf):
            return w[: -len(suf)]
    return w


@lru_cache(maxsize=100_000)
def tokens(text: str) -> tuple[str, ...]:
    """Lower-cased content-word tokens with a light suffix strip (plural /
    -ing / -ed); cached, since the same units are scored again and again."""
    stems = map(_stem, _WORD.findall(text.lower()))
    return tuple(w for w in stems if w)


@lru_cache(maxsize=100_000)
def term_counts(text: str) -> tuple[dict[str, int], int]:
    """``({token: occurrences}, number of tokens)`` of ``text``'s
    :func:`tokens`; cached like them (BM25 over units looks up a few query
    terms per unit, never walks a unit's tokens again)."""
    toks = tokens(text)
    return dict(Counter(toks)), len(toks)

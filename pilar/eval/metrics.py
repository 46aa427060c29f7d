"""Evaluation metrics shared by ``pilar eval`` and ``bench/``: each figure is
computed here and only here.

Retrieval (PILAR App. C; App. J.8 for support chains): :func:`recall_at_k`,
:func:`mean_recall` (recall@k averaged over k = 1..10), :func:`mrr`,
:func:`chain_coverage`. A ranking is a sequence of distinct ids, best first;
with ``scores`` (one per id, higher is better) items of equal score form a
tie group and every figure is its expectation over the orders of each tie
group (ties broken uniformly at random), so an arbitrary tie-break earns no
credit.

Packets and answers: :func:`delivered` (evidence delivery: every gold answer,
normalised, inside the packet text), :func:`citation_support` (the text of the
cited supports holds every gold answer), :func:`exact_match` and :func:`anls`
(ANLS with threshold 0.5 as in MP-DocVQA, Tito et al. 2023; Biten et al. 2019).

All functions are pure; they raise ``ValueError`` on malformed input (ids that
repeat, scores of the wrong length, ``k < 1``, no gold ids or answers).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from math import comb

from rapidfuzz.distance import Levenshtein

__all__ = [
    "RECALL_KS",
    "normalise_answer",
    "recall_at_k",
    "mean_recall",
    "mrr",
    "chain_coverage",
    "delivered",
    "citation_support",
    "exact_match",
    "anls",
    "answer_figures",
]

RECALL_KS = tuple(range(1, 11))
"""The k of recall@k that PILAR App. C reports and averages."""

_SPACE = re.compile(r"\s+")
_ASCII_PUNCT = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"


def _is_punct(ch: str) -> bool:
    return ch in _ASCII_PUNCT or unicodedata.category(ch).startswith("P")


def normalise_answer(text: str) -> str:
    """The dataset's answer normalisation (``../shared/data`` README): lowercase,
    collapse all whitespace to single spaces, strip, then repeatedly strip
    leading and trailing punctuation (ASCII and Unicode category P*).

    >>> normalise_answer('  "Hello,   World!" ')
    'hello, world'
    """
    text = _SPACE.sub(" ", text.lower()).strip()
    while text and _is_punct(text[0]):
        text = text[1:].strip()
    while text and _is_punct(text[-1]):
        text = text[:-1].strip()
    return text


def _qa_normalise(text: str) -> str:
    """PILAR App. C.1 QA normalisation for EM: lowercase, every punctuation
    character deleted (as SQuAD's EM does: "1,000" == "1000"), whitespace
    collapsed."""
    text = "".join(c for c in text.lower() if not _is_punct(c))
    return _SPACE.sub(" ", text).strip()


def _tie_groups(ranked: Sequence[str], scores: Sequence[float] | None) -> list[tuple[int, int]]:
    """Half-open position spans ``[start, end)`` of equal-score runs (each
    position alone without scores); raises ValueError on repeated ids or a
    score list of the wrong length."""
    if len(set(ranked)) != len(ranked):
        raise ValueError("ranked ids must be distinct")
    if scores is None:
        return [(i, i + 1) for i in range(len(ranked))]
    if len(scores) != len(ranked):
        raise ValueError(f"{len(scores)} scores for {len(ranked)} ranked ids")
    groups: list[tuple[int, int]] = []
    start = 0
    for i in range(1, len(ranked) + 1):
        if i == len(ranked) or scores[i] != scores[start]:
            groups.append((start, i))
            start = i
    return groups


def _gold_set(gold: str | Iterable[str]) -> set[str]:
    found = {gold} if isinstance(gold, str) else set(gold)
    if not found:
        raise ValueError("no gold ids")
    return found


def _check_k(k: int) -> None:
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")


def recall_at_k(ranked: Sequence[str], gold: str | Iterable[str], k: int,
                scores: Sequence[float] | None = None) -> float:
    """Share of the gold ids among the first ``k`` ranked ids, in [0, 1]
    (for one gold page: 1.0 if it is in the top k, else 0.0).

    ``ranked``: distinct ids, best first; ``gold``: one id or several;
    ``scores``: optional, one per ranked id: a gold id in a tie group that
    straddles position k counts with the chance that a random order of the
    group puts it in the top k (slots of the group inside the top k / group
    size). Raises ValueError for k < 1, no gold ids, repeated ids.
    """
    _check_k(k)
    golds = _gold_set(gold)
    found = 0.0
    for start, end in _tie_groups(ranked, scores):
        if start >= k:
            break
        hits = sum(ranked[i] in golds for i in range(start, end))
        found += hits * (min(k, end) - start) / (end - start)
    return found / len(golds)


def mean_recall(ranked: Sequence[str], gold: str | Iterable[str],
                scores: Sequence[float] | None = None,
                ks: Sequence[int] = RECALL_KS) -> float:
    """recall@k averaged over ``ks`` (default k = 1..10, PILAR App. C), in [0, 1].
    Same arguments and errors as :func:`recall_at_k`."""
    return sum(recall_at_k(ranked, gold, k, scores) for k in ks) / len(ks)


def mrr(ranked: Sequence[str], gold: str | Iterable[str], k: int | None = None,
        scores: Sequence[float] | None = None) -> float:
    """Reciprocal rank of the first gold id (1/rank, rank 1-based), 0.0 when no
    gold id is among the first ``k`` (all of ``ranked`` when ``k`` is None);
    the mean over questions is MRR (MRR@k with ``k``).

    With ``scores``, the expectation over random orders of the first tie group
    holding a gold id: for a group at positions s..s+n-1 holding g gold ids,
    the first gold sits at offset i with probability C(n-1-i, g-1) / C(n, g).
    Raises ValueError for k < 1, no gold ids, repeated ids.
    """
    if k is not None:
        _check_k(k)
    golds = _gold_set(gold)
    limit = len(ranked) if k is None else k
    for start, end in _tie_groups(ranked, scores):
        if start >= limit:
            break
        n = end - start
        g = sum(ranked[i] in golds for i in range(start, end))
        if g:
            total = comb(n, g)
            return sum(comb(n - 1 - i, g - 1) / total / (start + i + 1)
                       for i in range(min(n, limit - start)))
    return 0.0


def chain_coverage(ranked: Sequence[str], gold: Iterable[str], k: int,
                   scores: Sequence[float] | None = None) -> float:
    """Support-chain coverage: 1.0 when every gold id (each document of a
    multi-hop chain) is among the first ``k`` ranked ids, else 0.0
    (PILAR App. J.8 all-support-docs@k).

    With ``scores``, the probability over random orders of the tie groups: a
    group straddling position k with m slots inside the top k, n members and
    g gold ids keeps them all with probability C(m, g) / C(n, g).
    Raises ValueError for k < 1, no gold ids, repeated ids.
    """
    _check_k(k)
    golds = _gold_set(gold)
    p, seen = 1.0, 0
    for start, end in _tie_groups(ranked, scores):
        g = sum(ranked[i] in golds for i in range(start, end))
        if not g:
            continue
        seen += g
        m = max(0, min(k, end) - start)
        p *= comb(m, g) / comb(end - start, g)
    return p if seen == len(golds) else 0.0


def _check_answers(answers: Sequence[str]) -> None:
    if isinstance(answers, str) or not answers:
        raise ValueError("answers must be a non-empty list of strings")


def delivered(answers: Sequence[str], packet_text: str) -> bool:
    """Evidence delivery: every gold answer, normalised with
    :func:`normalise_answer`, occurs in the packet text (lowercased, all
    whitespace collapsed to single spaces). ``answers`` are the parts of one
    gold answer (a list answer needs all of them). Raises ValueError when
    ``answers`` is empty or a bare string.
    """
    _check_answers(answers)
    hay = _SPACE.sub(" ", packet_text.lower())
    return all(normalise_answer(a) in hay for a in answers)


def citation_support(answers: Sequence[str], cited_texts: Sequence[str]) -> bool:
    """Citation support: the text of the supports an answer cites holds every
    gold answer (:func:`delivered` over the cited texts joined by newlines).
    False when nothing is cited. Raises ValueError when ``answers`` is empty.
    """
    _check_answers(answers)
    return bool(cited_texts) and delivered(answers, "\n".join(cited_texts))


def exact_match(prediction: str, golds: Sequence[str]) -> float:
    """1.0 when the prediction equals any gold alternative after PILAR App. C.1
    normalisation (lowercase, punctuation removed, whitespace collapsed), else
    0.0. ``golds``: the accepted answer strings. Raises ValueError when empty.
    """
    _check_answers(golds)
    pred = _qa_normalise(prediction)
    return float(any(pred == _qa_normalise(g) for g in golds))


def anls(prediction: str, golds: Sequence[str], threshold: float = 0.5) -> float:
    """Average Normalised Levenshtein Similarity of one answer, in [0, 1]
    (MP-DocVQA: strings lowercased, stripped, whitespace collapsed): the best
    over gold alternatives of ``1 - NL`` when ``NL < threshold``, else 0, with
    NL = edit distance / length of the longer string (NL = 0 for two empty
    strings). The mean over questions is the dataset's ANLS.
    Raises ValueError when ``golds`` is empty.
    """
    _check_answers(golds)
    pred = _SPACE.sub(" ", prediction.lower()).strip()
    best = 0.0
    for gold in golds:
        nl = Levenshtein.normalized_distance(pred, _SPACE.sub(" ", gold.lower()).strip())
        if nl < threshold:
            best = max(best, 1.0 - nl)
    return best


def answer_figures(prediction: str, answers: Sequence[str],
                   cited_texts: Sequence[str] | None = None) -> dict[str, float]:
    """One answer's figures, each in [0, 1]: ``EM`` (:func:`exact_match`)
    and ``ANLS`` (:func:`anls`, threshold 0.5) of ``prediction`` (the short
    answer) against the gold answer's parts joined by ", " (one gold string,
    as the dataset writes a list answer), and, when ``cited_texts`` is given
    (the texts of the supports the answer cites), ``citation support``
    (:func:`citation_support`). Raises ValueError when ``answers`` is empty.
    """
    _check_answers(answers)
    gold = [", ".join(answers)]
    figures = {"EM": exact_match(prediction, gold), "ANLS": anls(prediction, gold)}
    if cited_texts is not None:
        figures["citation support"] = float(citation_support(answers, cited_texts))
    return figures

"""Hybrid page retrieval (PILAR §3.4, App. E.6, H.1).

``s_base(p, q) = 0.4 * BM25_norm(p, q) + 0.6 * dense(p, q)``: BM25 min-max
normalised over the candidate set, dense = cosine of the page's best chunk;
the candidates are the union of the BM25 and dense top lists, and the top
``shortlist`` (40) pages by hybrid score form the shortlist. Candidates whose
document is not ``ready`` in the graph (or outside the scope) are dropped
before normalisation, so every index backend ranks alike.

Reads that do not wait on each other run side by side on :data:`CALLS` (BM25
while the question is embedded and the kNN runs; the document read beside
the dense scores of BM25-only pages): against Neo4j and Elasticsearch each is
a round trip, and the searches' latency is their longest chain, not their sum.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor, wait
from contextlib import contextmanager

from pilar.config import Settings
from pilar.graph import GraphStore
from pilar.model import Document, RankedPage, Scope
from pilar.parts import doc_of, split_page_id
from pilar.retrieval import PageIndex
from pilar.retrieval.embeddings import Embedder


CALLS = ThreadPoolExecutor(max_workers=8, thread_name_prefix="pilar-retrieval")
"""Threads for store reads a search makes side by side (stores are thread-safe:
per-thread SQLite connections, pooled Neo4j and Elasticsearch clients)."""


@contextmanager
def beside(fn: Callable, *args) -> Iterator[Future]:
    """Run ``fn(*args)`` on :data:`CALLS` while the ``with`` body runs; its
    future, finished when the block is left (also when the body raises, so no
    read of a search outlives it)."""
    future = CALLS.submit(fn, *args)
    try:
        yield future
    finally:
        wait([future])


def best_first(pages: Iterable[RankedPage], k: int | None = None) -> list[RankedPage]:
    """``pages`` best score first, ties by page id: the order a search
    returns them in; the first ``k`` (all when None)."""
    return sorted(pages, key=lambda p: (-p.score, p.page_id))[:k]


def scaled(raw: float, lo: float, hi: float) -> float:
    """A raw BM25 score min-max scaled to a shortlist's range ``lo``-``hi``, clipped to 0-1."""
    return min(max((raw - lo) / (hi - lo), 0.0), 1.0) if hi > lo else 0.0


def min_max(scores: dict[str, float]) -> dict[str, float]:
    """Scale values to [0, 1] over the given set; if they are all equal, 1.0
    when they are positive and 0.0 when none is (no page matched)."""
    if not scores:
        return {}
    lo, hi = min(scores.values()), max(scores.values())
    if hi - lo < 1e-12:
        return {k: 1.0 if hi > 0 else 0.0 for k in scores}
    return {k: (v - lo) / (hi - lo) for k, v in scores.items()}


class HybridRetriever:
    """Scores pages of ``index`` for a question; see the module docstring.

    ``pool`` is how many pages each of BM25 and dense contribute to the
    candidate set before hybrid scoring (default: 2 x shortlist).
    """

    def __init__(self, graph: GraphStore, index: PageIndex, embedder: Embedder,
                 settings: Settings, pool: int | None = None):
        self.graph = graph
        self.index = index
        self.embedder = embedder
        self.settings = settings
        self.pool = pool or 2 * settings.shortlist

    def shortlist(self, question: str, scope: Scope | None = None) -> list[RankedPage]:
        """The top ``settings.shortlist`` pages within ``scope``, best first,
        with score parts."""
        s = self.settings
        with beside(self.index.bm25, question, self.pool, scope) as lexical:
            query = self.embedder.query(question)
            dense_top = self.index.dense_top(query, self.pool, scope)
        bm25 = lexical.result()
        pool = list(dict.fromkeys([*bm25, *dense_top]))
        with beside(self.index.dense_for, query,
                    [pid for pid in pool if pid not in dense_top]) as rest:
            docs = self.visible(pool, scope)
        dense = {**dense_top, **rest.result()}
        candidates = [pid for pid in pool if doc_of(pid) in docs]
        norm = min_max({pid: bm25.get(pid, 0.0) for pid in candidates})
        scored = sorted(
            ((s.bm25_weight * norm[pid] + s.dense_weight * dense[pid], pid) for pid in candidates),
            key=lambda t: (-t[0], t[1]),
        )[: s.shortlist]
        return self._ranked(scored, norm, dense, bm25, docs)

    def rank(self, question: str, page_ids: list[str],
             scope: Scope | None = None) -> list[RankedPage]:
        """Score exactly those of ``page_ids`` that are visible within
        ``scope`` (BM25 min-max normalised over them) for ``question``, best
        first: the base scorer over a given candidate set."""
        docs = self.visible(page_ids, scope)
        page_ids = [pid for pid in page_ids if doc_of(pid) in docs]
        query = self.embedder.query(question)
        dense = self.index.dense_for(query, page_ids)
        bm25 = self.index.bm25_for(question, page_ids)
        norm = min_max({pid: bm25.get(pid, 0.0) for pid in page_ids})
        s = self.settings
        scored = sorted(((s.bm25_weight * norm[pid] + s.dense_weight * dense[pid], pid)
                         for pid in page_ids), key=lambda t: (-t[0], t[1]))
        return self._ranked(scored, norm, dense, bm25, docs)

    def visible(self, page_ids: list[str], scope: Scope | None = None) -> dict[str, Document]:
        """``{doc_id: Document}`` of the documents behind ``page_ids`` that are
        ``ready`` and within ``scope``: one graph read."""
        doc_ids = list(dict.fromkeys(doc_of(pid) for pid in page_ids))
        if not doc_ids:
            return {}
        return {d.doc_id: d for d in self.graph.documents(doc_ids)
                if scope is None or scope.allows(d)}

    def _ranked(self, scored, norm, dense, bm25, docs: dict[str, Document]) -> list[RankedPage]:
        out = []
        for score, pid in scored:
            doc_id, number = split_page_id(pid)
            uri, title = docs[doc_id].uri, docs[doc_id].title
            out.append(RankedPage(
                page_id=pid, doc_id=doc_id, number=number, score=round(score, 6),
                source=uri, title=title, bm25=round(norm[pid], 6), dense=round(dense[pid], 6),
                trace={"bm25_raw": round(bm25.get(pid, 0.0), 4), "base": round(score, 6)},
            ))
        return out

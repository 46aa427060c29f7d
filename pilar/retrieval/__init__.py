"""Page retrieval: the PageIndex protocol, its backends, embeddings and the
hybrid scorer (PILAR §3.4, App. E.6).

:func:`pilar.stores.open_stores` picks the backend from config (the only
place that looks at ``settings.index``). Every backend passes the contract
suite in ``tests/test_page_index_contract.py``.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Protocol, runtime_checkable

import numpy as np

from pilar.model import IndexedPages, Page, Scope
from pilar.parts import words

STOPWORDS = frozenset(
    "a an and are as at be by did do does for from had has have how in is it its of on or "
    "that the their there these this those to was were what when where which who whom whose "
    "why will with".split()
)
"""Question words left out of BM25 queries, on every backend."""


def query_terms(question: str) -> list[str]:
    """The question's distinct lower-cased content words, in order (all its
    words when every one is a stopword): the terms OR-ed in a BM25 query."""
    found = words(question)
    return list(dict.fromkeys(w for w in found if w not in STOPWORDS)) or list(dict.fromkeys(found))


@runtime_checkable
class PageIndex(Protocol):
    """What a page index offers: BM25 and dense scores per page (PILAR §3.4).

    Pages are keyed by ``page_id`` (``doc_id:number``). A page holds zero or
    more dense vectors (``(dim,)`` float32, L2-normalised): one per run of
    evidence units on it (:func:`pilar.retrieval.unit_runs.unit_groups`;
    one per unit in stores built before runs) and one per table naming its
    columns (:func:`pilar.retrieval.unit_runs.table_heads`), or text
    windows when it has none; its dense score for a query is the best
    cosine among them. Score maps are ordered best first (ties
    by index order). Reads take a :class:`~pilar.model.Scope` and apply it
    inside the query, never after. The index does not know document status:
    callers drop pages of documents that are not ``ready`` in the graph.
    Backends raise :class:`pilar.errors.StoreError` (or ``sqlite3.Error`` on
    the embedded file) when a read or write fails.
    """

    name: str

    def migrate(self) -> list[int]:
        """Apply pending index migrations; the versions applied (``[]`` when
        up to date). Idempotent; indexes also migrate on open."""
        ...

    def close(self) -> None:
        """Release connections; the index is unusable afterwards."""
        ...

    def transaction(self) -> AbstractContextManager:
        """A unit of work: on the embedded store one SQLite transaction shared
        with the graph; on a server a no-op context (each write stands alone)."""
        ...

    def add_pages(self, pages: list[Page], vectors: list[np.ndarray],
                  unit_ids: list[list[str | None]] | None = None, *,
                  collection: str = "default",
                  sections: list[list[str]] | None = None) -> None:
        """Index ``pages`` (all of one document) in ``collection``;
        ``vectors[i]`` is page ``i``'s ``(n_i, dim)`` float32 array,
        ``unit_ids[i]`` names the unit behind each row (None for a text
        window), ``sections[i]`` the page's section paths (``" > "``-joined).
        Searchable when it returns. A page id already indexed is an error.
        The one-document form of :meth:`add_documents`."""
        ...

    def add_documents(self, docs: list[IndexedPages]) -> None:
        """Index the pages of several documents in one write (on a server bulk
        streams and one refresh for all, not one per document), each
        document in its own collection. Searchable when it returns. A page id
        already indexed is an error; after a failure some documents may be
        partly indexed (callers remove them: the write protocol keeps them
        hidden meanwhile)."""
        ...

    def unit_vectors(self, unit_ids: list[str]) -> dict[str, np.ndarray]:
        """``{unit_id: (dim,) float32}`` for the ids embedded at ingest (the
        first unit of each run; unknown ids are absent). A unit id begins
        with its page's id (``<page id>:u<n>``, as ingest names units): a
        server index finds the vector among its page's."""
        ...

    def delete_document(self, doc_id: str) -> int:
        """Remove a document's pages, vectors and unit vectors; the number of
        pages removed (0 when none were indexed). Searchable when it returns."""
        ...

    def delete_documents(self, doc_ids: list[str]) -> int:
        """:meth:`delete_document` for several documents in one write; the
        number of pages removed in all."""
        ...

    def count(self) -> int:
        """Pages indexed."""
        ...

    def bm25(self, question: str, n: int, scope: Scope | None = None) -> dict[str, float]:
        """``{page_id: bm25}`` for the ``n`` best-matching pages within
        ``scope``, best first (higher is better; raw, unnormalised). Pages
        matching no term of :func:`query_terms` are absent; ``{}`` when the
        question has no word."""
        ...

    def bm25_for(self, question: str, page_ids: list[str]) -> dict[str, float]:
        """``{page_id: bm25}`` restricted to ``page_ids`` (pages without a
        match, and unknown ids, are absent)."""
        ...

    def bm25_each(self, texts: list[str], page_ids: list[str]) -> list[dict[str, float]]:
        """:meth:`bm25_for` of each of ``texts`` on ``page_ids``, in order
        (one round trip for all on a server)."""
        ...

    def dense_top(self, query: np.ndarray, n: int, scope: Scope | None = None) -> dict[str, float]:
        """``{page_id: cosine}`` for the ``n`` pages within ``scope`` whose
        best vector is nearest ``query`` (a ``(dim,)`` L2-normalised vector),
        best first. Pages without vectors are never returned."""
        ...

    def dense_for(self, query: np.ndarray, page_ids: list[str]) -> dict[str, float]:
        """``{page_id: cosine}`` of the best vector of exactly ``page_ids``,
        in the order given (0.0 for unknown pages and pages without vectors)."""
        ...

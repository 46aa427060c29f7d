"""The retrievers of one store, one per profile, and what a search on a
store without pages means.

:class:`Retrievers` builds the base hybrid retriever (BM25 + dense, PILAR
§3.3) once and a :class:`~pilar.retrieval.expansion.GraphRetriever` per
profile (:data:`pilar.config.PROFILES`) on first use: each keeps per-page
caches for its bridge expansion. :meth:`Retrievers.rank` is the ranking of
a checked request (:class:`pilar.query.Query`): an unlimited search of a
store that holds no pages is an :class:`~pilar.errors.EmptyStoreError`
(:data:`EMPTY_STORE`), raised before any model loads.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from functools import cached_property

from pilar.config import Settings
from pilar.errors import EmptyStoreError
from pilar.graph import GraphStore
from pilar.model import RankedPage, Scope
from pilar.query import Query, check_profile
from pilar.retrieval import PageIndex
from pilar.retrieval.embeddings import QUERY_CACHE, Embedder
from pilar.retrieval.expansion import GraphRetriever
from pilar.retrieval.hybrid import HybridRetriever

EMPTY_STORE = "the store holds no documents: add some with `pilar ingest PATH`"
"""What a query on a store without documents says (EmptyStoreError, the CLI)."""
PRIME_BATCH = QUERY_CACHE // 2
"""Questions whose query vectors an evaluation embeds in one call (:meth:`Retrievers.prime`)."""


class Retrievers:
    """The retrievers over ``graph`` and ``index`` with ``embedder`` and
    ``settings`` (the default profile is ``settings.profile``)."""

    def __init__(self, graph: GraphStore, index: PageIndex, embedder: Embedder,
                 settings: Settings):
        self.graph, self.index, self.embedder, self.settings = graph, index, embedder, settings
        self._by_profile: dict[str, GraphRetriever] = {}
        self._lock = threading.Lock()
        self._held_pages = False  # the store was seen holding pages (see rank)

    @cached_property
    def hybrid(self) -> HybridRetriever:
        """The base hybrid retriever (BM25 + dense, PILAR §3.3)."""
        return HybridRetriever(self.graph, self.index, self.embedder, self.settings)

    def get(self, profile: str | None = None) -> GraphRetriever:
        """The graph-linking retriever for ``profile`` (default: settings'),
        one per profile. Raises ``ValueError`` for a profile not in
        :data:`pilar.config.PROFILES`."""
        profile = check_profile(self.settings.profile if profile is None else profile)
        with self._lock:
            found = self._by_profile.get(profile)
            if found is None:
                settings = self.settings.model_copy(update={"profile": profile}) \
                    if profile != self.settings.profile else self.settings
                found = self._by_profile[profile] = GraphRetriever(
                    self.graph, self.index, self.hybrid, settings.profiled())
        return found

    def rank(self, query: Query) -> list[RankedPage]:
        """The first ``query.k`` pages for ``query`` (best first, each with
        its trace) on its profile, within its scope. Raises
        :class:`~pilar.errors.EmptyStoreError` when the search is not limited
        and the store holds no pages (read until the store is seen holding
        pages, then again only when a search finds nothing: one round trip
        less per search)."""
        retriever = self.get(query.profile)
        scope = query.scope
        if scope.unlimited:
            if not self._held_pages and self.index.count() == 0:
                raise EmptyStoreError(EMPTY_STORE)
            self._held_pages = True
        pages = retriever.search(query.question, query.k, None if scope.unlimited else scope)
        if not pages and scope.unlimited and self.index.count() == 0:
            self._held_pages = False
            raise EmptyStoreError(EMPTY_STORE)
        return pages

    def ranker(self, profile: str | None, scope: Scope) -> Callable[[str, int], list[RankedPage]]:
        """``rank(question, depth)`` on ``profile`` within ``scope`` (an
        evaluation's: no empty-store check). Raises as :meth:`get` does."""
        retriever = self.get(profile)
        limit = None if scope.unlimited else scope
        return lambda question, depth: retriever.search(question, depth, limit)

    def prime(self, questions: Sequence) -> None:
        """Embed the query vectors of ``questions`` (objects with a
        ``question`` text; at most :data:`PRIME_BATCH`) in one call, ahead of
        their searches."""
        self.embedder.prime([q.question for q in questions])

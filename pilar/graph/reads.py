"""The reads of the stored graph that every face offers: documents, pages,
entities, neighbourhoods and counts (``pilar docs``, ``/v1/documents``,
``/v1/pages``, ``/v1/entities``, the MCP tools).

:class:`GraphReads` is a mixin over a ``graph``
(:class:`~pilar.graph.GraphStore`): :class:`pilar.Pilar` has these methods
through it, each one read of the store with the request's checks of
:mod:`pilar.query`.
"""

from __future__ import annotations

from pilar.graph import GraphStore
from pilar.graph.explore import neighborhood
from pilar.model import Document, Entity, Neighborhood, Page, Support
from pilar.query import check_scope


class GraphReads:
    """Reads of ``self.graph`` (a :class:`~pilar.graph.GraphStore`)."""

    graph: GraphStore

    def page(self, page_id: str) -> tuple[Page, list[Support]] | None:
        """A stored page and its supports (document order, with provenance), or None."""
        page = self.graph.pages([page_id]).get(page_id)
        return None if page is None else (page, self.graph.supports_on_pages([page_id])[page_id])

    def entities(self, query: str, limit: int = 20,
                 collections: list[str] | None = None) -> list[Entity]:
        """Entities (of ``collections`` when given) whose name or aliases
        share words with ``query`` (full-text, best first, at most ``limit``).
        Raises ``ValueError`` for a name that is no collection name."""
        names = check_scope(collections, None).collections
        return self.graph.entity_candidates(query, limit, None if names is None else list(names))

    def entity(self, entity_id: str) -> Entity | None:
        """The entity ``entity_id``, or None."""
        return self.graph.get_entities([entity_id]).get(entity_id)

    def entity_documents(self, entity_ids: list[str]) -> dict[str, list[str]]:
        """``{entity_id: [doc_id, ...]}``: the documents that use each entity."""
        return self.graph.entity_documents(entity_ids)

    def neighborhood(self, entity_id: str, depth: int = 1, doc_ids: set[str] | None = None,
                     limit: int = 50) -> Neighborhood | None:
        """Entities, assertions, supports and pages within ``depth`` hops of
        ``entity_id`` (:func:`pilar.graph.explore.neighborhood`), only of
        ``doc_ids`` when given; None for an unknown entity."""
        return neighborhood(self.graph, entity_id, depth, doc_ids, limit)

    def docs(self, collections: list[str] | None = None) -> list[Document]:
        """Stored (``ready``) documents, oldest first; only those in
        ``collections`` when given. Raises ``ValueError`` for a name that is
        no collection name."""
        check_scope(collections, None)
        return self.graph.documents(collections=collections)

    def stats(self) -> dict[str, int]:
        """Counts of documents, pages, supports, provenance, units, tables,
        assertions, entities and each edge type; the same keys on every backend."""
        return self.graph.stats()

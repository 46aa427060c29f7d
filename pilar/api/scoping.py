"""Collection scoping: the only place where the API asks the :class:`~pilar.Pilar`
facade for documents, pages, entities and packets on behalf of a caller's
:class:`~pilar.api.auth.Access`.

A key limited to some collections gets nothing of the others, on any route:
documents, pages, entities, jobs and citations are filtered here, and what
is out of reach is reported as absent (404), never as forbidden, so its
existence does not leak.
"""

from __future__ import annotations

from pilar import Pilar
from pilar.api.auth import Access
from pilar.model import Document, Packet, SearchResult

DEFAULT_COLLECTION = "default"


def collection_of(doc: Document) -> str:
    """The collection a stored document belongs to."""
    return getattr(doc, "collection", None) or DEFAULT_COLLECTION


def documents(pilar: Pilar, access: Access, collections: list[str] | None = None) -> list[Document]:
    """Stored documents the caller may see (oldest first), optionally only
    those of ``collections``."""
    wanted = access.narrow(collections)
    docs = pilar.docs()
    return docs if wanted is None else [d for d in docs if collection_of(d) in wanted]


def document(pilar: Pilar, access: Access, doc_id: str) -> Document | None:
    """The document ``doc_id`` if it exists and the caller may see it."""
    found = pilar.graph.documents([doc_id])
    return found[0] if found and access.allows(collection_of(found[0])) else None


def visible_doc_ids(pilar: Pilar, access: Access) -> set[str] | None:
    """Ids of the documents the caller may see; None for every document."""
    if access.unlimited:
        return None
    return {d.doc_id for d in documents(pilar, access)}


def search(pilar: Pilar, access: Access, query: str, budget: int, k: int | None,
           profile: str | None, doc_ids: list[str] | None,
           collections: list[str] | None) -> SearchResult:
    """:meth:`Pilar.search` within the caller's collections (and ``doc_ids``
    / ``collections`` when given): pages of other documents are never
    ranked, packed or cited. Raises ``ValueError`` as ``Pilar.search`` does."""
    wanted = access.narrow(collections)
    allowed: set[str] | None = None
    if wanted is not None or doc_ids is not None:
        allowed = {d.doc_id for d in documents(pilar, access, collections)}
        if doc_ids is not None:
            allowed &= set(doc_ids)
    if allowed is not None and not allowed:
        pilar.search(query, budget=budget, k=k, profile=profile)  # same validation, no result
        return SearchResult(query, [], Packet("", [], budget, 0, pilar.tokens.name,
                                              pilar.tokens.estimate))
    result = pilar.search(query, budget=budget, k=k, profile=profile)
    if allowed is None:
        return result
    pages = [p for p in result.pages if p.doc_id in allowed]
    return SearchResult(query, pages, pilar.pack(query, pages, budget))


def ingest_file(pilar: Pilar, path, collection: str):
    """Ingest one file into ``collection`` (:meth:`Pilar.ingest_file`); an
    :class:`~pilar.model.IngestResult`, never raises for bad input."""
    if collection != DEFAULT_COLLECTION:
        from pilar.model import IngestResult

        return IngestResult(str(path), "failed", reason=f"collection {collection!r}: this "
                            "store holds only the default collection")
    return pilar.ingest_file(path)


def page(pilar: Pilar, access: Access, page_id: str):
    """``(document, page, supports)`` for a page the caller may see, else None."""
    doc_id, sep, number = page_id.rpartition(":")
    if not sep or not number.isdigit():
        return None
    doc = document(pilar, access, doc_id)
    found = pilar.page(page_id) if doc is not None else None
    return (doc, *found) if found else None


def _entity_visible(pilar: Pilar, allowed: set[str] | None, entity_ids: list[str]) -> set[str]:
    if allowed is None:
        return set(entity_ids)
    return {eid for eid, docs in pilar.entity_documents(entity_ids).items()
            if allowed.intersection(docs)}


def entities(pilar: Pilar, access: Access, query: str, limit: int):
    """Entities matching ``query`` that documents the caller sees use."""
    allowed = visible_doc_ids(pilar, access)
    found = pilar.entities(query, limit if allowed is None else limit * 5)
    keep = _entity_visible(pilar, allowed, [e.entity_id for e in found])
    return [e for e in found if e.entity_id in keep][:limit]


def entity(pilar: Pilar, access: Access, entity_id: str):
    """The entity if documents the caller sees use it, else None."""
    found = pilar.entity(entity_id)
    if found is None or not _entity_visible(pilar, visible_doc_ids(pilar, access), [entity_id]):
        return None
    return found


def neighborhood(pilar: Pilar, access: Access, entity_id: str, depth: int):
    """:meth:`Pilar.neighborhood` within the caller's documents (None if unseen)."""
    return pilar.neighborhood(entity_id, depth, visible_doc_ids(pilar, access))

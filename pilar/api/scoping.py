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
from pilar.errors import UnknownScopeError
from pilar.model import Document, SearchResult
from pilar.parts import split_page_id
from pilar.query import query_args, unknown_scope


def _names(collections: frozenset[str] | None) -> list[str] | None:
    return None if collections is None else sorted(collections)


def documents(pilar: Pilar, access: Access, collections: list[str] | None = None) -> list[Document]:
    """Stored documents the caller may see (oldest first), optionally only
    those of ``collections``."""
    return pilar.docs(collections=_names(access.narrow(collections)))


def document(pilar: Pilar, access: Access, doc_id: str) -> Document | None:
    """The document ``doc_id`` if it exists (ready) and the caller may see it."""
    found = pilar.graph.documents([doc_id], collections=_names(access.collections))
    return found[0] if found else None


def visible_doc_ids(pilar: Pilar, access: Access) -> set[str] | None:
    """Ids of the documents the caller may see; None for every document."""
    if access.unlimited:
        return None
    return {d.doc_id for d in documents(pilar, access)}


def _request(access: Access, request) -> dict:
    """The facade's keyword arguments for a request model instance
    (:func:`pilar.query.query_args`) within the caller's collections.
    Collections named outside them are told of exactly as collections
    holding nothing are (:class:`~pilar.errors.UnknownScopeError`)."""
    args = query_args(request)
    return {**args, "collections": _within(access, args["collections"])}


def _within(access: Access, wanted: list[str] | None) -> list[str] | None:
    narrowed = access.narrow(wanted)
    if wanted is not None and (hidden := [c for c in wanted if c not in narrowed]):
        raise UnknownScopeError(unknown_scope(hidden, [], True))
    return _names(narrowed)


def search(pilar: Pilar, access: Access, request) -> SearchResult:
    """:meth:`Pilar.search` of ``request`` (a :func:`pilar.query.request_model`
    instance) within the caller's collections: pages of other collections
    are never ranked, packed or cited. Raises what ``Pilar.search`` raises."""
    return pilar.search(**_request(access, request))


def answer(pilar: Pilar, access: Access, request, stream: bool = False):
    """:meth:`Pilar.ask` with the packet scoped exactly as :func:`search`
    scopes it: the reader sees, and cites, only the caller's collections.
    Raises what ``Pilar.ask`` raises (no reader, reader failures, bad
    arguments)."""
    return pilar.ask(**_request(access, request), stream=stream)


def eval_collections(access: Access, collections: list[str] | None) -> list[str] | None:
    """The collections an evaluation for the caller reads (None = all);
    raises :class:`~pilar.errors.UnknownScopeError` for a named one outside
    the caller's (as :func:`search` does)."""
    return _within(access, collections)


def job_visible(access: Access, job) -> bool:
    """Whether the caller may see ``job`` (a :class:`~pilar.api.models.Job`):
    an ingest job when its collection is the caller's, an evaluation job
    when every collection it read is."""
    if job.kind == "eval":
        return access.unlimited or (job.collections is not None
                                    and set(job.collections) <= access.collections)
    return access.allows(job.collection)


def page(pilar: Pilar, access: Access, page_id: str):
    """``(document, page, supports)`` for a page the caller may see, else None."""
    try:
        doc_id, _ = split_page_id(page_id)
    except ValueError:
        return None
    doc = document(pilar, access, doc_id)
    found = pilar.page(page_id) if doc is not None else None
    return (doc, *found) if found else None


def entities(pilar: Pilar, access: Access, query: str, limit: int):
    """Entities of the caller's collections matching ``query`` (an entity
    belongs to one collection: :attr:`pilar.model.Entity.collection`)."""
    return pilar.entities(query, limit, _names(access.collections))


def entity(pilar: Pilar, access: Access, entity_id: str):
    """The entity if it is of a collection the caller sees, else None."""
    found = pilar.entity(entity_id)
    return found if found is not None and access.allows(found.collection) else None


def neighborhood(pilar: Pilar, access: Access, entity_id: str, depth: int):
    """:meth:`Pilar.neighborhood` within the caller's documents (None if unseen)."""
    return pilar.neighborhood(entity_id, depth, visible_doc_ids(pilar, access))

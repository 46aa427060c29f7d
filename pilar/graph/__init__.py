"""Graph stores: the document, page, support and provenance layers (and, with
their issues, assertions and entities) of DESIGN.md.

:class:`GraphStore` names what every backend does; :func:`pilar.stores.open_stores`
picks the backend from config.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from datetime import datetime, timedelta, timezone
from typing import Protocol, runtime_checkable

from pilar.model import (Assertion, Bridge, Document, DocumentStatus, Entity, EntityLinks, Page,
                         ParsedDocument, SameAs, Support, Unit, UnitStats)


@runtime_checkable
class GraphStore(Protocol):
    """What a graph backend offers. Writes are per document atomic: a
    document is either fully visible or not at all. A Document's ``status``
    is the visibility switch of the two-store write protocol (DESIGN.md
    "Graph"): reads of documents see ``ready`` ones unless asked otherwise.
    Backends raise :class:`pilar.errors.StoreError` (or ``sqlite3.Error`` on
    the embedded file) when a read or write fails."""

    name: str

    def migrate(self) -> list[int]:
        """Apply pending schema migrations; the versions applied (``[]`` when
        up to date). Idempotent; stores also migrate on open."""
        ...
    def close(self) -> None:
        """Release connections; the store is unusable afterwards."""
        ...
    def transaction(self) -> AbstractContextManager[None]: ...
    def find_by_sha256(self, sha256: str, collection: str) -> Document | None:
        """The document of ``collection`` with these bytes, whatever its
        status, or None (the same bytes in another collection are another
        document)."""
        ...
    def find_by_uri(self, uri: str, collection: str | None = None) -> list[Document]:
        """Documents (of ``collection``; None = any) that have ``uri`` among
        their ``sources``, whatever their status."""
        ...
    def add_source(self, doc_id: str, uri: str) -> bool:
        """Record ``uri`` as another location of the stored document
        ``doc_id`` (a copy of the same bytes); False when it was one already
        or there is no such document."""
        ...
    def remove_source(self, doc_id: str, uri: str) -> None:
        """Forget ``uri`` as a location of ``doc_id`` (new bytes arrived
        there); ``Document.uri`` moves to the next source when it was this one."""
        ...
    def documents(self, doc_ids: list[str] | None = None, *,
                  collections: list[str] | None = None,
                  statuses: tuple[DocumentStatus, ...] | None = ("ready",)) -> list[Document]:
        """Stored documents, oldest first (then by uri): all, or those of
        ``doc_ids`` that exist; only those in ``collections`` when given,
        and of ``statuses`` (None = any). One read whatever the number of ids."""
        ...
    def begin_documents(self, docs: list[Document]) -> None:
        """Record ``docs`` (no layers yet) with status ``pending``, in one
        write: the first step of the write protocol, so a crash leaves a
        trace the next ingest cleans up. Replaces an earlier record of the
        same id that has no layers."""
        ...
    def set_status(self, doc_id: str, status: DocumentStatus) -> bool:
        """Set a stored document's status; False if it is not stored."""
        ...
    def pages(self, page_ids: list[str]) -> dict[str, Page]: ...
    def supports_on_pages(self, page_ids: list[str]) -> dict[str, list[Support]]:
        """``{page_id: [Support, ...]}`` (document order, with provenance) for
        every id given; one read for all pages."""
        ...
    def units_on_pages(self, page_ids: list[str]) -> dict[str, list[Unit]]:
        """``{page_id: [Unit, ...]}`` (document order, each with its stored
        :class:`~pilar.model.UnitStats` or ``stats`` None) for every id given;
        one read for all pages."""
        ...
    def page_material(self, page_ids: list[str]
                      ) -> dict[str, tuple[list[Support], list[Unit]]]:
        """``{page_id: (supports, units)}``, each list as
        :meth:`supports_on_pages` and :meth:`units_on_pages` give it, for
        every id given (``([], [])`` for unknown pages): what packing reads
        of its candidate pages, in one query for all pages."""
        ...
    def set_unit_stats(self, stats: dict[str, UnitStats]) -> None:
        """Store ``{unit_id: UnitStats}`` on existing units (unknown ids are
        ignored): statistics filled after ingest (an older store, another
        tokenizer). Raises the backend's error if the write fails."""
        ...
    def stats(self) -> dict[str, int]: ...
    def write_document(self, parsed: ParsedDocument, replaces: list[str] = ()) -> Document:
        """Write every layer of ``parsed`` with status ``ready`` (its
        ``collection`` as set on the Document) in one transaction, which also
        empties the documents ``replaces`` of their layers and leaves them
        ``deleting`` (hidden; the caller removes them from the index, then
        with :meth:`delete_document`). Returns the stored Document. The
        one-document form of :meth:`write_documents`."""
        ...
    def write_documents(self, items: list[tuple[ParsedDocument, list[str]]]) -> list[Document]:
        """:meth:`write_document` for every ``(parsed, replaces)`` of
        ``items`` in one transaction (all of them visible, ``ready``, or none:
        the write protocol's visibility switch for a batch of documents;
        ``ingested_at`` increasing in ``items`` order). Returns the stored
        Documents in order."""
        ...
    def delete_document(self, doc_id: str) -> bool:
        """Remove a document, its layers and the entities no other document
        uses; False if it was not stored."""
        ...
    def cypher(self, query: str, params: dict | None = None, *, timeout: float = 30.0,
               row_cap: int = 1000, byte_cap: int = 1024 * 1024):
        """Run a read-only Cypher query (:func:`pilar.graph.explore.run_read_query`):
        refused unless its plan only reads, ended by the server after
        ``timeout`` seconds, cut at ``row_cap`` rows or ``byte_cap`` bytes.
        Raises :class:`pilar.graph.explore.CypherError`, or
        :class:`pilar.errors.ConfigError` on a backend without Cypher."""
        ...
    def entity_candidates(self, name: str, limit: int = 20,
                          collections: list[str] | None = None) -> list[Entity]:
        """Stored entities whose name or aliases share words with ``name``
        (full-text, best first, at most ``limit``), of ``collections`` only
        when given (an entity belongs to the collection of the documents
        that use it, :attr:`pilar.model.Entity.collection`)."""
        ...
    def entity_candidates_many(self, names: list[str], limit: int = 20,
                               collections: list[str] | None = None) -> list[list[Entity]]:
        """:meth:`entity_candidates` of each of ``names``, in order, in one
        read where the backend is a server (linking a batch of documents
        asked Neo4j once per name: 4,876 round trips for 30 pages)."""
        ...
    def get_entities(self, entity_ids: list[str]) -> dict[str, Entity]:
        """``{entity_id: Entity}`` (with its collection, without mentions)
        for the ids that exist."""
        ...
    def assertions_of(self, doc_id: str) -> list[Assertion]: ...
    def page_sections(self, page_ids: list[str]) -> dict[str, set[tuple[str, ...]]]: ...
    def expansion_pages(self, entity_ids: list[str],
                        limit: int = 50) -> dict[str, dict[str, list[str]]]:
        """``{"mention" | "alias" | "assertion": {page_id: [path step, ...]}}``:
        the pages the graph reaches from ``entity_ids`` (at most ``limit`` per
        entity and kind), in one read; see the backends for the order."""
        ...
    def mention_pages(self, entity_ids: list[str]) -> dict[str, int]:
        """``{entity_id: n}`` for every id given: how many distinct pages hold
        a support that mentions the entity (``MENTIONED_IN``); 0 for unknown
        ids. One read."""
        ...
    def bridges(self, support_ids: list[str], max_documents: int = 10,
                limit: int = 20) -> list[Bridge]:
        """One bridge hop (PILAR §3.4, multi-hop profile), in one read (the
        embedded store: two, of what it has not kept since its last write): every
        entity mentioned on ``support_ids`` as a :class:`~pilar.model.Bridge`
        (the given supports naming it, the documents mentioning it, counted
        up to ``max_documents + 1``) and, for those mentioned in at most
        ``max_documents`` documents, the pages of any document (the given
        supports' own included: callers drop what they already hold) that
        mention it or an entity ``SAME_AS`` it, one support per page, at most
        ``limit`` pages per entity in (document, page) order. Entities by id;
        unknown support ids add nothing. Documents of any status: callers
        keep the visible ones."""
        ...
    def template_supports(self, support_ids: list[str], documents: int = 3,
                          max_documents: int = 10) -> set[str]:
        """The supports of ``support_ids`` that are template text (PILAR §3.4,
        multi-hop profile; boilerplate detection as in web retrieval): word
        for word the text of supports in at least ``documents`` documents
        (its own included) that mention an entity it mentions: a footer
        ("ONT HSE incident system · internal."), a standard clause, a
        directory's "questions go to Human Resources" line. Such a line
        links the documents of a template, not the things a chain follows.
        Only entities that at most ``max_documents`` documents mention are
        walked (a hub leads no chain anywhere, and its mentions could be
        many): a support mentioning no other entity is not template text
        here; unknown ids add nothing. One read."""
        ...
    def entity_links(self, entity_ids: list[str], limit: int = 50) -> EntityLinks:
        """One hop of the graph around ``entity_ids`` (exploration): the
        assertions each entity is subject or object of (at most ``limit`` per
        entity, smallest assertion ids first; each assertion once, ordered by
        id), its ``MENTIONED_IN`` supports as ``(entity_id, support_id)`` (at
        most ``limit`` per entity, by support id) and the ``SAME_AS`` links
        touching them in either direction (by source, then target). Unknown
        ids add nothing."""
        ...
    def same_as_links(self) -> list[SameAs]:
        """Every ``SAME_AS`` link between entities (PILAR App. E.2, linking
        across documents), by source then target. One read."""
        ...
    def entity_documents(self, entity_ids: list[str]) -> dict[str, list[str]]:
        """``{entity_id: [doc_id, ...]}`` for every id given: the documents
        (sorted) that mention the entity or hold an assertion about it; ``[]``
        for unknown ids. One read."""
        ...
    def supports_by_id(self, support_ids: list[str]) -> dict[str, Support]:
        """``{support_id: Support}`` with provenance, for the ids that exist. One read."""
        ...


READ_CACHE = 32_768
"""Entries of each kind of read a graph store keeps between searches
(:class:`~pilar.parts.ReadCache`)."""


def ingest_time() -> str:
    """Now as ISO-8601 UTC to the microsecond: a document's ``ingested_at``,
    by which both backends list documents (so documents stored within one
    second keep their order)."""
    return ingest_times(1)[0]


def ingest_times(n: int) -> list[str]:
    """``n`` increasing :func:`ingest_time` stamps from now, one microsecond
    apart: the ``ingested_at`` of a batch of documents written together, so
    they list in batch order."""
    now = datetime.now(timezone.utc)
    return [(now + timedelta(microseconds=i)).isoformat(timespec="microseconds")
            for i in range(n)]


def add_expansion_rows(out: dict[str, dict[str, list[str]]], eid: str, mention: list,
                       alias: list, assertion: list) -> None:
    """Add the expansion rows of entity ``eid`` to ``out`` (the shape of
    :meth:`GraphStore.expansion_pages`); a page keeps the first path that
    reached it. Rows, in the order the backend ranked them:
    ``mention`` ``[page_id, support_id]``; ``alias`` ``[page_id,
    other_entity_id, score, method, support_id]``; ``assertion`` ``[page_id,
    assertion_id, predicate, support_id]``."""
    for pid, sid in mention:
        out["mention"].setdefault(pid, [f"entity:{eid}", "MENTIONED_IN", f"support:{sid}",
                                        f"page:{pid}"])
    for pid, other, score, method, sid in alias:
        out["alias"].setdefault(pid, [f"entity:{eid}", f"SAME_AS({method}, {score:.2f})",
                                      f"entity:{other}", "MENTIONED_IN", f"support:{sid}",
                                      f"page:{pid}"])
    for pid, aid, pred, sid in assertion:
        out["assertion"].setdefault(pid, [f"entity:{eid}", f"assertion:{aid} ({pred})",
                                          "SUPPORTED_BY", f"support:{sid}", f"page:{pid}"])

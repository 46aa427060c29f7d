"""The Neo4j graph backend (production), on the official ``neo4j`` driver.

Layers as in DESIGN.md: (:Document), (:Page)-[:IN_DOCUMENT]->(:Document),
(:Page)-[:NEXT]->(:Page), (:Support)-[:HAS_PROVENANCE]->(:Provenance)
-[:ON_PAGE]->(:Page), (:Unit)-[:DERIVED_FROM]->(:Support), (:TableGrid), and
with the assertion graph (:Assertion), (:Entity). A batch of documents is
written with UNWIND batches of thousands of rows (every layer of all its
documents together) inside ONE managed write transaction (the driver
retries transient failures, then the error surfaces as a
:class:`~pilar.errors.StoreError`), so each document is visible whole or
not at all. The Cypher is in :mod:`pilar.graph.neo4j_cypher`, the rows it sends and
reads in :mod:`pilar.graph.neo4j_rows`, the schema in ``migrations/neo4j``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from typing import Any

from pilar.errors import StoreError
from pilar.graph import READ_CACHE, add_expansion_rows, ingest_times
from pilar.migrations import migration_files
from pilar.graph import neo4j_cypher as cy
from pilar.graph.neo4j_rows import (Rows, assertion_of, batch_rows, batches, document_of,
                                    entity_of, stats_row, support_of, unit_of)
from pilar.model import (Assertion, Bridge, Document, Entity, EntityLinks, Page, ParsedDocument,
                         SameAs, Support, Unit, UnitStats, to_jsonable)
from pilar.parts import ReadCache, words as split_words


def _fulltext_query(name: str) -> str | None:
    """The Lucene query of the ``entity_names`` index for ``name``: its
    first 16 distinct words, each quoted, ORed; None when it has none."""
    words = list(dict.fromkeys(split_words(name)))[:16]
    if not words:
        return None
    return " OR ".join('"' + w.replace('"', "") + '"' for w in words)


class Neo4jGraphStore:
    """GraphStore on a Neo4j 5 server (see :class:`pilar.graph.GraphStore`).

    ``uri`` is a bolt/neo4j URI; ``auth`` a ``(user, password)`` pair or None.
    Applies pending migrations on open. Raises :class:`StoreError` if the
    server cannot be reached. Every write transaction ends by setting the
    graph's change stamp (:meth:`data_version`), so the reads searches
    repeat (bridges, template text, documents by id) are kept until any
    process writes (:class:`~pilar.parts.ReadCache`).
    """

    name = "neo4j"

    def __init__(self, uri: str, auth: tuple[str, str] | None = None, database: str | None = None):
        import neo4j

        self._neo4j = neo4j
        self.uri = uri
        self.database = database
        try:
            self.driver = neo4j.GraphDatabase.driver(uri, auth=auth, notifications_min_severity="OFF")
            self.driver.verify_connectivity()
        except Exception as exc:  # noqa: BLE001 - any connection failure
            raise StoreError(f"cannot reach Neo4j at {uri}: {exc}") from exc
        self.reads = ReadCache(self, READ_CACHE)  # what searches read again and again
        self.migrate()

    # -- schema ------------------------------------------------------------------
    def migrate(self) -> list[int]:
        """Apply ``migrations/neo4j/NNNN_*.cypher`` not yet recorded as
        ``(:SchemaMigration {version})``; returns the versions applied. Idempotent."""
        done = {r["v"] for r in self._read(cy.MIGRATIONS_DONE)}
        applied = []
        for version, path in migration_files("neo4j", ".cypher"):
            if version in done:
                continue
            text = "\n".join(line for line in path.read_text(encoding="utf-8").splitlines()
                             if not line.strip().startswith("//"))
            for statement in (s.strip() for s in text.split(";")):
                if statement:
                    self.driver.execute_query(statement, database_=self.database)
            self.driver.execute_query(
                cy.RECORD_MIGRATION, v=version, name=path.name, at=datetime.now(timezone.utc).isoformat(),
                database_=self.database)
            applied.append(version)
        if applied:  # an empty write, to set the change stamp: kept reads may read otherwise
            self._write(lambda tx: None)
        return applied

    def server_version(self) -> str:
        rec = self._read(cy.SERVER_VERSION)[0]
        return f"{rec['name']} {rec['version']} {rec['edition']}"

    # -- plumbing ----------------------------------------------------------------
    def _read(self, query: str, **params) -> list[dict[str, Any]]:
        """Records of one read query (one round trip) as dicts."""
        return self._query(query, params, lambda result: result.data())

    def _values(self, query: str, **params) -> list[list[Any]]:
        """Records of one read query (one round trip) as lists of values, in
        RETURN order: cheaper to decode than :meth:`_read` for many rows."""
        return self._query(query, params, lambda result: result.values())

    def _query(self, query: str, params: dict[str, Any], transform) -> Any:
        try:
            return self.driver.execute_query(
                query, params, database_=self.database, routing_=self._neo4j.RoutingControl.READ,
                result_transformer_=transform)
        except self._neo4j.exceptions.Neo4jError as exc:
            raise StoreError(f"Neo4j at {self.uri}: read failed: {exc.message or exc}") from exc
        except self._neo4j.exceptions.DriverError as exc:
            raise StoreError(f"cannot reach Neo4j at {self.uri}: {exc}") from exc

    def _write(self, work) -> Any:
        """``work(tx)`` in one managed write transaction that ends by setting
        the change stamp (last, so the stamp's lock is held only until the
        commit); what ``work`` returns."""
        def stamped(tx):
            out = work(tx)
            tx.run(cy.STAMP_CHANGE).consume()
            return out
        try:
            with self.driver.session(database=self.database) as session:
                return session.execute_write(stamped)
        except (self._neo4j.exceptions.Neo4jError, self._neo4j.exceptions.DriverError) as exc:
            raise StoreError(f"Neo4j at {self.uri}: write failed: "
                             f"{getattr(exc, 'message', None) or exc}") from exc

    def data_version(self) -> str | None:
        """The graph's change stamp: a random UUID that every committed write
        transaction, of any process, sets anew (None before the first).
        One read."""
        return self._values(cy.CHANGE_STAMP)[0][0]

    def in_transaction(self) -> bool:
        """Always False: a write is one managed transaction inside one call,
        and reads never see it before it commits."""
        return False

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Writes are atomic per call (one managed transaction each); this
        context exists for protocol symmetry with the embedded store."""
        yield

    def close(self) -> None:
        self.driver.close()

    # -- reads ---------------------------------------------------------------
    def find_by_sha256(self, sha256: str, collection: str) -> Document | None:
        """The document of ``collection`` with these bytes (any status), or None."""
        rows = self._read(cy.FIND_BY_SHA256, sha=sha256, collection=collection)
        return document_of(rows[0]) if rows else None

    def find_by_uri(self, uri: str, collection: str | None = None) -> list[Document]:
        """Documents (of ``collection``; None = any) that have ``uri`` among their sources."""
        return [document_of(r) for r in self._read(cy.FIND_BY_URI, uri=uri,
                                                   collection=collection)]

    def documents(self, doc_ids: list[str] | None = None, *,
                  collections: list[str] | None = None,
                  statuses: tuple[str, ...] | None = ("ready",)) -> list[Document]:
        """Stored documents, oldest first (then by uri): all of them, or those
        of ``doc_ids`` that exist (unknown ids are skipped; kept until the
        graph changes, :class:`~pilar.parts.ReadCache`), limited to
        ``collections`` and ``statuses`` when given. One query. Raises
        :class:`StoreError` if the read fails."""
        if doc_ids is not None and not doc_ids:
            return []
        if doc_ids is not None:  # rows of any status kept, filtered here
            kept = self.reads.through("document", doc_ids, lambda ids: dict.fromkeys(ids) | {
                r["d.doc_id"]: r for r in self._read(cy.DOCUMENTS_BY_ID, ids=ids,
                                                     collections=None, statuses=None)})
            docs = [d for d in map(document_of, filter(None, kept.values()))
                    if (collections is None or d.collection in collections)
                    and (statuses is None or d.status in statuses)]
            return sorted(docs, key=lambda d: (d.ingested_at, d.uri))  # set by begin_documents
        return [document_of(r) for r in self._read(
            cy.DOCUMENTS, ids=None,
            collections=None if collections is None else list(collections),
            statuses=None if statuses is None else list(statuses))]

    def pages(self, page_ids: list[str]) -> dict[str, Page]:
        rows = self._read(cy.PAGES, ids=page_ids)
        pages = [Page(r["d"], r["n"], r["t"], r["w"], r["h"]) for r in rows]
        return {p.page_id: p for p in pages}

    def supports_on_pages(self, page_ids: list[str]) -> dict[str, list[Support]]:
        """``{page_id: [Support, ...]}`` in document order, with provenance, for
        every id given (``[]`` for unknown pages). One query for all pages.
        Raises :class:`StoreError` if the read fails."""
        out: dict[str, list[Support]] = {pid: [] for pid in page_ids}
        if not out:
            return out
        for pid, doc_id, number, rows in self._values(cy.SUPPORTS_ON_PAGES, ids=list(out)):
            out[pid] = [support_of(r[0], doc_id, number, *r[1:]) for r in rows]
        return out

    def units_on_pages(self, page_ids: list[str]) -> dict[str, list[Unit]]:
        """``{page_id: [Unit, ...]}`` in document order for every id given
        (``[]`` for pages without units). One query for all pages. Raises
        :class:`StoreError` if the read fails."""
        out: dict[str, list[Unit]] = {pid: [] for pid in page_ids}
        if not out:
            return out
        for pid, doc_id, number, rows in self._values(cy.UNITS_ON_PAGES, ids=list(out)):
            out[pid] = [unit_of(doc_id, number, r) for r in rows]
        return out

    def page_material(self, page_ids: list[str]
                      ) -> dict[str, tuple[list[Support], list[Unit]]]:
        """``{page_id: (supports, units)}`` as :meth:`supports_on_pages` and
        :meth:`units_on_pages` give them, in one read for all pages. Raises
        :class:`StoreError` if the read fails."""
        out: dict[str, tuple[list[Support], list[Unit]]] = {pid: ([], []) for pid in page_ids}
        if not out:
            return out
        for pid, doc_id, number, sup, units in self._values(cy.PAGE_MATERIAL, ids=list(out)):
            out[pid] = ([support_of(r[0], doc_id, number, *r[1:]) for r in sup],
                        [unit_of(doc_id, number, r) for r in units])
        return out

    def set_unit_stats(self, stats: dict[str, UnitStats]) -> None:
        """Store ``{unit_id: UnitStats}`` on existing Unit nodes (unknown ids
        are ignored), in one transaction. Raises :class:`StoreError` if the
        write fails."""
        rows = [{"unit_id": uid, **stats_row(st)} for uid, st in stats.items()]

        def work(tx):
            for batch in batches(rows):
                tx.run(cy.SET_UNIT_STATS, rows=batch).consume()

        if rows:
            self._write(work)

    def stats(self) -> dict[str, int]:
        """Counts of every node label and edge type (keys as on every backend)."""
        out = {}
        for key, label in cy.NODE_LABELS.items():
            out[key] = self._read(cy.count_nodes(label))[0]["c"]
        for rel in cy.EDGE_TYPES:
            out[rel] = self._read(cy.count_edges(rel))[0]["c"]
        return out

    # -- writes --------------------------------------------------------------
    def begin_documents(self, docs: list[Document]) -> None:
        """Record ``docs`` with status ``pending`` and no layers, in one
        transaction (see :meth:`pilar.graph.GraphStore.begin_documents`)."""
        for doc, at in zip(docs, ingest_times(len(docs))):
            doc.status, doc.ingested_at = "pending", at
        rows = Rows(to_jsonable(doc) for doc in docs)
        self._write(lambda tx: tx.run(cy.WRITE_DOCUMENTS, rows=rows).consume())

    def set_status(self, doc_id: str, status: str) -> bool:
        return bool(self._write(
            lambda tx: tx.run(cy.SET_STATUS, doc_id=doc_id, status=status).single()["n"]))

    def write_document(self, parsed: ParsedDocument, replaces: list[str] = ()) -> Document:
        """Write one document: :meth:`write_documents` of one."""
        return self.write_documents([(parsed, list(replaces))])[0]

    def write_documents(self, items: list[tuple[ParsedDocument, list[str]]]) -> list[Document]:
        """Write every ``(parsed, replaces)`` of ``items`` with status
        ``ready`` in ONE managed transaction: first the documents each
        replaces lose their layers and become ``deleting``, then each layer
        of all documents together as ``UNWIND`` batches of up to
        :data:`~pilar.graph.neo4j_rows.BATCH` rows (a few statements per
        batch of documents, not per document). Returns the stored Documents
        in order. Raises :class:`StoreError` (nothing of the batch written)."""
        docs = [parsed.document for parsed, _ in items]
        for doc, at in zip(docs, ingest_times(len(docs))):
            doc.status, doc.ingested_at = "ready", at
        layers = batch_rows([parsed for parsed, _ in items])
        replaced = [old for _, olds in items for old in olds]

        def work(tx):
            for old in replaced:
                self._delete_in(tx, old, keep_node=True)
                tx.run(cy.SET_STATUS, doc_id=old, status="deleting").consume()
            tx.run(cy.WRITE_DOCUMENTS, rows=Rows(to_jsonable(d) for d in docs)).consume()
            for query, rows in layers:
                for batch in batches(rows):
                    tx.run(query, rows=batch).consume()

        self._write(work)
        return docs

    def entity_candidates(self, name: str, limit: int = 20,
                          collections: list[str] | None = None) -> list[Entity]:
        """Stored entities (of ``collections`` when given) whose name or
        aliases share words with ``name`` (full-text blocking for entity
        linking, PILAR App. E.2), best first."""
        query = _fulltext_query(name)
        if query is None:
            return []
        return [entity_of(r) for r in self._read(
            cy.ENTITY_CANDIDATES, q=query, limit=limit,
            collections=None if collections is None else list(collections))]

    def entity_candidates_many(self, names: list[str], limit: int = 20,
                               collections: list[str] | None = None) -> list[list[Entity]]:
        """:meth:`entity_candidates` of each of ``names``, in order, in one
        read (:data:`~pilar.graph.neo4j_cypher.ENTITY_CANDIDATES_MANY`).
        Raises :class:`StoreError` if the read fails."""
        out: list[list[Entity]] = [[] for _ in names]
        if names:
            for i, found in self._values(
                    cy.ENTITY_CANDIDATES_MANY, qs=[_fulltext_query(n) for n in names],
                    limit=limit, collections=None if collections is None else list(collections)):
                out[i] = [Entity(eid, name, type_, tuple(aliases or ()), collection=coll)
                          for eid, name, type_, aliases, coll in found]
        return out

    def get_entities(self, entity_ids: list[str]) -> dict[str, Entity]:
        """``{entity_id: Entity}`` for the ids that exist."""
        return {r["id"]: entity_of(r) for r in self._read(cy.GET_ENTITIES, ids=entity_ids)}

    # -- graph expansion (PILAR §3.4, App. E.6) ---------------------------------
    def page_sections(self, page_ids: list[str]) -> dict[str, set[tuple[str, ...]]]:
        """``{page_id: {section_path, ...}}``: the section paths a page's supports sit in."""
        out: dict[str, set[tuple[str, ...]]] = {pid: set() for pid in page_ids}
        if not out:
            return out
        for r in self._read(cy.PAGE_SECTIONS, ids=page_ids):
            out[r["pid"]].add(tuple(r["path"] or ()))
        return out

    def expansion_pages(self, entity_ids: list[str],
                        limit: int = 50) -> dict[str, dict[str, list[str]]]:
        """Pages the graph reaches from ``entity_ids``, by kind, in one query:
        ``{"mention": {page_id: path}, "alias": {...}, "assertion": {...}}``
        where a path is the list of steps from the entity to the page.

        ``mention``: Entity -MENTIONED_IN-> Support -> Page; ``alias``: Entity
        -SAME_AS- (either direction) another entity, then MENTIONED_IN;
        ``assertion``: Entity -SUBJECT_OF-> / <-OBJECT- Assertion
        -SUPPORTED_BY-> Support -> Page. At most ``limit`` pages per entity
        and kind; a page reached from several entities keeps the path of the
        first in ``entity_ids`` order. See
        :data:`pilar.graph.neo4j_cypher.EXPANSION_PAGES` for the order and
        the choice of the path per page. Raises :class:`StoreError` if the
        read fails."""
        out: dict[str, dict[str, list[str]]] = {"mention": {}, "alias": {}, "assertion": {}}
        ids = list(entity_ids)
        if not ids:
            return out
        for i, mention, alias, assertion in sorted(
                self._values(cy.EXPANSION_PAGES, ids=ids, limit=limit), key=lambda r: r[0]):
            add_expansion_rows(out, ids[i], mention, alias, assertion)
        return out

    def assertions_of(self, doc_id: str) -> list[Assertion]:
        """A document's assertions with their support ids, in insertion order."""
        return [assertion_of(r) for r in self._read(cy.ASSERTIONS_OF_DOC, id=doc_id)]

    # -- exploration (GET /v1/entities...) ---------------------------------------
    def entity_links(self, entity_ids: list[str], limit: int = 50) -> EntityLinks:
        """One hop around ``entity_ids`` in three queries, the same as
        :meth:`pilar.graph.sqlite.SqliteGraphStore.entity_links`: assertions
        (at most ``limit`` per entity, smallest ids first, each once, by id),
        mentions (at most ``limit`` per entity, by support id) and SAME_AS
        links touching them (by source, target). Raises :class:`StoreError`."""
        ids = list(dict.fromkeys(entity_ids))
        assertions = [assertion_of(r) for r in
                      self._read(cy.ENTITY_ASSERTIONS, ids=ids, limit=limit)]
        mentions = [(r[0], r[1]) for r in self._values(cy.ENTITY_MENTIONS, ids=ids, limit=limit)]
        same_as = [SameAs(*r) for r in self._values(cy.ENTITY_SAME_AS, ids=ids)]
        return EntityLinks(assertions, mentions, same_as)

    def same_as_links(self) -> list[SameAs]:
        """Every ``SAME_AS`` link, by source then target. One query."""
        return [SameAs(*r) for r in self._values(cy.ALL_SAME_AS)]

    def bridges(self, support_ids: list[str], max_documents: int = 10,
                limit: int = 20) -> list[Bridge]:
        """The entities mentioned on ``support_ids`` and where they lead, in one
        bounded query for the supports not kept since the graph last changed
        (:meth:`pilar.graph.GraphStore.bridges`,
        :data:`pilar.graph.neo4j_cypher.BRIDGES`, :class:`~pilar.parts.ReadCache`).
        Raises :class:`StoreError` if the read fails."""
        if not support_ids:
            return []
        kept = self.reads.through(f"bridges {max_documents} {limit}", support_ids,
                                  lambda ids: self._bridges_of(ids, max_documents, limit))
        found: dict[str, tuple[str, set[str], int, tuple]] = {}
        for sid, reaches in kept.items():
            for eid, name, documents, pages in reaches:
                found.setdefault(eid, (name, set(), documents, pages))[1].add(sid)
        return [Bridge(eid, name, tuple(sorted(here)), documents, list(pages))
                for eid, (name, here, documents, pages) in sorted(found.items())]

    def _bridges_of(self, support_ids: list[str], max_documents: int, limit: int
                    ) -> dict[str, tuple[tuple[str, str, int, tuple], ...]]:
        """``{support_id: ((entity_id, name, documents, pages), ...)}``: each
        entity a support mentions and where it leads (one query)."""
        out: dict[str, list] = {sid: [] for sid in support_ids}
        for eid, name, here, documents, pages in self._values(
                cy.BRIDGES, sids=support_ids, max=max_documents, limit=limit):
            reach = (eid, name, documents, tuple(sorted((p, s, via) for p, s, via in pages)))
            for sid in here:
                out[sid].append(reach)
        return {sid: tuple(reaches) for sid, reaches in out.items()}

    def template_supports(self, support_ids: list[str], documents: int = 3,
                          max_documents: int = 10) -> set[str]:
        """:meth:`pilar.graph.GraphStore.template_supports`, one query for the
        supports not kept since the graph last changed
        (:data:`pilar.graph.neo4j_cypher.TEMPLATE_SUPPORTS`,
        :class:`~pilar.parts.ReadCache`). Raises :class:`StoreError` if the
        read fails."""
        if not support_ids:
            return set()

        def read(ids: list[str]) -> dict[str, bool]:
            found = {sid for sid, in self._values(cy.TEMPLATE_SUPPORTS, sids=ids,
                                                  documents=documents, max=max_documents)}
            return {sid: sid in found for sid in ids}
        kept = self.reads.through(f"template {documents} {max_documents}", support_ids, read)
        return {sid for sid, template in kept.items() if template}

    def mention_pages(self, entity_ids: list[str]) -> dict[str, int]:
        """``{entity_id: pages}``: distinct pages whose supports mention each
        entity; 0 for an unknown id. One query. Raises :class:`StoreError`
        if the read fails."""
        out = {eid: 0 for eid in entity_ids}
        if out:
            out.update((eid, n) for eid, n in self._values(cy.MENTION_PAGES, ids=list(out)))
        return out

    def entity_documents(self, entity_ids: list[str]) -> dict[str, list[str]]:
        """``{entity_id: [doc_id, ...]}`` (sorted): documents that mention each
        entity or hold an assertion about it. One query."""
        out: dict[str, list[str]] = {eid: [] for eid in entity_ids}
        if not out:
            return out
        for eid, mentioned, asserted in self._values(cy.ENTITY_DOCUMENTS, ids=list(out)):
            out[eid] = sorted(set(mentioned) | set(asserted))
        return out

    def supports_by_id(self, support_ids: list[str]) -> dict[str, Support]:
        """``{support_id: Support}`` (with provenance) for the ids that exist. One query."""
        if not support_ids:
            return {}
        return {r[0]: support_of(*r) for r in self._values(cy.SUPPORTS_BY_ID,
                                                           ids=list(support_ids))}

    def add_source(self, doc_id: str, uri: str) -> bool:
        """Record ``uri`` as another source of ``doc_id``; False when it was
        one already (or there is no such document)."""
        return bool(self._write(lambda tx: tx.run(cy.ADD_SOURCE, doc_id=doc_id,
                                                  uri=uri).single()["added"]))

    def remove_source(self, doc_id: str, uri: str) -> None:
        """Forget ``uri`` as a source of ``doc_id``; the document's ``uri``
        moves to its next source when it was this one."""
        self._write(lambda tx: tx.run(cy.REMOVE_SOURCE, doc_id=doc_id, uri=uri).consume())

    def delete_document(self, doc_id: str) -> bool:
        return bool(self._write(lambda tx: self._delete_in(tx, doc_id)))

    @staticmethod
    def _delete_in(tx, doc_id: str, keep_node: bool = False) -> int:
        """Delete a document's layers (and its node unless ``keep_node``),
        then orphaned entities; returns the Document nodes deleted."""
        for query in cy.DELETE_LAYERS:
            tx.run(query, doc_id=doc_id).consume()
        deleted = 0 if keep_node else tx.run(cy.DELETE_DOCUMENT_NODE, doc_id=doc_id).single()["deleted"]
        tx.run(cy.DELETE_ORPHAN_ENTITIES).consume()
        return deleted

    def cypher(self, query: str, params: dict | None = None, *, timeout: float = 30.0,
               row_cap: int = 1000, byte_cap: int = 1024 * 1024):
        """A read-only query, its plan checked first, in a READ transaction
        (:func:`pilar.graph.explore.run_read_query`)."""
        from pilar.graph.explore import run_read_query

        return run_read_query(self.driver, query, params, database=self.database,
                              timeout=timeout, row_cap=row_cap, byte_cap=byte_cap)

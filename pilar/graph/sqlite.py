"""The embedded graph store: one SQLite file (WAL mode), the default backend.

Holds the document, page, support, provenance, table-grid and unit layers of
DESIGN.md in plain tables; the schema comes from ``migrations/sqlite/*.sql``,
applied in version order and recorded in ``PRAGMA user_version``. The page
index of :mod:`pilar.retrieval.sqlite` lives in the same file, so a document's
graph rows and index rows commit in one transaction.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager

from pilar.errors import ConfigError
from pilar.graph import add_expansion_rows, ingest_time
from pilar.model import (Assertion, Document, DocumentStatus, Entity, EntityLinks, Page,
                         ParsedDocument, Provenance, SameAs, Support, Unit, to_jsonable)
from pilar.stores import SqliteDatabase


def _j(value) -> str:
    return json.dumps(to_jsonable(value), ensure_ascii=False)


class SqliteGraphStore:
    """GraphStore on the embedded SQLite file (see :class:`pilar.graph.GraphStore`)."""

    name = "sqlite"

    def __init__(self, db: SqliteDatabase):
        self.db = db

    def migrate(self) -> list[int]:
        """Apply pending ``migrations/sqlite`` files (shared with the page index)."""
        return self.db.migrate()

    def close(self) -> None:
        self.db.close()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        with self.db.transaction():
            yield

    # -- reads -------------------------------------------------------------
    def find_by_sha256(self, sha256: str) -> Document | None:
        row = self.db.conn.execute(f"SELECT {_DOC_READ} FROM documents d WHERE sha256 = ?",
                                   (sha256,)).fetchone()
        return self._doc(row) if row else None

    def find_by_uri(self, uri: str) -> list[Document]:
        """Documents that have ``uri`` among their sources, whatever their status."""
        rows = self.db.conn.execute(
            f"SELECT {_DOC_READ} FROM documents d WHERE doc_id IN "
            "(SELECT doc_id FROM document_sources WHERE uri = ?)", (uri,)).fetchall()
        return [self._doc(r) for r in rows]

    def documents(self, doc_ids: list[str] | None = None, *,
                  collections: list[str] | None = None,
                  statuses: tuple[DocumentStatus, ...] | None = ("ready",)) -> list[Document]:
        """Stored documents, oldest first (then by uri): all of them, or those
        of ``doc_ids`` that exist (unknown ids are skipped), limited to
        ``collections`` and ``statuses`` when given. One query. Raises
        ``sqlite3.Error`` if the read fails."""
        rows = self.db.conn.execute(
            f"SELECT {_DOC_READ} FROM documents d WHERE "
            "(?1 IS NULL OR doc_id IN (SELECT value FROM json_each(?1))) AND "
            "(?2 IS NULL OR collection IN (SELECT value FROM json_each(?2))) AND "
            "(?3 IS NULL OR status IN (SELECT value FROM json_each(?3))) "
            "ORDER BY ingested_at, uri",
            tuple(None if v is None else json.dumps(list(v))
                  for v in (doc_ids, collections, statuses)))
        return [self._doc(r) for r in rows]

    def pages(self, page_ids: list[str]) -> dict[str, Page]:
        """``{page_id: Page}`` for the ids that exist."""
        out: dict[str, Page] = {}
        for chunk in _chunks(page_ids, 500):
            marks = ",".join("?" * len(chunk))
            for r in self.db.conn.execute(
                f"SELECT doc_id, number, text, width, height FROM pages WHERE page_id IN ({marks})",
                chunk,
            ):
                page = Page(*r)
                out[page.page_id] = page
        return out

    def supports_on_pages(self, page_ids: list[str]) -> dict[str, list[Support]]:
        """``{page_id: [Support, ...]}`` in document order, with provenance, for
        every id given (``[]`` for unknown pages). One query for all pages.
        Raises ``sqlite3.Error`` if the read fails."""
        out: dict[str, list[Support]] = {pid: [] for pid in page_ids}
        if not out:
            return out
        paths: dict[str, tuple[str, ...]] = {}
        for r in self.db.conn.execute(_SUPPORTS_ON_PAGES, (json.dumps(list(out)),)):
            path = paths.get(r[7])
            if path is None:
                path = paths[r[7]] = tuple(json.loads(r[7]))
            prov = Provenance(
                provenance_id=r[6], doc_id=r[2], page=r[1], section_path=path,
                bbox=tuple(json.loads(r[8])) if r[8] else None, css_path=r[9],
                table_index=r[10], row=r[11], col=r[12],
                cell_ids=tuple(json.loads(r[13])) if r[13] != "[]" else (),
                char_start=r[14], char_end=r[15],
            )
            out[r[0]].append(Support(support_id=r[3], doc_id=r[2], kind=r[4], text=r[5],
                                     role=r[16], provenance=prov))
        return out

    def units_on_pages(self, page_ids: list[str]) -> dict[str, list[Unit]]:
        """``{page_id: [Unit, ...]}`` in document order for every id given
        (``[]`` for pages without units). One query for all pages. Raises
        ``sqlite3.Error`` if the read fails."""
        out: dict[str, list[Unit]] = {pid: [] for pid in page_ids}
        if not out:
            return out
        for r in self.db.conn.execute(_UNITS_ON_PAGES, (json.dumps(list(out)),)):
            out[r[0]].append(Unit(
                unit_id=r[1], doc_id=r[2], page=r[3], kind=r[4], text=r[5],
                completed_text=r[6], support_id=r[7], context=tuple(json.loads(r[8])),
                table_index=r[9], row_index=r[10], headers=tuple(json.loads(r[11])),
                cells=tuple(json.loads(r[12])),
            ))
        return out

    def stats(self) -> dict[str, int]:
        """Counts of every layer and edge type, the same keys as
        :meth:`pilar.graph.neo4j.Neo4jGraphStore.stats` (edges are implicit in
        the embedded schema and counted from the rows that imply them)."""
        return dict(zip(_STAT_KEYS, self.db.conn.execute(_STATS_SQL).fetchone()))

    # -- writes ------------------------------------------------------------
    def begin_document(self, doc: Document) -> None:
        """Record ``doc`` with status ``pending`` and no layers (see
        :meth:`pilar.graph.GraphStore.begin_document`)."""
        doc.status = "pending"
        doc.ingested_at = ingest_time()
        with self.db.transaction() as c:
            c.execute(_UPSERT_DOCUMENT, self._doc_row(doc))
            self._write_sources(c, doc)

    def set_status(self, doc_id: str, status: DocumentStatus) -> bool:
        with self.db.transaction() as c:
            return c.execute("UPDATE documents SET status = ? WHERE doc_id = ?",
                             (status, doc_id)).rowcount > 0

    def write_document(self, parsed: ParsedDocument, replaces: list[str] = ()) -> Document:
        """Insert one parsed document with all its layers and status
        ``ready``, inside the caller's transaction or its own; the documents
        ``replaces`` lose their layers and become ``deleting`` in the same
        transaction. Returns the stored Document (``ingested_at`` set)."""
        doc = parsed.document
        doc.ingested_at = ingest_time()
        doc.status = "ready"
        with self.db.transaction() as c:
            for old in replaces:
                for table in _LAYER_TABLES:
                    c.execute(f"DELETE FROM {table} WHERE doc_id = ?", (old,))
                c.execute("UPDATE documents SET status = 'deleting' WHERE doc_id = ?", (old,))
            if replaces:
                c.execute(_DELETE_ORPHAN_ENTITIES)
            c.execute(_UPSERT_DOCUMENT, self._doc_row(doc))
            self._write_sources(c, doc)
            c.executemany(
                "INSERT INTO pages (page_id, doc_id, number, width, height, text) VALUES (?,?,?,?,?,?)",
                [(p.page_id, p.doc_id, p.number, p.width, p.height, p.text) for p in parsed.pages],
            )
            c.executemany(
                "INSERT INTO provenance (provenance_id, doc_id, page, section_path, bbox, css_path,"
                " table_index, row, col, cell_ids, char_start, char_end)"
                " VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                [(p.provenance_id, p.doc_id, p.page, _j(p.section_path),
                  _j(p.bbox) if p.bbox else None, p.css_path, p.table_index, p.row, p.col,
                  _j(p.cell_ids), p.char_start, p.char_end)
                 for p in (s.provenance for s in parsed.supports)],
            )
            c.executemany(
                "INSERT INTO supports (support_id, doc_id, kind, text, role, provenance_id)"
                " VALUES (?,?,?,?,?,?)",
                [(s.support_id, s.doc_id, s.kind, s.text, s.role, s.provenance.provenance_id)
                 for s in parsed.supports],
            )
            c.executemany(
                "INSERT INTO table_grids (doc_id, table_index, page, grid) VALUES (?,?,?,?)",
                [(t.doc_id, t.table_index, t.page, _j(t)) for t in parsed.tables],
            )
            c.executemany(
                "INSERT INTO units (unit_id, doc_id, page, kind, text, completed_text, support_id,"
                " context, table_index, row_index, headers, cells) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                [(u.unit_id, u.doc_id, u.page, u.kind, u.text, u.completed_text, u.support_id,
                  _j(u.context), u.table_index, u.row_index, _j(u.headers), _j(u.cells))
                 for u in parsed.units],
            )
            self._write_entities(c, parsed)
        return doc

    @staticmethod
    def _write_sources(c: sqlite3.Connection, doc: Document) -> None:
        c.executemany(
            "INSERT OR IGNORE INTO document_sources (doc_id, uri, added_at) VALUES (?,?,?)",
            [(doc.doc_id, uri, doc.ingested_at) for uri in doc.sources or [doc.uri]])

    def add_source(self, doc_id: str, uri: str) -> bool:
        """Record ``uri`` as another source of the stored document ``doc_id``;
        False when it was one already (or there is no such document)."""
        with self.db.transaction() as c:
            return c.execute(
                "INSERT OR IGNORE INTO document_sources (doc_id, uri, added_at) "
                "SELECT doc_id, ?, ? FROM documents WHERE doc_id = ?",
                (uri, ingest_time(), doc_id)).rowcount > 0

    def remove_source(self, doc_id: str, uri: str) -> None:
        """Forget ``uri`` as a source of ``doc_id`` (its bytes there changed);
        the document's ``uri`` moves to its next source when it was this one."""
        with self.db.transaction() as c:
            c.execute("DELETE FROM document_sources WHERE doc_id = ? AND uri = ?", (doc_id, uri))
            c.execute(
                "UPDATE documents SET uri = (SELECT s.uri FROM document_sources s "
                "WHERE s.doc_id = documents.doc_id ORDER BY s.rowid LIMIT 1) "
                "WHERE doc_id = ? AND uri = ? AND EXISTS "
                "(SELECT 1 FROM document_sources s WHERE s.doc_id = documents.doc_id)",
                (doc_id, uri))

    @staticmethod
    def _write_entities(c: sqlite3.Connection, parsed: ParsedDocument) -> None:
        """Entities are shared: insert new ones, merge aliases into known ones."""
        for e in parsed.entities:
            row = c.execute("SELECT aliases FROM entities WHERE entity_id = ?",
                            (e.entity_id,)).fetchone()
            if row is None:
                c.execute("INSERT INTO entities (entity_id, name, type, aliases) VALUES (?,?,?,?)",
                          (e.entity_id, e.name, e.type, _j(sorted(set(e.aliases)))))
            else:
                merged = sorted(set(json.loads(row[0])) | set(e.aliases))
                if merged != json.loads(row[0]):
                    c.execute("UPDATE entities SET aliases = ? WHERE entity_id = ?",
                              (_j(merged), e.entity_id))
        c.executemany("INSERT OR IGNORE INTO mentions (entity_id, support_id) VALUES (?,?)",
                      [(e.entity_id, sid) for e in parsed.entities for sid in e.mentions])
        c.executemany(
            "INSERT INTO assertions (assertion_id, doc_id, subject, predicate, object, modality,"
            " qualifiers, confidence, grounded, extractor, subject_entity, object_entity)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
            [(a.assertion_id, a.doc_id, a.subject, a.predicate, a.object, a.modality,
              _j(a.qualifiers), a.confidence, int(a.grounded), a.extractor, a.subject_entity,
              a.object_entity) for a in parsed.assertions],
        )
        c.executemany(
            "INSERT OR IGNORE INTO assertion_supports (assertion_id, support_id, role) VALUES (?,?,?)",
            [(a.assertion_id, sid, "primary") for a in parsed.assertions for sid in a.supports],
        )
        # a target that the replaced version alone used is gone by now: skip
        # it, as the Neo4j backend's MATCH does
        c.executemany(
            "INSERT OR REPLACE INTO same_as (source, target, score, method) SELECT ?,?,?,? "
            "WHERE EXISTS (SELECT 1 FROM entities WHERE entity_id = ?) "
            "AND EXISTS (SELECT 1 FROM entities WHERE entity_id = ?)",
            [(l.source, l.target, l.score, l.method, l.source, l.target)
             for l in parsed.same_as],
        )

    def entity_candidates(self, name: str, limit: int = 20) -> list[Entity]:
        """Stored entities whose name or aliases share words with ``name``
        (full-text blocking for entity linking, PILAR App. E.2)."""
        match = _fts_or(name)
        if not match:
            return []
        rows = self.db.conn.execute(
            "SELECT e.entity_id, e.name, e.type, e.aliases FROM entity_fts f "
            "JOIN entities e ON e.rowid = f.rowid WHERE entity_fts MATCH ? "
            "ORDER BY bm25(entity_fts) LIMIT ?", (match, limit)).fetchall()
        return [Entity(r[0], r[1], r[2], tuple(json.loads(r[3]))) for r in rows]

    def get_entities(self, entity_ids: list[str]) -> dict[str, Entity]:
        out = {}
        for chunk in _chunks(entity_ids, 500):
            marks = ",".join("?" * len(chunk))
            for r in self.db.conn.execute(
                    f"SELECT entity_id, name, type, aliases FROM entities "
                    f"WHERE entity_id IN ({marks})", chunk):
                out[r[0]] = Entity(r[0], r[1], r[2], tuple(json.loads(r[3])))
        return out

    # -- graph expansion (PILAR §3.4, App. E.6) ---------------------------------
    def page_sections(self, page_ids: list[str]) -> dict[str, set[tuple[str, ...]]]:
        """``{page_id: {section_path, ...}}``: the section paths a page's
        supports sit in, for every id given. One query for all pages. Raises
        ``sqlite3.Error`` if the read fails."""
        out: dict[str, set[tuple[str, ...]]] = {pid: set() for pid in page_ids}
        if not out:
            return out
        for pid, path in self.db.conn.execute(_PAGE_SECTIONS, (json.dumps(list(out)),)):
            out[pid].add(tuple(json.loads(path)))
        return out

    def expansion_pages(self, entity_ids: list[str],
                        limit: int = 50) -> dict[str, dict[str, list[str]]]:
        """Pages the graph reaches from ``entity_ids``, by kind, in one query:
        ``{"mention": {page_id: path}, "alias": {...}, "assertion": {...}}``
        where a path is the list of steps from the entity to the page.

        ``mention``: Entity -MENTIONED_IN-> Support -> Page, pages in
        (document, page number) order; ``alias``: SAME_AS (either direction)
        to another entity, then MENTIONED_IN, the best link per page (highest
        score, then smallest entity id), pages by that score then (document,
        page); ``assertion``: Entity as subject or object of an Assertion
        -SUPPORTED_BY-> Support -> Page, the smallest (assertion id, support
        id) per page, pages in (document, page) order. At most ``limit`` pages
        per entity and kind; a page reached from several entities keeps the
        path of the first in ``entity_ids`` order. Raises ``sqlite3.Error`` if
        the read fails."""
        out: dict[str, dict[str, list[str]]] = {"mention": {}, "alias": {}, "assertion": {}}
        ids = list(entity_ids)
        if not ids:
            return out
        rows: dict[int, dict[str, list]] = {}
        for kind, i, *row in self.db.conn.execute(_EXPANSION_PAGES, (json.dumps(ids), limit)):
            rows.setdefault(i, {"mention": [], "alias": [], "assertion": []})[kind].append(row)
        for i in sorted(rows):
            by_kind = rows[i]
            add_expansion_rows(out, ids[i], [r[:2] for r in by_kind["mention"]],
                               [(r[0], r[2], r[3], r[4], r[1]) for r in by_kind["alias"]],
                               [(r[0], r[5], r[6], r[1]) for r in by_kind["assertion"]])
        return out

    def mention_pages(self, entity_ids: list[str]) -> dict[str, int]:
        """``{entity_id: pages}``: distinct pages whose supports mention each
        entity; 0 for an unknown id. One query. Raises ``sqlite3.Error`` if
        the read fails."""
        out = {eid: 0 for eid in entity_ids}
        if out:
            out.update(self.db.conn.execute(_MENTION_PAGES, (json.dumps(list(out)),)))
        return out

    def assertions_of(self, doc_id: str) -> list[Assertion]:
        """A document's assertions with their support ids, in insertion order."""
        rows = self.db.conn.execute(_ASSERTIONS_OF_DOC, (doc_id,)).fetchall()
        return [_assertion(r) for r in rows]

    # -- exploration (GET /v1/entities...) ---------------------------------------
    def entity_links(self, entity_ids: list[str], limit: int = 50) -> EntityLinks:
        """One hop around ``entity_ids`` in three queries: the assertions each
        is subject or object of (at most ``limit`` per entity, smallest ids
        first; an assertion reached twice appears once, ordered by id), its
        mentions (at most ``limit`` per entity, by support id) and every
        ``SAME_AS`` link touching them (by source, target). Unknown ids add
        nothing. Raises ``sqlite3.Error`` if a read fails."""
        ids = json.dumps(list(dict.fromkeys(entity_ids)))
        c = self.db.conn
        assertions = [_assertion(r) for r in c.execute(_ENTITY_ASSERTIONS, (ids, limit))]
        mentions = [(r[0], r[1]) for r in c.execute(_ENTITY_MENTIONS, (ids, limit))]
        same_as = [SameAs(*r) for r in c.execute(_ENTITY_SAME_AS, (ids,))]
        return EntityLinks(assertions, mentions, same_as)

    def same_as_links(self) -> list[SameAs]:
        """Every ``SAME_AS`` link, by source then target. One query."""
        return [SameAs(*r) for r in self.db.conn.execute(_ALL_SAME_AS)]

    def entity_documents(self, entity_ids: list[str]) -> dict[str, list[str]]:
        """``{entity_id: [doc_id, ...]}`` (sorted): the documents that mention
        each entity or hold an assertion about it; ``[]`` for an entity no
        document uses or an unknown id. One query."""
        out: dict[str, list[str]] = {eid: [] for eid in entity_ids}
        if not out:
            return out
        for eid, doc_id in self.db.conn.execute(_ENTITY_DOCUMENTS, (json.dumps(list(out)),)):
            out[eid].append(doc_id)
        return out

    def supports_by_id(self, support_ids: list[str]) -> dict[str, Support]:
        """``{support_id: Support}`` (with provenance) for the ids that exist. One query."""
        out: dict[str, Support] = {}
        if not support_ids:
            return out
        for r in self.db.conn.execute(_SUPPORTS_BY_ID, (json.dumps(list(support_ids)),)):
            out[r[0]] = Support(
                support_id=r[0], doc_id=r[1], kind=r[2], text=r[3], role=r[4],
                provenance=Provenance(
                    provenance_id=r[5], doc_id=r[1], page=r[6], section_path=tuple(json.loads(r[7])),
                    bbox=tuple(json.loads(r[8])) if r[8] else None, css_path=r[9],
                    table_index=r[10], row=r[11], col=r[12],
                    cell_ids=tuple(json.loads(r[13])) if r[13] != "[]" else (),
                    char_start=r[14], char_end=r[15]))
        return out

    def delete_document(self, doc_id: str) -> bool:
        """Delete a document and everything hanging off it, and the entities
        no other document still uses; False if absent."""
        with self.db.transaction() as c:
            deleted = c.execute("DELETE FROM documents WHERE doc_id = ?", (doc_id,)).rowcount > 0
            if deleted:
                c.execute(_DELETE_ORPHAN_ENTITIES)
            return deleted

    def cypher(self, query: str, params: dict | None = None, *, timeout: float = 30.0,
               row_cap: int = 1000):
        """Cypher needs a graph server: always raises :class:`ConfigError`."""
        raise ConfigError("Cypher exploration needs PILAR_GRAPH=neo4j (and NEO4J_URI)")

    @staticmethod
    def _doc(row) -> Document:
        return Document(doc_id=row[0], uri=row[1], title=row[2], media_type=row[3], sha256=row[4],
                        n_pages=row[5], ingested_at=row[6], collection=row[7], status=row[8],
                        sources=json.loads(row[9]))

    @staticmethod
    def _doc_row(doc: Document) -> tuple:
        return (doc.doc_id, doc.uri, doc.title, doc.media_type, doc.sha256, doc.n_pages,
                doc.ingested_at, doc.collection, doc.status)


_DOC_COLUMNS = ("doc_id, uri, title, media_type, sha256, n_pages, ingested_at, collection, "
                "status")
# a document's columns as read, its sources (a JSON array, first recorded first) last
_DOC_READ = ", ".join(f"d.{c}" for c in _DOC_COLUMNS.split(", ")) + """,
    (SELECT json_group_array(uri) FROM (SELECT s.uri FROM document_sources s
     WHERE s.doc_id = d.doc_id ORDER BY s.rowid))"""
_UPSERT_DOCUMENT = f"""
INSERT INTO documents ({_DOC_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?)
ON CONFLICT(doc_id) DO UPDATE SET uri = excluded.uri, title = excluded.title,
  media_type = excluded.media_type, sha256 = excluded.sha256, n_pages = excluded.n_pages,
  ingested_at = excluded.ingested_at, collection = excluded.collection, status = excluded.status
"""
# the tables holding a document's own layers (its Document row aside)
_LAYER_TABLES = ("assertions", "units", "table_grids", "supports", "provenance", "pages")


_STAT_KEYS = ("documents", "pages", "supports", "provenance", "units", "tables", "assertions",
              "entities", "IN_DOCUMENT", "NEXT", "HAS_PROVENANCE", "ON_PAGE", "DERIVED_FROM",
              "SUPPORTED_BY", "SUBJECT_OF", "OBJECT", "MENTIONED_IN", "SAME_AS")
_STATS_SQL = """
SELECT (SELECT count(*) FROM documents WHERE status = 'ready'), (SELECT count(*) FROM pages),
       (SELECT count(*) FROM supports), (SELECT count(*) FROM provenance),
       (SELECT count(*) FROM units), (SELECT count(*) FROM table_grids),
       (SELECT count(*) FROM assertions), (SELECT count(*) FROM entities),
       (SELECT count(*) FROM pages),
       (SELECT count(*) FROM pages p JOIN pages q ON q.doc_id = p.doc_id AND q.number = p.number + 1),
       (SELECT count(*) FROM supports),
       (SELECT count(*) FROM provenance p JOIN pages g ON g.doc_id = p.doc_id AND g.number = p.page),
       (SELECT count(*) FROM units),
       (SELECT count(*) FROM assertion_supports),
       (SELECT count(*) FROM assertions WHERE subject_entity IS NOT NULL),
       (SELECT count(*) FROM assertions WHERE object_entity IS NOT NULL),
       (SELECT count(*) FROM mentions),
       (SELECT count(*) FROM same_as)
"""
# entities that no remaining document mentions or uses in an assertion
_DELETE_ORPHAN_ENTITIES = """
DELETE FROM entities WHERE NOT EXISTS (SELECT 1 FROM mentions m WHERE m.entity_id = entities.entity_id)
  AND NOT EXISTS (SELECT 1 FROM assertions a WHERE a.subject_entity = entities.entity_id
                  OR a.object_entity = entities.entity_id)
"""
# the pages asked for, in order: json_each over a JSON array of page ids
_WANTED_PAGES = """
WITH wanted(pid, doc_id, page) AS (
    SELECT j.value, g.doc_id, g.number FROM json_each(?1) j JOIN pages g ON g.page_id = j.value)
"""
_SUPPORTS_ON_PAGES = _WANTED_PAGES + """
SELECT w.pid, w.page, w.doc_id, s.support_id, s.kind, s.text, p.provenance_id, p.section_path,
       p.bbox, p.css_path, p.table_index, p.row, p.col, p.cell_ids, p.char_start, p.char_end,
       s.role
FROM wanted w JOIN provenance p ON p.doc_id = w.doc_id AND p.page = w.page
JOIN supports s ON s.provenance_id = p.provenance_id
ORDER BY w.pid, s.rowid
"""
_UNITS_ON_PAGES = _WANTED_PAGES + """
SELECT w.pid, u.unit_id, u.doc_id, u.page, u.kind, u.text, u.completed_text, u.support_id,
       u.context, u.table_index, u.row_index, u.headers, u.cells
FROM wanted w JOIN units u ON u.doc_id = w.doc_id AND u.page = w.page
ORDER BY w.pid, u.rowid
"""
_PAGE_SECTIONS = _WANTED_PAGES + """
SELECT DISTINCT w.pid, p.section_path
FROM wanted w JOIN provenance p ON p.doc_id = w.doc_id AND p.page = w.page
"""
# graph expansion (see SqliteGraphStore.expansion_pages), the three kinds in
# one statement; ?1 is a JSON array of entity ids (i = position), ?2 the
# per-entity, per-kind page limit. Columns: kind, i, page_id, support_id,
# other entity, score, method (alias), assertion id, predicate (assertion);
# rows ordered by kind, i, then rank.
_EXPANSION_PAGES = """
WITH wanted(i, eid) AS (SELECT key, value FROM json_each(?1)),
mention_hits AS (
    SELECT w.i, p.doc_id, p.page, min(s.support_id) AS sid
    FROM wanted w JOIN mentions m ON m.entity_id = w.eid
    JOIN supports s ON s.support_id = m.support_id
    JOIN provenance p ON p.provenance_id = s.provenance_id
    GROUP BY w.i, p.doc_id, p.page),
mention_ranked AS (
    SELECT *, row_number() OVER (PARTITION BY i ORDER BY doc_id, page) AS r FROM mention_hits),
linked(i, other, score, method) AS (
    SELECT w.i, x.target, x.score, x.method FROM wanted w JOIN same_as x ON x.source = w.eid
    WHERE x.target <> w.eid
    UNION SELECT w.i, x.source, x.score, x.method FROM wanted w JOIN same_as x ON x.target = w.eid
    WHERE x.source <> w.eid),
alias_hits AS (
    SELECT l.i, l.other, l.score, l.method, p.doc_id, p.page, min(s.support_id) AS sid
    FROM linked l JOIN mentions m ON m.entity_id = l.other
    JOIN supports s ON s.support_id = m.support_id
    JOIN provenance p ON p.provenance_id = s.provenance_id
    GROUP BY l.i, l.other, l.score, l.method, p.doc_id, p.page),
alias_best AS (
    SELECT *, row_number() OVER (PARTITION BY i, doc_id, page
                                 ORDER BY score DESC, other, method) AS b FROM alias_hits),
alias_ranked AS (
    SELECT *, row_number() OVER (PARTITION BY i ORDER BY score DESC, doc_id, page) AS r
    FROM alias_best WHERE b = 1),
assertion_hits AS (
    SELECT w.i, a.assertion_id AS aid, a.predicate AS pred, s.support_id AS sid, p.doc_id, p.page
    FROM wanted w JOIN assertions a ON a.subject_entity = w.eid OR a.object_entity = w.eid
    JOIN assertion_supports x ON x.assertion_id = a.assertion_id
    JOIN supports s ON s.support_id = x.support_id
    JOIN provenance p ON p.provenance_id = s.provenance_id),
assertion_best AS (
    SELECT *, row_number() OVER (PARTITION BY i, doc_id, page ORDER BY aid, sid) AS b
    FROM assertion_hits),
assertion_ranked AS (
    SELECT *, row_number() OVER (PARTITION BY i ORDER BY doc_id, page) AS r
    FROM assertion_best WHERE b = 1)
SELECT 'mention' AS kind, i, doc_id || ':' || page, sid, NULL, NULL, NULL, NULL, NULL, r
FROM mention_ranked WHERE r <= ?2
UNION ALL
SELECT 'alias', i, doc_id || ':' || page, sid, other, score, method, NULL, NULL, r
FROM alias_ranked WHERE r <= ?2
UNION ALL
SELECT 'assertion', i, doc_id || ':' || page, sid, NULL, NULL, NULL, aid, pred, r
FROM assertion_ranked WHERE r <= ?2
ORDER BY 1, 2, 10
"""
_ASSERTION_COLS = """a.assertion_id, a.doc_id, a.subject, a.predicate, a.object, a.modality,
a.qualifiers, a.confidence, a.grounded, a.extractor, a.subject_entity, a.object_entity,
(SELECT json_group_array(support_id) FROM assertion_supports s WHERE s.assertion_id = a.assertion_id)"""
_ASSERTIONS_OF_DOC = f"SELECT {_ASSERTION_COLS} FROM assertions a WHERE a.doc_id = ? ORDER BY a.rowid"
# ?1 a JSON array of entity ids, ?2 the per-entity limit
_ENTITY_ASSERTIONS = f"""
WITH wanted(eid) AS (SELECT DISTINCT value FROM json_each(?1)),
hits AS (SELECT w.eid, a.assertion_id FROM wanted w JOIN assertions a ON a.subject_entity = w.eid
         UNION SELECT w.eid, a.assertion_id FROM wanted w JOIN assertions a ON a.object_entity = w.eid),
ranked AS (SELECT assertion_id, row_number() OVER (PARTITION BY eid ORDER BY assertion_id) AS r
           FROM hits)
SELECT {_ASSERTION_COLS} FROM assertions a
WHERE a.assertion_id IN (SELECT assertion_id FROM ranked WHERE r <= ?2)
ORDER BY a.assertion_id
"""
_ENTITY_MENTIONS = """
WITH wanted(eid) AS (SELECT DISTINCT value FROM json_each(?1)),
ranked AS (SELECT m.entity_id, m.support_id,
                  row_number() OVER (PARTITION BY m.entity_id ORDER BY m.support_id) AS r
           FROM wanted w JOIN mentions m ON m.entity_id = w.eid)
SELECT entity_id, support_id FROM ranked WHERE r <= ?2 ORDER BY entity_id, support_id
"""
_ALL_SAME_AS = "SELECT source, target, score, method FROM same_as ORDER BY source, target"
_ENTITY_SAME_AS = """
WITH wanted(eid) AS (SELECT DISTINCT value FROM json_each(?1))
SELECT x.source, x.target, x.score, x.method FROM same_as x WHERE x.source IN wanted
UNION SELECT x.source, x.target, x.score, x.method FROM same_as x WHERE x.target IN wanted
ORDER BY 1, 2
"""
_MENTION_PAGES = """
SELECT w.value, count(DISTINCT p.doc_id || ':' || p.page)
FROM json_each(?1) w JOIN mentions m ON m.entity_id = w.value
JOIN supports s ON s.support_id = m.support_id
JOIN provenance p ON p.provenance_id = s.provenance_id
GROUP BY w.value
"""
_ENTITY_DOCUMENTS = """
WITH wanted(eid) AS (SELECT DISTINCT value FROM json_each(?1))
SELECT w.eid, s.doc_id FROM wanted w JOIN mentions m ON m.entity_id = w.eid
JOIN supports s ON s.support_id = m.support_id
UNION SELECT w.eid, a.doc_id FROM wanted w JOIN assertions a ON a.subject_entity = w.eid
UNION SELECT w.eid, a.doc_id FROM wanted w JOIN assertions a ON a.object_entity = w.eid
ORDER BY 1, 2
"""
_SUPPORTS_BY_ID = """
SELECT s.support_id, s.doc_id, s.kind, s.text, s.role, p.provenance_id, p.page, p.section_path,
       p.bbox, p.css_path, p.table_index, p.row, p.col, p.cell_ids, p.char_start, p.char_end
FROM json_each(?1) j JOIN supports s ON s.support_id = j.value
JOIN provenance p ON p.provenance_id = s.provenance_id
"""
_WORDS = re.compile(r"\w+", re.UNICODE)


def _assertion(r) -> Assertion:
    """An Assertion from a row of ``_ASSERTION_COLS``."""
    return Assertion(assertion_id=r[0], doc_id=r[1], subject=r[2], predicate=r[3], object=r[4],
                     modality=r[5], qualifiers=json.loads(r[6]), confidence=r[7],
                     grounded=bool(r[8]), extractor=r[9], subject_entity=r[10],
                     object_entity=r[11], supports=tuple(json.loads(r[12])))


def _fts_or(text: str) -> str:
    words = list(dict.fromkeys(w.lower() for w in _WORDS.findall(text)))[:16]
    return " OR ".join('"' + w.replace('"', '""') + '"' for w in words)


def _chunks(items: list, size: int):
    for i in range(0, len(items), size):
        yield items[i:i + size]

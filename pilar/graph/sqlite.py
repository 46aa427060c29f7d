"""The embedded graph store: one SQLite file (WAL mode), the default backend.

Holds the document, page, support, provenance, table-grid and unit layers of
DESIGN.md in plain tables; the schema comes from ``migrations/sqlite/*.sql``,
applied in version order and recorded in ``PRAGMA user_version``. The page
index of :mod:`pilar.retrieval.sqlite` lives in the same file, so a document's
graph rows and index rows commit in one transaction.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager

from pilar.errors import NotSupportedError
from pilar.graph import READ_CACHE, add_expansion_rows, ingest_time, ingest_times
from pilar.graph import sqlite_sql as sql
from pilar.model import (Assertion, Bridge, Document, DocumentStatus, Entity, EntityLinks, Page,
                         ParsedDocument, Provenance, SameAs, Support, Unit, UnitStats,
                         to_jsonable)
from pilar.db import SqliteDatabase
from pilar.parts import ReadCache, batched, words


_PLAIN = frozenset({str, int, float, bool, type(None)})


def _j(value) -> str:
    """``value`` (records, lists, dicts) as JSON text; a list or tuple of
    plain values (a section path, a row's cells) is dumped as it is, the
    same text without :func:`~pilar.model.to_jsonable`'s walk."""
    if type(value) in (list, tuple) and all(type(v) in _PLAIN for v in value):
        return json.dumps(value, ensure_ascii=False)
    return json.dumps(to_jsonable(value), ensure_ascii=False)


def _support(r, paths: dict[str, tuple[str, ...]]) -> Support:
    """A Support from a row of ``sql.SUPPORTS_ON_PAGES`` (``paths`` shares
    the decoded section paths between rows)."""
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
    return Support(support_id=r[3], doc_id=r[2], kind=r[4], text=r[5], role=r[16],
                   provenance=prov)


def _stats_rows(stats: dict[str, UnitStats]) -> list[tuple]:
    """Parameters of ``sql.SET_UNIT_STATS`` for ``{unit_id: UnitStats}``."""
    return [(uid, json.dumps(st.terms, ensure_ascii=False), st.length, st.tokens, st.tokenizer)
            for uid, st in stats.items()]


def _unit(r) -> Unit:
    """A Unit (with its statistics when stored) from a row of ``sql.UNITS_ON_PAGES``."""
    return Unit(unit_id=r[1], doc_id=r[2], page=r[3], kind=r[4], text=r[5],
                completed_text=r[6], support_id=r[7], context=tuple(json.loads(r[8])),
                table_index=r[9], row_index=r[10], headers=tuple(json.loads(r[11])),
                cells=tuple(json.loads(r[12])),
                stats=None if r[13] is None else UnitStats(
                    terms=json.loads(r[13]), length=r[14], tokens=r[15], tokenizer=r[16]))


class SqliteGraphStore:
    """GraphStore on the embedded SQLite file (see :class:`pilar.graph.GraphStore`)."""

    name = "sqlite"

    def __init__(self, db: SqliteDatabase):
        self.db = db
        self.reads = ReadCache(db, READ_CACHE)  # what searches read again and again

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
    def find_by_sha256(self, sha256: str, collection: str) -> Document | None:
        """The document of ``collection`` with these bytes (any status), or None."""
        row = self.db.conn.execute(sql.FIND_BY_SHA256, (sha256, collection)).fetchone()
        return self._doc(row) if row else None

    def find_by_uri(self, uri: str, collection: str | None = None) -> list[Document]:
        """Documents (of ``collection``; None = any) that have ``uri`` among
        their sources, whatever their status."""
        rows = self.db.conn.execute(sql.FIND_BY_URI, (uri, collection)).fetchall()
        return [self._doc(r) for r in rows]

    def documents(self, doc_ids: list[str] | None = None, *,
                  collections: list[str] | None = None,
                  statuses: tuple[DocumentStatus, ...] | None = ("ready",)) -> list[Document]:
        """Stored documents, oldest first (then by uri): all of them, or those
        of ``doc_ids`` that exist (unknown ids are skipped; their rows are
        kept while the file is unchanged, :class:`~pilar.parts.ReadCache`),
        limited to ``collections`` and ``statuses`` when given. One query.
        Raises ``sqlite3.Error`` if the read fails."""
        if doc_ids is not None:
            rows = [r for r in self.reads.through("document", doc_ids, self._document_rows)
                    .values() if r is not None and (collections is None or r[7] in collections)
                    and (statuses is None or r[8] in statuses)]
            return [self._doc(r) for r in sorted(rows, key=lambda r: (r[6], r[1]))]
        # only the filters given, so that SQLite may use an index ("?1 IS NULL OR ..." cannot)
        filters = [(f"{col} IN (SELECT value FROM json_each(?))", json.dumps(list(v)))
                   for col, v in (("collection", collections), ("status", statuses))
                   if v is not None]
        where = " AND ".join(f for f, _ in filters) or "1"
        rows = self.db.conn.execute(
            f"SELECT {sql.DOC_READ} FROM documents d WHERE {where} ORDER BY ingested_at, uri",
            [v for _, v in filters])
        return [self._doc(r) for r in rows]

    def _document_rows(self, doc_ids: list[str]) -> dict[str, tuple | None]:
        """``{doc_id: its row of sql.DOC_READ, or None}``, any status."""
        out: dict[str, tuple | None] = dict.fromkeys(doc_ids)
        out.update((r[0], r) for r in self.db.conn.execute(
            f"SELECT {sql.DOC_READ} FROM documents d WHERE doc_id IN "
            "(SELECT value FROM json_each(?))", (json.dumps(doc_ids),)))
        return out

    def pages(self, page_ids: list[str]) -> dict[str, Page]:
        """``{page_id: Page}`` for the ids that exist."""
        out: dict[str, Page] = {}
        for chunk in batched(page_ids, 500):
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
        for r in self.db.conn.execute(sql.SUPPORTS_ON_PAGES, (json.dumps(list(out)),)):
            out[r[0]].append(_support(r, paths))
        return out

    def units_on_pages(self, page_ids: list[str]) -> dict[str, list[Unit]]:
        """``{page_id: [Unit, ...]}`` in document order, with their stored
        statistics (``stats`` None until filled), for every id given (``[]``
        for pages without units). One query for all pages. Raises
        ``sqlite3.Error`` if the read fails."""
        out: dict[str, list[Unit]] = {pid: [] for pid in page_ids}
        if not out:
            return out
        for r in self.db.conn.execute(sql.UNITS_ON_PAGES, (json.dumps(list(out)),)):
            out[r[0]].append(_unit(r))
        return out

    def page_material(self, page_ids: list[str]
                      ) -> dict[str, tuple[list[Support], list[Unit]]]:
        """``{page_id: (supports, units)}`` as :meth:`supports_on_pages` and
        :meth:`units_on_pages` give them, in one query for all pages. Raises
        ``sqlite3.Error`` if the read fails."""
        out: dict[str, tuple[list[Support], list[Unit]]] = {pid: ([], []) for pid in page_ids}
        if not out:
            return out
        paths: dict[str, tuple[str, ...]] = {}
        for r in self.db.conn.execute(sql.PAGE_MATERIAL, (json.dumps(list(out)),)):
            if r[0] == 0:
                out[r[1]][0].append(_support(r[1:], paths))
            else:
                out[r[1]][1].append(_unit(r[1:]))
        return out

    def set_unit_stats(self, stats: dict[str, UnitStats]) -> None:
        """Store the statistics of existing units (``{unit_id: UnitStats}``;
        unknown ids are ignored), in one transaction. Raises
        ``sqlite3.Error`` if the write fails."""
        with self.db.transaction() as c:
            c.executemany(sql.SET_UNIT_STATS, _stats_rows(stats))

    def stats(self) -> dict[str, int]:
        """Counts of every layer and edge type, the same keys as
        :meth:`pilar.graph.neo4j.Neo4jGraphStore.stats` (edges are implicit in
        the embedded schema and counted from the rows that imply them)."""
        return dict(zip(sql.STAT_KEYS, self.db.conn.execute(sql.STATS_SQL).fetchone()))

    # -- writes ------------------------------------------------------------
    def begin_documents(self, docs: list[Document]) -> None:
        """Record ``docs`` with status ``pending`` and no layers, in one
        transaction (see :meth:`pilar.graph.GraphStore.begin_documents`)."""
        with self.db.transaction() as c:
            for doc, at in zip(docs, ingest_times(len(docs))):
                doc.status, doc.ingested_at = "pending", at
                c.execute(sql.UPSERT_DOCUMENT, self._doc_row(doc))
                self._write_sources(c, doc)

    def set_status(self, doc_id: str, status: DocumentStatus) -> bool:
        with self.db.transaction() as c:
            return c.execute("UPDATE documents SET status = ? WHERE doc_id = ?",
                             (status, doc_id)).rowcount > 0

    def write_documents(self, items: list[tuple[ParsedDocument, list[str]]]) -> list[Document]:
        """:meth:`write_document` for each ``(parsed, replaces)`` of ``items``,
        in one transaction (the caller's or its own)."""
        with self.db.transaction():
            return [self.write_document(parsed, replaces) for parsed, replaces in items]

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
                for table in sql.LAYER_TABLES:
                    c.execute(f"DELETE FROM {table} WHERE doc_id = ?", (old,))
                c.execute("UPDATE documents SET status = 'deleting' WHERE doc_id = ?", (old,))
            if replaces:
                c.execute(sql.DELETE_ORPHAN_ENTITIES)
            c.execute(sql.UPSERT_DOCUMENT, self._doc_row(doc))
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
            stats = _stats_rows({u.unit_id: u.stats for u in parsed.units if u.stats})
            if stats:  # none: also a store at a schema version before these columns
                c.executemany(sql.SET_UNIT_STATS, stats)
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
        """Entities are shared within a collection: insert new ones, merge
        aliases into known ones (the stored ones read in one query per 500,
        then one insert and one update of many rows)."""
        ids = list(dict.fromkeys(e.entity_id for e in parsed.entities))
        aliases: dict[str, list[str]] = {}  # entity id -> its aliases as they stand
        for chunk in batched(ids, 500):
            aliases.update((eid, json.loads(a)) for eid, a in c.execute(
                f"SELECT entity_id, aliases FROM entities WHERE entity_id IN "
                f"({','.join('?' * len(chunk))})", chunk))
        new: dict[str, Entity] = {}
        changed: set[str] = set()
        for e in parsed.entities:
            known = aliases.get(e.entity_id)
            if known is None:
                new[e.entity_id] = e
                aliases[e.entity_id] = sorted(set(e.aliases))
                continue
            merged = sorted(set(known) | set(e.aliases))
            if merged != known:
                aliases[e.entity_id] = merged
                changed.add(e.entity_id)
        c.executemany("INSERT INTO entities (entity_id, name, type, aliases, collection) "
                      "VALUES (?,?,?,?,?)", [(e.entity_id, e.name, e.type,
                                              _j(aliases[e.entity_id]), e.collection)
                                             for e in new.values()])
        c.executemany("UPDATE entities SET aliases = ? WHERE entity_id = ?",
                      [(_j(aliases[eid]), eid) for eid in ids if eid in changed - new.keys()])
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

    def entity_candidates(self, name: str, limit: int = 20,
                          collections: list[str] | None = None) -> list[Entity]:
        """Stored entities (of ``collections`` when given) whose name or
        aliases share words with ``name`` (full-text blocking for entity
        linking, PILAR App. E.2), best first: :meth:`entity_candidates_many`
        of one name."""
        return self.entity_candidates_many([name], limit, collections)[0]

    def entity_candidates_many(self, names: list[str], limit: int = 20,
                               collections: list[str] | None = None) -> list[list[Entity]]:
        """:meth:`entity_candidates` of each of ``names``, in order (an
        entity found for several names is decoded once, one object in each list)."""
        shown = None if collections is None else json.dumps(list(collections))
        decoded: dict[str, Entity] = {}
        out = []
        for name in names:
            match = _fts_or(name)
            rows = self.db.conn.execute(sql.ENTITY_CANDIDATES, (match, shown, limit)) \
                if match else ()
            out.append([decoded.get(r[0]) or decoded.setdefault(r[0], _entity(r))
                        for r in rows])
        return out

    def get_entities(self, entity_ids: list[str]) -> dict[str, Entity]:
        """``{entity_id: Entity}`` for the ids that exist."""
        out = {}
        for chunk in batched(entity_ids, 500):
            marks = ",".join("?" * len(chunk))
            for r in self.db.conn.execute(
                    f"SELECT {sql.ENTITY_COLS} FROM entities e WHERE entity_id IN ({marks})",
                    chunk):
                out[r[0]] = _entity(r)
        return out

    # -- graph expansion (PILAR §3.4, App. E.6) ---------------------------------
    def page_sections(self, page_ids: list[str]) -> dict[str, set[tuple[str, ...]]]:
        """``{page_id: {section_path, ...}}``: the section paths a page's
        supports sit in, for every id given. One query for the pages not
        kept (:class:`~pilar.parts.ReadCache`). Raises ``sqlite3.Error`` if the
        read fails."""
        def read(ids: list[str]) -> dict[str, frozenset[tuple[str, ...]]]:
            out: dict[str, set[tuple[str, ...]]] = {pid: set() for pid in ids}
            for pid, path in self.db.conn.execute(sql.PAGE_SECTIONS, (json.dumps(ids),)):
                out[pid].add(tuple(json.loads(path)))
            return {pid: frozenset(paths) for pid, paths in out.items()}
        if not page_ids:
            return {}
        return {pid: set(paths)
                for pid, paths in self.reads.through("sections", page_ids, read).items()}

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
        for kind, i, *row in self.db.conn.execute(sql.EXPANSION_PAGES, (json.dumps(ids), limit)):
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
            out.update(self.db.conn.execute(sql.MENTION_PAGES, (json.dumps(list(out)),)))
        return out

    def bridges(self, support_ids: list[str], max_documents: int = 10,
                limit: int = 20) -> list[Bridge]:
        """The entities mentioned on ``support_ids`` and where they lead
        (:meth:`pilar.graph.GraphStore.bridges`): the mentions of each support
        and the reach of each entity are read once (two queries for those not
        kept) and kept while the file is unchanged (:class:`~pilar.parts.ReadCache`).
        Raises ``sqlite3.Error`` if a read fails."""
        if not support_ids:
            return []
        named = self.reads.through("mentions", support_ids, self._support_mentions)
        sources: dict[str, set[str]] = {}
        for sid, eids in named.items():
            for eid in eids:
                sources.setdefault(eid, set()).add(sid)
        reach = self.reads.through(f"reach {max_documents} {limit}", sorted(sources),
                                   lambda ids: self._entity_reach(ids, max_documents, limit))
        return [Bridge(eid, r[0], tuple(sorted(sources[eid])), r[1], list(r[2]))
                for eid, r in reach.items() if r is not None]  # r: (name, documents, pages)

    def _support_mentions(self, support_ids: list[str]) -> dict[str, tuple[str, ...]]:
        """``{support_id: (entity_id, ...)}``: the entities each support mentions."""
        out: dict[str, list[str]] = {sid: [] for sid in support_ids}
        for sid, eid in self.db.conn.execute(sql.SUPPORT_MENTIONS, (json.dumps(support_ids),)):
            out[sid].append(eid)
        return {sid: tuple(eids) for sid, eids in out.items()}

    def _entity_reach(self, entity_ids: list[str], max_documents: int, limit: int
                      ) -> dict[str, tuple | None]:
        """``{entity_id: (name, documents, pages) or None}`` (None: no such
        entity), in one query: :class:`~pilar.model.Bridge`'s ``documents``
        and ``pages``, the first ``limit`` pages by document and page number."""
        found: dict[str, tuple[str, int]] = {}
        pages: dict[str, list[tuple[str, int, str, str]]] = {}
        for kind, eid, a, b, c, d in self.db.conn.execute(
                sql.ENTITY_REACH, (json.dumps(entity_ids), max_documents)):
            if kind == "docs":
                found[eid] = (a, b)
            else:
                pages.setdefault(eid, []).append((b, c, a, d))
        out: dict[str, tuple | None] = {}
        for eid in entity_ids:
            first = sorted(pages.get(eid, ()))[:limit]  # by document, then page number
            out[eid] = None if eid not in found else (*found[eid], tuple(
                sorted((f"{doc}:{page}", sid, other) for doc, page, sid, other in first)))
        return out

    def template_supports(self, support_ids: list[str], documents: int = 3,
                          max_documents: int = 10) -> set[str]:
        """:meth:`pilar.graph.GraphStore.template_supports`, one query for the
        supports not kept (:class:`~pilar.parts.ReadCache`). Raises
        ``sqlite3.Error`` if the read fails."""
        def read(ids: list[str]) -> dict[str, bool]:
            found = {sid for sid, in self.db.conn.execute(
                sql.TEMPLATE_SUPPORTS, (json.dumps(ids), documents, max_documents))}
            return {sid: sid in found for sid in ids}
        kept = self.reads.through(f"template {documents} {max_documents}", support_ids, read)
        return {sid for sid, template in kept.items() if template}

    def assertions_of(self, doc_id: str) -> list[Assertion]:
        """A document's assertions with their support ids, in insertion order."""
        rows = self.db.conn.execute(sql.ASSERTIONS_OF_DOC, (doc_id,)).fetchall()
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
        assertions = [_assertion(r) for r in c.execute(sql.ENTITY_ASSERTIONS, (ids, limit))]
        mentions = [(r[0], r[1]) for r in c.execute(sql.ENTITY_MENTIONS, (ids, limit))]
        same_as = [SameAs(*r) for r in c.execute(sql.ENTITY_SAME_AS, (ids,))]
        return EntityLinks(assertions, mentions, same_as)

    def same_as_links(self) -> list[SameAs]:
        """Every ``SAME_AS`` link, by source then target. One query."""
        return [SameAs(*r) for r in self.db.conn.execute(sql.ALL_SAME_AS)]

    def entity_documents(self, entity_ids: list[str]) -> dict[str, list[str]]:
        """``{entity_id: [doc_id, ...]}`` (sorted): the documents that mention
        each entity or hold an assertion about it; ``[]`` for an entity no
        document uses or an unknown id. One query."""
        out: dict[str, list[str]] = {eid: [] for eid in entity_ids}
        if not out:
            return out
        for eid, doc_id in self.db.conn.execute(sql.ENTITY_DOCUMENTS, (json.dumps(list(out)),)):
            out[eid].append(doc_id)
        return out

    def supports_by_id(self, support_ids: list[str]) -> dict[str, Support]:
        """``{support_id: Support}`` (with provenance) for the ids that exist. One query."""
        out: dict[str, Support] = {}
        if not support_ids:
            return out
        for r in self.db.conn.execute(sql.SUPPORTS_BY_ID, (json.dumps(list(support_ids)),)):
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
                c.execute(sql.DELETE_ORPHAN_ENTITIES)
            return deleted

    def cypher(self, query: str, params: dict | None = None, *, timeout: float = 30.0,
               row_cap: int = 1000, byte_cap: int = 1024 * 1024):
        """Cypher needs a graph server: always raises :class:`~pilar.errors.NotSupportedError`."""
        raise NotSupportedError("Cypher exploration needs PILAR_GRAPH=neo4j (and NEO4J_URI)")

    @staticmethod
    def _doc(row) -> Document:
        return Document(doc_id=row[0], uri=row[1], title=row[2], media_type=row[3], sha256=row[4],
                        n_pages=row[5], ingested_at=row[6], collection=row[7], status=row[8],
                        sources=json.loads(row[9]))

    @staticmethod
    def _doc_row(doc: Document) -> tuple:
        return (doc.doc_id, doc.uri, doc.title, doc.media_type, doc.sha256, doc.n_pages,
                doc.ingested_at, doc.collection, doc.status)


def _entity(r) -> Entity:
    """An Entity from a row of :data:`~pilar.graph.sqlite_sql.ENTITY_COLS`."""
    return Entity(r[0], r[1], r[2], tuple(json.loads(r[3])), collection=r[4])


def _assertion(r) -> Assertion:
    """An Assertion from a row of :data:`~pilar.graph.sqlite_sql.ASSERTION_COLS`."""
    return Assertion(assertion_id=r[0], doc_id=r[1], subject=r[2], predicate=r[3], object=r[4],
                     modality=r[5], qualifiers=json.loads(r[6]), confidence=r[7],
                     grounded=bool(r[8]), extractor=r[9], subject_entity=r[10],
                     object_entity=r[11], supports=tuple(json.loads(r[12])))


def _fts_or(text: str) -> str:
    terms = list(dict.fromkeys(words(text)))[:16]
    return " OR ".join('"' + w.replace('"', '""') + '"' for w in terms)

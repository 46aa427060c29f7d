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
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

from pilar.errors import StoreError
from pilar.migrations import migration_files
from pilar.model import (Assertion, Document, Entity, Page, ParsedDocument, Provenance, Support,
                         Unit, to_jsonable)


class SqliteDatabase:
    """A connection to the embedded store file with migrations applied.

    ``path`` is created (with its folder) if missing. Use :meth:`transaction`
    for writes: everything inside commits together or not at all. Raises
    :class:`StoreError` if the file cannot be opened or migrated.
    """

    def __init__(self, path: Path):
        self.path = Path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            self.conn.execute("PRAGMA journal_mode=WAL")
            self.conn.execute("PRAGMA foreign_keys=ON")
            self.conn.execute("PRAGMA synchronous=NORMAL")
            self.conn.execute("PRAGMA busy_timeout=10000")
            self.migrate()
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open the embedded store {self.path}: {exc}") from exc
        self._lock = threading.RLock()
        self._depth = 0

    def migrate(self) -> list[int]:
        """Apply pending ``migrations/sqlite`` files; returns the versions applied."""
        current = self.conn.execute("PRAGMA user_version").fetchone()[0]
        applied = []
        for version, path in migration_files("sqlite", ".sql"):
            if version <= current:
                continue
            script = path.read_text(encoding="utf-8")
            self.conn.executescript(f"BEGIN;\n{script}\nPRAGMA user_version={version};\nCOMMIT;")
            applied.append(version)
        return applied

    @property
    def schema_version(self) -> int:
        return self.conn.execute("PRAGMA user_version").fetchone()[0]

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """A write transaction (``BEGIN IMMEDIATE``); nested uses join the outer one."""
        with self._lock:
            if self._depth:
                self._depth += 1
                try:
                    yield self.conn
                finally:
                    self._depth -= 1
                return
            self.conn.execute("BEGIN IMMEDIATE")
            self._depth = 1
            try:
                yield self.conn
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise
            else:
                self.conn.execute("COMMIT")
            finally:
                self._depth = 0

    def close(self) -> None:
        self.conn.close()


def _j(value) -> str:
    return json.dumps(to_jsonable(value), ensure_ascii=False)


class SqliteGraphStore:
    """GraphStore on the embedded SQLite file (see :class:`pilar.graph.GraphStore`)."""

    name = "sqlite"

    def __init__(self, db: SqliteDatabase):
        self.db = db

    @contextmanager
    def transaction(self) -> Iterator[None]:
        with self.db.transaction():
            yield

    # -- reads -------------------------------------------------------------
    def find_by_sha256(self, sha256: str) -> Document | None:
        row = self.db.conn.execute("SELECT * FROM documents WHERE sha256 = ?", (sha256,)).fetchone()
        return self._doc(row) if row else None

    def find_by_uri(self, uri: str) -> list[Document]:
        rows = self.db.conn.execute("SELECT * FROM documents WHERE uri = ?", (uri,)).fetchall()
        return [self._doc(r) for r in rows]

    def get_document(self, doc_id: str) -> Document | None:
        row = self.db.conn.execute("SELECT * FROM documents WHERE doc_id = ?", (doc_id,)).fetchone()
        return self._doc(row) if row else None

    def documents(self) -> list[Document]:
        rows = self.db.conn.execute("SELECT * FROM documents ORDER BY ingested_at, uri").fetchall()
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
        """``{page_id: [Support, ...]}`` in document order, with provenance."""
        out: dict[str, list[Support]] = {pid: [] for pid in page_ids}
        for pid in page_ids:
            doc_id, _, number = pid.rpartition(":")
            rows = self.db.conn.execute(
                "SELECT s.support_id, s.kind, s.text, s.role, p.provenance_id, p.section_path,"
                " p.bbox, p.css_path, p.table_index, p.row, p.col, p.cell_ids, p.char_start,"
                " p.char_end FROM provenance p JOIN supports s ON s.provenance_id = p.provenance_id"
                " WHERE p.doc_id = ? AND p.page = ? ORDER BY s.rowid", (doc_id, int(number)))
            page = int(number)
            paths: dict[str, tuple[str, ...]] = {}
            for r in rows:
                path = paths.get(r[5])
                if path is None:
                    path = paths[r[5]] = tuple(json.loads(r[5]))
                prov = Provenance(
                    provenance_id=r[4], doc_id=doc_id, page=page, section_path=path,
                    bbox=tuple(json.loads(r[6])) if r[6] else None, css_path=r[7],
                    table_index=r[8], row=r[9], col=r[10],
                    cell_ids=tuple(json.loads(r[11])) if r[11] != "[]" else (),
                    char_start=r[12], char_end=r[13],
                )
                out[pid].append(Support(support_id=r[0], doc_id=doc_id, kind=r[1], text=r[2],
                                        role=r[3], provenance=prov))
        return out

    def units_on_pages(self, page_ids: list[str]) -> dict[str, list[Unit]]:
        """``{page_id: [Unit, ...]}`` in document order."""
        out: dict[str, list[Unit]] = {pid: [] for pid in page_ids}
        for pid in page_ids:
            doc_id, _, number = pid.rpartition(":")
            for r in self.db.conn.execute(
                "SELECT unit_id, doc_id, page, kind, text, completed_text, support_id, context, "
                "table_index, row_index, headers, cells FROM units WHERE doc_id = ? AND page = ? "
                "ORDER BY rowid", (doc_id, int(number)),
            ):
                out[pid].append(Unit(
                    unit_id=r[0], doc_id=r[1], page=r[2], kind=r[3], text=r[4],
                    completed_text=r[5], support_id=r[6], context=tuple(json.loads(r[7])),
                    table_index=r[8], row_index=r[9], headers=tuple(json.loads(r[10])),
                    cells=tuple(json.loads(r[11])),
                ))
        return out

    def stats(self) -> dict[str, int]:
        """Counts of every layer and edge type, the same keys as
        :meth:`pilar.graph.neo4j.Neo4jGraphStore.stats` (edges are implicit in
        the embedded schema and counted from the rows that imply them)."""
        return dict(zip(_STAT_KEYS, self.db.conn.execute(_STATS_SQL).fetchone()))

    # -- writes ------------------------------------------------------------
    def write_document(self, parsed: ParsedDocument, replaces: list[str] = ()) -> Document:
        """Insert one parsed document with all its layers (after deleting the
        documents ``replaces``), inside the caller's transaction or its own.
        Returns the stored Document (``ingested_at`` set)."""
        doc = parsed.document
        doc.ingested_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
        with self.db.transaction() as c:
            for old in replaces:
                c.execute("DELETE FROM documents WHERE doc_id = ?", (old,))
            if replaces:
                c.execute(_DELETE_ORPHAN_ENTITIES)
            c.execute(
                "INSERT INTO documents (doc_id, uri, title, media_type, sha256, n_pages, ingested_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                (doc.doc_id, doc.uri, doc.title, doc.media_type, doc.sha256, doc.n_pages,
                 doc.ingested_at),
            )
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
        """``{page_id: {section_path, ...}}``: the section paths a page's supports sit in."""
        out: dict[str, set[tuple[str, ...]]] = {pid: set() for pid in page_ids}
        for pid in page_ids:
            doc_id, _, number = pid.rpartition(":")
            for (path,) in self.db.conn.execute(
                    "SELECT DISTINCT section_path FROM provenance WHERE doc_id = ? AND page = ?",
                    (doc_id, int(number))):
                out[pid].add(tuple(json.loads(path)))
        return out

    def entities_on_pages(self, page_ids: list[str]) -> dict[str, set[str]]:
        """``{page_id: {entity_id, ...}}`` via Entity -MENTIONED_IN-> Support -> Page."""
        out: dict[str, set[str]] = {pid: set() for pid in page_ids}
        for pid in page_ids:
            doc_id, _, number = pid.rpartition(":")
            for (eid,) in self.db.conn.execute(_ENTITIES_ON_PAGE, (doc_id, int(number))):
                out[pid].add(eid)
        return out

    def alias_pages(self, entity_ids: list[str], limit: int = 50) -> dict[str, list[str]]:
        """Pages reached from ``entity_ids`` through SAME_AS (either
        direction) to another entity, then MENTIONED_IN -> Support -> Page.
        Returns ``{page_id: [path steps]}``, at most ``limit`` pages per entity."""
        out: dict[str, list[str]] = {}
        for eid in entity_ids:
            for page_id, other, score, method, support in self.db.conn.execute(
                    _ALIAS_PAGES, (eid, eid, limit)):
                out.setdefault(page_id, [f"entity:{eid}", f"SAME_AS({method}, {score:.2f})",
                                         f"entity:{other}", "MENTIONED_IN", f"support:{support}",
                                         f"page:{page_id}"])
        return out

    def assertion_pages(self, entity_ids: list[str], limit: int = 50) -> dict[str, list[str]]:
        """Pages reached from ``entity_ids`` through Entity -> Assertion
        (SUBJECT_OF / OBJECT) -> SUPPORTED_BY -> Support -> Page; ``{page_id: [path]}``."""
        out: dict[str, list[str]] = {}
        for eid in entity_ids:
            for page_id, aid, pred, support in self.db.conn.execute(
                    _ASSERTION_PAGES, (eid, eid, limit)):
                out.setdefault(page_id, [f"entity:{eid}", f"assertion:{aid} ({pred})",
                                         "SUPPORTED_BY", f"support:{support}", f"page:{page_id}"])
        return out

    def mention_pages(self, entity_ids: list[str], limit: int = 50) -> dict[str, list[str]]:
        """Pages that mention ``entity_ids`` directly; ``{page_id: [path]}``."""
        out: dict[str, list[str]] = {}
        for eid in entity_ids:
            for page_id, support in self.db.conn.execute(_MENTION_PAGES, (eid, limit)):
                out.setdefault(page_id, [f"entity:{eid}", "MENTIONED_IN", f"support:{support}",
                                         f"page:{page_id}"])
        return out

    def assertions_of(self, doc_id: str) -> list[Assertion]:
        """A document's assertions with their support ids, in insertion order."""
        rows = self.db.conn.execute(
            "SELECT a.assertion_id, a.doc_id, a.subject, a.predicate, a.object, a.modality, "
            "a.qualifiers, a.confidence, a.grounded, a.extractor, a.subject_entity, "
            "a.object_entity, (SELECT json_group_array(support_id) FROM assertion_supports s "
            "WHERE s.assertion_id = a.assertion_id) FROM assertions a WHERE a.doc_id = ? "
            "ORDER BY a.rowid", (doc_id,)).fetchall()
        return [Assertion(assertion_id=r[0], doc_id=r[1], subject=r[2], predicate=r[3],
                          object=r[4], modality=r[5], qualifiers=json.loads(r[6]),
                          confidence=r[7], grounded=bool(r[8]), extractor=r[9],
                          subject_entity=r[10], object_entity=r[11],
                          supports=tuple(json.loads(r[12]))) for r in rows]

    def delete_document(self, doc_id: str) -> bool:
        """Delete a document and everything hanging off it, and the entities
        no other document still uses; False if absent."""
        with self.db.transaction() as c:
            deleted = c.execute("DELETE FROM documents WHERE doc_id = ?", (doc_id,)).rowcount > 0
            if deleted:
                c.execute(_DELETE_ORPHAN_ENTITIES)
            return deleted

    @staticmethod
    def _doc(row) -> Document:
        return Document(doc_id=row[0], uri=row[1], title=row[2], media_type=row[3], sha256=row[4],
                        n_pages=row[5], ingested_at=row[6])


_STAT_KEYS = ("documents", "pages", "supports", "provenance", "units", "tables", "assertions",
              "entities", "IN_DOCUMENT", "NEXT", "HAS_PROVENANCE", "ON_PAGE", "DERIVED_FROM",
              "SUPPORTED_BY", "SUBJECT_OF", "OBJECT", "MENTIONED_IN", "SAME_AS")
_STATS_SQL = """
SELECT (SELECT count(*) FROM documents), (SELECT count(*) FROM pages),
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
_ENTITIES_ON_PAGE = """
SELECT DISTINCT m.entity_id FROM provenance p
JOIN supports s ON s.provenance_id = p.provenance_id
JOIN mentions m ON m.support_id = s.support_id
WHERE p.doc_id = ? AND p.page = ?
"""
_ALIAS_PAGES = """
WITH linked(other, score, method) AS (
    SELECT target, score, method FROM same_as WHERE source = ?1
    UNION SELECT source, score, method FROM same_as WHERE target = ?2)
SELECT p.doc_id || ':' || p.page, l.other, max(l.score), l.method, min(s.support_id)
FROM linked l JOIN mentions m ON m.entity_id = l.other
JOIN supports s ON s.support_id = m.support_id
JOIN provenance p ON p.provenance_id = s.provenance_id
GROUP BY p.doc_id, p.page ORDER BY max(l.score) DESC LIMIT ?3
"""
_ASSERTION_PAGES = """
SELECT p.doc_id || ':' || p.page, min(a.assertion_id), min(a.predicate), min(s.support_id)
FROM assertions a JOIN assertion_supports x ON x.assertion_id = a.assertion_id
JOIN supports s ON s.support_id = x.support_id
JOIN provenance p ON p.provenance_id = s.provenance_id
WHERE a.subject_entity = ?1 OR a.object_entity = ?2
GROUP BY p.doc_id, p.page LIMIT ?3
"""
_MENTION_PAGES = """
SELECT p.doc_id || ':' || p.page, min(s.support_id) FROM mentions m
JOIN supports s ON s.support_id = m.support_id
JOIN provenance p ON p.provenance_id = s.provenance_id
WHERE m.entity_id = ? GROUP BY p.doc_id, p.page LIMIT ?
"""
_WORDS = re.compile(r"\w+", re.UNICODE)


def _fts_or(text: str) -> str:
    words = list(dict.fromkeys(w.lower() for w in _WORDS.findall(text)))[:16]
    return " OR ".join('"' + w.replace('"', '""') + '"' for w in words)


def _chunks(items: list, size: int):
    for i in range(0, len(items), size):
        yield items[i:i + size]

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
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

from pilar.errors import StoreError
from pilar.migrations import migration_files
from pilar.model import Document, Page, ParsedDocument, Provenance, Support, Unit, to_jsonable


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
                "SELECT s.support_id, s.kind, s.text, s.role, p.* FROM supports s "
                "JOIN provenance p ON p.provenance_id = s.provenance_id "
                "WHERE p.doc_id = ? AND p.page = ? ORDER BY s.rowid",
                (doc_id, int(number)),
            )
            for r in rows:
                prov = Provenance(
                    provenance_id=r[4], doc_id=r[5], page=r[6],
                    section_path=tuple(json.loads(r[7])),
                    bbox=tuple(json.loads(r[8])) if r[8] else None, css_path=r[9],
                    table_index=r[10], row=r[11], col=r[12], cell_ids=tuple(json.loads(r[13])),
                    char_start=r[14], char_end=r[15],
                )
                out[pid].append(Support(support_id=r[0], doc_id=prov.doc_id, kind=r[1], text=r[2],
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
        return doc

    def delete_document(self, doc_id: str) -> bool:
        """Delete a document and everything hanging off it; False if absent."""
        with self.db.transaction() as c:
            return c.execute("DELETE FROM documents WHERE doc_id = ?", (doc_id,)).rowcount > 0

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
       0, 0,
       (SELECT count(*) FROM pages),
       (SELECT count(*) FROM pages p JOIN pages q ON q.doc_id = p.doc_id AND q.number = p.number + 1),
       (SELECT count(*) FROM supports),
       (SELECT count(*) FROM provenance p JOIN pages g ON g.doc_id = p.doc_id AND g.number = p.page),
       (SELECT count(*) FROM units),
       0, 0, 0, 0, 0
"""


def _chunks(items: list, size: int):
    for i in range(0, len(items), size):
        yield items[i:i + size]

"""The embedded page index: SQLite FTS5 for BM25 and a dense matrix.

Lives in the same file as the embedded graph store (tables from
``migrations/sqlite/0002_page_index.sql``), so a document's pages and vectors
commit together with its graph rows. The dense matrix is loaded into memory
on first query and reloaded when the store changes.
"""

from __future__ import annotations

import json

import numpy as np

from pilar.model import Page, Scope
from pilar.retrieval import query_terms
from pilar.stores import SqliteDatabase


def fts_query(question: str) -> str | None:
    """An FTS5 MATCH expression OR-ing the question's content words
    (:func:`pilar.retrieval.query_terms`, each quoted, so no user text is
    read as FTS syntax); None if nothing is left."""
    terms = query_terms(question)
    if not terms:
        return None
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)


def _scope_sql(scope: Scope | None) -> tuple[str, tuple]:
    """An ``AND ...`` clause on ``index_pages p`` for ``scope`` and its parameters."""
    if scope is None or scope.unlimited:
        return "", ()
    clause, params = "", []
    if scope.collections is not None:
        clause += " AND p.collection IN (SELECT value FROM json_each(?))"
        params.append(json.dumps(list(scope.collections)))
    if scope.doc_ids is not None:
        clause += " AND p.doc_id IN (SELECT value FROM json_each(?))"
        params.append(json.dumps(list(scope.doc_ids)))
    return clause, tuple(params)


class SqlitePageIndex:
    """PageIndex on the embedded SQLite file (see :class:`pilar.retrieval.PageIndex`)."""

    name = "sqlite"

    def __init__(self, db: SqliteDatabase):
        self.db = db
        self._matrix: np.ndarray | None = None
        self._starts = np.zeros(0, dtype=np.int64)
        self._ids: list[str] = []
        self._docs = np.zeros(0, dtype=object)
        self._collections = np.zeros(0, dtype=object)
        self._positions: dict[str, int] = {}
        self._stamp: tuple[int, int] | None = None

    def migrate(self) -> list[int]:
        """Apply pending ``migrations/sqlite`` files (shared with the graph store)."""
        return self.db.migrate()

    def close(self) -> None:
        self.db.close()

    def transaction(self):
        """A write transaction on the shared store file (nested uses join it)."""
        return self.db.transaction()

    def add_pages(self, pages: list[Page], vectors: list[np.ndarray],
                  unit_ids: list[list[str | None]] | None = None, *,
                  collection: str = "default",
                  sections: list[list[str]] | None = None) -> None:
        """Index ``pages`` (see :meth:`pilar.retrieval.PageIndex.add_pages`;
        section paths are read from the graph on this store, not kept here).
        Raises ``sqlite3.IntegrityError`` for a page id already indexed."""
        with self.db.transaction() as c:
            for i, (page, vecs) in enumerate(zip(pages, vectors, strict=True)):
                cur = c.execute(
                    "INSERT INTO index_pages (page_id, doc_id, number, text, collection)"
                    " VALUES (?,?,?,?,?)",
                    (page.page_id, page.doc_id, page.number, page.text, collection),
                )
                rowid = cur.lastrowid
                ids = unit_ids[i] if unit_ids else [None] * len(vecs)
                c.executemany(
                    "INSERT INTO page_vectors (page_rowid, chunk, unit_id, vector) VALUES (?,?,?,?)",
                    [(rowid, j, uid, np.asarray(v, dtype="<f4").tobytes())
                     for j, (uid, v) in enumerate(zip(ids, vecs, strict=True))],
                )

    def unit_vectors(self, unit_ids: list[str]) -> dict[str, np.ndarray]:
        """``{unit_id: (dim,) float32}`` for the units embedded at ingest."""
        out = {}
        for i in range(0, len(unit_ids), 500):
            chunk = unit_ids[i:i + 500]
            marks = ",".join("?" * len(chunk))
            for uid, blob in self.db.conn.execute(
                    f"SELECT unit_id, vector FROM page_vectors WHERE unit_id IN ({marks})", chunk):
                out[uid] = np.frombuffer(blob, dtype="<f4")
        return out

    def delete_document(self, doc_id: str) -> int:
        """Remove a document's pages and vectors; returns pages removed."""
        with self.db.transaction() as c:
            return c.execute("DELETE FROM index_pages WHERE doc_id = ?", (doc_id,)).rowcount

    def count(self) -> int:
        return self.db.conn.execute("SELECT count(*) FROM index_pages").fetchone()[0]

    def bm25(self, question: str, n: int, scope: Scope | None = None) -> dict[str, float]:
        """``{page_id: bm25}`` for the ``n`` best pages within ``scope``
        (higher is better; FTS5's BM25 with k1=1.2, b=0.75, sign flipped)."""
        match = fts_query(question)
        if match is None:
            return {}
        clause, params = _scope_sql(scope)
        rows = self.db.conn.execute(
            "SELECT p.page_id, -bm25(page_fts) AS s FROM page_fts JOIN index_pages p "
            f"ON p.rowid = page_fts.rowid WHERE page_fts MATCH ?{clause} "
            "ORDER BY bm25(page_fts) LIMIT ?",
            (match, *params, n),
        ).fetchall()
        return {pid: float(s) for pid, s in rows}

    def bm25_for(self, question: str, page_ids: list[str]) -> dict[str, float]:
        """``{page_id: bm25}`` restricted to ``page_ids`` (pages without a match are absent)."""
        match = fts_query(question)
        if match is None or not page_ids:
            return {}
        marks = ",".join("?" * len(page_ids))
        rows = self.db.conn.execute(
            "SELECT p.page_id, -bm25(page_fts) FROM page_fts JOIN index_pages p "
            f"ON p.rowid = page_fts.rowid WHERE page_fts MATCH ? AND p.page_id IN ({marks})",
            (match, *page_ids)).fetchall()
        return {pid: float(s) for pid, s in rows}

    def dense_top(self, query: np.ndarray, n: int, scope: Scope | None = None) -> dict[str, float]:
        """``{page_id: cosine}`` of the ``n`` pages within ``scope`` whose best
        vector is nearest ``query`` (exact, over the in-memory matrix)."""
        page_max = self._page_max(query)
        if page_max is None or n <= 0:
            return {}
        if scope is not None and not scope.unlimited:
            keep = np.ones(len(page_max), dtype=bool)
            if scope.collections is not None:
                keep &= np.isin(self._collections, list(scope.collections))
            if scope.doc_ids is not None:
                keep &= np.isin(self._docs, list(scope.doc_ids))
            page_max = np.where(keep, page_max, -np.inf)
            n = min(n, int(keep.sum()))
        if n >= len(page_max):
            top = np.argsort(-page_max, kind="stable")[:n]
        else:
            part = np.argpartition(-page_max, n)[:n]
            top = part[np.argsort(-page_max[part], kind="stable")]
        return {self._ids[i]: float(page_max[i]) for i in top}

    def dense_for(self, query: np.ndarray, page_ids: list[str]) -> dict[str, float]:
        """``{page_id: cosine}`` of exactly ``page_ids`` (0.0 for unknown
        pages and pages without vectors)."""
        page_max = self._page_max(query)
        if page_max is None:
            return {pid: 0.0 for pid in page_ids}
        pos = self._positions
        return {pid: float(page_max[pos[pid]]) if pid in pos else 0.0 for pid in page_ids}

    def _page_max(self, query: np.ndarray) -> np.ndarray | None:
        """Each vector-holding page's best cosine against ``query`` (in
        ``self._ids`` order), or None when no page has a vector."""
        matrix, starts, _ids = self._load()
        if matrix.shape[0] == 0:
            return None
        return np.maximum.reduceat(matrix @ query.astype(np.float32), starts)

    def _load(self) -> tuple[np.ndarray, np.ndarray, list[str]]:
        """The chunk matrix, the first row of each page, and the page ids;
        reloaded when the file changed (``data_version`` or our own writes)."""
        stamp = (self.db.conn.execute("PRAGMA data_version").fetchone()[0],
                 self.db.conn.total_changes)
        if self._matrix is None or stamp != self._stamp:
            ids, docs, collections, counts, blobs = [], [], [], [], []
            for page_id, doc_id, collection, blob in self.db.conn.execute(
                "SELECT p.page_id, p.doc_id, p.collection, v.vector FROM page_vectors v "
                "JOIN index_pages p ON p.rowid = v.page_rowid ORDER BY v.page_rowid, v.chunk"
            ):
                if not ids or ids[-1] != page_id:
                    ids.append(page_id)
                    docs.append(doc_id)
                    collections.append(collection)
                    counts.append(0)
                counts[-1] += 1
                blobs.append(blob)
            if blobs:
                self._matrix = np.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(blobs), -1)
            else:
                self._matrix = np.zeros((0, 1), dtype=np.float32)
            self._starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
            self._ids = ids
            self._docs = np.array(docs, dtype=object)
            self._collections = np.array(collections, dtype=object)
            self._positions = {pid: i for i, pid in enumerate(ids)}
            self._stamp = stamp
        return self._matrix, self._starts, self._ids

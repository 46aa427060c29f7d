"""The embedded page index: SQLite FTS5 for BM25 and a dense matrix.

Lives in the same file as the embedded graph store (tables from
``migrations/sqlite/0002_page_index.sql``), so a document's pages and vectors
commit together with its graph rows. The dense matrix is loaded into memory
on first query and reloaded when the store changes.
"""

from __future__ import annotations

import re
import threading

import numpy as np

from pilar.graph.sqlite import SqliteDatabase
from pilar.model import Page

_TOKEN = re.compile(r"\w+", re.UNICODE)
STOPWORDS = frozenset(
    "a an and are as at be by did do does for from had has have how in is it its of on or "
    "that the their there these this those to was were what when where which who whom whose "
    "why will with".split()
)


def fts_query(question: str) -> str | None:
    """An FTS5 MATCH expression OR-ing the question's content words (each
    quoted, so no user text is read as FTS syntax); None if nothing is left."""
    words = [w.lower() for w in _TOKEN.findall(question)]
    terms = list(dict.fromkeys(w for w in words if w not in STOPWORDS)) or list(dict.fromkeys(words))
    if not terms:
        return None
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)


class SqlitePageIndex:
    """PageIndex on the embedded SQLite file (see :class:`pilar.retrieval.PageIndex`)."""

    name = "sqlite"

    def __init__(self, db: SqliteDatabase):
        self.db = db
        self._matrix: np.ndarray | None = None
        self._starts = np.zeros(0, dtype=np.int64)
        self._ids: list[str] = []
        self._positions: dict[str, int] = {}
        self._stamp: int | None = None
        self._load_lock = threading.Lock()

    def transaction(self):
        """A write transaction on the shared store file (nested uses join it)."""
        return self.db.transaction()

    def add_pages(self, pages: list[Page], vectors: list[np.ndarray],
                  unit_ids: list[list[str | None]] | None = None) -> None:
        """Index ``pages``; ``vectors[i]`` is a ``(n, dim)`` float32 array of
        L2-normalised embeddings of page ``i`` and ``unit_ids[i]`` names the
        unit behind each row (None for a plain text window)."""
        with self.db.transaction() as c:
            for i, (page, vecs) in enumerate(zip(pages, vectors, strict=True)):
                cur = c.execute(
                    "INSERT INTO index_pages (page_id, doc_id, number, text) VALUES (?,?,?,?)",
                    (page.page_id, page.doc_id, page.number, page.text),
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

    def bm25(self, question: str, n: int) -> dict[str, float]:
        """``{page_id: bm25}`` for the ``n`` best pages (higher is better; FTS5's
        BM25 with k1=1.2, b=0.75, sign flipped)."""
        match = fts_query(question)
        if match is None:
            return {}
        rows = self.db.conn.execute(
            "SELECT p.page_id, -bm25(page_fts) AS s FROM page_fts JOIN index_pages p "
            "ON p.rowid = page_fts.rowid WHERE page_fts MATCH ? ORDER BY bm25(page_fts) LIMIT ?",
            (match, n),
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

    def dense(self, query: np.ndarray, n: int | None = None,
              page_ids: list[str] | None = None) -> dict[str, float]:
        """``{page_id: cosine}``: a page's best chunk against ``query`` (a
        ``(dim,)`` L2-normalised vector), for the top ``n`` pages (all when
        ``n`` is None) or for exactly ``page_ids`` (0.0 for unknown ids)."""
        matrix, starts, ids, pos = self._load()
        if matrix.shape[0] == 0:
            return {pid: 0.0 for pid in page_ids} if page_ids is not None else {}
        page_max = np.maximum.reduceat(matrix @ query.astype(np.float32), starts)
        if page_ids is not None:
            return {pid: float(page_max[pos[pid]]) if pid in pos else 0.0 for pid in page_ids}
        if n is None or n >= len(page_max):
            top = np.argsort(-page_max, kind="stable")
        else:
            part = np.argpartition(-page_max, n)[:n]
            top = part[np.argsort(-page_max[part], kind="stable")]
        return {ids[i]: float(page_max[i]) for i in top}

    def _load(self) -> tuple[np.ndarray, np.ndarray, list[str], dict[str, int]]:
        """The chunk matrix, the first row of each page, the page ids and their
        positions; reloaded when a write was committed to the file since (by
        any connection, :meth:`SqliteDatabase.data_version`). Safe under threads:
        one thread reloads, the others wait and share the result."""
        with self._load_lock:
            stamp = self.db.data_version()
            if self._matrix is not None and stamp == self._stamp:
                return self._matrix, self._starts, self._ids, self._positions
            ids, counts, blobs = [], [], []
            for page_id, blob in self.db.conn.execute(
                "SELECT p.page_id, v.vector FROM page_vectors v JOIN index_pages p "
                "ON p.rowid = v.page_rowid ORDER BY v.page_rowid, v.chunk"
            ):
                if not ids or ids[-1] != page_id:
                    ids.append(page_id)
                    counts.append(0)
                counts[-1] += 1
                blobs.append(blob)
            if blobs:
                matrix = np.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(blobs), -1)
            else:
                matrix = np.zeros((0, 1), dtype=np.float32)
            self._starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
            self._ids = ids
            self._positions = {pid: i for i, pid in enumerate(ids)}
            self._matrix, self._stamp = matrix, stamp
            return self._matrix, self._starts, self._ids, self._positions

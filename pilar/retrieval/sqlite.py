"""The embedded page index: SQLite FTS5 for BM25 and a dense matrix.

Lives in the same file as the embedded graph store (tables from
``migrations/sqlite/0002_page_index.sql``), so a document's pages and vectors
commit together with its graph rows. Dense search is delegated to a
:class:`pilar.retrieval.dense.DenseSearch` (exact in memory, or an ANN index
beside the file that follows the store's change log).
"""

from __future__ import annotations

import json

import numpy as np

from pilar.model import IndexedPages, Page, Scope
from pilar.parts import ReadCache, batched
from pilar.retrieval import query_terms
from pilar.retrieval.dense import DenseSearch, ExactDense, scope_sql
from pilar.db import SqliteDatabase


def _quoted(term: str) -> str:
    """``term`` as an FTS5 string (no user text is read as FTS syntax)."""
    return '"' + term.replace('"', '""') + '"'


def fts_query(question: str) -> str | None:
    """An FTS5 MATCH expression OR-ing the question's content words
    (:func:`pilar.retrieval.query_terms`, each quoted, so no user text is
    read as FTS syntax); None if nothing is left."""
    terms = query_terms(question)
    if not terms:
        return None
    return " OR ".join(map(_quoted, terms))


EACH = 100
"""Terms :meth:`SqlitePageIndex.bm25_each` reads in one statement (SQLite
allows 500 arms in a compound select)."""
TERM_PAGES = 200_000
"""(term, page) BM25 scores a :class:`SqlitePageIndex` keeps until the store
changes (then, or past this many, it starts again)."""


class SqlitePageIndex:
    """PageIndex on the embedded SQLite file (see :class:`pilar.retrieval.PageIndex`)."""

    name = "sqlite"

    def __init__(self, db: SqliteDatabase, dense: DenseSearch | None = None):
        self.db = db
        self.dense = dense or ExactDense(db)
        self.reads = ReadCache(db, TERM_PAGES)  # (term, page) -> BM25, None: no match

    def migrate(self) -> list[int]:
        """Apply pending ``migrations/sqlite`` files (shared with the graph store)."""
        return self.db.migrate()

    def close(self) -> None:
        self.dense.close()
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

    def add_documents(self, docs: list[IndexedPages]) -> None:
        """:meth:`add_pages` for each of ``docs``, in one transaction (see
        :meth:`pilar.retrieval.PageIndex.add_documents`)."""
        with self.db.transaction():
            for d in docs:
                self.add_pages(d.pages, d.vectors, d.unit_ids, collection=d.collection,
                               sections=d.sections)

    def unit_vectors(self, unit_ids: list[str]) -> dict[str, np.ndarray]:
        """``{unit_id: (dim,) float32}`` for the units embedded at ingest."""
        out = {}
        for chunk in batched(unit_ids, 500):
            marks = ",".join("?" * len(chunk))
            for uid, blob in self.db.conn.execute(
                    f"SELECT unit_id, vector FROM page_vectors WHERE unit_id IN ({marks})", chunk):
                out[uid] = np.frombuffer(blob, dtype="<f4")
        return out

    def page_vectors(self, page_ids: list[str]) -> dict[str, tuple[np.ndarray, list[str | None]]]:
        """``{page_id: ((n, dim) float32, [unit_id or None, ...])}`` as indexed,
        for the ids that exist (pages without vectors get ``(0, 0)`` arrays):
        what copying this index into another backend needs."""
        out: dict[str, tuple[list, list]] = {}
        for pid, uid, blob in self.db.conn.execute(
                "SELECT p.page_id, v.unit_id, v.vector FROM index_pages p "
                "LEFT JOIN page_vectors v ON v.page_rowid = p.rowid "
                "WHERE p.page_id IN (SELECT value FROM json_each(?)) ORDER BY p.rowid, v.chunk",
                (json.dumps(list(page_ids)),)):
            vecs, ids = out.setdefault(pid, ([], []))
            if blob is not None:
                vecs.append(np.frombuffer(blob, dtype="<f4"))
                ids.append(uid)
        return {pid: (np.stack(v) if v else np.zeros((0, 0), dtype=np.float32), ids)
                for pid, (v, ids) in out.items()}

    def delete_document(self, doc_id: str) -> int:
        """Remove a document's pages and vectors; returns pages removed."""
        return self.delete_documents([doc_id])

    def delete_documents(self, doc_ids: list[str]) -> int:
        """Remove the pages and vectors of ``doc_ids`` in one transaction;
        returns pages removed."""
        with self.db.transaction() as c:
            return c.execute("DELETE FROM index_pages WHERE doc_id IN "
                             "(SELECT value FROM json_each(?))", (json.dumps(doc_ids),)).rowcount

    def count(self) -> int:
        return self.db.conn.execute("SELECT count(*) FROM index_pages").fetchone()[0]

    def bm25(self, question: str, n: int, scope: Scope | None = None) -> dict[str, float]:
        """``{page_id: bm25}`` for the ``n`` best pages within ``scope``
        (higher is better; FTS5's BM25 with k1=1.2, b=0.75, sign flipped)."""
        match = fts_query(question)
        if match is None:
            return {}
        clause, params = scope_sql(scope)
        rows = self.db.conn.execute(
            "SELECT p.page_id, -bm25(page_fts) AS s FROM page_fts JOIN index_pages p "
            f"ON p.rowid = page_fts.rowid WHERE page_fts MATCH ?{clause} "
            "ORDER BY bm25(page_fts) LIMIT ?",
            (match, *params, n),
        ).fetchall()
        return {pid: float(s) for pid, s in rows}

    def bm25_for(self, question: str, page_ids: list[str]) -> dict[str, float]:
        """``{page_id: bm25}`` restricted to ``page_ids`` (pages without a match are absent)."""
        return self.bm25_each([question], page_ids)[0]

    def bm25_each(self, texts: list[str], page_ids: list[str]) -> list[dict[str, float]]:
        """:meth:`bm25_for` of each of ``texts``, in order. FTS5's BM25 of a
        text's OR-query (:func:`fts_query`) is the sum, term by term in
        order, of each term's own BM25 (each phrase weighs its part by its
        own IDF; the same float, bit for bit, on the stores' questions):
        the terms' scores are read once for all texts
        (:meth:`_term_scores`) and summed."""
        terms = [query_terms(text) for text in texts]
        scores = self._term_scores(list(dict.fromkeys(t for ts in terms for t in ts)),
                                   list(dict.fromkeys(page_ids)))
        out: list[dict[str, float]] = []
        for ts in terms:
            summed: dict[str, float] = {}
            for t in ts:  # in the query's order, as FTS5 adds them
                for pid, score in scores[t].items():
                    summed[pid] = summed.get(pid, 0.0) + score
            out.append(summed)
        return out

    def _term_scores(self, terms: list[str], page_ids: list[str]) -> dict[str, dict[str, float]]:
        """``{term: {page_id: bm25}}`` of each of ``terms`` alone on the
        ``page_ids`` it matches (pages in the order given): the (term, page)
        pairs not kept since the store last changed (:class:`~pilar.parts.ReadCache`)
        are read (:meth:`_read_terms`) and kept (at most :data:`TERM_PAGES`)."""
        out: dict[str, dict[str, float]] = {t: {} for t in terms}
        pairs = self.reads.through("bm25", [(t, pid) for t in terms for pid in page_ids],
                                   self._read_terms)
        for (t, pid), score in pairs.items():
            if score is not None:
                out[t][pid] = score
        return out

    def _read_terms(self, pairs: list[tuple[str, str]]) -> dict[tuple[str, str], float | None]:
        """``{(term, page_id): bm25 or None}`` (None: no match) for every term
        and page of ``pairs``, in one statement per :data:`EACH` terms (a
        ``UNION ALL`` of one FTS5 match each, the pages one JSON parameter)."""
        terms = list(dict.fromkeys(t for t, _ in pairs))
        pages = list(dict.fromkeys(pid for _, pid in pairs))
        found: dict[tuple[str, str], float | None] = dict.fromkeys(
            (t, pid) for t in terms for pid in pages)
        for part in batched(terms, EACH):
            arms = " UNION ALL ".join(
                f"SELECT {k}, p.page_id, -bm25(page_fts) FROM page_fts JOIN index_pages p "
                f"ON p.rowid = page_fts.rowid WHERE page_fts MATCH ?{k + 2} "
                "AND p.page_id IN (SELECT value FROM json_each(?1))" for k in range(len(part)))
            for k, pid, score in self.db.conn.execute(
                    arms, (json.dumps(pages), *(_quoted(t) for t in part))):
                found[part[k], pid] = float(score)
        return found

    def dense_top(self, query: np.ndarray, n: int, scope: Scope | None = None) -> dict[str, float]:
        """``{page_id: cosine}`` of the ``n`` pages within ``scope`` whose best
        vector is nearest ``query`` (:class:`pilar.retrieval.dense.DenseSearch`)."""
        return self.dense.top(query, n, scope)

    def dense_for(self, query: np.ndarray, page_ids: list[str]) -> dict[str, float]:
        """``{page_id: cosine}`` of exactly ``page_ids`` (0.0 for unknown
        pages and pages without vectors)."""
        return self.dense.scores(query, page_ids)

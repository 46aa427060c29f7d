"""Dense page search on the embedded store (PILAR §3.4: a page's dense score
is its best vector's cosine): :class:`ExactDense`, the whole matrix in memory,
and :class:`AnnDense`, an approximate nearest-neighbour index (usearch HNSW)
kept beside the store file and updated from the store's change log.

Both give exact float32 cosines for the pages they return; the vectors of
record stay in ``page_vectors`` (``migrations/sqlite/0002_page_index.sql``).
:class:`pilar.retrieval.sqlite.SqlitePageIndex` holds one of them, chosen by
:func:`pilar.stores.open_stores` (``PILAR_DENSE_INDEX``).
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
import threading
from pathlib import Path
from typing import NamedTuple, Protocol

import numpy as np
from cachetools import LRUCache

from pilar.model import Scope
from pilar.parts import ReadCache, batched
from pilar.db import SqliteDatabase

log = logging.getLogger(__name__)


def scope_sql(scope: Scope | None) -> tuple[str, tuple]:
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


def _best(scores: dict[str, float], n: int) -> dict[str, float]:
    """The ``n`` highest of ``scores``, best first (ties in the given order)."""
    ranked = sorted(scores.items(), key=lambda kv: -kv[1])
    return dict(ranked[:max(n, 0)])


def _best_cosines(vectors: dict[tuple[int, int], np.ndarray], query: np.ndarray,
                  pages: dict[int, str]) -> dict[str, float]:
    """``{page_id: best float32 cosine}`` over ``vectors`` (``(page rowid,
    chunk) -> float32 vector``; ``pages``: rowid -> page id)."""
    out: dict[str, float] = {}
    for (rowid, _), vector in vectors.items():
        cos = float(vector @ query)
        pid = pages[rowid]
        if cos > out.get(pid, -2.0):
            out[pid] = cos
    return out


class _Hits:
    """An ANN search's hits (``keys``: page rowid << :data:`_CHUNK_BITS` |
    chunk, ``distances``: cosine distances) by page: ``best`` is ``{page
    rowid: its best hit's similarity}``; :meth:`near` its chunks from a
    similarity up, in the order the search found them."""

    def __init__(self, keys: np.ndarray, distances: np.ndarray):
        keys = np.asarray(keys, dtype=np.uint64)
        rowids = (keys >> np.uint64(_CHUNK_BITS)).astype(np.int64)
        self.chunks = (keys & np.uint64((1 << _CHUNK_BITS) - 1)).astype(np.int64)
        self.sims = 1.0 - np.asarray(distances, dtype=np.float64)
        self.order = np.argsort(rowids, kind="stable")  # a page's hits together, found order
        grouped = rowids[self.order]
        starts = np.flatnonzero(np.r_[True, grouped[1:] != grouped[:-1]]) if len(grouped) \
            else np.zeros(0, dtype=np.intp)
        ends = np.r_[starts[1:], len(grouped)]
        bests = np.maximum.reduceat(self.sims[self.order], starts).tolist() if len(starts) \
            else []
        self.span = dict(zip(grouped[starts].tolist(), zip(starts.tolist(), ends.tolist())))
        self.best: dict[int, float] = dict(zip(grouped[starts].tolist(), bests))

    def near(self, rowid: int, floor: float) -> list[int]:
        """The chunks of page ``rowid`` hit with a similarity of at least ``floor``."""
        start, end = self.span[rowid]
        at = self.order[start:end]
        return self.chunks[at[self.sims[at] >= floor]].tolist()


class DenseSearch(Protocol):
    """Dense scores over the embedded page index (one per store file)."""

    def top(self, query: np.ndarray, n: int, scope: Scope | None) -> dict[str, float]:
        """``{page_id: cosine}`` of the ``n`` pages within ``scope`` whose best
        vector is nearest ``query`` (``(dim,)`` float32, L2-normalised), best first."""
        ...

    def scores(self, query: np.ndarray, page_ids: list[str]) -> dict[str, float]:
        """``{page_id: cosine}`` of exactly ``page_ids`` (0.0 for unknown
        pages and pages without vectors), in the order given."""
        ...

    def close(self) -> None:
        """Persist what must survive this process; unusable afterwards."""
        ...


class _Matrix(NamedTuple):
    """The dense matrix and what locates its rows, loaded together (one
    consistent snapshot that threads share without locking)."""

    matrix: np.ndarray
    starts: np.ndarray  # first row of each page
    ids: list[str]  # page ids, in row-block order
    docs: np.ndarray  # doc id per page
    collections: np.ndarray  # collection per page
    positions: dict[str, int]  # page id -> index into ids


class ExactDense:
    """Exact search: every vector in memory (float32), the query multiplied
    against all of them. Reloaded whole when a write was committed to the
    file since (by any connection): fine for a few hundred pages, the
    reference :class:`AnnDense` is measured against (bench/cost_growth.py)."""

    def __init__(self, db: SqliteDatabase):
        self.db = db
        self._state: _Matrix | None = None
        self._stamp: int | None = None
        self._load_lock = threading.Lock()

    def top(self, query: np.ndarray, n: int, scope: Scope | None) -> dict[str, float]:
        found = self._page_max(query)
        if found is None or n <= 0:
            return {}
        page_max, state = found
        if scope is not None and not scope.unlimited:
            keep = np.ones(len(page_max), dtype=bool)
            if scope.collections is not None:
                keep &= np.isin(state.collections, list(scope.collections))
            if scope.doc_ids is not None:
                keep &= np.isin(state.docs, list(scope.doc_ids))
            page_max = np.where(keep, page_max, -np.inf)
            n = min(n, int(keep.sum()))
        if n >= len(page_max):
            top = np.argsort(-page_max, kind="stable")[:n]
        else:
            part = np.argpartition(-page_max, n)[:n]
            top = part[np.argsort(-page_max[part], kind="stable")]
        return {state.ids[i]: float(page_max[i]) for i in top}

    def scores(self, query: np.ndarray, page_ids: list[str]) -> dict[str, float]:
        found = self._page_max(query)
        if found is None:
            return {pid: 0.0 for pid in page_ids}
        page_max, state = found
        pos = state.positions
        return {pid: float(page_max[pos[pid]]) if pid in pos else 0.0 for pid in page_ids}

    def close(self) -> None:
        self._state = None

    def _page_max(self, query: np.ndarray) -> tuple[np.ndarray, _Matrix] | None:
        state = self._load()
        if state.matrix.shape[0] == 0:
            return None
        return np.maximum.reduceat(state.matrix @ query.astype(np.float32), state.starts), state

    def _load(self) -> _Matrix:
        with self._load_lock:
            stamp = self.db.data_version()
            if self._state is not None and stamp == self._stamp:
                return self._state
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
                matrix = np.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(blobs), -1)
            else:
                matrix = np.zeros((0, 1), dtype=np.float32)
            self._state = _Matrix(
                matrix, np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64), ids,
                np.array(docs, dtype=object), np.array(collections, dtype=object),
                {pid: i for i, pid in enumerate(ids)})
            self._stamp = stamp
            return self._state


COMPACT_BYTES = 32 << 20
"""Bytes of float32 compact copies an :class:`AnnDense` keeps (the 10,422
vectors of 484 pages at 384 dimensions take 16 MB)."""
EXACT_BYTES = 32 << 20
"""Bytes of float32 vectors of record an :class:`AnnDense` keeps once read
(a search scores the pages a bridge reaches twice: against the question and
against what it asks)."""
_CHUNK_BITS = 24  # ANN key = page rowid << 24 | chunk (up to 16M vectors a page)
# how far a compact copy's cosine may fall from the float32 one (384-d unit vectors)
_MARGIN = {"i8": 0.03, "f16": 0.002}
_FILE = re.compile(r"^(?P<epoch>[0-9a-f]+)-(?P<seq>\d+)\.usearch$")


class AnnDense:
    """Approximate nearest-neighbour search (usearch HNSW, cosine) over every
    unit vector, stored compactly (``dtype`` ``f16``, or ``i8``: half the
    memory, but usearch scales components by 127 whatever the norm, so a
    384-d unit vector keeps about 4 bits a component), with exact
    float32 cosines for the pages returned.

    The index follows ``index_changes`` (migration 0007): before a read it
    applies the entries committed since it last looked (adds read only the new
    pages' vectors), so it is never rebuilt or re-read whole after a write.
    It is saved in ``folder`` as ``EPOCH-SEQ.usearch`` (written to a temporary
    name, then renamed) once ``save_every`` pages changed since the last save
    and on :meth:`close`; on open the newest file of this store's epoch not
    ahead of the log is loaded and the log replayed from its seq, so a crash
    costs a replay, never a silent disagreement. A missing, foreign or
    unreadable file means a rebuild from the store.

    A page's score: its vectors are ranked by the compact copies in the index,
    and the best one's float32 vector read from the store gives the cosine
    (vectors of record are kept once read until the log changes, page rows
    until the file does: :class:`~pilar.parts.ReadCache`).
    ``top`` asks the index for ``16n`` (at least 256) nearest vectors (a page
    holds many: 4n rarely reached n pages on the dev store), widening
    until ``n`` pages within the scope are found or the index is exhausted;
    a scope naming documents is searched exactly over their pages. An index
    of fewer than ``exact_below`` vectors is scanned whole (usearch's exact
    search over the compact copies): at that size a scan costs about what a
    graph walk does, and HNSW's recall is poorest on small graphs.
    """

    def __init__(self, db: SqliteDatabase, folder: Path, dtype: str = "f16",
                 save_every: int = 200, exact_below: int = 20_000):
        self.db = db
        self.folder = Path(folder)
        self.dtype = dtype
        self.save_every = save_every
        self.exact_below = exact_below
        self._lock = threading.RLock()
        self._index = None
        self._seq = 0  # last index_changes entry applied
        self._saved_seq = 0
        self._stamp: int | None = None
        self._epoch: str | None = None
        # page rowid -> its vectors' compact copies as float32 (see _compact_blocks)
        self._compact: LRUCache = LRUCache(COMPACT_BYTES, getsizeof=lambda m: m.nbytes)
        # (page rowid, chunk) -> its float32 vector of record, kept until the log changes
        self._of_record: LRUCache = LRUCache(EXACT_BYTES, getsizeof=lambda m: m.nbytes)
        self.rows = ReadCache(db, 1 << 16)  # page id -> (rowid, vectors) or None

    # -- reads -----------------------------------------------------------------

    def top(self, query: np.ndarray, n: int, scope: Scope | None) -> dict[str, float]:
        if n <= 0:
            return {}
        clause, params = scope_sql(scope)
        if scope is not None and scope.doc_ids is not None:
            with self.db.snapshot() as c:
                pages = [r[0] for r in c.execute(
                    f"SELECT p.page_id FROM index_pages p WHERE 1{clause}", params)]
            with self._lock:  # the kept rows and vectors follow the log (_sync)
                self._sync()
                scored = self._exact(query, pages)
            return _best({k: v for k, v in scored.items() if v is not None}, n)
        with self._lock:
            index = self._sync()
            if index is None or len(index) == 0:
                return {}
            k = max(16 * n, 256)
            q = query.astype(np.float32)
            while True:
                found = index.search(q, min(k, len(index)),
                                     exact=len(index) < self.exact_below)
                hits = _Hits(found.keys, found.distances)
                with self.db.snapshot() as c:
                    pages = dict(c.execute(
                        "SELECT p.rowid, p.page_id FROM index_pages p WHERE p.rowid IN "
                        f"(SELECT value FROM json_each(?)){clause}",
                        (json.dumps(list(hits.best)), *params)))
                    if len(pages) >= n or k >= len(index):
                        # the chunks the compact copies cannot tell from each page's best
                        # hit, of the pages whose best hit the compact copies cannot tell
                        # from the n-th page's (no other can be among the n best)
                        margin = _MARGIN[self.dtype]
                        bests = {rowid: hits.best[rowid] for rowid in pages}
                        floor = sorted(bests.values(), reverse=True)[n - 1] - 2 * margin \
                            if len(bests) > n else -math.inf
                        wanted = [(rowid, chunk) for rowid, best in bests.items()
                                  if best >= floor for chunk in hits.near(rowid, best - margin)]
                        scored = _best_cosines(self._vectors(c, wanted), q, pages)
                        break
                k *= 4
        return _best(scored, n)

    def scores(self, query: np.ndarray, page_ids: list[str]) -> dict[str, float]:
        with self._lock:
            self._sync()
            scored = self._exact(query, page_ids)
        return {pid: scored.get(pid) or 0.0 for pid in page_ids}

    def _exact(self, query: np.ndarray, page_ids: list[str]) -> dict[str, float | None]:
        """``{page_id: cosine or None}`` for the known ``page_ids`` (None: no
        vectors): each page's best vector picked by the index's compact copy,
        its cosine computed from the float32 vector of record. Called holding
        the lock, after :meth:`_sync` (the kept rows and vectors are its)."""
        if not page_ids:
            return {}
        with self.db.snapshot() as c:
            def read(ids: list[str]) -> dict[str, tuple[int, int] | None]:
                out = dict.fromkeys(ids)
                out.update((pid, (rowid, n)) for pid, rowid, n in c.execute(
                    "SELECT p.page_id, p.rowid, count(v.chunk) FROM index_pages p "
                    "LEFT JOIN page_vectors v ON v.page_rowid = p.rowid "
                    "WHERE p.page_id IN (SELECT value FROM json_each(?)) GROUP BY p.rowid",
                    (json.dumps(ids),)))
                return out
            found = self.rows.through("rows", page_ids, read)
            rows = sorted(((pid, *r) for pid, r in found.items() if r is not None),
                          key=lambda r: r[1])  # by rowid, as the query grouped them
            out: dict[str, float | None] = {pid: None for pid, _, n in rows}
            rows = [r for r in rows if r[2]]
            if not rows:
                return out
            q = query.astype(np.float32)
            blocks = self._compact_blocks([(rowid, n) for _, rowid, n in rows])
            wanted: list[tuple[int, int]] = []  # (page rowid, chunk) to read as float32
            for _, rowid, n in rows:
                block = blocks.get(rowid)
                if block is None:
                    # not in the index yet (e.g. this thread's own uncommitted
                    # page is not visible to it): every vector of the page
                    wanted += [(rowid, j) for j in range(n)]
                    continue
                sims = block @ q
                # every chunk the compact copy cannot tell from the best one
                wanted += [(rowid, int(j))
                           for j in np.flatnonzero(sims >= sims.max() - _MARGIN[self.dtype])]
            out.update(_best_cosines(self._vectors(c, wanted), q,
                                     {rowid: pid for pid, rowid, _ in rows}))
            return out

    def _vectors(self, c, wanted: list[tuple[int, int]]) -> dict[tuple[int, int], np.ndarray]:
        """``{(page rowid, chunk): float32 vector of record}`` for ``wanted``
        (those not kept read in one query through ``c``, then kept)."""
        out = {key: v for key in wanted if (v := self._of_record.get(key)) is not None}
        missing = [key for key in wanted if key not in out]
        if missing:
            for rowid, chunk, blob in c.execute(
                    "SELECT v.page_rowid, v.chunk, v.vector FROM json_each(?) w "
                    "JOIN page_vectors v ON v.page_rowid = w.value ->> 0 "
                    "AND v.chunk = w.value ->> 1", (json.dumps(missing),)):
                vector = np.frombuffer(blob, dtype="<f4")
                out[rowid, chunk] = self._of_record[rowid, chunk] = vector
        return out

    def _compact_blocks(self, pages: list[tuple[int, int]]) -> dict[int, np.ndarray]:
        """``{page rowid: (n, dim) float32}``: the index's compact copies of
        the ``n`` vectors of each of ``pages`` (``(rowid, n)``) it holds
        whole, cast once and kept (:data:`COMPACT_BYTES`) until the page
        changes in the log."""
        with self._lock:
            out = {rowid: m for rowid, n in pages
                   if (m := self._compact.get(rowid)) is not None and len(m) == n}
            index = self._index
        missing = [(rowid, n) for rowid, n in pages if rowid not in out]
        if not missing or index is None:
            return out
        keys = np.concatenate([(rowid << _CHUNK_BITS) + np.arange(n, dtype=np.uint64)
                               for rowid, n in missing]).astype(np.uint64)
        compact = index.get(keys)
        held = [v is not None for v in compact]
        if not any(held):
            return out
        block = np.stack([v for v, h in zip(compact, held) if h]).astype(np.float32)
        at = np.cumsum(held) - 1  # row of key i in block
        start, new = 0, {}
        for rowid, n in missing:
            if all(held[start:start + n]):
                new[rowid] = block[at[start]:at[start] + n].copy()
            start += n
        with self._lock:
            for rowid, m in new.items():
                self._compact[rowid] = m
        return {**out, **new}

    # -- following the store ---------------------------------------------------

    def _sync(self):
        """Apply the change-log entries committed since the last look; the index."""
        stamp = self.db.data_version()
        if self._stamp == stamp and self._index is not None:
            return self._index
        with self.db.snapshot() as c:
            if self._index is None:
                self._open(c)
            changes = c.execute("SELECT page_rowid, op, n_vectors FROM index_changes "
                                "WHERE seq > ? ORDER BY seq", (self._seq,)).fetchall()
            last = c.execute("SELECT max(seq) FROM index_changes").fetchone()[0] or 0
            final: dict[int, str] = {}
            stale: dict[int, int] = {}
            if changes:
                self._of_record.clear()
            for rowid, op, n in changes:
                final[rowid] = op
                self._compact.pop(rowid, None)
                if op == "del":
                    stale[rowid] = max(stale.get(rowid, 0), n)
            for rowid, n in stale.items():
                keys = (rowid << _CHUNK_BITS) + np.arange(n, dtype=np.uint64)
                if self._index is not None and n:
                    self._index.remove(keys.astype(np.uint64))
            added = [r for r, op in final.items() if op == "add"]
            for part in batched(added, 500):
                keys, blobs = [], []
                for rowid, chunk, blob in c.execute(
                        "SELECT page_rowid, chunk, vector FROM page_vectors WHERE page_rowid IN "
                        "(SELECT value FROM json_each(?))", (json.dumps(part),)):
                    keys.append((rowid << _CHUNK_BITS) + chunk)
                    blobs.append(blob)
                if blobs:
                    m = np.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(blobs), -1)
                    self._add(np.array(keys, dtype=np.uint64), m)
        self._seq, self._stamp = last, stamp
        if last - self._saved_seq >= self.save_every:
            self._save()
        return self._index

    def _add(self, keys: np.ndarray, matrix: np.ndarray) -> None:
        from usearch.index import Index

        if self._index is None:
            self._index = Index(ndim=matrix.shape[1], metric="cos", dtype=self.dtype)
        self._index.add(keys, matrix)

    def _open(self, c) -> None:
        """Load the newest usable saved index (or start empty)."""
        from usearch.index import Index

        self._compact.clear()
        self._of_record.clear()
        epoch = c.execute("SELECT value FROM index_meta WHERE key = 'dense_epoch'").fetchone()
        self._epoch = epoch[0] if epoch else "0"
        last = c.execute("SELECT max(seq) FROM index_changes").fetchone()[0] or 0
        for seq, path in self._files():
            if seq > last:
                continue
            try:
                index = Index.restore(str(path))
            except Exception as exc:  # noqa: BLE001 - unreadable: rebuilt from the store
                log.warning("dense index %s unreadable (%s): rebuilding from the store", path, exc)
                continue
            if index is not None and index.dtype.name.lower() == self.dtype.lower():
                self._index, self._seq, self._saved_seq = index, seq, seq
                return
        self._index, self._seq, self._saved_seq = None, 0, 0

    def _files(self) -> list[tuple[int, Path]]:
        """This store's saved indexes, newest first."""
        if not self.folder.is_dir():
            return []
        found = []
        for path in self.folder.iterdir():
            m = _FILE.match(path.name)
            if m and m["epoch"] == self._epoch:
                found.append((int(m["seq"]), path))
        return sorted(found, reverse=True)

    def _save(self) -> None:
        """Write the index as ``EPOCH-SEQ.usearch`` and drop older files."""
        if self._index is None or self._epoch is None:
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self.folder / f"{self._epoch}-{self._seq}.usearch"
        tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
        self._index.save(str(tmp))
        os.replace(tmp, path)
        self._saved_seq = self._seq
        for seq, old in self._files():
            if seq < self._seq:
                old.unlink(missing_ok=True)

    def close(self) -> None:
        """Catch up and save when ``save_every`` pages changed since the
        last saved file (fewer are left to the next reader's replay)."""
        with self._lock:
            try:
                with self.db.snapshot() as c:
                    if self._epoch is None:
                        epoch = c.execute(
                            "SELECT value FROM index_meta WHERE key = 'dense_epoch'").fetchone()
                        self._epoch = epoch[0] if epoch else "0"
                    last = c.execute("SELECT max(seq) FROM index_changes").fetchone()[0] or 0
                saved = max((seq for seq, _ in self._files() if seq <= last), default=0)
                if last - max(saved, self._saved_seq) >= self.save_every:
                    self._sync()
                    if self._seq > self._saved_seq:
                        self._save()
            except OSError as exc:
                log.warning("dense index not saved to %s: %s", self.folder, exc)
            self._index = None
            self._compact.clear()

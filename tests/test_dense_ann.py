"""The embedded ANN dense index (pilar/retrieval/dense.py): it follows the
store's change log across writes, deletes, rollbacks, saves and crashes, and
agrees with exact search. Real SQLite files, real usearch indexes; vectors
are seeded random unit vectors, page text real prose."""

from __future__ import annotations

import numpy as np
import pytest

from pilar.model import Page, Scope
from pilar.retrieval.dense import AnnDense, ExactDense
from pilar.retrieval.sqlite import SqlitePageIndex
from pilar.db import SqliteDatabase

pytest.importorskip("usearch")
DIM = 16
RNG = np.random.default_rng(7)
TEXT = "The buildings of the old city were built from brick and lime."


def _vectors(n: int) -> np.ndarray:
    v = RNG.standard_normal((n, DIM)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def _open(home, save_every=200, dense="ann", exact_below=20_000):
    db = SqliteDatabase(home / "pilar.sqlite")
    search = (AnnDense(db, home / "dense", save_every=save_every, exact_below=exact_below)
              if dense == "ann" else ExactDense(db))
    return SqlitePageIndex(db, search)


def _add(index, doc: str, pages: int = 3, per_page: int = 5, collection: str = "default"):
    index.add_pages([Page(doc, i + 1, TEXT) for i in range(pages)],
                    [_vectors(per_page) for _ in range(pages)],
                    [[f"{doc}:{i}:{j}" for j in range(per_page)] for i in range(pages)],
                    collection=collection)


def _files(home):
    return sorted(p.name for p in (home / "dense").glob("*.usearch"))


def test_a_small_index_agrees_with_exact_search_and_scores_exactly(tmp_path):
    ann = _open(tmp_path)  # 300 vectors: under exact_below, scanned whole
    for d in range(20):
        _add(ann, f"doc{d:02d}", collection="odd" if d % 2 else "even")
    exact = SqlitePageIndex(ann.db, ExactDense(ann.db))
    for q in _vectors(5):
        want, got = exact.dense_top(q, 10), ann.dense_top(q, 10)
        assert list(got) == list(want)
        assert got == pytest.approx(want, abs=1e-6)
        scope = Scope.of(collections=["odd"])
        assert list(ann.dense_top(q, 5, scope)) == list(exact.dense_top(q, 5, scope))
        assert all(pid.startswith(("doc01", "doc03", "doc05", "doc07", "doc09", "doc11",
                                   "doc13", "doc15", "doc17", "doc19"))
                   for pid in ann.dense_top(q, 5, scope))
        ids = ["doc03:2", "nope:1", "doc00:1"]
        assert ann.dense_for(q, ids) == pytest.approx(exact.dense_for(q, ids), abs=1e-6)
    ann.close()


def test_the_graph_walk_finds_nearly_every_exact_neighbour_and_scores_it_exactly(tmp_path):
    ann = _open(tmp_path, exact_below=0)  # always the HNSW walk
    for d in range(100):
        _add(ann, f"doc{d:03d}", pages=4, per_page=6)  # 2,400 vectors
    exact = SqlitePageIndex(ann.db, ExactDense(ann.db))
    overlaps = []
    for q in _vectors(20):
        want, got = exact.dense_top(q, 10), ann.dense_top(q, 10)
        assert len(got) == 10
        overlaps.append(len(set(got) & set(want)) / 10)
        # whatever the walk returns carries its exact float32 score
        assert got == pytest.approx(exact.dense_for(q, list(got)), abs=1e-6)
    assert np.mean(overlaps) >= 0.9, overlaps
    ann.close()


def test_writes_and_deletes_are_followed_without_a_rebuild(tmp_path):
    index = _open(tmp_path)
    _add(index, "aaaa")
    q = _vectors(1)[0]
    assert {pid.split(":")[0] for pid in index.dense_top(q, 10)} == {"aaaa"}
    _add(index, "bbbb")
    assert {pid.split(":")[0] for pid in index.dense_top(q, 10)} == {"aaaa", "bbbb"}
    assert len(index.dense._index) == 30
    index.delete_document("aaaa")
    assert {pid.split(":")[0] for pid in index.dense_top(q, 10)} == {"bbbb"}
    assert len(index.dense._index) == 15
    _add(index, "aaaa", pages=1)  # may reuse a freed page rowid
    assert sorted(index.dense_top(q, 10)) == ["aaaa:1", "bbbb:1", "bbbb:2", "bbbb:3"]
    index.close()


def test_kept_compact_copies_and_vectors_follow_a_page_written_again(tmp_path):
    ann = _open(tmp_path)
    _add(ann, "aaaa", pages=2)
    exact = SqlitePageIndex(ann.db, ExactDense(ann.db))
    ids = ["aaaa:1", "aaaa:2"]
    rowids = ann.db.conn.execute("SELECT rowid FROM index_pages ORDER BY rowid").fetchall()
    for q in _vectors(3):
        assert ann.dense_for(q, ids) == pytest.approx(exact.dense_for(q, ids), abs=1e-6)
    assert sorted(ann.dense._compact) == [r for (r,) in rowids]  # cast once, kept
    assert {r for r, _ in ann.dense._of_record} == {r for (r,) in rowids}  # read once, kept
    ann.delete_document("aaaa")
    _add(ann, "aaaa", pages=2)  # other vectors in the same page rowids
    assert ann.db.conn.execute("SELECT rowid FROM index_pages ORDER BY rowid").fetchall() \
        == rowids
    for q in _vectors(3):
        assert ann.dense_for(q, ids) == pytest.approx(exact.dense_for(q, ids), abs=1e-6)
    scope = Scope.of(doc_ids=["aaaa"])  # searched exactly over the document's pages
    q = _vectors(1)[0]
    assert ann.dense_top(q, 2, scope) == pytest.approx(exact.dense_top(q, 2, scope), abs=1e-6)
    ann.delete_document("aaaa")
    _add(ann, "aaaa", pages=2)  # written again: the scoped search reads the new vectors
    assert ann.dense_top(q, 2, scope) == pytest.approx(exact.dense_top(q, 2, scope), abs=1e-6)
    ann.close()


def test_a_rolled_back_write_never_reaches_the_index(tmp_path):
    index = _open(tmp_path)
    _add(index, "aaaa")
    q = _vectors(1)[0]
    index.dense_top(q, 10)
    with pytest.raises(RuntimeError):
        with index.transaction():
            _add(index, "bbbb")
            raise RuntimeError("fault injected after the index write")
    assert {pid.split(":")[0] for pid in index.dense_top(q, 10)} == {"aaaa"}
    index.close()


def test_saved_index_is_reloaded_and_a_crash_costs_only_a_replay(tmp_path):
    index = _open(tmp_path, save_every=1)
    _add(index, "aaaa")
    q = _vectors(1)[0]
    index.dense_top(q, 10)
    index.close()
    assert len(_files(tmp_path)) == 1
    # a second process writes and "crashes": never closed, nothing saved
    crashed = _open(tmp_path, save_every=10_000)
    _add(crashed, "bbbb")
    crashed.dense_top(q, 10)
    assert len(_files(tmp_path)) == 1
    reopened = _open(tmp_path, save_every=10_000)
    assert {pid.split(":")[0] for pid in reopened.dense_top(q, 10)} == {"aaaa", "bbbb"}
    assert reopened.dense._saved_seq > 0  # loaded the file, then replayed the log after it
    exact = SqlitePageIndex(reopened.db, ExactDense(reopened.db))
    assert reopened.dense_top(q, 6) == pytest.approx(exact.dense_top(q, 6), abs=1e-6)


def test_an_unreadable_or_foreign_index_file_is_rebuilt_from_the_store(tmp_path):
    index = _open(tmp_path, save_every=1)
    _add(index, "aaaa")
    _add(index, "bbbb")
    q = _vectors(1)[0]
    want = index.dense_top(q, 6)
    index.close()
    (name,) = _files(tmp_path)
    (tmp_path / "dense" / name).write_bytes(b"not an index")
    (tmp_path / "dense" / ("feedfeed-" + name.split("-")[1])).write_bytes(b"another store's")
    reopened = _open(tmp_path)
    assert reopened.dense_top(q, 6) == pytest.approx(want, abs=1e-6)
    assert list(reopened.dense_top(q, 6)) == list(want)
    assert reopened.dense._saved_seq == 0  # nothing usable was loaded

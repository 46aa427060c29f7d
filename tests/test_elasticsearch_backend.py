"""Elasticsearch-only behaviour beyond the PageIndex contract: versioned
indexes behind aliases, and a migration that copies the documents into the
next index and swaps the alias (real node, ELASTICSEARCH_URL)."""

from __future__ import annotations

import numpy as np
import pytest

import pilar.retrieval.elasticsearch as es_backend
from pilar.migrations import migration_files
from tests.test_page_index_contract import _fill, unit

pytestmark = pytest.mark.elasticsearch


def test_indexes_are_versioned_behind_aliases(es_index):
    """One index, the pages' (migration 0003 dropped the units index)."""
    aliases = es_index.client.indices.get_alias(name=f"{es_index.prefix}-*")
    assert sorted(aliases) == [f"{es_index.prefix}-pages-0002"]
    mapping = es_index.client.indices.get_mapping(index=es_index.pages_alias)
    props = next(iter(mapping.values()))["mappings"]["properties"]
    assert props["text"]["analyzer"] == "pilar_text"
    vector = props["chunks"]["properties"]["vector"]
    assert (props["chunks"]["type"], vector["type"], vector["similarity"]) == (
        "nested", "dense_vector", "cosine")
    assert {props[k]["type"] for k in ("doc_id", "collection", "sections")} == {"keyword"}


def test_page_text_is_tokenised_as_the_embedded_fts5_index_does(es_index):
    """'porter unicode61': split at every non-alphanumeric character, lower
    case, diacritics folded, Porter stems, stopwords kept."""
    tokens = es_index.client.indices.analyze(
        index=es_index.pages_alias, field="text",
        text="Kanpur's 12,500 seats at Málaga, not O'Neil-Smith's running")["tokens"]
    assert [t["token"] for t in tokens] == [
        "kanpur", "s", "12", "500", "seat", "at", "malaga", "not", "o", "neil", "smith", "s", "run"]


def test_migrations_reindex_into_the_next_index_and_swap_the_alias(elasticsearch_url, monkeypatch):
    """An index made by migration 0001 alone, filled, then migrated: 0002
    creates pages-0002 (the new analyser), copies the pages and their
    vectors over, points the alias at it and drops pages-0001; the units
    index, which 0002 leaves alone, stays until 0003 drops it, and unit
    vectors are still read (from the pages' chunks)."""
    import uuid

    from pilar.retrieval.elasticsearch import ElasticsearchPageIndex

    files = migration_files("elasticsearch", ".json")
    assert [v for v, _ in files][:3] == [1, 2, 3]
    monkeypatch.setattr(es_backend, "migration_files", lambda *_: files[:1])
    index = ElasticsearchPageIndex(elasticsearch_url, prefix=f"pilar-test-{uuid.uuid4().hex[:12]}")
    try:
        _fill(index)
        before = index.dense_top(unit(1), 10)
        monkeypatch.setattr(es_backend, "migration_files", lambda *_: files[:2])
        assert index.migrate() == [2]
        assert index.migrate() == []
        aliases = index.client.indices.get_alias(name=f"{index.prefix}-*")
        assert sorted(aliases) == [f"{index.prefix}-pages-0002", f"{index.prefix}-units-0001"]
        assert not index.client.indices.exists(index=f"{index.prefix}-pages-0001")
        monkeypatch.setattr(es_backend, "migration_files", lambda *_: files[:3])
        assert index.migrate() == [3]
        assert index.migrate() == []
        assert sorted(index.client.indices.get_alias(name=f"{index.prefix}-*")) == [
            f"{index.prefix}-pages-0002"]
        assert index.count() == 4
        after = index.dense_top(unit(1), 10)  # the vectors came along
        assert list(after) == list(before)
        assert after == pytest.approx(before, abs=1e-6)
        np.testing.assert_allclose(index.unit_vectors(["bbbb:1:u1"])["bbbb:1:u1"], unit(1, 0.2),
                                   atol=1e-6)
        assert list(index.bm25("tallest building Kanpur", 1)) == ["aaaa:1"]
    finally:
        index.drop()
        index.close()


def test_the_client_retries_a_refused_connection_after_a_backoff(es_index):
    """A node that refuses one connection and is back at once: the client's
    own retries, sleeping with backoff (at least 0.25 s before the first
    retry), reach it; without a backoff all retries would be refused (the node is
    back 0.1 s after the first refusal)."""
    import threading
    import time
    from urllib.parse import urlparse

    from pilar.errors import StoreError
    from pilar.retrieval.elasticsearch import ElasticsearchPageIndex
    from tests.fault_proxy import CuttableProxy

    target = urlparse(es_index.url)
    proxy = CuttableProxy((target.hostname, target.port))
    try:
        index = ElasticsearchPageIndex(proxy.url, prefix=es_index.prefix)
        proxy.cut()
        back = threading.Thread(target=lambda: proxy.refused.wait(30) and (time.sleep(0.1), proxy.restore()))
        back.start()
        assert index.count() == 0
        back.join()
        proxy.cut()
        with pytest.raises(StoreError, match=f"cannot reach Elasticsearch at {proxy.url}"):
            index.count()  # refused on every retry: the error names service and URL
        index.close()
    finally:
        proxy.close()

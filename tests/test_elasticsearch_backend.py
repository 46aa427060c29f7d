"""Elasticsearch-only behaviour beyond the PageIndex contract: versioned
indexes behind aliases, and a migration that copies the documents into the
next index and swaps the alias (real node, ELASTICSEARCH_URL)."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

import pilar.retrieval.elasticsearch as es_backend
from pilar.migrations import migration_files
from tests.test_page_index_contract import _fill, unit

pytestmark = pytest.mark.elasticsearch


def test_indexes_are_versioned_behind_aliases(es_index):
    aliases = es_index.client.indices.get_alias(name=[es_index.pages_alias, es_index.units_alias])
    assert sorted(aliases) == [f"{es_index.prefix}-pages-0001", f"{es_index.prefix}-units-0001"]
    mapping = es_index.client.indices.get_mapping(index=es_index.pages_alias)
    props = next(iter(mapping.values()))["mappings"]["properties"]
    assert props["text"]["analyzer"] == "english"
    vector = props["chunks"]["properties"]["vector"]
    assert (props["chunks"]["type"], vector["type"], vector["similarity"]) == (
        "nested", "dense_vector", "cosine")
    assert {props[k]["type"] for k in ("doc_id", "collection", "sections")} == {"keyword"}


def test_a_new_migration_reindexes_and_swaps_the_alias(es_index, tmp_path, monkeypatch):
    _fill(es_index)
    before = es_index.dense_top(unit(1), 10)
    [(_, first)] = migration_files("elasticsearch", ".json")
    shutil.copy(first, tmp_path / "0002_same_again.json")
    monkeypatch.setattr(es_backend, "migration_files",  # a future schema version
                        lambda *_: [(1, first), (2, tmp_path / "0002_same_again.json")])
    assert es_index.migrate() == [2]
    assert es_index.migrate() == []
    aliases = es_index.client.indices.get_alias(name=[es_index.pages_alias, es_index.units_alias])
    assert sorted(aliases) == [f"{es_index.prefix}-pages-0002", f"{es_index.prefix}-units-0002"]
    assert not es_index.client.indices.exists(index=f"{es_index.prefix}-pages-0001")
    assert es_index.count() == 4
    after = es_index.dense_top(unit(1), 10)  # the vectors came along
    assert list(after) == list(before)
    assert after == pytest.approx(before, abs=1e-6)
    np.testing.assert_allclose(es_index.unit_vectors(["bbbb:u1"])["bbbb:u1"], unit(1, 0.2),
                               atol=1e-6)
    assert list(es_index.bm25("tallest building Kanpur", 1)) == ["aaaa:1"]


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
